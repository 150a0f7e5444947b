/* SPDX-License-Identifier: MIT */
/*
 * Adversarial review of a588ca7 (ssq__hand_settle gives up with -EAGAIN on
 * a request TAKEN by a stopped combiner, the request left TAKEN): what
 * happens to that request, and to its owner's record, after the give-up.
 * The emulated device stepped by hand (a 64-WQEBB ring, producers A, B, C
 * of one queue; C steps the queue and heals, as ssqd's own; FETCH_ADDs of
 * +1 on a counter per request). B holds the role and combines on its own
 * thread, stopping in SSQ_HOOK_COMBINE_TAKEN after taking A's request.
 *  1. A closes anyway (ssq_queue_close detaches after settle's -EAGAIN:
 *     ssqd's DETACH marks the record dead, ssq_ctl_mark_dead). While the
 *     request is TAKEN and unpublished, ssq_ctl_claim must not hand A's
 *     record to anyone (its completion would reach the new owner). B goes
 *     on: the request runs once; once it completed, the record is reused
 *     (A2), and A2 gets no completion of A's, only its own.
 *  2. A2 hands over, B takes it and stops; A2's flush gives up (-EAGAIN);
 *     then B is declared dead (as ssqd after --stall-ms) and healed: the
 *     healer's NOP takes the place of A2's request, and A2's next flush
 *     posts it itself: it runs once, completes once, posted == done.
 *     B's thread stays parked (a dead process does not resume).
 */
#define SSQ_FAULT_HOOKS 1
#include <pthread.h>
#include <ssq/combine.h>
#include "dv/ctl.h"
#include "ssq_flow.h"
#include "tb_flow.h"
#include "hook_gate.h"

#define RING  64u
#define EVERY 16u

static struct emu_tb tb;
static struct ssq_ctl *ctl;
static struct ssq_producer a, a2, b, c;
static struct hook_gate b_gate; /* B stops at the hook */

void ssq_fault_hook(int where)
{
	hook_gate_hold(&b_gate, where, SSQ_HOOK_COMBINE_TAKEN);
}

static void *b_combines(void *arg)
{
	(void)arg;
	(void)ssq__combine(&b);
	return NULL;
}

static uint64_t counter(unsigned cell)
{
	return tb_cell(&tb, cell);
}

static int fa(struct ssq_producer *p, unsigned cell, uint64_t wr_id)
{
	return tb_fa_combined(&tb, p, cell, wr_id);
}

static void drain(void)
{
	tb_drain(&tb, &c);
}

/* B takes @p's request (handed over, B holding the role) and stops. */
static int b_takes(struct ssq_producer *p, unsigned cell, uint64_t wr_id, pthread_t *bt,
                   uint64_t *taken)
{
	__atomic_store_n(&b_gate.stopped, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&b_gate.goes, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&ctl->comb_role, b.id + 1, __ATOMIC_SEQ_CST);
	if (fa(p, cell, wr_id) || (p->me->hand.word & 3) != SSQ_HAND_POSTED)
		return -1;
	__atomic_store_n(&b_gate.stops, 1, __ATOMIC_RELEASE);
	if (pthread_create(bt, NULL, b_combines, NULL))
		return -1;
	/* Bounded: a B that took nothing returns without stopping. */
	if (!hook_gate_wait(&b_gate, 30))
		return -1;
	*taken = __atomic_load_n(&p->me->hand.word, __ATOMIC_ACQUIRE);
	return (*taken & 3) == SSQ_HAND_TAKEN ? 0 : -1;
}

