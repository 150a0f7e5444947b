/* SPDX-License-Identifier: MIT */
/*
 * Batches in the hand-over slot (<ssq/combine.h>): a poster whose batch is
 * still POSTED appends to it (up to SSQ_HAND_REQS), a combiner takes the
 * prefix it read, and what a combiner did not publish - not taken, or
 * NOPed by a healer after its death - its owner posts again, in order.
 * The emulated device stepped by hand (a 64-WQEBB ring; producers A, B,
 * C, D of one queue; C steps the queue and heals, as ssqd's own; B and D
 * combine). Each of A's requests is a signaled FETCH_ADD of +1 on one
 * counter, its old value written to a cell of its own: the counter says
 * how many ran, each cell at which place it ran, the completions' wr_ids
 * in which order they came.
 *  1. B holds the role: A's SSQ_HAND_REQS posts append to one batch
 *     (POSTED(seq, n), n = 1..K, one seq, nothing reserved); the next
 *     finds the slot full, takes the batch back (C13'), posts it itself
 *     in one reservation and hands itself over as a new batch; B takes
 *     that one.
 *  2. B reads A's batch of 3 and stops after its reservation (before its
 *     take, C10); A appends 2 more; B goes on and takes the 3 it read
 *     (TAKEN(pos, 3)); A's next post settles: 3 published, 2 owed, posted
 *     by A itself before the new one.
 *  3. B stops mid-batch (the first of A's 4 published): A's flush gives
 *     up (-EAGAIN, still TAKEN); B goes on; A's flush settles all 4.
 *  4. B dies mid-batch (the first of A's 4 published): C marks it dead
 *     and heals (NOPs over the other 3); A's flush posts the 3 itself.
 *  5. D dies between its take and its first publish (A's 3 taken): all 3
 *     NOPed, all 3 posted by A.
 * Each phase: every request of A ran once (the counter), in A's order
 * (each cell), and completed once to A, in order (wr_ids).
 */
#define SSQ_FAULT_HOOKS 1
#include <pthread.h>
#include <setjmp.h>
#include <ssq/combine.h>
#include "dv/ctl.h"
#include "ssq_flow.h"
#include "tb_flow.h"
#include "hook_gate.h"

#define RING  64u
#define EVERY 16u
#define K     SSQ_HAND_REQS
#define CELLS 64u /* A's requests' old values: cells CELLS + i of side 0 */

static struct emu_tb tb;
static struct ssq_ctl *ctl;
static struct ssq_producer a, b, c, d;
static struct hook_gate gate; /* a combiner thread stops at gate_at */
static int gate_at;
static jmp_buf jb;
static int die_at;             /* the main thread's combiner "dies" (longjmp) here */
static uint64_t na, next_comp; /* A's requests posted; its next completion */

void ssq_fault_hook(int where)
{
	if (gate_at)
		hook_gate_hold(&gate, where, gate_at);
	if (die_at && where == die_at) {
		die_at = 0;
		longjmp(jb, 1);
	}
}

/* A's next request, combined: FA +1 on counter 0, old value to its cell. */
static int post_a(void)
{
	int rc = ssq_post_fetch_add_combined(&a, tb.s[0].iova + 8 * (CELLS + na),
	                                     tb.s[0].key, tb.s[1].iova, tb.s[1].key, 1,
	                                     na, SSQ_WQE_SIGNALED);

	if (!rc)
		na++;
	return rc;
}

static uint64_t word(void)
{
	return __atomic_load_n(&a.me->hand.word, __ATOMIC_ACQUIRE);
}

static uint64_t old_value(uint64_t i)
{
	return __atomic_load_n((uint64_t *)(tb.s[0].mem + 8 * (CELLS + i)),
	                       __ATOMIC_ACQUIRE);
}

