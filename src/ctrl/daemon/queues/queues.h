/* SPDX-License-Identifier: MIT */
/*
 * queues/: one shared queue's life in ssqd - its QP and control block
 * made, connected, published, fenced, healed, recovered and started over
 * (queue.c, start_over.c); its receive pool (recv_pool.c); the send-arm
 * threads (send_arm.c); the device's async events (async_events.c); the
 * arena header put back from ssqd's own copy (arena_header.c).
 */
#ifndef SSQ_CTRL_DAEMON_QUEUES_H
#define SSQ_CTRL_DAEMON_QUEUES_H

#include <stddef.h>
#include <stdint.h>
#include "ctrl/daemon/ssqd.h"

/*
 * One queue's life (queues/queue.c), called by the bring-up and the peer link:
 * ssqd_queue_make - the queue's QP (and, loopback, its other end), control
 *   block, receive pool and UAR mapping;
 * ssqd_queue_local_addr - what the peer is told of the QP @b of queue @i;
 * ssqd_queue_connect - RESET/INIT -> RTR -> RTS against @peer;
 * ssqd_queue_connect_all - every queue connected, its receives posted, published;
 * ssqd_queue_publish - the layout entry clients read: fields, then READY;
 * ssqd_queue_recover - bring queue @qi from ERR back to RTS once every
 *   request in flight has been flushed and routed.
 * The int ones return 0 or a negative errno with the reason in @why.
 */
uint32_t ssqd_queue_new_psn(void);
/*
 * Queue @i's name for clients: "qK", or "PEER/qK" in a cluster.
 * ssqd_queue_is_loopback: whether its other end is inside this ssqd (no
 * peer mode, or a cluster's own queues, after the peers').
 */
int ssqd_queue_is_loopback(const struct ssqd *d, unsigned i);
void ssqd_queue_name(const struct ssqd *d, unsigned i, char name[SSQ_NAME_MAX]);
/*
 * ssqd_hdr_restore (arena_header.c) - rewrite the arena header's fixed part
 * and the queue names from d->own, undoing whatever a client scribbled.
 */
void ssqd_hdr_restore(struct ssqd *d);
/*
 * ssqd_queue_layout_restore (queues/queue.c) - rewrite queue @i's layout in
 * the header, all but its state, from ssqd's own records (once published).
 */
void ssqd_queue_layout_restore(struct ssqd *d, unsigned i);
/*
 * ssqd_queue_list (queues/queue.c) - list queue @i as @state: ssqd's own
 * word (q->listed), then the header's copy, released after what was
 * written before it.
 */
void ssqd_queue_list(struct ssqd *d, unsigned i, uint32_t state);
int ssqd_queue_make(struct ssqd *d, unsigned i, char *why, size_t whylen);

/*
 * Grants' end (queues/grants.c): ssqd_grant_revoke frees grant @g's window
 * and its slot - the window once its bind cannot run, the slot once its
 * GRANT is answered (both from ssqd_grants_tick when not yet); calling it
 * again is harmless. ssqd_queue_grants_drop revokes every grant bound to
 * queue @qi's QP (its link went down) and returns how many.
 */
void ssqd_grant_revoke(struct ssqd *d, struct ssqd_grant *g);
unsigned ssqd_queue_grants_drop(struct ssqd *d, unsigned qi);
/*
 * ssqd_grants_seen: @n completions of ssqd's producer on queue @qi,
 * whoever polled them: the binds among them are done (their grants'
 * bind_rc). ssqd_grant_free frees @g's window and slot even while its
 * bind may run (ssqd's end only: the QPs go next).
 */
void ssqd_grants_seen(struct ssqd *d, unsigned qi, const struct ssq_completion *comp,
                      int n);
void ssqd_grant_free(struct ssqd *d, struct ssqd_grant *g);
/*
 * Queue @qi's QP went through RESET and its control block was rebuilt (a
 * start over, a recovery): no bind on its ring can run any more; its
 * grants' GRANTs are answered -ECANCELED (clients/grant.c).
 */
void ssqd_queue_binds_reset(struct ssqd *d, unsigned qi);

/*
 * ssqd_queue_send_event - CQEs landed in @arg's (a struct ssqd_queue)
 * send CQ: wake the producers asleep in ssq_wait on it, if any beat lately.
 * The device's thread calls it (cq_event), or ssqd's send-arm event thread.
 */
void ssqd_queue_send_event(void *arg, unsigned cqes);
int ssqd_queue_local_addr(struct ssqd *d, const struct ssqd_bqueue *b, unsigned i,
                          uint32_t psn, struct proto_peer_addr *a, char *why,
                          size_t whylen);
int ssqd_queue_connect(struct ssqd *d, struct ssqd_bqueue *b, uint32_t my_psn,
                       const struct proto_peer_addr *peer, char *why, size_t whylen);
