/* SPDX-License-Identifier: MIT */
/*
 * Adversary (h-adv8b): a batch TAKEN by a combiner stopped mid-batch (the
 * first of A's 3 published) when ssqd rebuilds the queue (ssq_ctl_rebuild:
 * the published WQE completes to A as flushed; done := posted). One thread
 * and B's, the emulated device stepped by hand (a 64-WQEBB ring; A, B, C).
 *  1. B holds the role; A hands 3 FETCH_ADDs over; B combines on a thread
 *     and stops after publishing the first (SSQ_HOOK_COMBINE_BUILT).
 *  2. The queue goes in error; ssqd rebuilds it.
 *  3. A flushes; B goes on (its reservation void: it publishes nothing).
 *  4. A posts one more and everything drains: each of A's 4 requests must
 *     complete to A exactly once (the first: flushed, or run, not both).
 */
#define SSQ_FAULT_HOOKS 1
#include <pthread.h>
#include <string.h>
#include <ssq/combine.h>
#include "dv/ctl.h"
#include "ssq_flow.h"
#include "tb_flow.h"
#include "hook_gate.h"

#define RING  64u
#define EVERY 16u
#define CTR   9u

static struct emu_tb tb;
static struct ssq_ctl *ctl;
static struct ssq_producer a, b, c;
static struct hook_gate gate;
static int gate_at;

void ssq_fault_hook(int where)
{
	if (gate_at)
		hook_gate_hold(&gate, where, gate_at);
}

int main(void)
{
	struct emu_tb_opts o = { .sq_cnt = RING };
	unsigned seen[8] = { 0 }, i, n;
	uint32_t epoch;
	uint64_t w;
	pthread_t t;
	int rc;

	ctl = tb_ctl_up(&tb, &o, RING, EVERY);
	TB_PRODUCERS(ctl, &tb, &a, &b, &c);

	/* 1. A's batch of 3, published by B: DONE, not settled by A. */
	__atomic_store_n(&ctl->comb_role, b.id + 1, __ATOMIC_SEQ_CST);
	for (i = 0; i < 3; i++)
		CHECK(tb_fa_combined(&tb, &a, CTR, i) == 0, "1: A's hand-over %u", i);
	gate_at = SSQ_HOOK_COMBINE_BUILT;
	hook_gate_arm(&gate);
	CHECK(pthread_create(&t, NULL, tb_combines, &b) == 0, "1: combiner thread");
	CHECK(hook_gate_wait(&gate, 30), "1: B did not reach its first publish");
	w = __atomic_load_n(&a.me->hand.word, __ATOMIC_ACQUIRE);
	CHECK((w & 3) == SSQ_HAND_TAKEN && ssq__hand_n(w) == 3, "1: A's word %llx",
	      (unsigned long long)w);

	/* 2. ssqd rebuilds the queue. */
	epoch = ssq_ctl_epoch(ctl);
	ssq_ctl_set_error(ctl);
	CHECK(tb_reset_qp(&tb) == 0, "2: the QP through RESET");
	rc = ssq_ctl_rebuild(&c, epoch + 1, 1ull << a.id | 1ull << b.id, 1000);
	CHECK(rc == 0, "2: rebuild: %d", rc);

	/* 3. A settles; B goes on. */
	rc = ssq_combine_flush(&a);
	__atomic_store_n(&gate.goes, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	gate_at = 0;
	CHECK(rc == 0 || ssq_combine_flush(&a) == 0, "3: A's flush: %d", rc);
	n = tb_reap_ids(&a, seen, 8);
	printf("3. after the rebuild: A reaped %u completions; posted %llu, done %llu\n",
	       n, (unsigned long long)a.me->posted, (unsigned long long)a.me->done);

	/* 4. One more, alone; then nothing of A's is in flight. */
	tb_rebuild_ends(&tb, ctl, &a, &c, CTR, seen);
	ssq_producer_fini(&c);
	emu_tb_fini(&tb);
	free(ctl);
	return test_exit("adv8b_rebuild_taken");
}