int main(void)
{
	struct emu_tb_opts o = { .sq_cnt = RING };
	struct ssq_completion comp[8];
	pthread_t bt;
	uint64_t taken;
	int rc, got, id, i, others;

	ctl = tb_ctl_up(&tb, &o, RING, EVERY);
	TB_PRODUCERS(ctl, &tb, &a, &b, &c);
	/* Every other record in use, so that a claim can only reuse A's. */
	for (i = 3; i < (int)SSQ_MAX_PRODUCERS; i++)
		ctl->producers[i].state = SSQ_PROD_IDLE;

	/* 1. A's request taken by a stopped B; A gives up and detaches. */
	CHECK(b_takes(&a, 0, 10, &bt, &taken) == 0, "1: B did not take A's request");
	if (!b_gate.stopped)
		return test_exit("adv6_taken_detach");
	rc = ssq_producer_settle(&a, 50);
	printf("1. A's settle, B stopped after its take: %d (word %llx)\n", rc,
	       (unsigned long long)a.me->hand.word);
	CHECK(rc == -EAGAIN, "1: A's settle %d, want -EAGAIN", rc);
	CHECK(ssq_ctl_mark_dead(ctl, a.id) == 0, "1: A's detach");
	CHECK(ctl->producers[a.id].hand.word == taken, "1: A's request no longer TAKEN");
	id = ssq_ctl_claim(ctl, 4242, c.id);
	printf("1. a claim while A's request is TAKEN, unpublished: %d\n", id);
	CHECK(id < 0,
	      "1: A's record %d reused while its request is TAKEN by a stopped "
	      "combiner (its completion would reach the new owner)",
	      id);
	__atomic_store_n(&b_gate.goes, 1, __ATOMIC_RELEASE);
	pthread_join(bt, NULL);
	drain();
	printf("1. after B went on: A's request ran %llu times\n",
	       (unsigned long long)counter(0));
	CHECK(counter(0) == 1, "1: A's request ran %llu times",
	      (unsigned long long)counter(0));
	id = ssq_ctl_claim(ctl, 4243, c.id);
	printf("1. a claim once it completed: %d\n", id);
	CHECK(id == (int)a.id, "1: A's record not reused once its request completed: %d",
	      id);
	if (id != (int)a.id)
		return test_exit("adv6_taken_detach");
	CHECK(ssq_producer_bind(&a2, ctl, a.id, &tb.s[0].sq, &tb.s[0].scq_v) == 0,
	      "1: A2 bound");
	ssq_progress(&a2);
	got = ssq_poll(&a2, comp, 8);
	CHECK(got == 0, "1: A2 got %d completions of A's (wr_id %llu)", got,
	      got > 0 ? (unsigned long long)comp[0].wr_id : 0ull);
	CHECK(fa(&a2, 1, 20) == 0 && ssq_combine_flush(&a2) == 0, "1: A2's post");
	drain();
	ssq_progress(&a2);
	got = ssq_poll(&a2, comp, 8);
	printf("1. A2 on A's record: %d completions (wr_id %llu), its request ran %llu "
	       "times\n",
	       got, got > 0 ? (unsigned long long)comp[0].wr_id : 0ull,
	       (unsigned long long)counter(1));
	CHECK(got == 1 && comp[0].wr_id == 20 && counter(1) == 1,
	      "1: A2's completions %d, ran %llu", got, (unsigned long long)counter(1));
	CHECK(a2.me->posted == a2.me->done, "1: A2 posted %llu done %llu",
	      (unsigned long long)a2.me->posted, (unsigned long long)a2.me->done);

	/* 2. A2's request taken by B, B stops and is declared dead; healed. */
	CHECK(b_takes(&a2, 2, 30, &bt, &taken) == 0, "2: B did not take A2's request");
	if (!b_gate.stopped)
		return test_exit("adv6_taken_detach");
	rc = ssq_combine_flush(&a2);
	CHECK(rc == -EAGAIN && a2.me->hand.word == taken, "2: A2's flush %d", rc);
	CHECK(ssq_ctl_mark_dead(ctl, b.id) == 0, "2: B dead");
	rc = ssq_ctl_heal(&c, 2000);
	printf("2. B dead after its take, healed: %d NOPs\n", rc);
	CHECK(rc >= 1, "2: heal %d", rc);
	rc = ssq_combine_flush(&a2);
	drain();
	ssq_progress(&a2);
	got = ssq_poll(&a2, comp, 8);
	printf("2. A2's flush after the heal: %d; its request ran %llu times, %d "
	       "completions (wr_id %llu); posted %llu done %llu\n",
	       rc, (unsigned long long)counter(2), got,
	       got > 0 ? (unsigned long long)comp[0].wr_id : 0ull,
	       (unsigned long long)a2.me->posted, (unsigned long long)a2.me->done);
	CHECK(rc == 0 && a2.me->hand.word == 0, "2: A2's flush %d", rc);
	CHECK(counter(2) == 1, "2: A2's request ran %llu times",
	      (unsigned long long)counter(2));
	CHECK(got == 1 && comp[0].wr_id == 30, "2: A2's completions %d", got);
	CHECK(a2.me->posted == a2.me->done, "2: A2 posted %llu done %llu",
	      (unsigned long long)a2.me->posted, (unsigned long long)a2.me->done);
	/* And A2 goes on: a ring's worth more, each completing. */
	for (i = 0, others = 0; i < (int)RING; i++) {
		if (fa(&a2, 3, 100 + (uint64_t)i) || ssq_combine_flush(&a2))
			break;
		drain();
		ssq_progress(&a2);
		others += ssq_poll(&a2, comp, 8);
	}
	CHECK(i == (int)RING && others == (int)RING && counter(3) == RING,
	      "2: A2's later posts: %d posted, %d completions, ran %llu", i, others,
	      (unsigned long long)counter(3));
	/* B's thread stays parked: a dead process never resumes. */
	return test_exit("adv6_taken_detach");
}
