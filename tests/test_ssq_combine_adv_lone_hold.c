/* SPDX-License-Identifier: MIT */
/*
 * Adversary (h-adv5c), what holds: a request handed over while a lone
 * poster holds the role, settled by its owner before the role comes back
 * (<ssq/combine.h>: "its owner's, when it settles"). One thread, the
 * emulated device stepped by hand (a 64-WQEBB ring, producers A, B, C of
 * one queue, FETCH_ADDs of +1 on a counter per request). A posts alone and
 * stops on its fast path (SSQ_HOOK_COMBINE_LONE: the role and its own
 * WQEBB held; a stopped or preempted poster). There B posts (handed over:
 * the role is A's) and settles it at once, by each path in turn:
 *  1. ssq_combine_flush; 2. ssq_wait (a short timeout: only its settle
 *  matters); 3. B's next combined post; 4. ssq_producer_fini.
 * Then A goes on: its C12 finds B's bit, combines, and finds B's word
 * taken back (a NOP there, nobody's). Each request runs once (its counter
 * 1), A's and B's completions come once each, in order, and nothing is
 * left held: the role free, no bit pending.
 */
#define SSQ_FAULT_HOOKS 1
#include <ssq/combine.h>
#include "dv/ctl.h"
#include "ssq_flow.h"
#include "tb_flow.h"

#define RING  64u
#define EVERY 16u

static struct emu_tb tb;
static struct ssq_ctl *ctl;
static struct ssq_producer a, b, c;
static int how;                  /* 1..4: how B settles inside A's fast path */
static int in_lone;              /* armed: B posts and settles at A's hook */
static int b_rc, b_settle_rc;    /* B's post, and its settle */
static unsigned b_state_after;   /* B's word after its settle */
static unsigned b_cell, b_cell2; /* B's request(s) */

static int fa(struct ssq_producer *p, unsigned cell, uint64_t wr_id)
{
	return tb_fa_combined(&tb, p, cell, wr_id);
}

static uint64_t counter(unsigned cell)
{
	return tb_cell(&tb, cell);
}

static void step(void)
{
	struct ssq_completion comp[16];

	ssq_submit(&c);
	emu_process(tb.dev, 64);
	ssq_progress(&c);
	(void)ssq_poll(&c, comp, 16);
}

static void drain(void)
{
	unsigned i;

	for (i = 0; i < 64; i++)
		step();
}

void ssq_fault_hook(int where)
{
	if (where != SSQ_HOOK_COMBINE_LONE || !in_lone)
		return;
	in_lone = 0;
	b_rc = fa(&b, b_cell, b_cell);
	b_state_after = (unsigned)(b.me->hand.word & 3);
	CHECK(b_state_after == SSQ_HAND_POSTED, "case %d: B's post not handed over", how);
	switch (how) {
	case 1:
		b_settle_rc = ssq_combine_flush(&b);
		break;
	case 2:
		b_settle_rc = ssq_wait(&b, 1, 1000);
		if (b_settle_rc == -ETIMEDOUT)
			b_settle_rc = 0;
		break;
	case 3:
		b_settle_rc = fa(&b, b_cell2, b_cell2);
		break;
	default:
		ssq_producer_fini(&b);
		b_settle_rc = 0;
		break;
	}
	/* What was B's request is out of the slot: published, or B's own. */
	b_state_after = how == 4 ? SSQ_HAND_EMPTY : (unsigned)(b.me->hand.word & 3);
}

int main(void)
{
	static const char *const name[] = { "", "ssq_combine_flush", "ssq_wait",
		                            "the next combined post",
		                            "ssq_producer_fini" };
	struct emu_tb_opts o = { .sq_cnt = RING };
	struct ssq_completion comp[8];
	int got, k;

	ctl = tb_ctl_up(&tb, &o, RING, EVERY);
	TB_PRODUCERS(ctl, &tb, &a, &b, &c);
	for (how = 1; how <= 4; how++) {
		unsigned a_cell = 10 * how;

		b_cell = a_cell + 1;
		b_cell2 = a_cell + 2;
		in_lone = 1;
		CHECK(fa(&a, a_cell, a_cell) == 0, "case %d: A's lone post", how);
		CHECK(!in_lone, "case %d: A's fast path not taken", how);
		CHECK(b_rc == 0 && b_settle_rc == 0,
		      "case %d: B's post %d, its settle (%s) %d", how, b_rc, name[how],
		      b_settle_rc);
		CHECK(b_state_after == SSQ_HAND_EMPTY || how == 3,
		      "case %d: B's word state %u after %s", how, b_state_after,
		      name[how]);
		CHECK(ctl->comb_role == 0 && (ctl->comb_pending & ~(1ull << b.id)) == 0,
		      "case %d: role %u pending %llx after A's fast path", how,
		      ctl->comb_role, (unsigned long long)ctl->comb_pending);
		if (how == 3)
			CHECK(ssq_combine_flush(&b) == 0, "case 3: B's flush");
		drain();
		CHECK(counter(a_cell) == 1 && counter(b_cell) == 1 &&
		          counter(b_cell2) == (how == 3),
		      "case %d (%s): A's ran %llu times, B's %llu and %llu", how,
		      name[how], (unsigned long long)counter(a_cell),
		      (unsigned long long)counter(b_cell),
		      (unsigned long long)counter(b_cell2));
		got = ssq_poll(&a, comp, 8);
		CHECK(got == 1 && comp[0].wr_id == a_cell, "case %d: A's completions %d",
		      how, got);
		if (how < 4) {
			got = ssq_poll(&b, comp, 8);
			CHECK(got == 1 + (how == 3), "case %d: B's completions %d", how,
			      got);
			for (k = 0; k < got; k++)
				CHECK(comp[k].wr_id == (k ? b_cell2 : b_cell),
				      "case %d: B's completion %d: wr_id %llu", how, k,
				      (unsigned long long)comp[k].wr_id);
			CHECK(b.me->posted == b.me->done,
			      "case %d: B posted %llu done %llu", how,
			      (unsigned long long)b.me->posted,
			      (unsigned long long)b.me->done);
		}
		printf("%d. handed over during A's fast path, settled by %s: once\n", how,
		       name[how]);
	}
	ssq_producer_fini(&a);
	ssq_producer_fini(&c);
	emu_tb_fini(&tb);
	free(ctl);
	return test_exit("ssq_combine_adv_lone_hold");
}
