/* SPDX-License-Identifier: MIT */
/*
 * ssq_wait on a device that raises CQ events only on an armed CQ (a
 * ConnectX; here the emulated device with SSQ_EMU_CQ_EVENTS=0): ssqd's
 * send-arm threads (send_arm.c) arm a queue's send CQ when a sleeper asks
 * and wake the sleepers at its event.
 *
 * ssqd runs in this process (ssqd_setup, no serve loop), and its own
 * producer of q0 posts and sleeps. Checked:
 * - no sleeper, no arm: twenty signaled WRITEs routed by polling arm
 *   nothing (an armed CQ costs an event, on a ConnectX an interrupt);
 * - a lone sleeper is woken by the event: the device stopped, a WRITE
 *   posted, a sleeper counted (as ssq_wait counts itself) asks for an arm;
 *   once the CQ is armed the device runs again, and ssqd takes the event
 *   and moves wake_seq (without the arm nothing would, and the sleeper
 *   would find its completion only at its slice's end). Then the same
 *   with ssq_wait itself, which must return the completion (whether its
 *   slice or ssqd's wake comes first is the scheduler's);
 * - a router that holds the CQ lease and does not route (stopped, or
 *   killed and not healed yet) leaves a CQE nobody may take: a sleeper
 *   waiting 200 ms meanwhile must not have ssqd arm at that CQE and take
 *   its event again and again (a spin of ssqd's threads and the sleeper);
 * - a client scribbling the arm word, tx_arm and the consumer index costs
 *   looks, not a hang: the sleeper still gets its completion in time.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "events_flow.h"
#include "dv/queue_wait.h"

static struct ssqd *d;
static struct ssqd_queue *q;
static uint64_t next_id = 1;

static int write1(void)
{
	uint64_t laddr = d->own.data_iova;

	return ssq_post_write(&q->prod, laddr, d->own.data_key, 64, laddr + 4096,
	                      d->own.data_key, next_id++, SSQ_WQE_SIGNALED);
}

struct sleeper {
	pthread_t t;
	uint64_t timeout_ns;
	int rc;
};

static void *sleep_main(void *arg)
{
	struct sleeper *s = arg;

	s->rc = ssq_wait(&q->prod, 1, s->timeout_ns);
	return NULL;
}

/* Take @n completions, each a success. */
static void reap(int n)
{
	struct ssq_completion c;
	double deadline = mono_now() + 5;

	while (n > 0 && mono_now() < deadline) {
		int got = ssq_poll(&q->prod, &c, 1);

		if (got == 1) {
			CHECK(c.status == IBV_WC_SUCCESS, "completion %llu: status %d",
			      (unsigned long long)c.wr_id, c.status);
			n--;
		} else if (!got) {
			usleep(100);
		} else {
			CHECK(0, "ssq_poll: %d", got);
			return;
		}
	}
	CHECK(n == 0, "%d completion(s) never came", n);
}

static void no_sleeper_no_arm(void)
{
	uint64_t a0 = q->txa.arms;
	int i;

	for (i = 0; i < 20; i++) {
		CHECK(write1() == 0, "WRITE %d", i);
		reap(1);
	}
	CHECK(q->txa.arms == a0, "nobody slept, yet ssqd armed the send CQ %llu times",
	      (unsigned long long)(q->txa.arms - a0));
}

/* Wait up to 3 s for @v to differ from @v0. */
static int moves(const uint64_t *v, uint64_t v0)
{
	double deadline = mono_now() + 3;

	while (__atomic_load_n(v, __ATOMIC_ACQUIRE) == v0 && mono_now() < deadline)
		usleep(200);
	return __atomic_load_n(v, __ATOMIC_ACQUIRE) != v0;
}

