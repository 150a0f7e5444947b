/* SPDX-License-Identifier: MIT */
/*
 * A combiner stopped between its take (C10, TAKEN) and its publish, with
 * no deadline to end it (ssqd --stall-ms 0 never kills a stopped holder;
 * here no ssqd at all): its owner's calls must not wait for as long as it
 * is stopped (<ssq/combine.h>, ssq__hand_settle: "the one wait"), but give
 * up with -EAGAIN, as a direct post behind a stopped holder does after
 * SSQ_RESERVE_SPINS, the request staying TAKEN; once the combiner resumes
 * and publishes, the owner's next flush settles it: it runs once.
 * The emulated device stepped by hand (a 64-WQEBB ring, producers A, B, C
 * of one queue; C steps the queue; a FETCH_ADD of +1 on a counter). B
 * holds the role and combines on its own thread; A hands its request
 * over; B takes it and stops in SSQ_HOOK_COMBINE_TAKEN until told to go
 * on. Meanwhile, on the main thread, each within WAIT_S (a watchdog
 * thread prints "hung" and fails the test otherwise):
 *  - A's ssq_combine_flush returns -EAGAIN, its request still TAKEN;
 *  - A's next combined post returns -EAGAIN, not handed over;
 *  - A's ssq_producer_fini returns -EAGAIN (SSQ_SETTLE_MS of tries),
 *    nothing retired.
 * Then B goes on; A's flush returns 0; the request ran once and completed
 * once to A.
 */
#define SSQ_FAULT_HOOKS 1
#include <pthread.h>
#include <ssq/combine.h>
#include "dv/ctl.h"
#include "ssq_flow.h"
#include "tb_flow.h"
#include "hook_gate.h"

#define RING   64u
#define EVERY  16u
#define WAIT_S 30 /* per call; a bounded settle takes milliseconds */

static struct emu_tb tb;
static struct ssq_ctl *ctl;
static struct ssq_producer a, b, c;
static struct hook_gate b_gate; /* B stops at its next SSQ_HOOK_COMBINE_TAKEN */
static int call_done;           /* the main thread's call under watch returned */
static const char *call_name;
static int watch_over;

void ssq_fault_hook(int where)
{
	hook_gate_hold(&b_gate, where, SSQ_HOOK_COMBINE_TAKEN);
}

static void *b_combines(void *arg)
{
	(void)arg;
	(void)ssq__combine(&b);
	return NULL;
}

/* The watchdog: a call under watch that runs past WAIT_S hung. */
static void *watchdog(void *arg)
{
	const char *name = NULL;
	double since = 0;

	(void)arg;
	while (!__atomic_load_n(&watch_over, __ATOMIC_ACQUIRE)) {
		const char *n = __atomic_load_n(&call_name, __ATOMIC_ACQUIRE);

		if (n != name) {
			name = n;
			since = now_s();
		}
		if (name && !__atomic_load_n(&call_done, __ATOMIC_ACQUIRE) &&
		    now_s() - since > WAIT_S) {
			printf("%s, its request taken by a stopped combiner: hung (no "
			       "return "
			       "after %d s)\n",
			       name, WAIT_S);
			fprintf(stderr,
			        "FAIL: %s hung: settling waits for a stopped "
			        "combiner without bound\n",
			        name);
			fflush(NULL);
			_exit(1);
		}
		usleep(10000);
	}
	return NULL;
}

/* Start watching the call @name (one at a time, on the main thread). */
static void watch(const char *name)
{
	__atomic_store_n(&call_done, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&call_name, name, __ATOMIC_RELEASE);
}

static void watched(void)
{
	__atomic_store_n(&call_done, 1, __ATOMIC_RELEASE);
}

static uint64_t counter(unsigned cell)
{
	return tb_cell(&tb, cell);
}

static int fa(unsigned cell, uint64_t wr_id)
{
	return ssq_post_fetch_add_combined(&a, tb.s[0].iova + 8 * cell, tb.s[0].key,
	                                   tb.s[1].iova + 8 * cell, tb.s[1].key, 1, wr_id,
	                                   SSQ_WQE_SIGNALED);
}

static void drain(void)
{
	tb_drain(&tb, &c);
}

