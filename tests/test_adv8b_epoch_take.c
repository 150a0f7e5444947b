/* SPDX-License-Identifier: MIT */
/*
 * Adversary (h-adv8b): a batch POSTED before a queue restart, taken by a
 * combiner after it (<ssq/combine.h>). One thread plus a combiner thread,
 * the emulated device stepped by hand (a 64-WQEBB ring; producers A, B, C,
 * D of one queue; C is ssqd's own: it steps the queue and resets it).
 *  1. B holds the role; A hands a FETCH_ADD over (POSTED(seq, 1), its
 *     hand_epoch E). The queue goes in error and ssqd resets it
 *     (ssq_ctl_reset: epoch E + 1, comb_pending and comb_role zeroed, A's
 *     word POSTED kept, as the reset means to).
 *  2. A's pending bit comes back after the reset. Two interleavings of the
 *     protocol do this: A preempted between its R14 (POSTED) and its C8
 *     (the bit) across the reset; or a combiner that swapped the bit out
 *     (A14a) before the error and puts it back after its failed
 *     ssq__reserve, which the reset can run before. The test sets the bit
 *     as either of those stores would.
 *  3. D combines in epoch E + 1 and stops after its takes, before
 *     publishing (SSQ_HOOK_COMBINE_TAKEN), as a process preempted there
 *     would. Before the fix it took A's batch (TAKEN(pos, 1), pos of the
 *     new epoch); now it leaves a batch of another epoch POSTED.
 *  4. A flushes: its batch is TAKEN, read against its hand_epoch E. The
 *     flush must not post A's request itself while D may still publish it
 *     (-EAGAIN, or waiting, are both right; posting it is not).
 *  5. D goes on; everything drains. A's FETCH_ADD must have run exactly
 *     once (its counter 1) and completed once to A.
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
#define CTR   5u

static struct emu_tb tb;
static struct ssq_ctl *ctl;
static struct ssq_producer a, b, c, d;
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
	struct ssq_completion comp[16];
	uint32_t epoch;
	unsigned comps = 0;
	pthread_t t;
	uint64_t w;
	int rc, got, k;

	ctl = tb_ctl_up(&tb, &o, RING, EVERY);
	TB_PRODUCERS(ctl, &tb, &a, &b, &c, &d);

	/* 1. A's batch POSTED in epoch E, then the queue restarts. */
	__atomic_store_n(&ctl->comb_role, b.id + 1, __ATOMIC_SEQ_CST);
	CHECK(tb_fa_combined(&tb, &a, CTR, 7) == 0, "A's hand-over");
	CHECK((a.me->hand.word & 3) == SSQ_HAND_POSTED, "A's word %llx (want POSTED)",
	      (unsigned long long)a.me->hand.word);
	epoch = ssq_ctl_epoch(ctl);
	ssq_ctl_set_error(ctl);
	tb_drain(&tb, &c);
	CHECK(tb_reset_qp(&tb) == 0, "the QP through RESET");
	rc = ssq_ctl_reset(&c, 2000);
	CHECK(rc == 0 && ssq_ctl_epoch(ctl) != epoch, "reset: %d (epoch %u -> %u)", rc,
	      epoch, ssq_ctl_epoch(ctl));
	CHECK((a.me->hand.word & 3) == SSQ_HAND_POSTED, "A's word after the reset %llx",
	      (unsigned long long)a.me->hand.word);

	/* 2. A's late C8 (or a combiner's put-back after its failed reserve). */
	__atomic_fetch_or(&ctl->comb_pending, 1ull << a.id, __ATOMIC_SEQ_CST);

	/* 3. D combines in the new epoch and stops after its take. */
	__atomic_store_n(&ctl->comb_role, d.id + 1, __ATOMIC_SEQ_CST);
	gate_at = SSQ_HOOK_COMBINE_TAKEN;
	hook_gate_arm(&gate);
	CHECK(pthread_create(&t, NULL, tb_combines, &d) == 0, "combiner thread");
	CHECK(hook_gate_wait(&gate, 30), "D did not reach its take");
	w = __atomic_load_n(&a.me->hand.word, __ATOMIC_ACQUIRE);
	printf("3. D stopped after its take: A's word %llx (%s)\n", (unsigned long long)w,
	       (w & 3) == SSQ_HAND_TAKEN ? "taken across the restart" : "left POSTED");
	CHECK((w & 3) == SSQ_HAND_TAKEN || (w & 3) == SSQ_HAND_POSTED, "A's word %llx",
	      (unsigned long long)w);

	/* 4. A's flush while D holds its batch, unpublished. */
	rc = ssq_combine_flush(&a);
	printf("4. A's flush, D stopped after its take: %d (word %llx, "
	       "A posted %llu)\n",
	       rc, (unsigned long long)a.me->hand.word, (unsigned long long)a.me->posted);

	/* 5. D goes on; then everything settles and drains. */
	__atomic_store_n(&gate.goes, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	gate_at = 0;
	CHECK(ssq_combine_flush(&a) == 0, "A's last flush");
	tb_drain(&tb, &c);
	ssq_progress(&a);
	while ((got = ssq_poll(&a, comp, 16)) > 0)
		for (k = 0; k < got; k++)
			comps += comp[k].wr_id == 7;
	CHECK(tb_cell(&tb, CTR) == 1,
	      "A's FETCH_ADD ran %llu times (want 1): taken by D in the new epoch, "
	      "posted again by A's flush",
	      (unsigned long long)tb_cell(&tb, CTR));
	CHECK(comps == 1, "A's request completed %u times to A (want 1)", comps);
	printf("A's FETCH_ADD ran %llu times, completed %u times\n",
	       (unsigned long long)tb_cell(&tb, CTR), comps);
	ssq_producer_fini(&a);
	ssq_producer_fini(&c);
	emu_tb_fini(&tb);
	free(ctl);
	return test_exit("adv8b_epoch_take");
}
