/* SPDX-License-Identifier: MIT */
/*
 * The owner's side of a shared queue, and the client library's binding of
 * a producer to its record: libssq's internals, for ssqd (which links
 * libssq.a), src/ctrl/client and the tests. Not installed, and not
 * exported from libssq.so (src/libssq.map names the API alone): an
 * application gets its producer from ssq_queue_producer and never owns a
 * control block, and the inline hot path of <ssq/queue.h> calls none of
 * these (only ssq__wake_waiters, which is exported as ABI).
 * Implemented in src/dv/queue_setup.c, queue_heal.c, queue_check.c,
 * queue_rebuild.c.
 */
#ifndef DV_CTL_H
#define DV_CTL_H

#include <ssq/queue.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- setup (src/dv/queue_setup.c) ---- */

/*
 * ssq_producer_gone - this process's producer @p outlived its ssqd: from now
 * on ssq_reserve, ssq_submit and an empty ssq_poll return -ENOTCONN. The
 * client library calls it when its connection to ssqd hangs up, after
 * unmapping the doorbell page. Only this process's handle changes: the
 * shared queue is not the caller's to declare dead (a process that shut
 * its own connection is killed by a live ssqd, not believed). Any thread.
 */
void ssq_producer_gone(struct ssq_producer *p);

/* Bytes of shared memory a queue of @ring WQEBBs needs for its control block. */
size_t ssq_ctl_size(uint32_t ring);

/*
 * ssq_ctl_init - lay out a zeroed control block for a send queue of @ring
 * WQEBBs (a power of two), forcing a CQE every @signal_every WQEBBs (a power
 * of two <= ring / 2). Returns 0 or -EINVAL. Before any producer attaches.
 */
int ssq_ctl_init(struct ssq_ctl *ctl, uint32_t ring, uint32_t signal_every);

/*
 * ssq_ctl_reset - start the queue over after its QP was reset: every
 * counter (reserve, published, completed, the last doorbell value, the UAR
 * half) and every record's position back to 0, the slots cleared so no
 * old publish word can match a new position, the epoch bumped, and the
 * queue READY again (ssq_reserve stops returning -EIO).
 * Kept: the producer records (their state, pid and posted/done and
 * completion-ring counts, which go on counting), the completion rings
 * with what they hold, the CQ's consumer index (the CQ was not reset).
 * Who: the one party that owns the queue (ssqd), while no other party
 * resets, heals or claims. When:
 *  - the queue is in error (ssq_ctl_set_error, or an error CQE), so no
 *    reservation can start, and drained (ssq_ctl_drained): no record
 *    RESERVING or BUILDING, everything reserved completed (flushed);
 *  - the QP has been through RESET, so its WQE counter, like ours, starts
 *    at 0, its send doorbell record is 0, and it is back in a state that
 *    takes posts (RTS): producers may post the moment this returns.
 * It holds both leases while it works, waiting up to @timeout_ms for a
 * producer that is routing or ringing now (a dead holder's lease is
 * ssq_ctl_heal's to break). @owner is the owner's producer handle: the
 * slot count comes from it, not from the client-writable block.
 * Returns 0, -EINVAL (no owner, or the queue is not in error), or
 * -EBUSY (a lease stayed held, or the queue is not drained): nothing was
 * changed then; try again later.
 */
int ssq_ctl_reset(struct ssq_producer *owner, unsigned timeout_ms);

/*
 * ssq_producer_init - bind @p to record @id of @ctl for the queue whose send
 * queue is @sq and completion queue @cq, and mark the record IDLE with
 * @pid. Who hands out ids (ssqd, or a test's threads) makes them unique.
 * Returns 0, -EINVAL (bad id, a queue that does not match the block, or
 * @sq without a UAR register to ring) or -EBUSY (the record is in use).
 */
int ssq_producer_init(struct ssq_producer *p, struct ssq_ctl *ctl, uint32_t id,
                      const struct ssq_sq *sq, const struct ssq_cq *cq, uint32_t pid);

