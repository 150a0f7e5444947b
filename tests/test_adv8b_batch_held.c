/* SPDX-License-Identifier: MIT */
/*
 * Adversary (h-adv8b): batches in the hand-over slot (<ssq/combine.h>)
 * where the attacks found nothing; each phase asserts what would break.
 * One thread plus a combiner thread, the emulated device stepped by hand
 * (a 16-WQEBB ring: a combiner reserves at most 8, half of it; producers
 * A, B, C, D of one queue; C steps the queue and heals, as ssqd's own).
 * Each request is a signaled FETCH_ADD of +1 on its owner's counter, the
 * old value written to a cell of its own: the counter says how many ran,
 * each cell at which place.
 *  1. Half the ring: A's batch of 5 and D's of 8 POSTED, B combines: it
 *     takes A's 5 and a prefix of 3 of D's (8 WQEBBs); D's flush posts the
 *     other 5 itself. Every request of A and D ran once, in its order.
 *  2. A claim while a dead owner's batch is TAKEN by a live combiner: B
 *     stops mid-batch (1 of A's 4 published), A is marked dead; ssqd's
 *     ssq_ctl_claim must not hand A's record out (its WQEs would complete
 *     in a new owner's name). B goes on, the queue drains: now it may, and
 *     A's 4 ran once each, in order.
 *  3. ssq_producer_fini with a full batch (SSQ_HAND_REQS) POSTED and the
 *     role held by someone who never combines: fini posts all of them
 *     itself, in order, before retiring.
 */
#define SSQ_FAULT_HOOKS 1
#include <pthread.h>
#include <ssq/combine.h>
#include "dv/ctl.h"
#include "ssq_flow.h"
#include "tb_flow.h"
#include "hook_gate.h"

#define RING  16u
#define EVERY 4u
#define K     SSQ_HAND_REQS
#define OLD   64u /* old values: side 0's cells OLD + 32 * who + i */

static struct emu_tb tb;
static struct ssq_ctl *ctl;
static struct ssq_producer a, b, c, d, d2;
static struct hook_gate gate;
static int gate_at;
static uint64_t nposted[8]; /* requests posted per counter */

void ssq_fault_hook(int where)
{
	if (gate_at)
		hook_gate_hold(&gate, where, gate_at);
}

/* @p's next request on counter @who, combined. */
static int post(struct ssq_producer *p, unsigned who)
{
	uint64_t i = nposted[who];
	int rc = ssq_post_fetch_add_combined(p, tb.s[0].iova + 8 * (OLD + 32 * who + i),
	                                     tb.s[0].key, tb.s[1].iova + 8 * who,
	                                     tb.s[1].key, 1, i, SSQ_WQE_SIGNALED);

	if (!rc)
		nposted[who]++;
	return rc;
}

static uint64_t word(const struct ssq_producer *p)
{
	return __atomic_load_n(&p->me->hand.word, __ATOMIC_ACQUIRE);
}

/* Counter @who's requests: each ran once, in order. */
static void ran_once(unsigned who, const char *what)
{
	uint64_t i, old;

	CHECK(tb_cell(&tb, who) == nposted[who], "%s: counter %u: %llu of %llu ran", what,
	      who, (unsigned long long)tb_cell(&tb, who),
	      (unsigned long long)nposted[who]);
	for (i = 0; i < nposted[who]; i++) {
		old =
		    __atomic_load_n((uint64_t *)(tb.s[0].mem + 8 * (OLD + 32 * who + i)),
		                    __ATOMIC_ACQUIRE);
		CHECK(old == i, "%s: counter %u: request %llu ran as number %llu", what,
		      who, (unsigned long long)i, (unsigned long long)old);
	}
	printf("%s: counter %u: %llu requests ran once each, in order\n", what, who,
	       (unsigned long long)nposted[who]);
}