int main(void)
{
	struct emu_tb_opts o = { .sq_cnt = RING };
	struct ssq_completion comp[4];
	pthread_t bt, wt;
	uint64_t taken;
	double t0;
	int rc, got;

	ctl = tb_ctl_up(&tb, &o, RING, EVERY);
	TB_PRODUCERS(ctl, &tb, &a, &b, &c);
	CHECK(pthread_create(&wt, NULL, watchdog, NULL) == 0, "watchdog");

	/* B holds the role; A hands over; B takes A's request and stops. */
	__atomic_store_n(&ctl->comb_role, b.id + 1, __ATOMIC_SEQ_CST);
	CHECK(fa(0, 10) == 0 && (a.me->hand.word & 3) == SSQ_HAND_POSTED,
	      "A's request not handed over");
	__atomic_store_n(&b_gate.stops, 1, __ATOMIC_RELEASE);
	CHECK(pthread_create(&bt, NULL, b_combines, NULL) == 0, "B's thread");
	while (!__atomic_load_n(&b_gate.stopped, __ATOMIC_ACQUIRE))
		usleep(1000);
	taken = __atomic_load_n(&a.me->hand.word, __ATOMIC_ACQUIRE);
	CHECK((taken & 3) == SSQ_HAND_TAKEN, "B did not take A's request (word %llx)",
	      (unsigned long long)taken);

	/* A's calls, B stopped: each returns -EAGAIN in bounded time. */
	watch("A's ssq_combine_flush");
	t0 = now_s();
	rc = ssq_combine_flush(&a);
	watched();
	printf("A's ssq_combine_flush, B stopped after its take: %d after %.3f s\n", rc,
	       now_s() - t0);
	CHECK(rc == -EAGAIN && a.me->hand.word == taken,
	      "A's flush: %d, word %llx (want -EAGAIN, still TAKEN)", rc,
	      (unsigned long long)a.me->hand.word);

	watch("A's next combined post");
	t0 = now_s();
	rc = fa(1, 11);
	watched();
	printf("A's next combined post: %d after %.3f s\n", rc, now_s() - t0);
	CHECK(rc == -EAGAIN && a.me->hand.word == taken,
	      "A's next post: %d, word %llx (want -EAGAIN, not handed over)", rc,
	      (unsigned long long)a.me->hand.word);

	watch("A's ssq_producer_fini");
	t0 = now_s();
	rc = ssq_producer_fini(&a);
	watched();
	printf("A's ssq_producer_fini: %d after %.3f s\n", rc, now_s() - t0);
	CHECK(rc == -EAGAIN && a.me && a.me->state == SSQ_PROD_IDLE &&
	          a.me->hand.word == taken,
	      "A's fini: %d (want -EAGAIN, nothing retired)", rc);
	if (!a.me)
		return test_exit("ssq_combine_adv_taken_stop");

	/* B goes on: publishes A's request, DONE, rings. */
	__atomic_store_n(&b_gate.goes, 1, __ATOMIC_RELEASE);
	pthread_join(bt, NULL);
	drain();
	watch("A's ssq_combine_flush after B went on");
	rc = ssq_combine_flush(&a);
	watched();
	CHECK(rc == 0 && a.me->hand.word == 0, "A's flush after B went on: %d", rc);
	drain();
	ssq_progress(&a);
	got = ssq_poll(&a, comp, 4);
	printf("after B went on: A's flush %d, request ran %llu times, %d completions\n",
	       rc, (unsigned long long)counter(0), got);
	CHECK(counter(0) == 1 && counter(1) == 0, "A's requests ran %llu, %llu times",
	      (unsigned long long)counter(0), (unsigned long long)counter(1));
	CHECK(got == 1 && comp[0].wr_id == 10, "A's completions: %d", got);
	CHECK(a.me->posted == a.me->done, "A posted %llu done %llu",
	      (unsigned long long)a.me->posted, (unsigned long long)a.me->done);

	__atomic_store_n(&watch_over, 1, __ATOMIC_RELEASE);
	pthread_join(wt, NULL);
	CHECK(ssq_producer_fini(&a) == 0, "A's fini");
	ssq_producer_fini(&b);
	ssq_producer_fini(&c);
	emu_tb_fini(&tb);
	free(ctl);
	return test_exit("ssq_combine_adv_taken_stop");
}
