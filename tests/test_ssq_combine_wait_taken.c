/* SPDX-License-Identifier: MIT */
/*
 * ssq_wait's timeout holds while its combined request is in a combiner's
 * hands (<ssq/combine.h>, src/dv/queue_wait.c). One thread, the emulated
 * device stepped by hand (a 64-WQEBB ring, producers A, B, C of one
 * queue; C heals, as ssqd's own; a FETCH_ADD of +1 on a counter). B holds
 * the role; A hands its request over; B combines, takes it (C10) and
 * stops before publishing it (SSQ_HOOK_COMBINE_TAKEN: preempted, or
 * stopped; ssqd has not killed it yet). A's ssq_wait(1, 50 ms) must
 * return -ETIMEDOUT: settling first waited for B to publish, whatever the
 * timeout. Then B dies, C heals (a NOP over B's WQEBB), and A's flush
 * posts the request itself: it runs once.
 */
#define SSQ_FAULT_HOOKS 1
#include <setjmp.h>
#include <signal.h>
#include <sys/wait.h>
#include <ssq/combine.h>
#include "dv/ctl.h"
#include "ssq_flow.h"
#include "tb_flow.h"

#define RING   64u
#define EVERY  16u
#define WAIT_S 10

static struct emu_tb tb;
static struct ssq_ctl *ctl;
static struct ssq_producer a, b, c;
static jmp_buf jb;
static int b_stops; /* B stops at its next SSQ_HOOK_COMBINE_TAKEN */

void ssq_fault_hook(int where)
{
	if (b_stops && where == SSQ_HOOK_COMBINE_TAKEN) {
		b_stops = 0;
		longjmp(jb, 1);
	}
}

static uint64_t counter(unsigned cell)
{
	return tb_cell(&tb, cell);
}

static void drain(void)
{
	tb_drain(&tb, &c);
}

int main(void)
{
	struct emu_tb_opts o = { .sq_cnt = RING };
	struct ssq_completion comp[4];
	int rc, status = 0, waited;
	pid_t child;

	ctl = tb_ctl_up(&tb, &o, RING, EVERY);
	TB_PRODUCERS(ctl, &tb, &a, &b, &c);
	__atomic_store_n(&ctl->comb_role, b.id + 1, __ATOMIC_SEQ_CST);
	rc = ssq_post_fetch_add_combined(&a, tb.s[0].iova, tb.s[0].key, tb.s[1].iova,
	                                 tb.s[1].key, 1, 10, SSQ_WQE_SIGNALED);
	CHECK(rc == 0 && (a.me->hand.word & 3) == SSQ_HAND_POSTED,
	      "A's request not handed over: %d", rc);
	b_stops = 1;
	if (setjmp(jb) == 0)
		(void)ssq__combine(&b);
	CHECK((a.me->hand.word & 3) == SSQ_HAND_TAKEN && ctl->comb_role == b.id + 1,
	      "B did not stop between its take and its publish (A's word %llx)",
	      (unsigned long long)a.me->hand.word);

	/* A's wait, in a child (it may never return), given WAIT_S seconds. */
	child = fork();
	if (child == 0) {
		rc = ssq_wait(&a, 1, 50 * 1000000ull);
		_exit(rc == -ETIMEDOUT ? 0 : 4);
	}
	for (waited = 0; waited < WAIT_S * 10; waited++) {
		if (waitpid(child, &status, WNOHANG) == child)
			break;
		usleep(100000);
	}
	if (waited == WAIT_S * 10) {
		kill(child, SIGKILL);
		waitpid(child, &status, 0);
	}
	printf("A's ssq_wait(1, 50 ms), its request taken and not published: %s\n",
	       waited == WAIT_S * 10 ? "hung" : "returned");
	CHECK(waited < WAIT_S * 10,
	      "A's ssq_wait(1, 50 ms) has not returned after %d s: settling waits for "
	      "the combiner that took its request",
	      WAIT_S);
	CHECK(waited == WAIT_S * 10 || (WIFEXITED(status) && WEXITSTATUS(status) == 0),
	      "A's ssq_wait: not -ETIMEDOUT (status %d)", status);

	/* B dies; ssqd heals; A's flush posts its request itself: once. */
	CHECK(ssq_ctl_mark_dead(ctl, b.id) == 0 && ssq_ctl_heal(&c, 1000) >= 0,
	      "B dead, healed");
	drain();
	CHECK(ssq_combine_flush(&a) == 0, "A's flush");
	drain();
	rc = ssq_wait(&a, 1, 5000 * 1000000ull);
	CHECK(rc >= 1 && ssq_poll(&a, comp, 4) == 1 && comp[0].wr_id == 10,
	      "A's completion: %d", rc);
	CHECK(counter(0) == 1, "A's request ran %llu times",
	      (unsigned long long)counter(0));
	printf("after B's death and the heal: A's request ran %llu times\n",
	       (unsigned long long)counter(0));

	ssq_producer_fini(&a);
	ssq_producer_fini(&c);
	emu_tb_fini(&tb);
	free(ctl);
	return test_exit("ssq_combine_wait_taken");
}