/*
 * ssq_producer_bind - as ssq_producer_init for a record someone else (ssqd)
 * already marked IDLE for this process. Returns 0 or -EINVAL.
 */
int ssq_producer_bind(struct ssq_producer *p, struct ssq_ctl *ctl, uint32_t id,
                      const struct ssq_sq *sq, const struct ssq_cq *cq);

/*
 * How long ssq_producer_settle waits, at most, in ssq_producer_fini and
 * ssq_queue_close, for room to post a combined request still handed over
 * (<ssq/combine.h>): ten times ssqd's default --stall-ms (100), by which
 * a stalled holder of the ring is killed and its range healed, so that
 * only a peer that stopped completing keeps the ring full that long.
 */
#define SSQ_SETTLE_MS 1000u

/*
 * ssq_producer_settle - post @p's last combined request if it is still
 * handed over (ssq_combine_flush), polling completions (ssq_progress) for
 * up to @timeout_ms while the ring has no room (or a combiner that took
 * it has not published it). Returns 0 (nothing left handed over), or
 * ssq_combine_flush's error: -EAGAIN (no room within @timeout_ms: still
 * @p's to post; or still in the hands of a combiner that took it, stopped
 * that long: under ssqd --stall-ms 0 nothing ends it), -EIO, -ENOTCONN,
 * -EINVAL (it cannot be posted).
 */
int ssq_producer_settle(struct ssq_producer *p, unsigned timeout_ms);

/*
 * ssq_producer_fini - stop using the record: its completions still in
 * flight are dropped, and the record is free again once they are counted
 * (ssq_ctl_claim). A combined request still handed over was accepted: it
 * is posted first (ssq_producer_settle, SSQ_SETTLE_MS). Call with no open
 * reservation. Returns 0; or -EAGAIN: no room to post that request (or
 * it is still in the hands of a stopped combiner), and nothing retired
 * (the producer is as it was: poll completions and call again); or -EIO,
 * -ENOTCONN, -EINVAL: retired, and that request, which cannot be posted
 * (the queue in error or started over, ssqd gone, a scribbled slot),
 * dropped.
 */
int ssq_producer_fini(struct ssq_producer *p);

/*
 * ssq_ctl_claim - find a FREE record (reclaiming retired ones whose WQEs
 * have all completed), mark it IDLE for @pid and return its id, or -EUSERS.
 * A doorbell or CQ lease or the combiner role still naming that record (a
 * dead holder's, or a client's scribble) is freed first, by a CAS on that
 * exact value. For the one party that hands out ids (ssqd).
 */
int ssq_ctl_claim(struct ssq_ctl *ctl, uint32_t pid, uint32_t skip_id);

/*
 * ssq_ctl_mark_dead - record @id's process is gone (or detached without
 * ssq_producer_fini): the router drops its completions from now on, the
 * next ssq_ctl_heal takes over what it left half-done, ssq_ctl_claim
 * reclaims the record once its WQEs are counted, and a request it left
 * handed over (<ssq/combine.h>) that no combiner took yet is taken back,
 * never posted. For the party that hands
 * out ids (ssqd), on the thread that heals and claims.
 * Returns 0, or -EINVAL for an id out of range.
 */
int ssq_ctl_mark_dead(struct ssq_ctl *ctl, uint32_t id);

/*
 * ssq_ctl_hand_out - 1 while record @id's last combined batch
 * (<ssq/combine.h>) is TAKEN by a combiner (its WQEs maybe not written
 * yet) or published in its name (DONE) with a position inside [completed,
 * reserve) (its count clamped to SSQ_HAND_REQS, its end to reserve): a
 * WQE carrying the keys of the record's owner may still reach the device,
 * whether or not that owner still lives. Else 0 (and for an
 * id out of range). The word is client-writable: a hint for how long to
 * keep what the owner's keys name (ssqd: until the queue passes its
 * death), never an index or a count.
 */
int ssq_ctl_hand_out(const struct ssq_ctl *ctl, uint32_t id);

