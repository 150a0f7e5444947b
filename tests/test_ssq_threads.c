/* SPDX-License-Identifier: MIT */
/*
 * The shared queue's protocol with threads of one process as producers
 * (1, 2, 4 and 8 of them) on the emulated device, its device thread
 * running: every message (ssq_flow.h) arrives exactly once, and each
 * thread gets exactly its signaled completions, in order. The same program
 * runs under ThreadSanitizer (test_ssq_tsan.sh), which checks that every
 * shared access of reserve / publish / submit / route is ordered.
 */
#include <pthread.h>
#include "dv/ctl.h"
#include "ssq_flow.h"
#include "tb_flow.h"

#define MAXT 8u
#define M    1504u /* a multiple of SIGNAL_EVERY: the last message is signaled */

int main(void)
{
	static const uint32_t threads[] = { 1, 2, 4, 8 };
	struct emu_tb tb;
	struct msg_area a = { 0 };
	struct msg_worker w[MAXT];
	struct ssq_ctl *ctl;
	unsigned r, t, bad;

	ctl = tb_threads_up(&tb, MAXT, M);
	if (!ctl)
		return test_exit("ssq_threads");
	/* Side 0 posts; side 1's memory holds the destinations and counters. */
	msg_area_local(&a, tb.s[1].iova, tb.s[1].key, tb.s[1].mem, MAXT, M);
	CHECK(emu_start(tb.dev) == 0, "device thread");

	for (r = 0; r < sizeof(threads) / sizeof(threads[0]); r++) {
		uint32_t T = threads[r];

		memset(tb.s[1].mem, 0, (size_t)MAXT * M * (CELL + 8));
		for (t = 0; t < T; t++) {
			/* Ids as ssqd hands them out: claim (reclaiming last round's),
			 * bind. */
			tb_worker_bind(&w[t], ctl, &tb, &a, t, M, ~0u);
			pthread_create(&w[t].tid, NULL, msg_worker_run, &w[t]);
		}
		for (t = 0; t < T; t++) {
			pthread_join(w[t].tid, NULL);
			CHECK(w[t].rc == 0, "T=%u: thread %u failed", T, t);
		}
		bad = 0;
		for (t = 0; t < T; t++)
			bad += check_msgs(&a, t, M, 1);
		CHECK(bad == 0, "T=%u: %u messages wrong", T, bad);
		/* Retired now; the next round's claims reclaim them. */
		for (t = 0; t < T; t++)
			ssq_producer_fini(&w[t].prod);
		printf("T=%u: %u messages, all exactly once\n", T, T * M);
	}
	emu_stop(tb.dev);
	emu_tb_fini(&tb);
	free(ctl);
	return test_exit("ssq_threads");
}
