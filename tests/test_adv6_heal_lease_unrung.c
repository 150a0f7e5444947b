/* SPDX-License-Identifier: MIT */
/*
 * Adversarial review of 4f86961 (ssq_ctl_heal frees a doorbell lease
 * naming a FREE record, a client's scribble). WQEs published while the
 * lease was held were left to its holder to ring (ssq__lease_try); once
 * the heal frees the lease, the heal's own submit (H4) is what rings them
 * (the commit's test counts on it). But the heal frees leases in H1 and
 * may then return -ETIMEDOUT from H2 - a live producer between its
 * fetch-add and recording it (stopped there: under --stall-ms 0 never
 * killed) - and that return submits nothing (H3's timeout path does,
 * H2's does not). ssqd retries (heal_pending) and times out the same way;
 * its guard sees no lease to complain of (the heal freed it), so it does
 * not start the queue over either: what was published stays unrung until
 * some producer posts again, and one that waits for its completions
 * (ssq_wait) waits for nothing.
 *  1. 4f86961's case: db_lease scribbled to name FREE record 63; D dies.
 *  2. No scribble (older than 4f86961): X dies holding db_lease (between
 *     ssq_submit's C2 and C5).
 * The emulated device stepped by hand (a 64-WQEBB ring; producers A, B,
 * C, D, X of one queue; C heals, as ssqd's own). In each: A posts two
 * FETCH_ADDs (published, left to the holder), B reserves one and stops
 * after its fetch-add, the death, two heals (-ETIMEDOUT), then the device
 * runs with nobody posting: A's two must have run (they are below B's
 * range: nothing holds them back but the doorbell). Then one ssq_submit
 * shows what rings them, and B goes on.
 */
#define SSQ_FAULT_HOOKS 1
#include <pthread.h>
#include "dv/ctl.h"
#include "ssq_flow.h"
#include "tb_flow.h"
#include "hook_gate.h"

#define RING    64u
#define EVERY   16u
#define FREE_ID (SSQ_MAX_PRODUCERS - 1) /* never claimed here */

static struct emu_tb tb;
static struct ssq_ctl *ctl;
static struct ssq_producer a, b, c, d, x;
static uint64_t b_pos;          /* B's reservation */
static struct hook_gate b_gate; /* B stops at the hook */

void ssq_fault_hook(int where)
{
	hook_gate_hold(&b_gate, where, SSQ_HOOK_AFTER_ADD);
}

static void *b_reserves(void *arg)
{
	(void)arg;
	(void)ssq_reserve(&b, 1, &b_pos);
	return NULL;
}

static uint64_t counter(unsigned cell)
{
	return tb_cell(&tb, cell);
}

/* The device and the routing run; nobody posts (so nobody submits). */
static void run_device(void)
{
	struct ssq_completion comp[16];
	unsigned i;

	for (i = 0; i < 64; i++) {
		emu_process(tb.dev, 64);
		ssq_progress(&c);
		(void)ssq_poll(&c, comp, 16);
	}
}

/* B reserves one WQEBB and stops after its fetch-add, on its own thread. */
static void b_stop(pthread_t *bt)
{
	hook_gate_arm(&b_gate);
	CHECK(pthread_create(bt, NULL, b_reserves, NULL) == 0, "B's thread");
	if (!hook_gate_wait(&b_gate, 30)) {
		CHECK(0, "B never stopped after its fetch-add");
		exit(test_exit("adv6_heal_lease_unrung"));
	}
}

/*
 * db_lease set to @lease (a phantom, or a holder that then dies: @dead);
 * A posts two (cells @cell, @cell + 1), B stops after its fetch-add, @dead
 * dies, the heal (twice, as ssqd retries) frees the lease and times out.
 * Then the device runs with nobody posting. B goes on and publishes
 * after, so that the next case starts with nothing held.
 */