static void lone_sleeper_woken(void)
{
	struct sleeper s = { .timeout_ns = 3000000000ull };
	uint32_t seq0 = __atomic_load_n(&q->ctl->wake_seq, __ATOMIC_RELAXED);
	uint64_t e0 = q->txa.events;
	double deadline = mono_now() + 3;

	/* What ssq_wait does before it sleeps, held while ssqd acts. */
	d->ops->stop(d->backend);
	CHECK(write1() == 0, "the WRITE");
	ssq__sleeper_in(q->ctl);
	dv_sleeper_ask_arm(&q->prod);
	while (!__atomic_load_n(&q->txa.armed, __ATOMIC_ACQUIRE) && mono_now() < deadline)
		usleep(200);
	CHECK(q->txa.armed, "a sleeper asked, yet ssqd never armed the send CQ");
	CHECK(d->ops->start(d->backend) == 0, "the device again");
	CHECK(moves(&q->txa.events, e0), "the CQE came, yet ssqd took no event");
	CHECK(__atomic_load_n(&q->ctl->wake_seq, __ATOMIC_RELAXED) != seq0,
	      "ssqd did not wake the sleeper (wake_seq unmoved)");
	CHECK(__atomic_load_n(&q->ctl->tx_arm, __ATOMIC_RELAXED) == SSQ_TX_ARM_WANTED,
	      "ctl->tx_arm %u after the event, want WANTED", q->ctl->tx_arm);
	__atomic_fetch_sub(&q->ctl->waiters, 1, __ATOMIC_RELAXED);
	reap(1);

	/* ssq_wait itself. */
	e0 = q->txa.events;
	deadline = mono_now() + 3;
	d->ops->stop(d->backend);
	CHECK(write1() == 0, "the WRITE");
	CHECK(pthread_create(&s.t, NULL, sleep_main, &s) == 0, "the sleeper");
	while (!__atomic_load_n(&q->txa.armed, __ATOMIC_ACQUIRE) && mono_now() < deadline)
		usleep(200);
	CHECK(q->txa.armed, "the sleeper asked, yet ssqd never armed the send CQ");
	CHECK(__atomic_load_n(&q->ctl->tx_arm, __ATOMIC_RELAXED) == SSQ_TX_ARM_SET,
	      "ctl->tx_arm %u, want SET while armed", q->ctl->tx_arm);
	CHECK(d->ops->start(d->backend) == 0, "the device again");
	pthread_join(s.t, NULL);
	CHECK(s.rc == 1, "ssq_wait: %d, want 1", s.rc);
	CHECK(moves(&q->txa.events, e0), "ssq_wait's CQE came, yet ssqd took no event");
	reap(1);
	printf("lone sleeper: woken by ssqd after %llu arm(s), %llu event(s)\n",
	       (unsigned long long)q->txa.arms, (unsigned long long)q->txa.events);
}

static void stuck_router_no_spin(void)
{
	struct sleeper s = { .timeout_ns = 200000000ull };
	uint64_t e0;

	/* Producer 7 holds the lease and never routes. */
	__atomic_store_n(&q->ctl->cq_lease, 8, __ATOMIC_RELEASE);
	CHECK(write1() == 0, "the WRITE");
	usleep(20000); /* its CQE lands, unrouted */
	e0 = q->txa.events;
	CHECK(pthread_create(&s.t, NULL, sleep_main, &s) == 0, "the sleeper");
	pthread_join(s.t, NULL);
	CHECK(s.rc == -ETIMEDOUT, "ssq_wait behind a held lease: %d, want -ETIMEDOUT",
	      s.rc);
	/* One event at its arm, perhaps one more at the slice's edges. */
	CHECK(q->txa.events - e0 <= 8,
	      "200 ms behind a held lease: ssqd took %llu events (armed at a CQE "
	      "nobody may take, again and again)",
	      (unsigned long long)(q->txa.events - e0));
	printf("stuck router: %llu event(s) in 200 ms\n",
	       (unsigned long long)(q->txa.events - e0));
	__atomic_store_n(&q->ctl->cq_lease, 0, __ATOMIC_RELEASE);
	reap(1);
}

/*
 * ssqd's serve loop looking at q0's block, a few times: the look never
 * waits for the arm threads' lock, and leaves the work to the next look
 * while they hold it.
 */
static void guard_looks(void)
{
	int i;

	for (i = 0; i < 50; i++) {
		ssqd_queue_guard(d, 0, q->guard_next_ns);
		usleep(1000);
	}
}

/*
 * A consumer index written ahead of the device's producer: an arm there
 * raises its event at once, with no CQE behind it. Armed again and again
 * for a sleeper that asks after each wake, ssqd's threads and the sleeper
 * would spin for as long as the index stays wrong.
 */
static void index_ahead_no_spin(void)
{
	struct sleeper s = { .timeout_ns = 200000000ull };
	double deadline = mono_now() + 3;
	uint32_t ci;
	uint64_t e0;

	/* An arm left from before raises its event at the next CQE. */
	CHECK(write1() == 0, "the WRITE");
	reap(1);
	while (__atomic_load_n(&q->txa.armed, __ATOMIC_ACQUIRE) && mono_now() < deadline)
		usleep(200);
	CHECK(!q->txa.armed, "the send CQ is still armed after a CQE");
	ci = q->ctl->cq_ci;
	e0 = q->txa.events;
	__atomic_store_n(&q->ctl->cq_ci, ci + 1000, __ATOMIC_RELAXED);
	CHECK(pthread_create(&s.t, NULL, sleep_main, &s) == 0, "the sleeper");
	pthread_join(s.t, NULL);
	__atomic_store_n(&q->ctl->cq_ci, ci, __ATOMIC_RELAXED);
	CHECK(s.rc == -ETIMEDOUT, "nothing posted: ssq_wait %d, want -ETIMEDOUT", s.rc);
	CHECK(q->txa.events - e0 <= 8,
	      "200 ms with the consumer index ahead of the device: ssqd took %llu "
	      "events (armed where the event fires at once, again and again)",
	      (unsigned long long)(q->txa.events - e0));
	printf("index ahead: %llu event(s) in 200 ms\n",
	       (unsigned long long)(q->txa.events - e0));
}