int ssqd_queue_connect_all(struct ssqd *d, const struct proto_peer_addr *remote,
                           char *why, size_t whylen);
void ssqd_queue_publish(struct ssqd *d, unsigned i, const struct proto_peer_addr *peer);
int ssqd_queue_recover(struct ssqd *d, unsigned qi, uint64_t end_ns, char *why,
                       size_t whylen);
/*
 * ssqd_queue_recover in steps, for callers that must not block
 * (clients/recover.c): ssqd_queue_in_error - 0, or -EINVAL with @why;
 * ssqd_queue_drained - one look at whether everything reserved before the
 * error has completed and been routed (1) or not yet (0), moving it along;
 * ssqd_queue_restart - RESET, reconnect, counters restarted, READY;
 * ssqd_queue_busy_why - the sentence for a drain that ran out of time.
 */
int ssqd_queue_in_error(struct ssqd *d, unsigned qi, char *why, size_t whylen);
/*
 * ssqd_queue_fence - queue @i to ERROR: its listing, its shared state
 * (reservations get -EIO) and its QP (what is in flight is flushed).
 */
void ssqd_queue_fence(struct ssqd *d, unsigned i);
/* One try (SSQD_HEAL_TRY_MS) at healing queue @qi after deaths; heal_pending if more is
 * needed. */
void ssqd_queue_heal(struct ssqd *d, unsigned qi);
int ssqd_queue_drained(struct ssqd *d, unsigned qi);
int ssqd_queue_restart(struct ssqd *d, unsigned qi, char *why, size_t whylen);
/*
 * Its first half: the QP (and a loopback peer's) through RESET back to RTS,
 * in two steps: ssqd_queue_reset_qp (to RESET; nothing posted into it), and
 * ssqd_queue_reconnect (to RTS at d->psn[qi] against q->remote, whose psn
 * is the peer's send PSN; the receive pool posted again).
 */
int ssqd_queue_restart_qp(struct ssqd *d, unsigned qi, char *why, size_t whylen);
int ssqd_queue_reset_qp(struct ssqd *d, unsigned qi, char *why, size_t whylen);
int ssqd_queue_reconnect(struct ssqd *d, unsigned qi, char *why, size_t whylen);
/*
 * The last step of a restart or a rebuild, once the control block works
 * again: a queue a fence listed ERROR is listed READY.
 */
void ssqd_queue_relist(struct ssqd *d, unsigned qi);
void ssqd_queue_busy_why(struct ssqd *d, unsigned qi, unsigned ms, char *why,
                         size_t whylen);

/*
 * ssqd_async_poll - take every pending async event of the device (no
 * waiting) and fence the queues whose QP, CQ, port or device failed.
 * Returns how many events it took. async_events.c.
 */
int ssqd_async_poll(struct ssqd *d);

/*
 * ssqd_live_records - the producer records of the clients attached to
 * queue @qi, a bit each: the ones a rebuild keeps, and the only ones whose
 * holds count. ssqd_queue_start_over - once queue @qi's QP is through
 * RESET: the control block rebuilt (what was in flight flushed to its
 * owners), nothing left to heal or watch, and the queue listed READY
 * again; with @held it stays RESTARTING instead, for ssq_ctl_release
 * (queues/start_over.c). SSQD_LEASE_MS: how long the rebuild waits for a
 * live client routing or ringing now.
 */
void ssqd_queue_start_over(struct ssqd *d, unsigned qi, int held);
uint64_t ssqd_live_records(const struct ssqd *d, unsigned qi);

/*
 * ssqd's receive pool: for every queue, receive WQEs kept posted at the QP
 * that receives what the queue's other end sends (loopback: the hidden
 * peer QP inside ssqd; peer mode: the queue's own QP), and a shared log of
 * what arrived, which clients read with ssq_recv_peek / ssq_recv_copy
 * (<ssq/client.h>).
 *
 * Numbering: message k is the k-th receive completion logged for the queue
 * (k = 0, 1, ...); it was received by receive WQE k, which scattered into
 * buffer k % slots (slots = 2 * depth). Completion k is logged as record k
 * (log rec[k % slots]); then receive WQE k + depth is posted, so depth WQEs
 * stay posted and the buffer of message k is handed out again only with
 * WQE k + slots, once depth more messages have arrived.
 *
 * One poller thread (ssqd_recv_start) polls every armed pool's receive CQ:
 * busy while CQEs come, 100 us sleeps after 200 us without one. The control
 * thread pauses a pool before its QP is reset and arms it again once the QP
 * is back in RTS (ssqd_recv_pause / ssqd_recv_arm); a per-pool mutex keeps
 * the two threads apart.
 *
 * Errors and recovery:
 *  - a flush CQE (WR_FLUSH_ERR: the QP went to ERR) is consumed and not
 *    logged: it carries no message, and its WQE is not re-posted;
 *  - any other error CQE (e.g. LOCAL_LENGTH_ERR, a SEND longer than a
 *    buffer) is logged as a record with that status, and a WQE re-posted
 *    as for a success (if the QP went to ERR, that WQE is flushed too);
 *  - after a reset, ssqd_recv_arm drains what the CQ still holds (logging
 *    as above), restarts the RQ at index 0 and posts WQEs arrived ..
 *    arrived + depth - 1: the counters keep growing, messages lost in the
 *    error were never logged, and numbering stays gap-free.
 */

