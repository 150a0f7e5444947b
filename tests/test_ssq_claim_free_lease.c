/* SPDX-License-Identifier: MIT */
/*
 * A doorbell lease, CQ lease or combiner role naming a FREE producer
 * record (a client's scribble: no producer takes one but with its own
 * bound record's id) is cleared by ssq_ctl_claim before it hands that
 * record out, as ssq_ctl_heal clears it (test_ssq_heal_free_lease.c).
 * Before, the claim left it: the new owner of the record "held" a lease
 * it never took - its doorbells left to itself as the holder, so none
 * rung, nothing routed - and ssqd's stall watch blamed that client for
 * the hold (taken back by starting the queue over, or the client killed
 * if it happened to be stopped).
 * One thread, the emulated device stepped by hand (a 64-WQEBB ring;
 * producers A and C, C routing as ssqd's own; FETCH_ADDs of +1 on a
 * counter per request).
 *  1. Every record but the last (63) in use, its id + 1 written into
 *     db_lease, cq_lease and comb_role; a claim gets record 63: all three
 *     are 0 after it, and N, bound to it, posts: its FETCH_ADD runs once
 *     and completes to N.
 *  2. The same words naming a live record (A's) are left to it by a claim
 *     (a CAS on the exact value: a live holder is never touched).
 */
#include "dv/ctl.h"
#include "ssq_flow.h"
#include "tb_flow.h"

#define RING    64u
#define EVERY   16u
#define LAST_ID (SSQ_MAX_PRODUCERS - 1)

static struct emu_tb tb;
static struct ssq_ctl *ctl;
static struct ssq_producer a, c, n;

static void stale(uint32_t v)
{
	__atomic_store_n(&ctl->db_lease, v, __ATOMIC_SEQ_CST);
	__atomic_store_n(&ctl->cq_lease, v, __ATOMIC_SEQ_CST);
	__atomic_store_n(&ctl->comb_role, v, __ATOMIC_SEQ_CST);
}

int main(void)
{
	struct emu_tb_opts o = { .sq_cnt = RING };
	struct ssq_completion comp[8];
	uint32_t i;
	int id, got;

	ctl = tb_ctl_up(&tb, &o, RING, EVERY);
	TB_PRODUCERS(ctl, &tb, &a, &c);
	for (i = 2; i < LAST_ID; i++)
		ctl->producers[i].state = SSQ_PROD_IDLE;

	/* 1. Stale words naming the one FREE record. */
	stale(LAST_ID + 1);
	id = ssq_ctl_claim(ctl, 4242, c.id);
	printf("1. claim with db_lease, cq_lease, comb_role naming FREE record %u: "
	       "record %d; after it db_lease %u cq_lease %u comb_role %u\n",
	       LAST_ID, id, ctl->db_lease, ctl->cq_lease, ctl->comb_role);
	CHECK(id == (int)LAST_ID, "1: claim %d, want %u", id, LAST_ID);
	CHECK(ctl->db_lease == 0 && ctl->cq_lease == 0 && ctl->comb_role == 0,
	      "1: record %d handed out while db_lease %u cq_lease %u comb_role %u "
	      "name it: its new owner holds what it never took",
	      id, ctl->db_lease, ctl->cq_lease, ctl->comb_role);
	if (id != (int)LAST_ID)
		return test_exit("ssq_claim_free_lease");
	CHECK(ssq_producer_bind(&n, ctl, (uint32_t)id, &tb.s[0].sq, &tb.s[0].scq_v) == 0,
	      "1: N bound");
	CHECK(tb_fa(&tb, &n, 1, 10) == 0, "1: N's post");
	tb_drain(&tb, &c);
	ssq_progress(&n);
	got = ssq_poll(&n, comp, 8);
	printf("1. N's post: ran %llu times, %d completions\n",
	       (unsigned long long)tb_cell(&tb, 1), got);
	CHECK(tb_cell(&tb, 1) == 1 && got == 1 && comp[0].wr_id == 10,
	      "1: N's post ran %llu times, %d completions",
	      (unsigned long long)tb_cell(&tb, 1), got);
	if (ctl->db_lease || ctl->cq_lease || ctl->comb_role) {
		stale(0); /* 2's own premise, whatever 1 found */
		tb_drain(&tb, &c);
	}

	/* 2. The same words naming live record A: left to A. */
	ctl->producers[LAST_ID - 1].state = SSQ_PROD_FREE;
	stale(a.id + 1);
	id = ssq_ctl_claim(ctl, 4243, c.id);
	printf("2. claim with the words naming live record %u: record %d; after it "
	       "db_lease %u cq_lease %u comb_role %u\n",
	       a.id, id, ctl->db_lease, ctl->cq_lease, ctl->comb_role);
	CHECK(id == (int)LAST_ID - 1, "2: claim %d", id);
	CHECK(ctl->db_lease == a.id + 1 && ctl->cq_lease == a.id + 1 &&
	          ctl->comb_role == a.id + 1,
	      "2: the claim took a live record's words: db %u cq %u role %u",
	      ctl->db_lease, ctl->cq_lease, ctl->comb_role);
	stale(0);

	ssq_producer_fini(&n);
	ssq_producer_fini(&a);
	ssq_producer_fini(&c);
	emu_tb_fini(&tb);
	free(ctl);
	return test_exit("ssq_claim_free_lease");
}