/*
 * ssq_ctl_hand_names - 1 while record @id's hand-over slot holds a batch
 * POSTED (no combiner took it yet: any may, at any time) one of whose
 * requests names @lkey or @rkey (as its lkey or its rkey), or, for a
 * record not DEAD, a batch TAKEN and not yet DONE one of whose requests
 * does (a dead combiner's, NOPed by a heal: its owner posts it when it
 * settles), or a DONE prefix's rest (ssq_ctl_hand.batch: a combiner at
 * its half ring's end took fewer) that does, else 0 (and for an id out
 * of range). ssq_ctl_hand_out covers the batch from
 * its take on; ask this one first, as the protocol goes (POSTED, TAKEN, DONE), so that a
 * batch taken between the two looks is seen by one of them. The slot is client-writable:
 * a hint for how long to keep what the keys name.
 */
int ssq_ctl_hand_names(const struct ssq_ctl *ctl, uint32_t id, uint32_t lkey,
                       uint32_t rkey);

/*
 * ssq_ctl_hand_owes - 1 while record @id's owner still owes a request of
 * its slot (taken back, or not published by the combiner that took it:
 * it posts it itself, the word EMPTY meanwhile) that names @lkey or @rkey,
 * else 0 (and for an id out of range). Ask it after ssq_ctl_hand_out
 * (the owner says what it owes before the word goes EMPTY) and before
 * searching the ring (it stops saying so after each publish). The slot is
 * client-writable: a hint, as ssq_ctl_hand_names.
 */
int ssq_ctl_hand_owes(const struct ssq_ctl *ctl, uint32_t id, uint32_t lkey,
                      uint32_t rkey);

/*
 * ssq_ctl_heal - the daemon's repair after deaths. Producers whose process
 * died must already be marked dead (ssq_ctl_mark_dead). Breaks the doorbell
 * and CQ leases and the combiner role they held (and a lease or role
 * naming a FREE record or none: a client's scribble); waits (up to
 * @timeout_ms) for live producers caught between their fetch-add and
 * recording it; then publishes, as one-WQEBB NOPs, every WQEBB below the
 * reserve counter that is neither published nor held by a live producer -
 * exactly what the dead reserved and never published, including a range
 * taken by a fetch-add they did not live to record - and submits. @h is
 * the healer's own producer handle. Returns the NOPs written, or
 * -ETIMEDOUT (call again later; nothing is half-done: positions are filled one at a time,
 * each published).
 */
int ssq_ctl_heal(struct ssq_producer *h, unsigned timeout_ms);

/*
 * ssq_ctl_set_error - put the queue in error: ssq_reserve returns -EIO
 * until ssq_ctl_reset. An error CQE does the same by itself; this is for
 * the owner taking the QP down (its peer is gone, it is stopping).
 * Any thread; WQEs already reserved are still published and rung.
 */
void ssq_ctl_set_error(struct ssq_ctl *ctl);

/* ssq_ctl_in_error - 1 while the queue is in error, else 0. Any thread. */
int ssq_ctl_in_error(const struct ssq_ctl *ctl);

/*
 * ssq_ctl_drained - 1 when nothing is in flight: no record RESERVING or
 * BUILDING, and every WQEBB reserved has completed; else 0. One look: the
 * caller routes (ssq_progress) and heals between looks. What ssq_ctl_reset
 * requires, for its owner to wait on.
 */
int ssq_ctl_drained(const struct ssq_ctl *ctl);

/*
 * ssq_ctl_reserved, ssq_ctl_completed - the queue's counters, in WQEBBs
 * since the last ssq_ctl_reset: how many were reserved, and how many of
 * those have completed (every WQEBB below it has). A WQE reserved before a
 * call has completed once ssq_ctl_completed() reaches what
 * ssq_ctl_reserved() returned then (and no reset came between). Any thread.
 */
uint64_t ssq_ctl_reserved(const struct ssq_ctl *ctl);
uint64_t ssq_ctl_completed(const struct ssq_ctl *ctl);

