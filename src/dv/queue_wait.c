/* SPDX-License-Identifier: MIT */
/*
 * Waiting for completions asleep (ssq_wait) and waking the sleepers
 * (ssq__wake_waiters, from ssq_progress once it let go of the CQ lease).
 * The futex word is the queue's wake_seq, in memory every process of the
 * queue maps, so the futex is a shared one (no FUTEX_PRIVATE_FLAG): a
 * router in any process wakes a sleeper in any other. A sleeper sleeps at
 * most SSQ_WAIT_SLICE_NS at a time and routes the CQ itself between
 * slices, so it never depends on another process to route, nor on a wake
 * that was missed (the count of sleepers is read relaxed by routers).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <ssq/combine.h>
#include "queue_wait.h"

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* Completions ready for @p (A5a: pairs with R5, as ssq_poll). */
static uint64_t ready(const struct ssq_producer *p)
{
	return __atomic_load_n(&p->me->comp_head, __ATOMIC_ACQUIRE) - p->me->comp_tail;
}

void dv_sleeper_ask_arm(struct ssq_producer *p)
{
	/* A1: after the count and R6 (ssq__sleeper_in); see queue_wait.h. */
	if (!p->arm_seq ||
	    __atomic_load_n(&p->ctl->tx_arm, __ATOMIC_SEQ_CST) != SSQ_TX_ARM_WANTED)
		return;
	/* Release: the count is seen by the arm thread that sees the bump. */
	__atomic_fetch_add(p->arm_seq, 1, __ATOMIC_RELEASE);
	/* Shared: the arm thread is in ssqd, another process. */
	syscall(SYS_futex, p->arm_seq, FUTEX_WAKE, 1, NULL, NULL, 0);
}

void ssq__wake_waiters(struct ssq_ctl *ctl)
{
	/* Release: the completions delivered before are visible to a woken one. */
	__atomic_fetch_add(&ctl->wake_seq, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &ctl->wake_seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/*
 * Settle @p's last combined request (<ssq/combine.h>) unless the outcome
 * of a request a combiner took is not known yet: settling would wait for
 * that combiner to publish it (up to SSQ_RESERVE_SPINS looks, not our
 * timeout), while the wait's loop polls and looks again each round, so
 * @timeout_ns holds (test_ssq_combine_wait_taken.c). Anything else settles
 * in a bounded time (posted by a combiner, or by us within ssq_reserve's
 * spins), and so does a combiner's take (C10) between our look and
 * settling's: settling gives up (-EAGAIN, ignored: the request stays
 * TAKEN, looked at again next round) after SSQ_RESERVE_SPINS looks.
 */
static void wait_settle(struct ssq_producer *p)
{
	/* A15: pairs with C10 (TAKEN) and R15 (DONE), as in settling. */
	uint64_t w = __atomic_load_n(&p->me->hand.word, __ATOMIC_ACQUIRE);

	if (ssq_likely(!p->hand_owed && !w))
		return;
	if ((w & 3) == SSQ_HAND_TAKEN && ssq__hand_outcome(p, w, p->hand_epoch) < 0)
		return;
	(void)ssq__hand_settle(p);
}

int ssq_wait(struct ssq_producer *p, unsigned min, uint64_t timeout_ns)
{
	uint64_t deadline, now, n;
	struct timespec slice;
	uint32_t seq;

	if (!p || !p->me || !min || min > p->comp_mask + 1)
		return -EINVAL;
	deadline = now_ns() + timeout_ns;
	for (;;) {
		/*
		 * A combined request of ours still handed over is posted
		 * before we sleep on its completion: its combiner may have let
		 * the role go, or died. Each round: one a combiner took and
		 * has not published yet is looked at again. An error leaves it
		 * ours to post, and the wait to tell the rest.
		 */
		wait_settle(p);
		if ((n = ready(p)) >= min)
			return (int)n;
		if (__atomic_load_n(&p->gone, __ATOMIC_RELAXED))
			return -ENOTCONN;
		if (ssq_progress(p) > 0)
			continue; /* routed: perhaps ours */
		now = now_ns();
		if (now >= deadline)
			return -ETIMEDOUT;
		/*
		 * The sequence before the count and the last look: a router
		 * that delivers after our look bumps it, and the futex then
		 * returns at once (EAGAIN) instead of sleeping.
		 */
		seq = __atomic_load_n(&p->ctl->wake_seq, __ATOMIC_ACQUIRE);
		/*
		 * R6 (pairs with W6, ssqd's ssqd_queue_send_event): counted before
		 * the CQ is looked at again, so a CQE the device writes after
		 * this look is one whose event sees the count and wakes us.
		 * The fence makes the add and the look that follows (acquire
		 * loads, in ssq_progress) a store-then-load pair in C11 terms,
		 * against W6's fence on the device's side. With another
		 * producer holding the CQ lease the look is that router's, and
		 * a wake it misses costs this sleeper at most its slice.
		 */
		ssq__sleeper_in(p->ctl);
		dv_sleeper_ask_arm(p);
		if (ready(p) < min && ssq_progress(p) <= 0) {
			n = deadline - now < SSQ_WAIT_SLICE_NS ? deadline - now
			                                       : SSQ_WAIT_SLICE_NS;
			slice.tv_sec = 0;
			slice.tv_nsec = (long)n;
			syscall(SYS_futex, &p->ctl->wake_seq, FUTEX_WAIT, seq, &slice,
			        NULL, 0);
		}
		__atomic_fetch_sub(&p->ctl->waiters, 1, __ATOMIC_RELAXED);
	}
}
