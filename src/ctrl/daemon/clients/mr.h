/* SPDX-License-Identifier: MIT */
/*
 * Clients' own memory registered with the device (ssq_mem_reg,
 * ssq_mem_reg_fd): the table, who owns what, and when a registration may
 * go - never while a WQE that may use its keys is still in flight.
 */
#ifndef SSQ_CTRL_DAEMON_CLIENT_MR_H
#define SSQ_CTRL_DAEMON_CLIENT_MR_H

#include <stddef.h>
#include <stdint.h>
#include "ctrl/proto/msg.h"

#define SSQD_MAX_MRS        1024u /* registrations of all clients */
#define SSQD_MRS_PER_CLIENT 64u
/*
 * Buffers with an MR of their own (every ssq_buf_alloc buffer, unless ssqd
 * runs --arena-rkey): one uid may hold this many, half of what the data
 * arena holds (SSQ_DATA_MAX_BUFS) and twice a client's default
 * --max-client-bufs, so a program of one client meets --max-client-bufs
 * first. All the arena's buffers and SSQD_MAX_MRS registrations together
 * stay under the emulated device's MR table (SSQ_EMU_MAX_MR, emu.h,
 * checked in daemon_serve.c), so buffers cannot starve ssq_mem_reg.
 */
#define SSQD_UID_KEYED_BUFS 2048u
/*
 * Descriptors kept for everything else: each client's socket and pidfd,
 * the device, the arena, the peer link. A registration holds one (its
 * memory file or its file), so ssqd takes no more than its descriptor
 * limit leaves above this, and one uid a quarter of that.
 */
#define SSQD_FD_RESERVE (2u * SSQD_MAX_CLIENTS + 64u)

struct ssqd_mr {
	uint32_t owner; /* the client's id; 0: a free slot */
	uint32_t id;    /* (generation << 16) | (slot + 1): a stale id names nothing */
	uint32_t lkey, rkey;
	uint64_t len;
	void *impl;      /* the backend's */
	uint64_t handle; /* SSQ_MEM_VERBS: the client's MR handle; else ~0 */
	uint32_t uid;    /* the owner's */
	uint64_t pinned; /* bytes charged to the owner's RLIMIT_MEMLOCK (pin.c) */
};

struct ssqd;
struct ssqd_client;

/*
 * ssqd_mr_reg - register what @r describes for client @c, through the
 * memory file or shareable memory @fd, which this call takes (kept by the
 * registration, or closed). Returns 0 with *@out, or -errno and @why:
 * -EDQUOT (@c holds SSQD_MRS_PER_CLIENT), -ENOMEM (the table is full), the
 * backend's refusals (backend.h, reg_client).
 */
int ssqd_mr_reg(struct ssqd *d, const struct ssqd_client *c,
                const struct proto_msg_mem_reg *r, int fd,
                struct proto_msg_mem_reg_reply *out, char *why, size_t whylen);

/*
 * ssqd_mr_dereg - client @c gives back registration @id. Returns 0, -ENOENT
 * (not @c's), -EBUSY (a WQE not yet completed on some queue carries one of
 * its keys: it may still be read or written through them).
 */
int ssqd_mr_dereg(struct ssqd *d, const struct ssqd_client *c, uint32_t id, char *why,
                  size_t whylen);

/* Size d->mr_cap and d->mr_uid_cap from RLIMIT_NOFILE (raised to its hard limit). */
void ssqd_mr_limits(struct ssqd *d);

/*
 * ssqd_key_in_flight - might a WQE client @c posted, not yet completed on
 * some queue, use @lkey or @rkey? (Conservative: any matching word of its
 * WQEs counts.) For ssq_mem_dereg and, unless ssqd runs --arena-rkey, ssq_buf_free.
 */
int ssqd_key_in_flight(const struct ssqd *d, const struct ssqd_client *c, uint32_t lkey,
                       uint32_t rkey);

/* Deregister every registration of client @owner; returns how many. */
unsigned ssqd_mr_drop_owner(struct ssqd *d, uint32_t owner);

/* Deregister all (ssqd's end, before the device closes). */
void ssqd_mr_drop_all(struct ssqd *d);

#endif /* SSQ_CTRL_DAEMON_CLIENT_MR_H */