static void scribbles(void)
{
	struct sleeper s = { .timeout_ns = 3000000000ull };
	uint32_t ci = q->ctl->cq_ci;
	int i;

	for (i = 0; i < 1000; i++)
		__atomic_fetch_add(&d->hdr->tx_arm_seq, 17, __ATOMIC_RELAXED);
	/* A client says it is armed: its sleepers route at their slices. */
	__atomic_store_n(&q->ctl->tx_arm, SSQ_TX_ARM_SET, __ATOMIC_RELAXED);
	d->ops->stop(d->backend);
	CHECK(write1() == 0, "the WRITE");
	CHECK(pthread_create(&s.t, NULL, sleep_main, &s) == 0, "the sleeper");
	usleep(5000);
	CHECK(d->ops->start(d->backend) == 0, "the device again");
	pthread_join(s.t, NULL);
	CHECK(s.rc == 1, "scribbled tx_arm: ssq_wait %d, want 1", s.rc);
	reap(1);
	/* ssqd's periodic look at the block (the serve loop's) puts it back. */
	guard_looks();
	CHECK(__atomic_load_n(&q->ctl->tx_arm, __ATOMIC_RELAXED) ==
	          (q->txa.armed ? SSQ_TX_ARM_SET : SSQ_TX_ARM_WANTED),
	      "scribbled tx_arm: still %u after ssqd's guard looked", q->ctl->tx_arm);
	__atomic_store_n(&q->ctl->tx_arm, SSQ_TX_ARM_NONE, __ATOMIC_RELAXED);
	guard_looks();
	CHECK(__atomic_load_n(&q->ctl->tx_arm, __ATOMIC_RELAXED) != SSQ_TX_ARM_NONE,
	      "tx_arm scribbled to NONE: not put back");
	/*
	 * A wrong consumer index: the arm lands anywhere, and a sleeper still
	 * gets its completion (by the event or at its slice's end).
	 */
	__atomic_store_n(&q->ctl->cq_ci, ci + 12345, __ATOMIC_RELAXED);
	d->ops->stop(d->backend);
	CHECK(write1() == 0, "the WRITE");
	CHECK(pthread_create(&s.t, NULL, sleep_main, &s) == 0, "the sleeper");
	usleep(5000);
	__atomic_store_n(&q->ctl->cq_ci, ci, __ATOMIC_RELAXED);
	CHECK(d->ops->start(d->backend) == 0, "the device again");
	pthread_join(s.t, NULL);
	CHECK(s.rc == 1, "scribbled consumer index: ssq_wait %d, want 1", s.rc);
	reap(1);
}

int main(void)
{
	d = ev_ssqd_new("arm");
	if (!d)
		return 1;
	d->opt.recv_depth = 0;
	d->opt.signal_every = 1;
	d->opt.arena_rkey = 1; /* the WRITEs go arena to arena under its key */
	setenv("SSQ_EMU_CQ_EVENTS", "0", 1);
	{
		char why[512] = "";
		int rc = ssqd_setup(d, why, sizeof(why));

		CHECK(rc == 0, "ssqd_setup: %d (%s)", rc, why);
		if (rc)
			return test_exit("ctrl_wait_arm");
	}
	q = &d->queues[0];
	CHECK(!q->tx_native && q->txa.on && d->txa.running,
	      "events off: q0's sleepers ask for arms (native %d, on %d, running %d)",
	      q->tx_native, q->txa.on, d->txa.running);
	CHECK(q->ctl->tx_arm == SSQ_TX_ARM_WANTED, "ctl->tx_arm %u, want WANTED",
	      q->ctl->tx_arm);
	/*
	 * A connecting client's header restore must not put the arm word
	 * back: a sleeper's bump lost under it leaves the sleeper unarmed.
	 */
	__atomic_store_n(&d->hdr->tx_arm_seq, 7, __ATOMIC_RELAXED);
	ssqd_hdr_restore(d);
	CHECK(__atomic_load_n(&d->hdr->tx_arm_seq, __ATOMIC_RELAXED) == 8,
	      "ssqd_hdr_restore left the arm word at %u, want it moved on from 7 to 8",
	      d->hdr->tx_arm_seq);
	/* What the client library sets at attach. */
	q->prod.arm_seq = &d->hdr->tx_arm_seq;
	if (q->txa.on) {
		no_sleeper_no_arm();
		lone_sleeper_woken();
		stuck_router_no_spin();
		index_ahead_no_spin();
		scribbles();
	}
	ev_ssqd_down(d);
	return test_exit("ctrl_wait_arm");
}
