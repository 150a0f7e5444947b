/* SPDX-License-Identifier: MIT */
/*
 * twohost_queues.c - a two-host run's queues on this side: q0 once the peer
 * is up, the queue paired with one of the other side's by QPN, and the
 * grants that let the other side's requests through one queue.
 */
#ifndef SSQ_BENCH_PERFTEST_TWOHOST_QUEUES_H
#define SSQ_BENCH_PERFTEST_TWOHOST_QUEUES_H

#include <stddef.h>
#include <stdint.h>
#include <ssq/client.h>
#include "perftest.h"

/* q0 of @c once it is up (the peer ssqd connected), within @secs. */
int pt_th_open_q0(const struct pt_opts *o, struct ssq_client *c, double secs,
                  struct ssq_queue **q);

/*
 * Does @c's ssqd name its queues PEER/qK (ssqd --peers), so that the
 * server finds its queue to the client by QPN, once the client says it?
 */
int pt_th_named_by_peer(struct ssq_client *c);

/*
 * The queue of @c paired with one of the client's (its q0, or the queue a
 * GRANT names): its QPN is @qpn (the client queue's peer) and its peer's
 * QPN @peer (the client's queue). Two daemons may number QPs alike, so
 * both ends must match. Its name into @name (32 bytes). 0 or -1 (@why).
 */
int pt_th_open_by_qpn(struct ssq_client *c, uint32_t qpn, uint32_t peer,
                      struct ssq_queue **q, char *name, char *why, size_t len);

/* The remote access a test's requests need: 0 for SENDs (they carry no key). */
int pt_th_access(const struct pt_opts *o);

/*
 * The key requests arriving on @c's queue @name reach @b with: a grant of
 * all of @b with @access, bound to that queue's QP (ssq_buf_grant), so a
 * peer reaches it through that queue only. @access 0 (SENDs), or
 * -EOPNOTSUPP (ssqd --arena-rkey, a device without memory windows): the
 * buffer's own key, the only one there is. 0, or -1 (@why).
 */
int pt_th_grant_key(struct ssq_client *c, const char *name, const struct ssq_buf *b,
                    int access, uint32_t *rkey, char *why, size_t len);

/*
 * The tool's own daemons (--wire, --peers N): @b, a buffer of @c's ssqd,
 * granted to each of @c's queues @prefix q0.. the senders' requests arrive
 * on (pt_queues_needed; qk pairs with the senders' qk), the keys into
 * @rkeys. SENDs need none. 0, or -1 (said why).
 */
int pt_th_grant_all(const struct pt_opts *o, struct ssq_client *c, const char *prefix,
                    const struct ssq_buf *b, uint32_t *rkeys);

#endif