static void half_ring(void)
{
	unsigned i;

	__atomic_store_n(&ctl->comb_role, b.id + 1, __ATOMIC_SEQ_CST);
	for (i = 0; i < 5; i++)
		CHECK(post(&a, 0) == 0, "1: A's post %u", i);
	for (i = 0; i < K; i++)
		CHECK(post(&d, 1) == 0, "1: D's post %u", i);
	CHECK(ssq__combine(&b) == 0, "1: B's combine");
	printf("1: after B's combine: A's word %llx, D's word %llx\n",
	       (unsigned long long)word(&a), (unsigned long long)word(&d));
	CHECK((word(&a) & 3) == SSQ_HAND_DONE && ssq__hand_n(word(&a)) == 5,
	      "1: A's 5 not all taken: word %llx", (unsigned long long)word(&a));
	CHECK((word(&d) & 3) == SSQ_HAND_DONE && ssq__hand_n(word(&d)) == 3,
	      "1: D's word %llx (want DONE, a prefix of 3: half the ring)",
	      (unsigned long long)word(&d));
	tb_drain(&tb, &c);
	CHECK(ssq_combine_flush(&a) == 0 && ssq_combine_flush(&d) == 0 && !word(&a) &&
	          !word(&d) && !d.hand_owed,
	      "1: the flushes");
	tb_drain(&tb, &c);
	ran_once(0, "1. half the ring");
	ran_once(1, "1. half the ring");
}

static void claim_taken(void)
{
	pthread_t t;
	unsigned i;
	int id;

	__atomic_store_n(&ctl->comb_role, b.id + 1, __ATOMIC_SEQ_CST);
	for (i = 0; i < 4; i++)
		CHECK(post(&a, 0) == 0, "2: A's post %u", i);
	gate_at = SSQ_HOOK_COMBINE_BUILT;
	hook_gate_arm(&gate);
	CHECK(pthread_create(&t, NULL, tb_combines, &b) == 0, "2: combiner thread");
	CHECK(hook_gate_wait(&gate, 30), "2: B did not reach its first publish");
	CHECK((word(&a) & 3) == SSQ_HAND_TAKEN && ssq__hand_n(word(&a)) == 4,
	      "2: A's word %llx (want TAKEN 4)", (unsigned long long)word(&a));
	CHECK(ssq_ctl_mark_dead(ctl, a.id) == 0, "2: A marked dead");
	tb_drain(&tb, &c);
	id = ssq_ctl_claim(ctl, 4242, c.id);
	CHECK(id >= 0 && (uint32_t)id != a.id,
	      "2: ssq_ctl_claim handed out %d, A's record with its batch TAKEN by a live "
	      "combiner",
	      id);
	__atomic_store_n(&gate.goes, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	gate_at = 0;
	tb_drain(&tb, &c);
	ran_once(0, "2. a dead owner's batch TAKEN, claimed after");
	id = ssq_ctl_claim(ctl, 4243, c.id);
	CHECK(id >= 0 && (uint32_t)id == a.id,
	      "2: once the batch completed, ssq_ctl_claim handed out %d, not A's %u", id,
	      a.id);
	CHECK(word(&a) == 0, "2: the record reused with its word %llx",
	      (unsigned long long)word(&a));
}

static void fini_full(void)
{
	unsigned i;
	uint64_t res = ctl->reserve;

	CHECK(ssq_producer_init(&d2, ctl, 5, &tb.s[0].sq, &tb.s[0].scq_v,
	                        (uint32_t)getpid()) == 0,
	      "3: D2");
	__atomic_store_n(&ctl->comb_role, b.id + 1, __ATOMIC_SEQ_CST);
	for (i = 0; i < K; i++)
		CHECK(post(&d2, 2) == 0, "3: D2's post %u", i);
	CHECK(ctl->reserve == res && (word(&d2) & 3) == SSQ_HAND_POSTED &&
	          ssq__hand_n(word(&d2)) == K,
	      "3: D2's batch %llx", (unsigned long long)word(&d2));
	CHECK(ssq_producer_fini(&d2) == 0, "3: D2's fini");
	tb_drain(&tb, &c);
	ran_once(2, "3. ssq_producer_fini with a full batch POSTED");
	__atomic_store_n(&ctl->comb_role, 0, __ATOMIC_SEQ_CST);
}

int main(void)
{
	struct emu_tb_opts o = { .sq_cnt = RING };

	ctl = tb_ctl_up(&tb, &o, RING, EVERY);
	TB_PRODUCERS(ctl, &tb, &a, &b, &c, &d);
	half_ring();
	claim_taken();
	fini_full();
	ssq_producer_fini(&c);
	emu_tb_fini(&tb);
	free(ctl);
	return test_exit("adv8b_batch_held");
}