/* Data-arena bytes the pools of all queues take (0 with --recv-depth 0). */
uint64_t ssqd_recv_data_bytes(const struct ssqd_options *o);

/* Arena bytes (outside the data arena) one queue's log takes. */
uint64_t ssqd_recv_log_bytes(const struct ssqd_options *o);

/*
 * ssqd_recv_alloc - carve queue @qi's log (arena) and buffers (the data
 * arena's tail, after what clients may allocate) and describe them in the
 * queue's layout. Setup only, after the queue's QPs exist. Returns 0 or
 * -ENOSPC with a sentence in @why.
 */
int ssqd_recv_alloc(struct ssqd *d, unsigned qi, char *why, size_t whylen);
/* Queue @qi's pool (if it has one) described in layout @l. */
void ssqd_recv_layout(const struct ssqd *d, unsigned qi, struct shm_queue_layout *l);

/*
 * ssqd_recv_arm - queue @qi's receiving QP has just come from RESET to RTS
 * (setup, recovery, reconnect): drain its receive CQ, restart the RQ and
 * post depth receive WQEs, then let the poller at it. Returns 0, or -EINVAL
 * with a sentence in @why (an RQ too small for the depth). A no-op
 * without a pool. Control thread.
 */
int ssqd_recv_arm(struct ssqd *d, unsigned qi, char *why, size_t whylen);

/*
 * ssqd_recv_pause - stop polling and posting for queue @qi before its
 * receiving QP is reset; returns once the poller is out of it. Control
 * thread.
 */
void ssqd_recv_pause(struct ssqd *d, unsigned qi);

/* Start / stop the poller thread. Start returns 0 or a negative errno. */
int ssqd_recv_start(struct ssqd *d);

/*
 * @max_ms nonzero: nothing can arrive for now (loopback queues, no client
 * attached to send), so the poller, idle a second, may sleep up to
 * @max_ms; 0: something may come now, the poller wakes at once. Control
 * thread.
 */
void ssqd_recv_idle(struct ssqd *d, unsigned max_ms);
void ssqd_recv_stop(struct ssqd *d);

/*
 * Waking ssq_wait's sleepers where the device announces CQEs only on an
 * armed CQ (a ConnectX; the emulated device with SSQ_EMU_CQ_EVENTS=0):
 * two threads of ssqd, one that arms a queue's send CQ when a sleeper asks
 * (the arena header's tx_arm_seq), one that takes the events and wakes the
 * queue's sleepers. Where the device's own events reach ssqd (the backend's
 * cq_event) neither runs.
 */

/*
 * Start the two threads if the backend arms send CQs and some queue's
 * device gives no events of its own (ssqd_queue_make set q->tx_native);
 * set those queues' ctl->tx_arm to WANTED. 0 or -errno.
 */
int ssqd_send_arm_start(struct ssqd *d);

/*
 * Put queue @qi's ctl->tx_arm back to what ssqd knows (WANTED or SET) if
 * a client wrote another value: with NONE or a stale SET there, its
 * sleepers would never ask again. Never waits for the threads' lock (the
 * serve loop calls it): busy, it leaves the look to the next call.
 */
void ssqd_send_arm_restore(struct ssqd *d, unsigned qi);

/* Stop them (before the device closes: they arm and read its CQs' events). */
void ssqd_send_arm_stop(struct ssqd *d);

/*
 * ssqd_queues_idle - @idle: the device's thread and (only loopback queues
 * receive nothing unasked) the receive poller may sleep up to
 * SSQD_IDLE_MS; 0: they poll as usual, woken now. ssqd_idle_leave - busy
 * from now on, before anything that lets a client ring a doorbell (an
 * attach's answer). queues/device_idle.c.
 */
void ssqd_queues_idle(struct ssqd *d, int idle);
void ssqd_idle_leave(struct ssqd *d);

/*
 * A producer record's process is gone (or detached): mark it DEAD, so the
 * router drops its completions, the record can be reclaimed and the next
 * heal takes over what it left half-done.
 */
static inline void ssqd_queue_mark_dead(struct ssqd *d, unsigned qi, uint32_t id)
{
	struct ssqd_queue *q = &d->queues[qi];

	(void)ssq_ctl_mark_dead(q->ctl, id); /* ids are ours: in range */
	q->heal_pending = 1;
}

#endif /* SSQ_CTRL_DAEMON_QUEUES_H */
