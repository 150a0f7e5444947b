/* SPDX-License-Identifier: MIT */
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
#ifndef SSQ_CTRL_RECV_POOL_H
#define SSQ_CTRL_RECV_POOL_H

#include <pthread.h>
#include <stdint.h>
#include <ssq/cq.h>
#include <ssq/rq.h>
#include "ctrl/daemon/util/sleeper_beat.h"
#include "shm/layout.h"

struct ssqd;
struct ssqd_options;

struct ssqd_recv_pool {
	pthread_mutex_t lock; /* poller vs control thread */
	int inited;           /* lock initialised, log and buffers carved */
	int armed;            /* the poller may poll (atomic; changed under lock) */
	int events; /* the device calls cq_event's handler as CQEs land (no spinning) */
	int missed; /* atomic: that handler found the lock held; the poller looks */
	struct ssq_rq rq; /* the receiving QP's RQ */
	struct ssq_cq cq; /* its receive CQ */
	struct shm_recv_log *log;
	uint64_t buf_iova; /* buffer 0 */
	uint32_t lkey;     /* the data arena's */
	uint32_t depth, slots, size;
	uint64_t arrived, posted; /* the poller's copies of the log's counters */
	uint64_t flushed;         /* flush CQEs consumed (not logged) */
	uint64_t errors;          /* error records logged */
	struct ssqd_beat beat;    /* log->beat, as the poller sees it */
	struct ssqd_beat
	    ev_beat; /* the same, as rx_event (the device's thread) sees it */
};

struct ssqd_recv_poller {
	pthread_t thread;
	int running;
	int stop;         /* atomic */
	uint32_t idle_ms; /* atomic: ssqd_recv_idle's */
	uint32_t kick;    /* atomic, a futex: bumped when idle_ms drops to 0 */
};

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

#endif /* SSQ_CTRL_RECV_POOL_H */
