/* SPDX-License-Identifier: MIT */
/*
 * Adversary, completion events: ssq_wait counts its sleepers in the
 * queue's control block (ctl->waiters), and on the emulated device ssqd's
 * send-CQ event (ssqd_queue_send_event, queues/queue.c) wakes them from the device's
 * own thread - the thread that runs every queue's WQEs - with a FUTEX_WAKE
 * whenever the count is nonzero. A process killed in ssq_wait (SIGKILL,
 * Ctrl-C) never takes its count back, and a client may write any count:
 * before, the device's thread then made a system call (and moved wake_seq)
 * for every pass that wrote a CQE into that queue's CQ, for as long as
 * ssqd ran. A sleeper now also beats (ctl->wait_beat, once a slice), and
 * a count whose beat stood still for SSQD_WAIT_BEAT_NS is not woken: a
 * live sleeper missed that way finds its completion at the end of its
 * slice, as it did before the device woke anyone.
 *
 * ssqd runs in this process (ssqd_setup), so nobody routes q0's CQ but the
 * device's event moves wake_seq: a count left at 1 with no beat, then
 * twenty signaled WRITEs, one pass each. Then the same with a live-looking
 * sleeper (its beat moving): the device wakes it.
 */
#define _GNU_SOURCE
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "events_flow.h"

#define WRITES 20

static uint32_t cqes_seen; /* CQEs q0's CQ got from our WRITEs so far */

/* WRITES signaled WRITEs through @q, each after the last one's CQE landed. */
static int writes(struct ssqd *d, struct ssqd_queue *q, int beat)
{
	const struct ssq_cq *cq = &q->prod.cq;
	uint64_t laddr = d->own.data_iova;
	int i, rc;

	for (i = 0; i < WRITES; i++) {
		uint32_t idx = q->ctl->cq_ci + cqes_seen++;
		const struct mlx5_cqe64 *cqe =
		    (const struct mlx5_cqe64 *)(cq->buf +
		                                ((size_t)(idx & (cq->cqe_cnt - 1)) << 6));
		double deadline = mono_now() + 5;
		uint8_t op;

		if (beat)
			__atomic_fetch_add(&q->ctl->wait_beat, 1, __ATOMIC_RELAXED);
		rc = ssq_post_write(&q->prod, laddr, d->own.data_key, 64, laddr + 4096,
		                    d->own.data_key, 1 + (uint64_t)i, SSQ_WQE_SIGNALED);
		if (rc)
			return rc;
		/* Nobody routes: wait for CQE idx itself, then for its event. */
		do {
			op = __atomic_load_n(&cqe->op_own, __ATOMIC_ACQUIRE);
			if ((op >> 4) != MLX5_CQE_INVALID &&
			    (op & 1) == !!(idx & cq->cqe_cnt))
				break;
			usleep(100);
		} while (mono_now() < deadline);
		usleep(2000);
	}
	return 0;
}

int main(void)
{
	struct ssqd *d = ev_ssqd_new("waiters");
	struct ssqd_queue *q;
	uint32_t s0, moved;
	int rc;

	if (!d)
		return 1;
	d->opt.recv_depth = 0;
	d->opt.signal_every = 1;
	if (ev_ssqd_start(d))
		return test_exit("ctrl_adv_events_stale_waiters");
	q = &d->queues[0];

	/* A sleeper's count left behind: it never beats again. */
	__atomic_store_n(&q->ctl->waiters, 1, __ATOMIC_RELAXED);
	usleep((SSQD_WAIT_BEAT_NS / 1000) + 20000);
	s0 = __atomic_load_n(&q->ctl->wake_seq, __ATOMIC_RELAXED);
	rc = writes(d, q, 0);
	CHECK(rc == 0, "the WRITEs: %d", rc);
	moved = __atomic_load_n(&q->ctl->wake_seq, __ATOMIC_RELAXED) - s0;
	CHECK(moved == 0,
	      "a count nobody beats for: the device's thread woke it %u times in %d "
	      "passes",
	      moved, WRITES);
	printf("stale count: woken %u times in %d passes\n", moved, WRITES);

	/* A sleeper that beats is woken, pass after pass. */
	s0 = __atomic_load_n(&q->ctl->wake_seq, __ATOMIC_RELAXED);
	rc = writes(d, q, 1);
	CHECK(rc == 0, "the WRITEs: %d", rc);
	moved = __atomic_load_n(&q->ctl->wake_seq, __ATOMIC_RELAXED) - s0;
	CHECK(moved == WRITES, "a sleeper that beats: woken %u times in %d passes", moved,
	      WRITES);
	printf("live sleeper: woken %u times in %d passes\n", moved, WRITES);

	ev_ssqd_down(d);
	return test_exit("ctrl_adv_events_stale_waiters");
}
