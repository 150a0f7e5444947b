/* SPDX-License-Identifier: MIT */
/*
 * Adversary (h-adv8b): a batch published by a combiner (DONE, not yet
 * settled by its owner) when ssqd rebuilds the queue (ssq_ctl_rebuild:
 * the published WQEs complete to their owners as flushed, and each live
 * record's done is set to its posted). One thread, the emulated device
 * stepped by hand (a 64-WQEBB ring; producers A, B, C of one queue; C is
 * ssqd's own).
 *  1. B holds the role; A hands 3 FETCH_ADDs over (one batch); B combines:
 *     A's word DONE(pos, 3), the 3 WQEs published and rung, not executed.
 *  2. The queue goes in error; ssqd rebuilds it (the QP through RESET,
 *     ssq_ctl_rebuild with A, B live).
 *  3. A flushes and polls: its 3 requests complete to it, once each.
 *  4. A posts one more (combined, alone) and it completes. Then A has
 *     nothing in flight: its record's posted must equal its done, or its
 *     completion ring's room is short by the difference for good, and,
 *     retired, ssq_ctl_claim never reuses its record (done < posted).
 */
#include <string.h>
#include <ssq/combine.h>
#include "dv/ctl.h"
#include "ssq_flow.h"
#include "tb_flow.h"

#define RING  64u
#define EVERY 16u
#define CTR   9u

static struct emu_tb tb;
static struct ssq_ctl *ctl;
static struct ssq_producer a, b, c;

int main(void)
{
	struct emu_tb_opts o = { .sq_cnt = RING };
	unsigned seen[8] = { 0 }, i, n;
	uint32_t epoch;
	uint64_t w;
	int rc;

	ctl = tb_ctl_up(&tb, &o, RING, EVERY);
	TB_PRODUCERS(ctl, &tb, &a, &b, &c);

	/* 1. A's batch of 3, published by B: DONE, not settled by A. */
	__atomic_store_n(&ctl->comb_role, b.id + 1, __ATOMIC_SEQ_CST);
	for (i = 0; i < 3; i++)
		CHECK(tb_fa_combined(&tb, &a, CTR, i) == 0, "1: A's hand-over %u", i);
	CHECK(ssq__combine(&b) == 0, "1: B's combine");
	w = __atomic_load_n(&a.me->hand.word, __ATOMIC_ACQUIRE);
	CHECK((w & 3) == SSQ_HAND_DONE && ssq__hand_n(w) == 3, "1: A's word %llx",
	      (unsigned long long)w);

	/* 2. ssqd rebuilds the queue. */
	epoch = ssq_ctl_epoch(ctl);
	ssq_ctl_set_error(ctl);
	CHECK(tb_reset_qp(&tb) == 0, "2: the QP through RESET");
	rc = ssq_ctl_rebuild(&c, epoch + 1, 1ull << a.id | 1ull << b.id, 1000);
	CHECK(rc == 0, "2: rebuild: %d", rc);

	/* 3. A settles and reaps. */
	CHECK(ssq_combine_flush(&a) == 0, "3: A's flush");
	n = tb_reap_ids(&a, seen, 8);
	printf("3. after the rebuild: A reaped %u completions; posted %llu, done %llu\n",
	       n, (unsigned long long)a.me->posted, (unsigned long long)a.me->done);

	/* 4. One more, alone; then nothing of A's is in flight. */
	tb_rebuild_ends(&tb, ctl, &a, &c, CTR, seen);
	ssq_producer_fini(&c);
	emu_tb_fini(&tb);
	free(ctl);
	return test_exit("adv8b_rebuild_done");
}
