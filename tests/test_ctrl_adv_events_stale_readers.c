/* SPDX-License-Identifier: MIT */
/*
 * Adversary, completion events: readers asleep in ssq_recv_wait count
 * themselves in the receive log (log->waiters, client memory), and on the
 * emulated device ssqd logs receives from the device's own thread (rx_event
 * in recv_pool.c), the thread that runs every queue's WQEs, waking the
 * readers with a FUTEX_WAKE whenever the count is nonzero. A reader killed
 * asleep never takes its count back: the device's thread then made a
 * system call (and moved wake_seq) for every message logged on that queue
 * for as long as ssqd ran. The poller has long stopped spinning for such a
 * count once its beat (log->beat, moved by each sleeper before each slice)
 * stands; the device's thread must stop waking it too, and go on waking a
 * count whose beat moves.
 *
 * ssqd runs in this process (ssqd_setup), its poller stopped, so only the
 * device's events log: a count left at 1 with no beat, twenty SENDs
 * through q0, one at a time; then the same with the beat moving.
 */
#define _GNU_SOURCE
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "events_flow.h"

#define SENDS 20

static uint64_t arrived(struct ssqd_recv_pool *p)
{
	return __atomic_load_n(&p->log->arrived, __ATOMIC_ACQUIRE);
}

/* SENDS SENDs through @q, each logged before the next. */
static int sends(struct ssqd *d, struct ssqd_queue *q, int beat)
{
	struct ssqd_recv_pool *p = &q->rx;
	int i, rc;

	for (i = 0; i < SENDS; i++) {
		uint64_t a0 = arrived(p);
		double deadline = mono_now() + 5;

		if (beat)
			__atomic_fetch_add(&p->log->beat, 1, __ATOMIC_RELAXED);
		rc = ssq_post_send(&q->prod, MLX5_OPCODE_SEND, d->own.data_iova,
		                   d->own.data_key, 64, 0, 1 + (uint64_t)i, 0);
		if (rc)
			return rc;
		while (arrived(p) == a0 && mono_now() < deadline)
			usleep(100);
		if (arrived(p) == a0)
			return -ETIMEDOUT;
		usleep(1000);
	}
	return 0;
}

int main(void)
{
	struct ssqd *d = ev_ssqd_new("readers");
	struct ssqd_recv_pool *p;
	struct ssqd_queue *q;
	uint32_t s0, moved;
	int rc;

	if (!d)
		return 1;
	if (ev_ssqd_start(d))
		return test_exit("ctrl_adv_events_stale_readers");
	q = &d->queues[0];
	p = &q->rx;
	CHECK(p->events, "q0's receive pool is logged by the device's events");
	ssqd_recv_stop(d); /* only the device's thread logs from here */

	/* A reader's count left behind: it never beats again. */
	__atomic_store_n(&p->log->waiters, 1, __ATOMIC_RELAXED);
	usleep((SSQD_WAIT_BEAT_NS / 1000) + 20000);
	s0 = __atomic_load_n(&p->log->wake_seq, __ATOMIC_RELAXED);
	rc = sends(d, q, 0);
	CHECK(rc == 0, "the SENDs were logged: %d", rc);
	moved = __atomic_load_n(&p->log->wake_seq, __ATOMIC_RELAXED) - s0;
	CHECK(moved == 0,
	      "a count nobody beats for: the device's thread woke it %u times for %d "
	      "messages",
	      moved, SENDS);
	printf("stale count: woken %u times for %d messages\n", moved, SENDS);

	/* A reader that beats is woken, message after message. */
	s0 = __atomic_load_n(&p->log->wake_seq, __ATOMIC_RELAXED);
	rc = sends(d, q, 1);
	CHECK(rc == 0, "the SENDs were logged: %d", rc);
	moved = __atomic_load_n(&p->log->wake_seq, __ATOMIC_RELAXED) - s0;
	CHECK(moved == SENDS, "a reader that beats: woken %u times for %d messages",
	      moved, SENDS);
	printf("live reader: woken %u times for %d messages\n", moved, SENDS);

	ev_ssqd_down(d);
	return test_exit("ctrl_adv_events_stale_readers");
}
