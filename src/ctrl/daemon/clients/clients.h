/* SPDX-License-Identifier: MIT */
/*
 * clients/: what ssqd keeps for its clients - RECOVER answered from the
 * loop (recover.c), their registered memory (mr.c) and its charge against
 * RLIMIT_MEMLOCK (pin.c), buffers of the data arena (data_alloc.c), and
 * replies that never block ssqd (out.c).
 */
#ifndef SSQ_CTRL_DAEMON_CLIENTS_H
#define SSQ_CTRL_DAEMON_CLIENTS_H

#include <stddef.h>
#include <stdint.h>
#include "ctrl/daemon/ssqd.h"

/*
 * A client's RECOVER of a loopback queue, answered from the serve loop so
 * that no other client waits meanwhile (clients/recover.c):
 * ssqd_recover_start - begin (or join) the recovery of queue @qi for client
 *   @c's request @seq; 0 (the answer comes later) or a negative errno with
 *   @why to answer now;
 * ssqd_recover_step - once per serve loop: move every recovery along and
 *   answer its clients when it is done or out of time. Returns how many
 *   recoveries are still under way (the loop then polls more often).
 */
int ssqd_recover_start(struct ssqd *d, struct ssqd_client *c, unsigned qi, uint32_t seq,
                       char *why, size_t whylen);
int ssqd_recover_step(struct ssqd *d);
/*
 * ssqd_recover_for_open - a client opens loopback queue @qi, which is in
 * error with no client holding it to RECOVER (the last one left after an
 * error it caused, say): recovered now, as a RECOVER would. 0 (READY
 * again), -EINPROGRESS (what was in flight still drains: the open asks
 * again), -EAGAIN (clients hold it: theirs to recover) or -EIO, with @why.
 */
int ssqd_recover_for_open(struct ssqd *d, unsigned qi, char *why, size_t whylen);

/*
 * ssqd_pin_charge (pin.c) - may client @c have ssqd register @len bytes at
 * @addr of kind @kind (@fd) against its RLIMIT_MEMLOCK? 0 and the bytes to
 * charge to the registration in *@charge, or -ENOMEM (over the limit) /
 * -EPERM (the limit cannot be read), saying why in @why.
 */
int ssqd_pin_charge(const struct ssqd *d, const struct ssqd_client *c, int kind, int fd,
                    uint64_t addr, uint64_t len, uint64_t *charge, char *why,
                    size_t whylen);

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

/*
 * ssqd_hands_out - 1 while a combined request of client @c's, on a record
 * it holds or detached (c->hand_recs), is still out (ssq_ctl_hand_out): a
 * combiner may yet write a WQE with @c's keys, after @c's death too.
 */
int ssqd_hands_out(const struct ssqd *d, const struct ssqd_client *c);

/*
 * Grants (grant.c): ssqd_on_grant / ssqd_on_revoke answer GRANT and
 * REVOKE; ssqd_grants_drop_mem revokes every grant over the buffer (@kind
 * SSQ_GRANT_BUF, @mem its arena offset) or registration (SSQ_GRANT_MR,
 * its id) before it goes; ssqd_grants_drop_all every one, at ssqd's end.
 * A grant's revoke frees its window at once (the backend's revoke), but
 * for one whose bind may still run: that waits (ssqd_grants_tick), and
 * ssqd_grants_drop_mem returns how many such binds name the memory - its
 * MR must not go before them (clients/held.c). ssqd_grants_on: how many
 * grants, revoked or not, are still over it.
 */
int ssqd_on_grant(struct ssqd *d, struct ssqd_client *c, const struct proto_msg *m);
int ssqd_on_revoke(struct ssqd *d, struct ssqd_client *c, const struct proto_msg *m);
unsigned ssqd_grants_drop_mem(struct ssqd *d, uint32_t kind, uint64_t mem);
unsigned ssqd_grants_on(const struct ssqd *d, uint32_t kind, uint64_t mem);
void ssqd_grants_drop_all(struct ssqd *d);
/* Revoke every grant client @owner made (its death). */
void ssqd_grants_drop_owner(struct ssqd *d, uint32_t owner);
/*
 * Grants whose bind is still on a ring (the backend's grant_post):
 * ssqd_grants_binding says whether there is one (the loop then looks every
 * millisecond); ssqd_grants_tick answers their GRANTs once the bind
 * completed, or with an error when it failed or by their deadline, and
 * frees revoked ones' windows once their bind can no longer run.
 */
