/* SPDX-License-Identifier: MIT */
/*
 * Adversary (h-adv5c): a request POSTED whose pending bit is gone, the
 * role free, its owner alone (<ssq/combine.h>). One thread, the emulated
 * device stepped by hand (a 64-WQEBB ring, producers A, B, C of one
 * queue, FETCH_ADDs of +1 on a counter per request).
 *  1. B holds the role; A hands a request over (POSTED, its bit). B
 *     combines: it swaps the bits out and dies in its reservation
 *     (SSQ_HOOK_AFTER_ADD, before its C10: A's word still POSTED). ssqd
 *     marks B dead and heals (C heals: the NOP over B's WQEBB, the role
 *     freed). A, alone, flushes: its request must be posted once and the
 *     flush return.
 *  2. B holds the role; A hands a request over; the queue goes in error
 *     and ssqd resets it (ssq_ctl_reset: comb_pending and comb_role
 *     zeroed, A's word POSTED kept). A flushes, as 1.
 *  3. The same state (POSTED, no bit, the role free): ssq_producer_fini,
 *     which flushes first, must return with the request posted.
 * ssq__hand_settle's POSTED case takes the free role and combines; a
 * combiner only looks at the requests whose bit is set, so it posts
 * nothing and lets the role go; settle then finds the word still POSTED
 * and the role free again, and goes round. A guard at
 * SSQ_HOOK_COMBINE_ROLE (each of A's passes) ends a flush that has taken
 * the role SPIN_LIMIT times.
 */
#define SSQ_FAULT_HOOKS 1
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <ssq/combine.h>
#include "dv/ctl.h"
#include "ssq_flow.h"
#include "tb_flow.h"

#define RING       64u
#define EVERY      16u
#define SPIN_LIMIT 100000u
#define FINI_S     10

static struct emu_tb tb;
static struct ssq_ctl *ctl;
static struct ssq_producer a, b, c;
static jmp_buf jb;
static int b_dies;        /* B "dies" at its next SSQ_HOOK_AFTER_ADD */
static int guard;         /* count A's passes at SSQ_HOOK_COMBINE_ROLE */
static unsigned a_passes; /* A's passes during the guarded call */

void ssq_fault_hook(int where)
{
	if (b_dies && where == SSQ_HOOK_AFTER_ADD) {
		b_dies = 0;
		longjmp(jb, 1);
	}
	if (guard && where == SSQ_HOOK_COMBINE_ROLE && ++a_passes >= SPIN_LIMIT) {
		guard = 0;
		longjmp(jb, 2);
	}
}

/* Everything published completed. */
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

/* A's flush, guarded: 0, its error, or 1 (still spinning at the limit). */
static int guarded_flush(void)
{
	volatile int rc = 1;

	a_passes = 0;
	guard = 1;
	if (setjmp(jb) == 0)
		rc = ssq_combine_flush(&a);
	guard = 0;
	return rc;
}

/* A's request at @cell, @wr_id: flushed, executed once, completed once. */
static void settles_once(const char *what, unsigned cell, uint64_t wr_id)
{
	struct ssq_completion comp[4];
	uint64_t w = __atomic_load_n(&a.me->hand.word, __ATOMIC_ACQUIRE);
	int rc = guarded_flush(), got;

	CHECK(rc == 0,
	      "%s: A's flush %s (rc %d): A took the free role %u times, its word "
	      "still state %u (POSTED %u), pending bits %llx",
	      what, rc == 1 ? "never returned" : "failed", rc, a_passes,
	      (unsigned)(__atomic_load_n(&a.me->hand.word, __ATOMIC_ACQUIRE) & 3),
	      (unsigned)((w & 3) == SSQ_HAND_POSTED),
	      (unsigned long long)__atomic_load_n(&ctl->comb_pending, __ATOMIC_ACQUIRE));
	drain();
	got = ssq_poll(&a, comp, 4);
	CHECK(counter(cell) == 1, "%s: A's request executed %llu times", what,
	      (unsigned long long)counter(cell));
	CHECK(got == 1 && comp[0].wr_id == wr_id,
	      "%s: A's completions: %d (want 1, wr_id %llu)", what, got,
	      (unsigned long long)wr_id);
	if (rc == 1) {
		/*
		 * Let the next case start clean: with the role held by C, A's
		 * settle takes its request back and posts it itself.
		 */
		__atomic_store_n(&ctl->comb_role, c.id + 1, __ATOMIC_SEQ_CST);
		CHECK(ssq_combine_flush(&a) == 0, "%s: A's flush with the role held",
		      what);
		__atomic_store_n(&ctl->comb_role, 0, __ATOMIC_SEQ_CST);
		drain();
		(void)ssq_poll(&a, comp, 4);
	}
}