/* A's requests so far: run once each, in order, completed once in order. */
static void all_once(const char *what)
{
	struct ssq_completion comp[16];
	uint64_t i;
	int got, k;

	CHECK(ssq_combine_flush(&a) == 0 && word() == 0 && !a.hand_owed,
	      "%s: A's flush (word %llx, owed %u)", what, (unsigned long long)word(),
	      a.hand_owed);
	tb_drain(&tb, &c);
	ssq_progress(&a);
	while ((got = ssq_poll(&a, comp, 16)) > 0)
		for (k = 0; k < got; k++) {
			CHECK(comp[k].wr_id == next_comp,
			      "%s: A's completion %llu came as %llu (order)", what,
			      (unsigned long long)next_comp,
			      (unsigned long long)comp[k].wr_id);
			next_comp = comp[k].wr_id + 1;
		}
	CHECK(next_comp == na, "%s: %llu of A's %llu completions", what,
	      (unsigned long long)next_comp, (unsigned long long)na);
	CHECK(tb_cell(&tb, 0) == na, "%s: A's %llu requests ran %llu times", what,
	      (unsigned long long)na, (unsigned long long)tb_cell(&tb, 0));
	for (i = 0; i < na; i++)
		CHECK(old_value(i) == i, "%s: A's request %llu ran as number %llu", what,
		      (unsigned long long)i, (unsigned long long)old_value(i));
	CHECK(a.me->posted == a.me->done, "%s: A posted %llu, done %llu", what,
	      (unsigned long long)a.me->posted, (unsigned long long)a.me->done);
	printf("%s: A's %llu requests ran once each, in order\n", what,
	       (unsigned long long)na);
}

/* @p combines on a thread that stops at hook @at: the thread. */
static pthread_t combine_stopped(struct ssq_producer *p, int at)
{
	pthread_t t;

	gate_at = at;
	hook_gate_arm(&gate);
	CHECK(pthread_create(&t, NULL, tb_combines, p) == 0, "combiner thread");
	CHECK(hook_gate_wait(&gate, 30), "the combiner did not reach hook %d", at);
	return t;
}

