/* SPDX-License-Identifier: MIT */
/*
 * Settling a combined request at the edges (<ssq/combine.h>), one thread,
 * the emulated device stepped by hand (a 64-WQEBB ring, producers A, B, C,
 * D of one queue, FETCH_ADDs of +1 on a counter per request, so a request
 * executed twice shows as a 2). The hang of docs/measurements.md ("A hang
 * seen once"): a sender whose record had `done` one above `posted` with
 * nothing in flight, every combined post -EAGAIN for ever.
 *  1. A's request TAKEN by combiner B, published, B not yet at DONE; A
 *     settles and reads the publish word at its position, and before it
 *     reads the slot's owner the WQE completes and C's WQE a ring later
 *     takes the slot (a preempted settler). A must still learn that its
 *     request was published: not post it a second time (its counter 1,
 *     posted == done, one completion), and its next combined posts go
 *     through within a bounded number of calls.
 *  2. D combines its own request (pass 1), which completes, unsignaled,
 *     before D's second pass finds B's request: D's `done` is one above
 *     its `posted` (allowed: D settles at its next post). D's reservation
 *     for B must find room all the same: B's request is taken in that
 *     pass, not left POSTED after 200000 spins.
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
static struct ssq_producer a, b, c, d;
static int phase;
static uint64_t a_pos;   /* case 1: where B put A's request */
static int a_flush_rc;   /* case 1: A's settle inside B's batch */
static int b_post_rc;    /* case 2: B's post while A combines */
static int transient;    /* case 2: D's done was one above its posted */
static uint64_t c_spent; /* C's completions drained */

/* Ring, run the device once, route, and drop C's completions. */
static void step(struct ssq_producer *p)
{
	struct ssq_completion comp[16];

	ssq_submit(p);
	emu_process(tb.dev, 64);
	ssq_progress(p);
	c_spent += (uint64_t)ssq_poll(&c, comp, 16);
}

/* C posts a NOP with @flags; its position, or UINT64_MAX. */
static uint64_t c_nop(unsigned flags)
{
	uint64_t q;

	step(&c);
	if (ssq_reserve(&c, 1, &q))
		return UINT64_MAX;
	ssq_prep_nop(ssq_producer_sq(&c), (uint32_t)q, ssq_wqe_flags(&c, q, 1, flags));
	if (ssq_publish(&c, q, 1, q, flags))
		return UINT64_MAX;
	step(&c);
	return q;
}

/* Everything published completed (what is unsignaled at the tail aside). */
static void drain(void)
{
	tb_drain(&tb, &c);
}

static int fa(struct ssq_producer *p, unsigned cell, uint64_t wr_id, unsigned flags)
{
	return ssq_post_fetch_add_combined(p, tb.s[0].iova + 8 * cell, tb.s[0].key,
	                                   tb.s[1].iova + 8 * cell, tb.s[1].key, 1, wr_id,
	                                   flags);
}

static uint64_t counter(unsigned cell)
{
	return tb_cell(&tb, cell);
}

void ssq_fault_hook(int where)
{
	unsigned i;

	if (phase == 1 && where == SSQ_HOOK_COMBINE_BUILT) {
		/* B published A's request and holds it TAKEN: A settles. */
		phase = 2;
		a_pos = __atomic_load_n(&a.me->hand.word, __ATOMIC_RELAXED) >> 2;
		a_flush_rc = ssq_combine_flush(&a);
	} else if (phase == 2 && where == SSQ_HOOK_OUTCOME_SEQ) {
		/*
		 * A read the publish word at a_pos: A's request completes and
		 * C's WQE at a_pos + RING takes the slot before A reads its
		 * owner.
		 */
		uint64_t q = 0;

		phase = 3;
		for (i = 0; i < 4 * RING && q != a_pos + RING; i++)
			q = c_nop(0);
		CHECK(q == a_pos + RING, "C did not reach the slot of A's request");
	} else if (phase == 10 && where == SSQ_HOOK_COMBINE_BUILT) {
		/* D combines its own request: B hands one over meanwhile. */
		phase = 11;
		b_post_rc = fa(&b, 3, 30, SSQ_WQE_SIGNALED);
	} else if (phase == 11 && where == SSQ_HOOK_COMBINE_ROLE) {
		/* D's second pass: its own request completes first (C's CQE). */
		phase = 12;
		c_nop(SSQ_WQE_SIGNALED);
		for (i = 0; i < 64 && d.me->done != d.me->posted + 1; i++)
			step(&c);
		transient = d.me->done == d.me->posted + 1;
	}
}

