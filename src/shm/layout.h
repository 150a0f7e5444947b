/* SPDX-License-Identifier: MIT */
/*
 * The arena layout: what sits where in the shared segment ssqd creates and
 * every client maps. Offset 0 holds struct ssq_arena_header; each queue's
 * pieces (SQ ring, CQ ring, doorbell records, control block) and the data
 * arena are described by offsets from the arena start, never by pointers,
 * because every process maps the arena at its own address.
 *
 * Written by ssqd only, before it publishes a queue (state = READY with a
 * release store); read by clients after an acquire load of that state.
 * Clients check magic, version and every size before using anything.
 */
#ifndef SSQ_SHM_LAYOUT_H
#define SSQ_SHM_LAYOUT_H

#include <stdint.h>
#include <stddef.h>

#define SSQ_LAYOUT_MAGIC   0x414e455241515353ull /* "SSQARENA" little-endian */
#define SSQ_LAYOUT_VERSION 1u
#define SSQ_MAX_QUEUES     16u
#define SSQ_NAME_MAX       32u

enum ssq_queue_state {
	SSQ_QUEUE_UNUSED = 0,
	SSQ_QUEUE_READY = 1, /* QP in RTS, every field below valid */
	SSQ_QUEUE_ERROR = 2, /* QP in ERR until the daemon recovers it */
};

struct ssq_queue_layout {
	char name[SSQ_NAME_MAX]; /* NUL-terminated */
	uint32_t state;          /* enum ssq_queue_state; release-stored last */
	uint32_t qpn;
	uint32_t peer_qpn;
	uint32_t cqn;
	uint32_t sq_wqe_cnt; /* WQEBBs, a power of two */
	uint32_t cqe_cnt;    /* a power of two */
	uint32_t max_inline;
	uint32_t max_sge;
	uint64_t sq_off;       /* SQ ring: sq_wqe_cnt * 64 bytes */
	uint64_t qp_dbrec_off; /* 2 x __be32: [MLX5_RCV_DBR], [MLX5_SND_DBR] */
	uint64_t cq_off;       /* CQ ring: cqe_cnt * 64 bytes */
	uint64_t cq_dbrec_off; /* 2 x __be32: consumer index, arm */
	uint64_t uar_off;      /* page in the UAR fd holding bf.reg */
	uint32_t bf_reg_off;   /* bf.reg's offset within that page */
	uint32_t bf_size;
	uint64_t peer_data_iova; /* where the peer's data arena starts */
	uint32_t peer_key;       /* rkey of the peer's data arena */
	uint32_t reserved;
	uint64_t ctl_off; /* struct ssq_ctl: the shared queue's control block */
	uint64_t ctl_len; /* ssq_ctl_size(sq_wqe_cnt) */
};

struct ssq_arena_header {
	uint64_t magic;             /* SSQ_LAYOUT_MAGIC */
	uint32_t version;           /* SSQ_LAYOUT_VERSION */
	uint32_t header_size;       /* sizeof(struct ssq_arena_header) */
	uint32_t queue_layout_size; /* sizeof(struct ssq_queue_layout) */
	uint32_t nqueues;           /* entries of queues[] in use */
	uint64_t arena_len;         /* bytes the arena fd maps */
	uint64_t data_off;          /* data arena: offset, length, fixed IOVA */
	uint64_t data_len;
	uint64_t data_iova;
	uint32_t data_key;         /* lkey (and rkey) of the data arena MR */
	uint32_t hugepages;        /* 1: 2 MiB hugepages, 0: 4 KiB memfd pages */
	char device[SSQ_NAME_MAX]; /* "emu" or an mlx5 device name */
	struct ssq_queue_layout queues[SSQ_MAX_QUEUES];
};

/*
 * ssq_layout_check - validate a mapped header of an arena @len bytes long:
 * magic, version, struct sizes, queue count and every offset + length
 * inside the arena. Returns 0, or -EPROTO (not an ssq arena, or another
 * version: @why says which), -EBADMSG (a field out of bounds).
 */
int ssq_layout_check(const struct ssq_arena_header *h, size_t len, char *why,
                     size_t whylen);

#endif /* SSQ_SHM_LAYOUT_H */