static void combine_go(pthread_t t)
{
	__atomic_store_n(&gate.goes, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	gate_at = 0;
}

static void appends_up_to_k(void)
{
	uint64_t res = ctl->reserve, w0, posted = a.me->posted;
	unsigned i;

	__atomic_store_n(&ctl->comb_role, b.id + 1, __ATOMIC_SEQ_CST);
	for (i = 0; i < K; i++) {
		CHECK(post_a() == 0, "1: A's post %u", i);
		CHECK((word() & 3) == SSQ_HAND_POSTED && ssq__hand_n(word()) == i + 1 &&
		          a.hand_n == i + 1,
		      "1: after A's post %u: word %llx (want POSTED, %u)", i,
		      (unsigned long long)word(), i + 1);
	}
	w0 = word();
	CHECK(ctl->reserve == res && a.me->posted == posted,
	      "1: %llu WQEBBs reserved while the batch was POSTED",
	      (unsigned long long)(ctl->reserve - res));
	/* Full: taken back, posted by A, and this one a new batch. */
	CHECK(post_a() == 0, "1: A's post %u (slot full)", K);
	CHECK(ctl->reserve == res + K && a.me->posted == posted + K,
	      "1: the full batch: %llu reserved, %llu posted (want %u)",
	      (unsigned long long)(ctl->reserve - res),
	      (unsigned long long)(a.me->posted - posted), K);
	CHECK((word() & 3) == SSQ_HAND_POSTED && ssq__hand_n(word()) == 1 &&
	          ssq__hand_v(word()) == ssq__hand_v(w0) + 1,
	      "1: A's new batch: word %llx", (unsigned long long)word());
	/* B combines: takes the new batch of 1. */
	CHECK(ssq__combine(&b) == 0 && (word() & 3) == SSQ_HAND_DONE &&
	          ssq__hand_n(word()) == 1,
	      "1: B's combine: A's word %llx", (unsigned long long)word());
	all_once("1. appends up to K, the role held");
}

static void prefix_while_appending(void)
{
	uint64_t taken;
	pthread_t t;
	unsigned i;

	__atomic_store_n(&ctl->comb_role, b.id + 1, __ATOMIC_SEQ_CST);
	for (i = 0; i < 3; i++)
		CHECK(post_a() == 0, "2: A's post %u", i);
	/* B has read A's word (3) and reserved 3; it has not taken yet. */
	t = combine_stopped(&b, SSQ_HOOK_AFTER_RECORD);
	CHECK(post_a() == 0 && post_a() == 0 && (word() & 3) == SSQ_HAND_POSTED &&
	          ssq__hand_n(word()) == 5,
	      "2: A's appends while B holds its reservation: word %llx",
	      (unsigned long long)word());
	combine_go(t);
	taken = word();
	CHECK(((taken & 3) == SSQ_HAND_DONE || (taken & 3) == SSQ_HAND_TAKEN) &&
	          ssq__hand_n(taken) == 3,
	      "2: B took %u of A's 5 (word %llx; want a prefix of 3)", ssq__hand_n(taken),
	      (unsigned long long)taken);
	tb_drain(&tb, &c);
	/* A's next post settles: 3 published, 2 owed and posted first. */
	CHECK(post_a() == 0, "2: A's post after B's take");
	all_once("2. a prefix taken while the owner appends");
}

static void stopped_mid_batch(void)
{
	pthread_t t;
	unsigned i;
	int rc;

	__atomic_store_n(&ctl->comb_role, b.id + 1, __ATOMIC_SEQ_CST);
	for (i = 0; i < 4; i++)
		CHECK(post_a() == 0, "3: A's post %u", i);
	t = combine_stopped(&b, SSQ_HOOK_COMBINE_BUILT);
	rc = ssq_combine_flush(&a);
	CHECK(rc == -EAGAIN && (word() & 3) == SSQ_HAND_TAKEN && ssq__hand_n(word()) == 4,
	      "3: A's flush, B stopped mid-batch: %d, word %llx (want -EAGAIN, TAKEN 4)",
	      rc, (unsigned long long)word());
	combine_go(t);
	all_once("3. a combiner stopped mid-batch, then going on");
}

/* @p combines on this thread and "dies" at hook @at: marked dead, healed. */
static void combine_dies(struct ssq_producer *p, int at)
{
	die_at = at;
	if (setjmp(jb) == 0)
		(void)ssq__combine(p);
	CHECK(die_at == 0, "the combiner did not reach hook %d", at);
	CHECK(ssq_ctl_mark_dead(ctl, p->id) == 0 && ssq_ctl_heal(&c, 1000) >= 0,
	      "the combiner marked dead and healed");
	CHECK(ctl->comb_role == 0, "the dead combiner's role: %u", ctl->comb_role);
}

static void killed(struct ssq_producer *p, int at, unsigned n, const char *what)
{
	unsigned i;

	__atomic_store_n(&ctl->comb_role, p->id + 1, __ATOMIC_SEQ_CST);
	for (i = 0; i < n; i++)
		CHECK(post_a() == 0, "%s: A's post %u", what, i);
	combine_dies(p, at);
	CHECK((word() & 3) == SSQ_HAND_TAKEN && ssq__hand_n(word()) == n,
	      "%s: A's word %llx (want TAKEN %u)", what, (unsigned long long)word(), n);
	tb_drain(&tb, &c);
	all_once(what);
}

int main(void)
{
	struct emu_tb_opts o = { .sq_cnt = RING };

	ctl = tb_ctl_up(&tb, &o, RING, EVERY);
	TB_PRODUCERS(ctl, &tb, &a, &b, &c, &d);
	appends_up_to_k();
	prefix_while_appending();
	stopped_mid_batch();
	killed(&b, SSQ_HOOK_COMBINE_BUILT, 4, "4. a combiner killed mid-batch, healed");
	killed(&d, SSQ_HOOK_COMBINE_TAKEN, 3,
	       "5. a combiner killed after its take, before publishing, healed");
	CHECK(ssq_producer_fini(&a) == 0, "A's fini");
	ssq_producer_fini(&c);
	emu_tb_fini(&tb);
	free(ctl);
	return test_exit("ssq_combine_batch");
}