static void run_case(const char *what, uint32_t lease, struct ssq_producer *dead,
                     unsigned cell)
{
	pthread_t bt;
	int rc1, rc2;

	__atomic_store_n(&ctl->db_lease, lease, __ATOMIC_SEQ_CST);
	CHECK(tb_fa(&tb, &a, cell, 10) == 0 && tb_fa(&tb, &a, cell + 1, 20) == 0,
	      "%s: A's posts", what);
	b_stop(&bt);
	run_device();
	printf("%s: A's 2 posts ran %llu, %llu times (published %llu, reserve %llu)\n",
	       what, (unsigned long long)counter(cell),
	       (unsigned long long)counter(cell + 1), (unsigned long long)ctl->published,
	       (unsigned long long)ctl->reserve);
	CHECK(counter(cell) == 0 && counter(cell + 1) == 0,
	      "%s: premise: A's posts ran unrung", what);
	CHECK(ssq_ctl_mark_dead(ctl, dead->id) == 0, "%s: a death", what);
	rc1 = ssq_ctl_heal(&c, 200);
	rc2 = ssq_ctl_heal(&c, 200); /* ssqd's retry (heal_pending) */
	printf("%s: B stopped after its fetch-add: heal %d, again %d; db_lease %u\n",
	       what, rc1, rc2, ctl->db_lease);
	CHECK(rc1 == -ETIMEDOUT && rc2 == -ETIMEDOUT,
	      "%s: premise: the heal waits for B (%d, %d)", what, rc1, rc2);
	CHECK(ctl->db_lease == 0, "%s: premise: the heal freed the lease (%u)", what,
	      ctl->db_lease);
	run_device();
	printf("%s: after the heals, nobody posting: A's 2 posts ran %llu, %llu times\n",
	       what, (unsigned long long)counter(cell),
	       (unsigned long long)counter(cell + 1));
	CHECK(counter(cell) == 1 && counter(cell + 1) == 1,
	      "%s: A's published posts never rung: the heal freed the lease and "
	      "returned -ETIMEDOUT from its wait for B (H2) with no submit; nothing "
	      "rings them until some producer posts again",
	      what);
	/* What rings them: the next submit by anyone. */
	ssq_submit(&c);
	run_device();
	printf("%s: after one ssq_submit: A's 2 posts ran %llu, %llu times\n", what,
	       (unsigned long long)counter(cell), (unsigned long long)counter(cell + 1));
	/* B goes on: its WQEBB published (a FETCH_ADD), rung, run. */
	__atomic_store_n(&b_gate.goes, 1, __ATOMIC_RELEASE);
	pthread_join(bt, NULL);
	ssq_prep_atomic(ssq_producer_sq(&b), (uint32_t)b_pos, MLX5_OPCODE_ATOMIC_FA,
	                tb.s[0].iova + 8 * 9, tb.s[0].key, tb.s[1].iova + 8 * 9,
	                tb.s[1].key, 1, 0, ssq_wqe_flags(&b, b_pos, 1, 0));
	CHECK(ssq_publish(&b, b_pos, 1, 0, 0) == 0, "%s: B's publish", what);
	ssq_submit(&b);
	run_device();
}

int main(void)
{
	struct emu_tb_opts o = { .sq_cnt = RING };

	ctl = tb_ctl_up(&tb, &o, RING, EVERY);
	TB_PRODUCERS(ctl, &tb, &a, &b, &c, &d, &x);
	CHECK(ctl->producers[FREE_ID].state == SSQ_PROD_FREE, "record %u not FREE",
	      FREE_ID);
	/* 1. A phantom: db_lease naming FREE record 63 (4f86961's case); D dies. */
	run_case("1. db_lease naming FREE record 63", FREE_ID + 1, &d, 1);
	/* 2. No scribble: X died holding the lease (in ssq_submit, C2..C5). */
	run_case("2. db_lease held by X, which dies", x.id + 1, &x, 3);
	printf("B ran %llu times (once per case)\n", (unsigned long long)counter(9));
	return test_exit("adv6_heal_lease_unrung");
}