/* ssq_ctl_epoch - how many times the queue was reset. Any thread. */
uint32_t ssq_ctl_epoch(const struct ssq_ctl *ctl);

/*
 * ssq_ctl_check - is the control block one the protocol could have made?
 * Every client of the queue can write it; the owner (ssqd) looks, with its
 * own copies of the bounds in @owner (its producer handle) and the @epoch
 * it last set (ssq_ctl_epoch after its own ssq_ctl_init / ssq_ctl_reset /
 * ssq_ctl_rebuild). Checks: magic, ring, signal_every, comp_entries,
 * max_producers, epoch and state as made; leases 0 or a non-FREE record's id + 1;
 * the UAR half; completed <= published <= reserve, published at most a
 * ring past completed, reserve at most what the records could claim at
 * once; cq_ci within a CQ of the CQ's doorbell record; every record's
 * state, an open reservation inside reserve, its completion ring and WQEs
 * in flight at most comp_entries. Holds at every instant of a correct run
 * with producers posting meanwhile. On the thread that heals and resets.
 * Returns 0, -EUCLEAN (the block is inconsistent: @why, if not NULL, says
 * which field and how) or -EINVAL (no @owner).
 */
int ssq_ctl_check(const struct ssq_producer *owner, uint32_t epoch, char *why,
                  size_t whylen);

/*
 * ssq_ctl_quiesce - the first half of a rebuild, before the owner takes the
 * QP through RESET: reservations wait (-EAGAIN; RESTARTING), both leases become the
 * owner's (a live holder is waited for up to @timeout_ms, then overridden),
 * so nobody rings the QP or routes its CQ meanwhile, and each reservation
 * open in a record whose bit is set in @live is given until then to be
 * published. Returns 0 or -EINVAL (no @owner).
 */
int ssq_ctl_quiesce(struct ssq_producer *owner, uint64_t live, unsigned timeout_ms);

/*
 * ssq_ctl_rebuild - start over a control block ssq_ctl_check found
 * inconsistent (or a queue that must be taken back from its producers),
 * from @owner's copies of its bounds, after ssq_ctl_quiesce and the QP's
 * RESET back to RTS (its WQE counter, like ours, restarts at 0). The CQEs
 * the CQ still holds are routed; every WQE still in flight completes to
 * its owner as flushed (IBV_WC_WR_FLUSH_ERR, signaled or not); then the
 * header as made with @epoch, counters, doorbell half and slots at 0, both
 * leases free, and READY. Records whose bit is set in @live (process ids'
 * records the owner handed out, still connected), and the owner's own, are
 * kept IDLE with their pid and their completion ring (emptied if it held
 * more than a ring); every other record is freed. A reservation open in a
 * live record is void: its ssq_reserve and ssq_publish return -EIO.
 * Without ssq_ctl_quiesce first it takes the leases itself (waiting up to
 * @timeout_ms). Returns 0 or -EINVAL (no @owner).
 */
int ssq_ctl_rebuild(struct ssq_producer *owner, uint32_t epoch, uint64_t live,
                    unsigned timeout_ms);

/*
 * ssq_ctl_rebuild_held - ssq_ctl_rebuild, but the queue stays RESTARTING
 * (reservations -EAGAIN) until ssq_ctl_release: for a QP that cannot go
 * back to RTS before someone else answers (the peer host's QP restarting
 * at the PSNs this one will use). ssq_ctl_release - RESTARTING to READY;
 * -ESTALE (nothing done) when the state is anything else, such as the
 * ERROR of a fence meanwhile. Both return 0 or -EINVAL (no @owner/@ctl).
 */
int ssq_ctl_rebuild_held(struct ssq_producer *owner, uint32_t epoch, uint64_t live,
                         unsigned timeout_ms);
int ssq_ctl_release(struct ssq_ctl *ctl);

#ifdef __cplusplus
}
#endif

#endif /* DV_CTL_H */
