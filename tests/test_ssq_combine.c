/* SPDX-License-Identifier: MIT */
/*
 * Combining (<ssq/combine.h>) with threads of one process as producers (1,
 * 2, 4 and 8, then 8 with every other one posting directly, then 4 paced:
 * 50 us asleep after each message with its last request handed over, 20 us
 * in the role before a combiner looks or a lone poster posts) on the
 * emulated device: each message (ssq_flow.h: a WRITE of a tagged payload
 * and a FETCH_ADD of +1 on its counter) is two combined posts. Every
 * message arrives exactly once (counter 1, payload right), each thread
 * gets exactly its signaled completions, in its order; and some requests
 * were posted by a combiner other than their owner (else combining was
 * not tested).
 */
#define SSQ_FAULT_HOOKS 1
#include <pthread.h>
#include "dv/ctl.h"
#include "combine_flow.h"
#include "tb_flow.h"

#define MAXT 8u
#define M    1504u /* a multiple of SIGNAL_EVERY: the last message is signaled */

static __thread struct msg_worker *self;
static uint64_t taken_for_others;
static int pause_in_role; /* the paced round: combiners slow to start */

/*
 * A combiner holding requests it took (every one TAKEN): count those of
 * other producers, the evidence that requests were handed over.
 */
void ssq_fault_hook(int where)
{
	uint32_t i;

	/*
	 * A combiner slow to start, or a lone poster slow on its fast path
	 * (the role held): others hand over meanwhile.
	 */
	if ((where == SSQ_HOOK_COMBINE_ROLE || where == SSQ_HOOK_COMBINE_LONE) &&
	    pause_in_role)
		usleep(20);
	if (where != SSQ_HOOK_COMBINE_TAKEN || !self)
		return;
	for (i = 0; i < SSQ_MAX_PRODUCERS; i++) {
		uint64_t v = __atomic_load_n(&self->prod.ctl->producers[i].hand.word,
		                             __ATOMIC_RELAXED);

		if (i != self->prod.id && (v & 3) == SSQ_HAND_TAKEN)
			__atomic_fetch_add(&taken_for_others, 1, __ATOMIC_RELAXED);
	}
}

static void *work(void *arg)
{
	struct msg_worker *w = arg;

	self = w;
	w->rc = run_combined(&w->prod, w->a, w->id, M, NULL, w->src, w->src_iova, w->lkey,
	                     w->direct, NULL, NULL);
	return NULL;
}

int main(void)
{
	static const uint32_t threads[] = { 1, 2, 4, 8, 8, 4 };
	struct emu_tb tb;
	struct msg_area a = { 0 };
	struct msg_worker w[MAXT];
	struct ssq_ctl *ctl;
	unsigned r, t, bad;

	ctl = tb_threads_up(&tb, MAXT, M);
	if (!ctl)
		return test_exit("ssq_combine");
	a.dst_iova = tb.s[1].iova;
	a.cnt_iova = tb.s[1].iova + (uint64_t)MAXT * M * CELL;
	a.rkey = tb.s[1].key;
	a.per_proc = M;
	a.nlong = MAXT;
	a.dst = tb.s[1].mem;
	a.cnt = (uint64_t *)(tb.s[1].mem + (size_t)MAXT * M * CELL);
	CHECK(emu_start(tb.dev) == 0, "device thread");

	for (r = 0; r < sizeof(threads) / sizeof(threads[0]); r++) {
		uint32_t T = threads[r];
		int mixed = r == sizeof(threads) / sizeof(threads[0]) - 2;
		/*
		 * Posters do not wait for combiners (<ssq/combine.h>): on a busy
		 * machine the rounds above may see none take another's request.
		 * Paced, each pause leaves one handed over for the others.
		 */
		int paced = r == sizeof(threads) / sizeof(threads[0]) - 1;

		run_combined_pace_every = paced ? 1 : 0;
		run_combined_pace_us = 50;
		pause_in_role = paced;
		uint64_t posted_before[MAXT];

		memset(tb.s[1].mem, 0, (size_t)MAXT * M * (CELL + 8));
		for (t = 0; t < T; t++) {
			tb_worker_bind(&w[t], ctl, &tb, &a, t, M, ~0u);
			w[t].direct = mixed && (t & 1);
			posted_before[t] = w[t].prod.me->posted;
		}
		for (t = 0; t < T; t++)
			pthread_create(&w[t].tid, NULL, work, &w[t]);
		for (t = 0; t < T; t++) {
			pthread_join(w[t].tid, NULL);
			CHECK(w[t].rc == 0, "T=%u: thread %u failed", T, t);
		}
		bad = 0;
		for (t = 0; t < T; t++) {
			bad += check_msgs(&a, t, M, 1);
			/* Every WQE counted once by its owner: posted == done. */
			CHECK(w[t].prod.me->posted - posted_before[t] == 2 * M &&
			          w[t].prod.me->done == w[t].prod.me->posted,
			      "T=%u thread %u: posted %llu done %llu", T, t,
			      (unsigned long long)w[t].prod.me->posted,
			      (unsigned long long)w[t].prod.me->done);
		}
		CHECK(bad == 0, "T=%u: %u messages wrong", T, bad);
		for (t = 0; t < T; t++)
			ssq_producer_fini(&w[t].prod);
		printf("T=%u%s: %u messages, all exactly once\n", T,
		       mixed   ? " (mixed)"
		       : paced ? " (paced)"
		               : "",
		       T * M);
	}
	/* The paced round hands over on any machine. */
	CHECK(taken_for_others > 0, "no request was ever posted by another producer");
	printf("%llu requests taken by a combiner for another producer\n",
	       (unsigned long long)taken_for_others);
	emu_stop(tb.dev);
	emu_tb_fini(&tb);
	free(ctl);
	return test_exit("ssq_combine");
}