int main(void)
{
	struct emu_tb_opts o = { .sq_cnt = RING };
	volatile int died = 0;
	int rc, status = 0, waited;
	pid_t child;

	ctl = tb_ctl_up(&tb, &o, RING, EVERY);
	TB_PRODUCERS(ctl, &tb, &a, &b, &c);

	/* 1. The combiner dies after swapping the bits, before taking. */
	__atomic_store_n(&ctl->comb_role, b.id + 1, __ATOMIC_SEQ_CST);
	CHECK(fa(&a, 1, 10) == 0, "A's hand-over");
	CHECK((a.me->hand.word & 3) == SSQ_HAND_POSTED, "A's request not POSTED");
	b_dies = 1;
	if (setjmp(jb) == 0)
		(void)ssq__combine(&b);
	else
		died = 1;
	CHECK(died, "B did not reach its reservation");
	CHECK(ssq_ctl_mark_dead(ctl, b.id) == 0, "mark B dead");
	rc = ssq_ctl_heal(&c, 2000);
	CHECK(rc == 1, "heal: %d NOPs (want 1, B's WQEBB)", rc);
	CHECK(ctl->comb_role == 0, "B's role not freed: %u", ctl->comb_role);
	drain();
	settles_once("1. combiner died after its swap", 1, 10);
	printf(
	    "1. a combiner dead between its swap and its take: A's flush took the role "
	    "%u times\n",
	    a_passes);

	/* 2. A reset zeroes the bits under a POSTED request. */
	__atomic_store_n(&ctl->comb_role, c.id + 1, __ATOMIC_SEQ_CST);
	CHECK(fa(&a, 2, 20) == 0, "A's second hand-over");
	CHECK((a.me->hand.word & 3) == SSQ_HAND_POSTED, "A's second request not POSTED");
	ssq_ctl_set_error(ctl);
	drain();
	CHECK(tb_reset_qp(&tb) == 0, "the QP through RESET");
	rc = ssq_ctl_reset(&c, 2000);
	CHECK(rc == 0, "reset: %d", rc);
	settles_once("2. queue reset", 2, 20);
	printf("2. a reset under a POSTED request: A's flush took the role %u times\n",
	       a_passes);

	/*
	 * 3. ssq_producer_fini in the state 1 and 2 leave (POSTED, no bit,
	 * the role free): it flushes first, the same way round.
	 */
	__atomic_store_n(&ctl->comb_role, c.id + 1, __ATOMIC_SEQ_CST);
	CHECK(fa(&a, 3, 30) == 0, "A's third hand-over");
	__atomic_store_n(&ctl->comb_pending, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&ctl->comb_role, 0, __ATOMIC_SEQ_CST);
	/*
	 * ssq_producer_fini is libssq's (no hook there): in a child, which
	 * has its own copy of everything, given FINI_S seconds.
	 */
	child = fork();
	if (child == 0) {
		ssq_producer_fini(&a);
		drain();
		_exit(counter(3) == 1 ? 0 : 3);
	}
	for (waited = 0; waited < FINI_S * 10; waited++) {
		if (waitpid(child, &status, WNOHANG) == child)
			break;
		usleep(100000);
	}
	if (waited == FINI_S * 10) {
		kill(child, SIGKILL);
		waitpid(child, &status, 0);
	}
	CHECK(waited < FINI_S * 10,
	      "3. ssq_producer_fini has not returned after %d s (its request POSTED, "
	      "no bit, the role free)",
	      FINI_S);
	CHECK(waited == FINI_S * 10 || (WIFEXITED(status) && WEXITSTATUS(status) == 0),
	      "3. after ssq_producer_fini: A's request not executed once (status %d)",
	      status);
	/* Here: the role held, so that the parent's fini takes it back. */
	__atomic_store_n(&ctl->comb_role, c.id + 1, __ATOMIC_SEQ_CST);
	ssq_producer_fini(&a);
	__atomic_store_n(&ctl->comb_role, 0, __ATOMIC_SEQ_CST);
	printf("3. fini with a POSTED request and no bit: done\n");

	ssq_producer_fini(&c);
	emu_tb_fini(&tb);
	free(ctl);
	return test_exit("ssq_combine_adv_bitless");
}