int ssqd_grants_binding(const struct ssqd *d);
void ssqd_grants_tick(struct ssqd *d, uint64_t now_ns);

/*
 * ssqd_attach_queue - the queue @m names (ATTACH's name, or GRANT's: the
 * same place), allowed to client @c and READY (a link wanted, or a queue in
 * error recovered, first). An ATTACH of "any" / "PEER/any" is given the
 * least busy queue of that peer among those @c may use (the recent posting
 * rate, watch/rate.c, then the fewest producer records held); a GRANT of
 * it is refused (-EINVAL). Its index, or -1 once @c
 * has been answered (*@rc: that answer's outcome). queue_pick.c.
 */
int ssqd_attach_queue(struct ssqd *d, struct ssqd_client *c, const struct proto_msg *m,
                      int *rc);
/*
 * ssqd_queue_rules_for - queue @q's --queue-uid / --queue-gid rules seen
 * from client @c: 0 when it has none, else SSQD_RULED, with
 * SSQD_RULE_NAMES_C when one names @c's uid or gid, and
 * SSQD_RULE_NAMES_OTHER when one is a gid rule or names another uid.
 * queue_pick.c.
 */
enum { SSQD_RULED = 1, SSQD_RULE_NAMES_C = 2, SSQD_RULE_NAMES_OTHER = 4 };
unsigned ssqd_queue_rules_for(const struct ssqd *d, int q, const struct ssqd_client *c);

/*
 * ssqd_uid_shares - may a uid other than @uid use ssqd? ssqd's own uid, one
 * named by --allow-uid, or a group's by --allow-gid (root is not counted
 * unless it is ssqd's uid: it may do anything on the host). Then one uid's
 * share of a table every uid draws on is bounded (queue_pick.c).
 */
int ssqd_uid_shares(const struct ssqd *d, uid_t uid);

/*
 * Records one uid may hold of a queue another uid may use: half of those
 * producers may have (SSQD_PRODUCER_ID is ssqd's), so that no uid can lock
 * the others out of it (issue 28, item 6). A queue of one uid has no such
 * bound. ssqd_uid_records_full: client @c's uid holds its share of queue
 * @q's (queue_pick.c; ATTACH refuses it, a pick passes it over).
 */
#define SSQD_UID_RECORDS ((SSQ_MAX_PRODUCERS - 1) / 2)
int ssqd_uid_records_full(const struct ssqd *d, int q, const struct ssqd_client *c);

/* Deregister every registration of client @owner; returns how many. */
unsigned ssqd_mr_drop_owner(struct ssqd *d, uint32_t owner);

/* Deregister all (ssqd's end, before the device closes). */
void ssqd_mr_drop_all(struct ssqd *d);

/*
 * ssqd_out_send - send or queue one reply on the non-blocking socket @fd.
 * Returns 0 (sent or queued), -ENOBUFS (SSQD_OUT_MAX already queued: the
 * client does not read; drop it), -ENOMEM, or the socket's error (-EPIPE:
 * the client is gone).
 */
int ssqd_out_send(struct ssqd_out *o, int fd, uint16_t type, uint32_t seq,
                  const void *payload, uint32_t len, const int *fds, int nfds);

/* ssqd_out_send of an SSQ_MSG_ERROR with @err and printf-style text. */
int ssqd_out_error(struct ssqd_out *o, int fd, uint32_t seq, int err, const char *fmt,
                   ...) __attribute__((format(printf, 5, 6)));

/* Send what waits, in order, until the socket is full. 0 or the socket's error. */
int ssqd_out_flush(struct ssqd_out *o, int fd);