/* @p posts @n more combined requests: each goes through within 20 tries. */
static void posts_go_through(struct ssq_producer *p, unsigned n, unsigned cell)
{
	struct ssq_completion comp[4];
	unsigned k, tries;
	int rc = 0;

	for (k = 0; k < n; k++) {
		for (tries = 0; tries < 20; tries++) {
			rc = fa(p, cell, 100 + k, 0);
			if (rc != -EAGAIN)
				break;
			drain();
			ssq_poll(p, comp, 4);
		}
		CHECK(rc == 0,
		      "producer %u: combined post %u: %d after %u tries (posted %llu "
		      "done %llu)",
		      p->id, k, rc, tries, (unsigned long long)p->me->posted,
		      (unsigned long long)p->me->done);
		if (rc)
			return;
	}
	CHECK(ssq_combine_flush(p) == 0, "producer %u: flush", p->id);
	drain();
	CHECK(counter(cell) == n, "cell %u: %llu, not %u", cell,
	      (unsigned long long)counter(cell), n);
}

int main(void)
{
	struct emu_tb_opts o = { .sq_cnt = RING };
	struct ssq_completion comp[4];
	int got;

	ctl = tb_ctl_up(&tb, &o, RING, EVERY);
	TB_PRODUCERS(ctl, &tb, &a, &b, &c, &d);
	/* Some traffic first, so that positions are not small. */
	for (got = 0; got < 10; got++)
		c_nop(0);

	/* 1. B holds the role: A hands over, B combines, A settles mid-batch. */
	__atomic_store_n(&ctl->comb_role, b.id + 1, __ATOMIC_SEQ_CST);
	CHECK(fa(&a, 1, 1, SSQ_WQE_SIGNALED) == 0, "A's hand-over");
	CHECK((a.me->hand.word & 3) == SSQ_HAND_POSTED, "A's request not POSTED");
	phase = 1;
	CHECK(ssq__combine(&b) == 0, "B's batch");
	CHECK(phase == 3, "phase %d: the interleaving did not happen", phase);
	CHECK(a_flush_rc == 0, "A's flush inside B's batch: %d", a_flush_rc);
	drain();
	CHECK(counter(1) == 1, "A's request executed %llu times",
	      (unsigned long long)counter(1));
	got = ssq_poll(&a, comp, 4);
	CHECK(got == 1 && comp[0].wr_id == 1, "A's completions: %d", got);
	CHECK(a.me->posted == a.me->done, "A: posted %llu done %llu",
	      (unsigned long long)a.me->posted, (unsigned long long)a.me->done);
	posts_go_through(&a, 3, 2);
	printf("1. a request settled while its slot is reused: checked\n");

	/*
	 * 2. D's own request completes between D's two passes. A stale bit
	 * (C's: its slot EMPTY, which a combiner skips) sends D the slow way:
	 * on the lone fast path (L1) D would post its request itself.
	 */
	__atomic_fetch_or(&ctl->comb_pending, 1ull << c.id, __ATOMIC_SEQ_CST);
	phase = 10;
	CHECK(fa(&d, 4, 40, 0) == 0, "D's combined post");
	CHECK(phase == 12, "phase %d: the interleaving did not happen", phase);
	CHECK(b_post_rc == 0, "B's hand-over: %d", b_post_rc);
	CHECK(transient, "A's done never one above its posted");
	CHECK((b.me->hand.word & 3) != SSQ_HAND_POSTED,
	      "B's request left POSTED by D's second pass (D: posted %llu done %llu)",
	      (unsigned long long)d.me->posted, (unsigned long long)d.me->done);
	CHECK(ssq_combine_flush(&d) == 0 && ssq_combine_flush(&b) == 0, "flushes");
	drain();
	CHECK(counter(4) == 1 && counter(3) == 1, "counters %llu %llu",
	      (unsigned long long)counter(4), (unsigned long long)counter(3));
	got = ssq_poll(&b, comp, 4);
	CHECK(got == 1 && comp[0].wr_id == 30, "B's completions: %d", got);
	CHECK(d.me->posted == d.me->done && b.me->posted == b.me->done,
	      "D: posted %llu done %llu, B: posted %llu done %llu",
	      (unsigned long long)d.me->posted, (unsigned long long)d.me->done,
	      (unsigned long long)b.me->posted, (unsigned long long)b.me->done);
	posts_go_through(&d, 3, 5);
	printf("2. a combiner whose own request completed between passes: checked\n");

	phase = 0;
	ssq_producer_fini(&a);
	ssq_producer_fini(&b);
	ssq_producer_fini(&c);
	ssq_producer_fini(&d);
	emu_tb_fini(&tb);
	free(ctl);
	return test_exit("ssq_combine_settle");
}
