/* SPDX-License-Identifier: MIT */
/*
 * Adversary: a client scribbles its hand-over slot now that it holds a
 * batch (<ssq/combine.h>, struct ssq_ctl_hand: a word with a count, and
 * SSQ_HAND_REQS requests), and ssqd's functions run over it:
 * ssq_ctl_hand_out (how long ssqd keeps a client's buffers), ssq_ctl_claim,
 * ssq_ctl_mark_dead, ssq_ctl_heal, ssq_ctl_check. None may index with the
 * word, loop on it, or hold the queue or a record for good. The count is
 * stored less one in 4 bits: a client can write 1..16, never 0; 16 is
 * past the slot's SSQ_HAND_REQS. One thread, the emulated device stepped
 * by hand (a 64-WQEBB ring; producers A, B, C, D of one queue; C is
 * ssqd's own: it checks, heals and claims; FETCH_ADDs of +1 on a counter
 * per request).
 *  1. A dies with its word TAKEN, count 16, at the last position a word
 *     can hold (past the ring, past `reserve`): hand_out says 0, the
 *     check passes, the heal returns, the claim reuses A's record.
 *  2. A dies with TAKEN, count 16, at the last WQEBB reserved: hand_out
 *     says 1 until the queue completes what was reserved, then 0 (a
 *     quiet queue: nothing is ever reserved past it), and the claim
 *     reuses the record then, not before.
 *  3. A (alive) writes POSTED, count 16, and 8 requests of an opcode
 *     nobody builds, with its bit: B's combined post combines them (8,
 *     not 16: NOPs in nobody's name) and its own; B's request runs once;
 *     A's flush counts nothing of it in `posted`; the check passes; A's
 *     and B's next posts run once each.
 *  4. A dies with its word POSTED, count 16: ssq_ctl_mark_dead takes it
 *     back (EMPTY); the claim reuses the record.
 *  5. `done` ahead of `posted`: by SSQ_HAND_REQS the check passes (a
 *     batch counted before its owner settles it), by one more it fails.
 */
#include <ssq/combine.h>
#include "dv/ctl.h"
#include "ssq_flow.h"
#include "tb_flow.h"

#define RING  64u
#define EVERY 16u

static struct emu_tb tb;
static struct ssq_ctl *ctl;
static struct ssq_producer a, b, c, d;

static uint64_t counter(unsigned cell)
{
	return tb_cell(&tb, cell);
}

/* ssqd's check of the block: 0, or what it found (printed). */
static int checked(const char *what)
{
	char why[256] = "";
	int rc = ssq_ctl_check(&c, ssq_ctl_epoch(ctl), why, sizeof(why));

	if (rc)
		fprintf(stderr, "%s: ssq_ctl_check %d: %s\n", what, rc, why);
	return rc;
}

/* @p's post at @cell (wr_id @wr_id), flushed, ran once, completed once. */
static void once(const char *what, struct ssq_producer *p, unsigned cell, uint64_t wr_id)
{
	struct ssq_completion comp[16];
	int got;

	CHECK(tb_fa_combined(&tb, p, cell, wr_id) == 0, "%s: post", what);
	CHECK(ssq_combine_flush(p) == 0, "%s: flush", what);
	tb_drain(&tb, &c);
	ssq_progress(p);
	got = ssq_poll(p, comp, 16);
	CHECK(counter(cell) == 1, "%s: request ran %llu times", what,
	      (unsigned long long)counter(cell));
	CHECK(got == 1 && comp[0].wr_id == wr_id, "%s: %d completions", what, got);
	CHECK(p->me->posted == p->me->done, "%s: posted %llu done %llu", what,
	      (unsigned long long)p->me->posted, (unsigned long long)p->me->done);
}

static void scribble(struct ssq_producer *p, uint64_t v, unsigned n, unsigned state)
{
	__atomic_store_n(&p->me->hand.word, ssq__hand_wordn(v, n, state),
	                 __ATOMIC_SEQ_CST);
}

/* @p (dead now) bound again to its record, which the claim returned. */
static void rebind(struct ssq_producer *p, uint32_t id)
{
	CHECK(ssq_producer_bind(p, ctl, id, &tb.s[0].sq, &tb.s[0].scq_v) == 0,
	      "record %u bound again", id);
}

static void dead_taken_past_everything(void)
{
	CHECK(tb_fa(&tb, &a, 1, 1) == 0, "1: A's direct post");
	tb_drain(&tb, &c);
	scribble(&a, SSQ__HAND_V_MASK, 16, SSQ_HAND_TAKEN);
	CHECK(ssq_ctl_hand_out(ctl, a.id) == 0,
	      "1: hand_out says a position never reserved is out");
	CHECK(checked("1") == 0, "1: ssq_ctl_check");
	CHECK(ssq_ctl_mark_dead(ctl, a.id) == 0 && ssq_ctl_heal(&c, 1000) >= 0,
	      "1: A dead, healed");
	CHECK(ssq_ctl_claim(ctl, 4242, c.id) == (int)a.id,
	      "1: the claim did not reuse A's record");
	CHECK(ctl->producers[a.id].hand.word == 0, "1: A's word left by the claim");
	rebind(&a, a.id);
	printf("1. TAKEN, count 16, past everything: not out, record reused\n");
}