/* Forget what waits and free the queue. */
void ssqd_out_free(struct ssqd_out *o);

void ssqd_data_init(struct ssqd_data_alloc *d, uint64_t start, uint64_t len);

/*
 * Carve @len bytes aligned to @align for @owner. Returns 0 and *@off, or
 * -ENOMEM (no gap fits, or the table is full).
 */
int ssqd_data_alloc(struct ssqd_data_alloc *d, uint64_t len, uint64_t align,
                    uint32_t owner, uint64_t *off);

/* The buffer at @off, or NULL. */
struct ssqd_data_buf *ssqd_data_find(struct ssqd_data_alloc *d, uint64_t off);

/*
 * Free the buffer at @off if @owner has it (*@gone: what it was, if @gone).
 * 0 or -ENOENT.
 */
int ssqd_data_free(struct ssqd_data_alloc *d, uint64_t off, uint32_t owner,
                   struct ssqd_data_buf *gone);

/*
 * Free every buffer of @owner, @release(@ctx, buffer) on each first (NULL:
 * nothing to do); returns how many.
 */
unsigned ssqd_data_free_owner(struct ssqd_data_alloc *d, uint32_t owner,
                              void (*release)(void *ctx, struct ssqd_data_buf *b),
                              void *ctx);

/* Give every buffer of @from to @to; returns how many. */
unsigned ssqd_data_chown(struct ssqd_data_alloc *d, uint32_t from, uint32_t to);

/*
 * ssqd_handle - answer one decoded request of client @c (exposed for the
 * protocol tests and the fuzzer), and @fd, the descriptor that came with
 * it or -1, which it takes: kept by a MEM_REG, closed otherwise. Returns 0,
 * or a negative errno when the reply could not be sent.
 */
struct proto_msg;
int ssqd_handle(struct ssqd *d, struct ssqd_client *c, const struct proto_msg *m, int fd);

/* A data buffer's own MR (all but --arena-rkey) deregistered; @ctx: the ssqd. */
void ssqd_release_buf(void *ctx, struct ssqd_data_buf *b);

/*
 * Memory freed while a grant's bind over it may still run (held.c): a
 * client's buffer @b (ssqd_held_buf) or registration @m (ssqd_held_mr)
 * becomes SSQD_OWNER_HELD's - gone for its client, its MR and arena range
 * kept - and ssqd_held_release (the loop's, after ssqd_grants_tick) lets
 * go of each once no grant is over it any more, its window freed first.
 * The two marks are inline: mr.c and request.c park what held.c, which
 * calls them back to release, lets go of.
 */
static inline void ssqd_held_buf(struct ssqd *d, struct ssqd_data_buf *b, uid_t uid)
{
	if (b->owner == SSQD_OWNER_HELD)
		return;
	b->held_uid = (uint32_t)uid;
	b->held_by = b->owner;
	b->owner = SSQD_OWNER_HELD;
	d->nheld++;
}

static inline void ssqd_held_mr(struct ssqd *d, struct ssqd_mr *m)
{
	if (m->owner == SSQD_OWNER_HELD)
		return;
	m->held_by = m->owner;
	m->owner = SSQD_OWNER_HELD;
	d->nheld++;
}

void ssqd_held_release(struct ssqd *d);
/*
 * Is client @id gone while memory it freed is still held? Its held memory
 * then counts against its uid (ssqd_held_uid_use) and its pid's memlock
 * (pin.c), so that freeing behind a hole and hanging up is no way past a
 * quota (held.c).
 */
int ssqd_held_orphan(const struct ssqd *d, uint32_t id);
void ssqd_held_uid_use(const struct ssqd *d, uid_t uid, unsigned *bufs, uint64_t *bytes);
/* Deregister registration @m now and free its slot (mr.c). */
void ssqd_mr_release(struct ssqd *d, struct ssqd_mr *m);

#endif /* SSQ_CTRL_DAEMON_CLIENTS_H */
