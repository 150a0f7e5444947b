/* SPDX-License-Identifier: MIT */
/*
 * ssq_wait sleeps instead of spinning, on the emulated device:
 *  1. bad arguments (min 0, min past the completion ring): -EINVAL;
 *  2. nothing in flight: -ETIMEDOUT after the timeout, having used a small
 *     part of it in CPU time;
 *  3. producer A waits for its WRITE's completion while producer B holds
 *     the CQ lease (so A cannot route it itself) for 200 ms, then lets go
 *     and routes: A returns with its completion after that and before its
 *     own timeout, having slept (its thread's CPU time a small part of the
 *     wait);
 *  4. ssqd gone (ssq_producer_gone) with nothing ready: -ENOTCONN.
 */
#include <pthread.h>
#include "dv/ctl.h"
#include "ssq_flow.h"
#include "tb_flow.h"

#define RING    64u
#define HOLD_MS 200

static struct emu_tb tb;
static struct ssq_producer a, b;

static double cpu_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double let_go; /* when B let go of the CQ lease (now_s) */

/* B, holding the CQ lease: keep it HOLD_MS, then let go and route (waking A). */
static void *holder(void *arg)
{
	(void)arg;
	usleep(HOLD_MS * 1000);
	let_go = now_s(); /* read after the join */
	__atomic_store_n(&b.ctl->cq_lease, 0, __ATOMIC_RELEASE);
	while (ssq_progress(&b) == 0 &&
	       ssq_ctl_completed(b.ctl) < ssq_ctl_reserved(b.ctl))
		usleep(100);
	return NULL;
}

int main(void)
{
	struct emu_tb_opts o = { 0 };
	struct ssq_completion c;
	struct ssq_ctl *ctl;
	double t0, c0, took, cpu, woke;
	pthread_t t;
	int rc;

	o.sq_cnt = RING;
	ctl = tb_ctl_up(&tb, &o, RING, 16);
	CHECK(ssq_producer_init(&a, ctl, 0, &tb.s[0].sq, &tb.s[0].scq_v, 1) == 0 &&
	          ssq_producer_init(&b, ctl, 1, &tb.s[0].sq, &tb.s[0].scq_v, 2) == 0,
	      "producers");
	CHECK(emu_start(tb.dev) == 0, "device thread");

	CHECK(ssq_wait(&a, 0, 1000) == -EINVAL, "min 0");
	CHECK(ssq_wait(&a, RING + 1, 1000) == -EINVAL, "min past the completion ring");

	t0 = now_s();
	c0 = cpu_s();
	rc = ssq_wait(&a, 1, 30 * 1000000ull);
	took = now_s() - t0;
	cpu = cpu_s() - c0;
	CHECK(rc == -ETIMEDOUT && took >= 0.030 && took < 2.0,
	      "nothing in flight: %d after %.3f s, want -ETIMEDOUT after 30 ms", rc,
	      took);
	CHECK(cpu < took / 2, "timing out: %.1f ms of CPU in %.1f ms (spinning?)",
	      cpu * 1e3, took * 1e3);

	/* B holds the lease before A posts, however late its thread runs. */
	CHECK(__atomic_compare_exchange_n(&b.ctl->cq_lease, &(uint32_t){ 0 }, b.id + 1, 0,
	                                  __ATOMIC_ACQUIRE, __ATOMIC_RELAXED),
	      "B takes the CQ lease");
	pthread_create(&t, NULL, holder, NULL);
	CHECK(ssq_post_write(&a, tb.s[0].iova, tb.s[0].key, 64, tb.s[1].iova, tb.s[1].key,
	                     0xabc, SSQ_WQE_SIGNALED) == 0,
	      "A's WRITE");
	t0 = now_s();
	c0 = cpu_s();
	rc = ssq_wait(&a, 1, 10000000000ull);
	took = now_s() - t0;
	cpu = cpu_s() - c0;
	woke = t0 + took;
	pthread_join(t, NULL);
	/*
	 * Woken with its completion (1, not its 10 s timeout's -ETIMEDOUT),
	 * and only once B let go: A could not route it before.
	 */
	CHECK(rc == 1 && woke >= let_go,
	      "A's wait behind B's lease: %d, %.3f ms after B let go, want 1 after it",
	      rc, (woke - let_go) * 1e3);
	CHECK(cpu < took / 4, "waiting: %.1f ms of CPU in %.1f ms (spinning?)", cpu * 1e3,
	      took * 1e3);
	CHECK(ssq_poll(&a, &c, 1) == 1 && c.wr_id == 0xabc && c.status == IBV_WC_SUCCESS,
	      "A's completion after the wait");
	printf("ssq_wait: woken %.1f ms after B's lease, %.2f ms of CPU in %.1f ms\n",
	       (woke - let_go) * 1e3, cpu * 1e3, took * 1e3);

	ssq_producer_gone(&a);
	CHECK(ssq_wait(&a, 1, 1000000) == -ENOTCONN, "ssqd gone");
	emu_stop(tb.dev);
	emu_tb_fini(&tb);
	free(ctl);
	return test_exit("ssq_wait");
}
