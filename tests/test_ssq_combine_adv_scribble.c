/* SPDX-License-Identifier: MIT */
/*
 * Adversary (h-adv5c): a client scribbles the combining hints, comb_role
 * and comb_pending (<ssq/combine.h>: "both hints"), and ssqd's functions
 * run over them (ssq_ctl_check, ssq_ctl_heal, ssq_ctl_claim). One thread,
 * the emulated device stepped by hand (a 64-WQEBB ring, producers A, B, C
 * of one queue; C is the healer, as ssqd's own; FETCH_ADDs of +1 on a
 * counter per request).
 *  1. comb_role garbage (past SSQ_MAX_PRODUCERS): A's post is handed over
 *     and posted by A's flush; the heal breaks the garbage; A's posts
 *     are lone again (published at once) once a combine cleared the bit
 *     its take-back left. Holds.
 *  2. comb_pending all ones: A's post takes the slow way, combines, and
 *     only A's request runs (the other records' words are not POSTED).
 *     Holds.
 *  3. comb_role naming a FREE record (63): ssq_ctl_check accepts it, the
 *     heal leaves it (it frees a dead holder's role and garbage past the
 *     range only), ssq_ctl_claim hands record 63 out with the role still
 *     naming it. From then on no producer combines or takes the lone fast
 *     path again, for as long as ssqd runs: each request is posted by its
 *     owner's next call (take back, post). Liveness and cost only: every
 *     request still runs once.
 * Each request runs once (its counter 1) and completes once to its owner.
 */
#include <ssq/combine.h>
#include "dv/ctl.h"
#include "ssq_flow.h"
#include "tb_flow.h"

#define RING  64u
#define EVERY 16u

static struct emu_tb tb;
static struct ssq_ctl *ctl;
static struct ssq_producer a, b, c;

static void drain(void)
{
	tb_drain(&tb, &c);
}

static int fa(struct ssq_producer *p, unsigned cell, uint64_t wr_id)
{
	return tb_fa_combined(&tb, p, cell, wr_id);
}

static uint64_t counter(unsigned cell)
{
	return tb_cell(&tb, cell);
}

static unsigned hand_state(const struct ssq_producer *p)
{
	return (unsigned)(__atomic_load_n(&p->me->hand.word, __ATOMIC_ACQUIRE) & 3);
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

/* @p's request at @cell flushed, run once, completed once with @wr_id. */
static void once(const char *what, struct ssq_producer *p, unsigned cell, uint64_t wr_id)
{
	struct ssq_completion comp[4];
	int got;

	CHECK(ssq_combine_flush(p) == 0, "%s: flush", what);
	drain();
	got = ssq_poll(p, comp, 4);
	CHECK(counter(cell) == 1, "%s: request run %llu times", what,
	      (unsigned long long)counter(cell));
	CHECK(got == 1 && comp[0].wr_id == wr_id, "%s: %d completions", what, got);
	CHECK(p->me->posted == p->me->done, "%s: posted %llu done %llu", what,
	      (unsigned long long)p->me->posted, (unsigned long long)p->me->done);
}

int main(void)
{
	struct emu_tb_opts o = { .sq_cnt = RING };
	uint64_t posted;
	int id;

	ctl = tb_ctl_up(&tb, &o, RING, EVERY);
	TB_PRODUCERS(ctl, &tb, &a, &b, &c);

	/* 1. Garbage past the range. */
	__atomic_store_n(&ctl->comb_role, 0xdeadbeefu, __ATOMIC_SEQ_CST);
	CHECK(checked("1") == 0, "1: ssq_ctl_check refused a garbage role");
	CHECK(fa(&a, 1, 10) == 0 && hand_state(&a) == SSQ_HAND_POSTED,
	      "1: A's post not handed over under a garbage role");
	once("1", &a, 1, 10);
	CHECK(ssq_ctl_heal(&c, 1000) >= 0 && ctl->comb_role == 0,
	      "1: the heal left the garbage role: %x", ctl->comb_role);
	/* A's take-back left its bit set (stale): this one goes the slow way. */
	CHECK(fa(&a, 2, 20) == 0, "1: A's post after the heal");
	once("1 (after the heal)", &a, 2, 20);
	posted = a.me->posted;
	CHECK(fa(&a, 6, 60) == 0 && hand_state(&a) == SSQ_HAND_EMPTY &&
	          a.me->posted == posted + 1,
	      "1: A's second post after the heal not lone");
	once("1 (lone again)", &a, 6, 60);
	printf(
	    "1. a garbage role: handed over, posted by its owner, broken by the heal\n");

	/* 2. Every bit pending. */
	__atomic_store_n(&ctl->comb_pending, ~0ull, __ATOMIC_SEQ_CST);
	CHECK(checked("2") == 0, "2: ssq_ctl_check refused garbage bits");
	CHECK(fa(&a, 3, 30) == 0, "2: A's post");
	CHECK(ctl->comb_pending == 0 && ctl->comb_role == 0,
	      "2: after A's combine: pending %llx role %u",
	      (unsigned long long)ctl->comb_pending, ctl->comb_role);
	once("2", &a, 3, 30);
	CHECK(counter(4) == 0 && b.me->posted == 0, "2: something of B's ran");
	printf("2. garbage bits: A combined, only its own request ran\n");

	/* 3. A role naming a FREE record. */
	__atomic_store_n(&ctl->comb_role, SSQ_MAX_PRODUCERS, __ATOMIC_SEQ_CST);
	CHECK(checked("3") == 0, "3: ssq_ctl_check refused the role");
	CHECK(ssq_ctl_mark_dead(ctl, b.id) == 0 && ssq_ctl_heal(&c, 1000) >= 0,
	      "3: B dead, healed");
	id = ssq_ctl_claim(ctl, 4242, c.id);
	CHECK(id >= 0, "3: claim: %d", id);
	printf("3. after a death, a heal and a claim (record %d): role %u\n", id,
	       ctl->comb_role);
	CHECK(ctl->comb_role == 0,
	      "3: comb_role %u names record %u, FREE when written, after a heal and a "
	      "claim (record %d handed out): never freed",
	      ctl->comb_role, SSQ_MAX_PRODUCERS - 1, id);
	posted = a.me->posted;
	CHECK(fa(&a, 5, 50) == 0, "3: A's post");
	CHECK(hand_state(&a) == SSQ_HAND_EMPTY && a.me->posted == posted + 1,
	      "3: A alone, its post not lone: handed over to nobody (state %u), "
	      "posted only at its next call",
	      hand_state(&a));
	once("3", &a, 5, 50);

	ssq_producer_fini(&a);
	ssq_producer_fini(&c);
	emu_tb_fini(&tb);
	free(ctl);
	return test_exit("ssq_combine_adv_scribble");
}