static void dead_taken_last_reserved(void)
{
	struct ssq_completion comp[4];
	uint64_t res;
	int id;

	/* B posts 2, not run yet: [completed, reserve) holds them. */
	CHECK(tb_fa(&tb, &b, 2, 2) == 0 && tb_fa(&tb, &b, 3, 3) == 0, "2: B's posts");
	res = __atomic_load_n(&ctl->reserve, __ATOMIC_ACQUIRE);
	scribble(&a, res - 1, 16, SSQ_HAND_TAKEN);
	CHECK(ssq_ctl_hand_out(ctl, a.id) == 1,
	      "2: hand_out says the last reserved WQEBB is not out");
	CHECK(ssq_ctl_mark_dead(ctl, a.id) == 0 && ssq_ctl_heal(&c, 1000) >= 0,
	      "2: A dead, healed");
	id = ssq_ctl_claim(ctl, 4242, c.id);
	CHECK(id >= 0 && id != (int)a.id, "2: the claim reused A's record (%d) early",
	      id);
	CHECK(ssq_ctl_mark_dead(ctl, (uint32_t)id) == 0, "2: the other record back");
	tb_drain(&tb, &c);
	CHECK(ctl->completed == res, "2: completed %llu of %llu",
	      (unsigned long long)ctl->completed, (unsigned long long)res);
	CHECK(ssq_ctl_hand_out(ctl, a.id) == 0,
	      "2: hand_out still says out once the queue completed all it reserved "
	      "(count 16 past reserve)");
	CHECK(ssq_ctl_claim(ctl, 4242, c.id) == (int)a.id,
	      "2: the claim did not reuse A's record once completed");
	rebind(&a, a.id);
	ssq_progress(&b);
	CHECK(ssq_poll(&b, comp, 4) == 2 && comp[0].wr_id == 2 && comp[1].wr_id == 3,
	      "2: B's completions");
	CHECK(counter(2) == 1 && counter(3) == 1, "2: B's requests ran %llu, %llu times",
	      (unsigned long long)counter(2), (unsigned long long)counter(3));
	printf("2. TAKEN, count 16, at the last reserved: out until completed\n");
}

static void posted_garbage_combined(void)
{
	uint64_t posted = a.me->posted, res;
	unsigned i;

	for (i = 0; i < SSQ_HAND_REQS; i++) {
		a.me->hand.req[i].opcode = 0xff;
		a.me->hand.req[i].flags = 0xff;
	}
	scribble(&a, 77, 16, SSQ_HAND_POSTED);
	__atomic_fetch_or(&ctl->comb_pending, 1ull << a.id, __ATOMIC_SEQ_CST);
	res = __atomic_load_n(&ctl->reserve, __ATOMIC_ACQUIRE);
	CHECK(checked("3") == 0, "3: ssq_ctl_check");
	once("3: B's post", &b, 4, 4);
	CHECK(ctl->reserve - res == SSQ_HAND_REQS + 1,
	      "3: %llu WQEBBs reserved for A's 16 and B's 1 (want %u)",
	      (unsigned long long)(ctl->reserve - res), SSQ_HAND_REQS + 1);
	CHECK((a.me->hand.word & 3) == SSQ_HAND_TAKEN, "3: A's word %llx",
	      (unsigned long long)a.me->hand.word);
	CHECK(ssq_combine_flush(&a) == 0 && a.me->posted == posted && !a.hand_owed,
	      "3: A's flush counted %llu, owes %u",
	      (unsigned long long)(a.me->posted - posted), a.hand_owed);
	CHECK(checked("3 (after)") == 0, "3: ssq_ctl_check after");
	once("3: A's next post", &a, 5, 5);
	once("3: B's next post", &b, 6, 6);
	printf("3. POSTED, count 16, garbage requests: 8 NOPs, nothing counted\n");
}

static void dead_posted(void)
{
	scribble(&a, 99, 16, SSQ_HAND_POSTED);
	CHECK(ssq_ctl_mark_dead(ctl, a.id) == 0 && a.me->hand.word == 0,
	      "4: ssq_ctl_mark_dead left A's word %llx",
	      (unsigned long long)a.me->hand.word);
	CHECK(ssq_ctl_heal(&c, 1000) >= 0 && ssq_ctl_claim(ctl, 4242, c.id) == (int)a.id,
	      "4: the claim did not reuse A's record");
	rebind(&a, a.id);
	printf("4. POSTED, count 16, owner dead: taken back, record reused\n");
}

static void done_ahead(void)
{
	uint64_t done = a.me->done, posted = a.me->posted;

	a.me->done = posted + SSQ_HAND_REQS;
	CHECK(checked("5 (K ahead)") == 0, "5: done %u ahead refused", SSQ_HAND_REQS);
	a.me->done = posted + SSQ_HAND_REQS + 1;
	CHECK(checked("5 (K + 1 ahead: refused, as it should be)") != 0,
	      "5: done %u ahead accepted", SSQ_HAND_REQS + 1);
	a.me->done = done;
	CHECK(checked("5 (back)") == 0, "5: the block after");
	printf("5. done up to %u ahead of posted: accepted; one more: refused\n",
	       SSQ_HAND_REQS);
}

int main(void)
{
	struct emu_tb_opts o = { .sq_cnt = RING };

	ctl = tb_ctl_up(&tb, &o, RING, EVERY);
	TB_PRODUCERS(ctl, &tb, &a, &b, &c, &d);
	dead_taken_past_everything();
	dead_taken_last_reserved();
	posted_garbage_combined();
	dead_posted();
	done_ahead();
	CHECK(checked("end") == 0, "the block at the end");
	ssq_producer_fini(&a);
	ssq_producer_fini(&b);
	ssq_producer_fini(&c);
	emu_tb_fini(&tb);
	free(ctl);
	return test_exit("ssq_combine_batch_scribble");
}
