/* SPDX-License-Identifier: MIT */
/*
 * The doorbell and CQ leases naming a FREE producer record (a client's
 * scribble; no producer takes a lease but its own bound record's, and
 * ssq_ctl_claim frees a dead holder's before it reuses the record) have no
 * holder that will ever let them go: ssq_ctl_heal frees them, as it frees
 * a combiner role naming a FREE record (test_ssq_combine_adv_scribble.c).
 * Before, the heal left them: nothing published was rung, or routed,
 * again - until ssqd's guard (ssq_ctl_check) started the whole queue
 * over, flushing what was in flight; without ssqd, for ever.
 * One thread, the emulated device stepped by hand (a 64-WQEBB ring,
 * producers A, B, C of one queue; C is the healer, as ssqd's own;
 * FETCH_ADDs of +1 on a counter per request).
 *  1. db_lease naming FREE record 63: A's posts are published and never
 *     rung (every producer leaves its doorbell to the "holder"), so none
 *     runs; after B's death and the heal (as ssqd heals) the lease is
 *     free, the heal's own submit rings them, and A's next posts run.
 *  2. cq_lease naming FREE record 63: A's posts run and no completion
 *     reaches A (nobody routes); after a heal (no death needed) the lease
 *     is free and A's completions arrive.
 *  3. Leases naming a live record (A, IDLE) are left alone by the heal:
 *     a live holder's lease is never taken (ssqd's stall watch judges
 *     those).
 * Each request runs once and completes once to its owner.
 */
#include "dv/ctl.h"
#include "ssq_flow.h"
#include "tb_flow.h"

#define RING    64u
#define EVERY   16u
#define FREE_ID (SSQ_MAX_PRODUCERS - 1) /* never claimed here */

static struct emu_tb tb;
static struct ssq_ctl *ctl;
static struct ssq_producer a, b, c;

/* The device and C's routing, stepped: what a running queue would do. */
static void drain(void)
{
	tb_drain(&tb, &c);
}

static uint64_t counter(unsigned cell)
{
	return tb_cell(&tb, cell);
}

/* A's completions now (routing as A would: ssq_progress, then its ring). */
static int a_comps(uint64_t *wr_ids, int n)
{
	struct ssq_completion comp[8];
	int got, i;

	ssq_progress(&a);
	got = ssq_poll(&a, comp, n < 8 ? n : 8);
	for (i = 0; i < got; i++)
		wr_ids[i] = comp[i].wr_id;
	return got;
}

int main(void)
{
	struct emu_tb_opts o = { .sq_cnt = RING };
	uint64_t ids[8];
	int got;

	ctl = tb_ctl_up(&tb, &o, RING, EVERY);
	TB_PRODUCERS(ctl, &tb, &a, &b, &c);
	CHECK(ctl->producers[FREE_ID].state == SSQ_PROD_FREE, "record %u not FREE",
	      FREE_ID);

	/* 1. The doorbell lease. */
	__atomic_store_n(&ctl->db_lease, FREE_ID + 1, __ATOMIC_SEQ_CST);
	CHECK(tb_fa(&tb, &a, 1, 10) == 0 && tb_fa(&tb, &a, 2, 20) == 0, "1: A's posts");
	drain();
	printf("1. db_lease naming FREE record %u: A's 2 posts ran %llu, %llu times "
	       "(published %llu of %llu)\n",
	       FREE_ID, (unsigned long long)counter(1), (unsigned long long)counter(2),
	       (unsigned long long)ctl->published, (unsigned long long)ctl->reserve);
	CHECK(counter(1) == 0 && counter(2) == 0,
	      "1: a post ran under a lease nobody holds (the test's premise)");
	CHECK(ssq_ctl_mark_dead(ctl, b.id) == 0 && ssq_ctl_heal(&c, 1000) >= 0,
	      "1: B dead, healed");
	printf("1. after a death and the heal: db_lease %u\n", ctl->db_lease);
	CHECK(ctl->db_lease == 0,
	      "1: db_lease %u names FREE record %u after the heal: never freed, no "
	      "doorbell rung on this queue again",
	      ctl->db_lease, FREE_ID);
	drain();
	CHECK(counter(1) == 1 && counter(2) == 1, "1: A's posts ran %llu, %llu times",
	      (unsigned long long)counter(1), (unsigned long long)counter(2));
	got = a_comps(ids, 8);
	CHECK(got == 2 && ids[0] == 10 && ids[1] == 20, "1: A's completions: %d", got);
	CHECK(tb_fa(&tb, &a, 3, 30) == 0, "1: A's post after the heal");
	drain();
	got = a_comps(ids, 8);
	CHECK(counter(3) == 1 && got == 1 && ids[0] == 30,
	      "1: A's post after the heal: ran %llu times, %d completions",
	      (unsigned long long)counter(3), got);

	/* 2. The CQ lease (its own premise, whatever 1 found). */
	if (ctl->db_lease) {
		__atomic_store_n(&ctl->db_lease, 0, __ATOMIC_SEQ_CST);
		drain();
		(void)a_comps(ids, 8);
	}
	__atomic_store_n(&ctl->cq_lease, FREE_ID + 1, __ATOMIC_SEQ_CST);
	CHECK(tb_fa(&tb, &a, 4, 40) == 0, "2: A's post");
	drain();
	got = a_comps(ids, 8);
	printf("2. cq_lease naming FREE record %u: A's post ran %llu times, %d "
	       "completions\n",
	       FREE_ID, (unsigned long long)counter(4), got);
	CHECK(counter(4) == 1 && got == 0,
	      "2: ran %llu times, %d completions routed under a lease nobody holds "
	      "(the test's premise)",
	      (unsigned long long)counter(4), got);
	CHECK(ssq_ctl_heal(&c, 1000) >= 0, "2: healed");
	printf("2. after the heal: cq_lease %u\n", ctl->cq_lease);
	CHECK(ctl->cq_lease == 0,
	      "2: cq_lease %u names FREE record %u after the heal: never freed, no "
	      "completion routed on this queue again",
	      ctl->cq_lease, FREE_ID);
	drain();
	got = a_comps(ids, 8);
	CHECK(got == 1 && ids[0] == 40, "2: A's completion after the heal: %d", got);
	CHECK(a.me->posted == a.me->done, "2: A posted %llu done %llu",
	      (unsigned long long)a.me->posted, (unsigned long long)a.me->done);

	/* 3. A live holder's leases stay. */
	__atomic_store_n(&ctl->db_lease, a.id + 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&ctl->cq_lease, a.id + 1, __ATOMIC_SEQ_CST);
	CHECK(ssq_ctl_heal(&c, 1000) >= 0, "3: healed");
	CHECK(ctl->db_lease == a.id + 1 && ctl->cq_lease == a.id + 1,
	      "3: the heal took a live record's leases: db %u cq %u", ctl->db_lease,
	      ctl->cq_lease);
	__atomic_store_n(&ctl->db_lease, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&ctl->cq_lease, 0, __ATOMIC_SEQ_CST);
	printf("3. leases naming a live record: left to their holder\n");

	ssq_producer_fini(&a);
	ssq_producer_fini(&c);
	emu_tb_fini(&tb);
	free(ctl);
	return test_exit("ssq_heal_free_lease");
}
