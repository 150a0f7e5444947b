/* SPDX-License-Identifier: MIT */
/*
 * ssqd survives any bytes a client writes into a queue's shared memory
 * (issue 16, item 3). A control block, its slots and completion rings, and
 * the CQ are filled with random bytes (several seeds), or given targeted
 * bad values (max_producers 0xffffffff, slot owners out of range, leases
 * naming no record, a completion head far ahead, published far ahead, a
 * UAR half off the register, ring and signal_every changed...); then what
 * ssqd runs on it - ssq_ctl_check, ssq_ctl_heal, routing (ssq_progress as
 * ssqd and as another client), ssq_submit, ssq_ctl_drained, ssq_ctl_claim,
 * ssq_ctl_reset - must not read or write out of bounds (this test is
 * meant for the ASan/UBSan build as much as the plain one) nor hang;
 * ssq_ctl_check must call the block inconsistent, and after
 * ssq_ctl_rebuild it is consistent again and a client posts and gets its
 * completion.
 *
 * The device is a stand-in, as in bench/post_insns.c: memory for the send
 * ring, the CQ, the doorbell records and the UAR register; the test writes
 * the CQE a NIC would.
 */
#define _GNU_SOURCE
#define SSQ_FAULT_HOOKS 1
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <ssq/ssq.h>
#include "dv/ctl.h"
#include "helpers.h"

#define RING    64u
#define EVERY   16u
#define CQES    128u
#define OWNER   (SSQ_MAX_PRODUCERS - 1)
#define ROUNDS  40u /* random fills per seed */
#define BF_SIZE 256u

static uint8_t sq_ring[RING * MLX5_SEND_WQE_BB] __attribute__((aligned(4096)));
static struct mlx5_cqe64 cq_ring[CQES] __attribute__((aligned(4096)));
static uint8_t uar[4096] __attribute__((aligned(4096)));
static __be32 qp_dbrec[2], cq_dbrec[2];
static struct ssq_ctl *ctl;
static struct ssq_producer owner, cli[2];
static struct ssq_sq sq;
static struct ssq_cq cq;
static uint32_t epoch;
static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* xorshift64*: any seed but 0 */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

static void fill_random(void *p, size_t len)
{
	uint8_t *b = p;
	size_t i;

	for (i = 0; i < len; i++)
		b[i] = (uint8_t)rnd();
}

/* The CQ as the NIC leaves it with nothing new: every entry hardware-owned. */
static void cq_clean(void)
{
	uint32_t i;

	memset(cq_ring, 0, sizeof(cq_ring));
	for (i = 0; i < CQES; i++)
		cq_ring[i].op_own = MLX5_CQE_INVALID << 4 | 1;
}

/* Write the success CQE of the WQE at @wqe_counter where the NIC would. */
static void device_complete(uint32_t ci, uint16_t wqe_counter)
{
	struct mlx5_cqe64 *cqe = &cq_ring[ci & (CQES - 1)];

	memset(cqe, 0, sizeof(*cqe));
	cqe->sop_drop_qpn = htobe32(0x123);
	cqe->wqe_counter = htobe16(wqe_counter);
	__atomic_store_n(&cqe->op_own, (uint8_t)(MLX5_CQE_REQ << 4 | !!(ci & CQES)),
	                 __ATOMIC_RELEASE);
}

/* A fresh queue with the owner's and two clients' records. */
static void setup(void)
{
	uint32_t i;

	CHECK(ssq_ctl_init(ctl, RING, EVERY) == 0, "ssq_ctl_init");
	CHECK(ssq_producer_init(&owner, ctl, OWNER, &sq, &cq, 1) == 0, "owner's record");
	for (i = 0; i < 2; i++)
		CHECK(ssq_producer_init(&cli[i], ctl, i, &sq, &cq, 2 + i) == 0,
		      "client %u's record", i);
	cq_clean();
	memset(cq_dbrec, 0, sizeof(cq_dbrec));
	memset(qp_dbrec, 0, sizeof(qp_dbrec));
	epoch = 0;
}

/* One signaled WRITE through client @k, completed by the stand-in. Returns 0 or -1. */
static int post_and_complete(unsigned k, uint64_t wr_id)
{
	struct ssq_completion c;
	uint64_t pos = ssq_ctl_reserved(ctl);
	int rc =
	    ssq_post_write(&cli[k], 0x1000, 1, 64, 0x2000, 2, wr_id, SSQ_WQE_SIGNALED);

	if (rc) {
		fprintf(stderr, "post: %d\n", rc);
		return -1;
	}
	device_complete(__atomic_load_n(&ctl->cq_ci, __ATOMIC_RELAXED), (uint16_t)pos);
	if (ssq_poll(&cli[k], &c, 1) != 1 || c.wr_id != wr_id || c.status) {
		fprintf(stderr, "no completion for wr_id %llu\n",
		        (unsigned long long)wr_id);
		return -1;
	}
	return 0;
}

/*
 * What ssqd (and another client routing for everyone) runs on a block,
 * whatever it holds: nothing here may fault, overflow or hang.
 */
static void run_paths(void)
{
	struct ssq_completion comp[8];
	uint32_t i;

	(void)ssq_ctl_check(&owner, epoch, NULL, 0);
	(void)ssq_ctl_heal(&owner, 1);
	(void)ssq_progress(&owner);
	(void)ssq_progress(&cli[0]);
	(void)ssq_poll(&cli[1], comp, 8);
	ssq_submit(&cli[0]);
	(void)ssq_ctl_drained(ctl);
	(void)ssq_ctl_in_error(ctl);
	for (i = 0; i < SSQ_MAX_PRODUCERS; i++)
		(void)ssq_ctl_mark_dead(ctl, i);
	(void)ssq_ctl_claim(ctl, 99, OWNER);
	(void)ssq_ctl_heal(&owner, 1);
	(void)ssq_progress(&owner);
	ssq_ctl_set_error(ctl);
	(void)ssq_ctl_reset(&owner, 1);
}

/* @what was found, repaired, and the queue works again. */
static void expect_repaired(const char *what)
{
	char why[200] = "";
	int rc = ssq_ctl_check(&owner, epoch, why, sizeof(why));

	uint32_t ci, dbci, k;

	CHECK(rc == -EUCLEAN, "%s: ssq_ctl_check returned %d", what, rc);
	run_paths();
	/*
	 * The NIC's view of the CQ after the QP's reset: a few old CQEs
	 * where the consumer index is (the shared one, or the doorbell
	 * record's when the shared one is out of its window), the rest
	 * hardware-owned. The rebuild must skip the old ones.
	 */
	cq_clean();
	dbci = be32toh(cq_dbrec[SSQ_CQ_SET_CI]) & 0xffffff;
	ci = ctl->cq_ci;
	if (((ci - dbci) & 0xffffff) > CQES)
		ci = dbci;
	for (k = 0; k < 3; k++)
		device_complete(ci + k, (uint16_t)(k * 4099));
	/* Records 0 and 1 are the live clients' (the paths above freed some). */
	epoch++;
	CHECK(ssq_ctl_rebuild(&owner, epoch, 3, 1) == 0, "%s: rebuild", what);
	rc = ssq_ctl_check(&owner, epoch, why, sizeof(why));
	CHECK(rc == 0, "%s: inconsistent after the rebuild: %s", what, why);
	CHECK(ctl->producers[0].state == SSQ_PROD_IDLE &&
	          ctl->producers[1].state == SSQ_PROD_IDLE &&
	          ctl->producers[5].state == SSQ_PROD_FREE,
	      "%s: live records IDLE, others FREE", what);
	/*
	 * What the rebuild routed and flushed to the live clients (from a
	 * scribbled block: whatever its slots named) is theirs to take, and
	 * no more than a completion ring each.
	 */
	for (k = 0; k < 2; k++) {
		struct ssq_completion comp[EVERY];
		int n, taken = 0;

		while ((n = ssq_poll(&cli[k], comp, EVERY)) > 0 && taken <= (int)RING)
			taken += n;
		CHECK(n == 0 && taken <= (int)RING,
		      "%s: client %u took %d completions after the rebuild (poll %d)",
		      what, k, taken, n);
	}
	CHECK(post_and_complete(0, 77) == 0 && post_and_complete(1, 78) == 0,
	      "%s: posts after the rebuild", what);
}

/* Targeted values, each on a fresh queue that has carried some traffic. */
static void targeted(void)
{
	struct ssq_ctl_slot *slots;
	char why[200];
	int k;

	for (k = 0; k < 15; k++) {
		char what[64];

		setup();
		CHECK(post_and_complete(0, 1) == 0 && post_and_complete(1, 2) == 0,
		      "posts on a fresh queue");
		CHECK(ssq_ctl_check(&owner, epoch, why, sizeof(why)) == 0,
		      "a fresh queue is inconsistent: %s", why);
		slots = (struct ssq_ctl_slot *)(ctl + 1);
		snprintf(what, sizeof(what), "case %d", k);
		switch (k) {
		case 0:
			ctl->max_producers = 0xffffffff;
			break;
		case 1: /* every slot's owner out of range, published ahead */
			for (unsigned i = 0; i < RING; i++) {
				slots[i].owner = 0x7fffffff + i;
				slots[i].seq = ctl->published + 1 + i;
				slots[i].len = (uint16_t)(i * 977);
			}
			ctl->published += RING / 2;
			device_complete(ctl->cq_ci, (uint16_t)(ctl->published - 1));
			break;
		case 2:
			ctl->db_lease = 0xdeadbeef;
			break;
		case 3:
			ctl->cq_lease = 0x12345678;
			break;
		case 4:
			ctl->producers[0].comp_head += 1ull << 40;
			break;
		case 5:
			ctl->published = ctl->reserve + (1ull << 50);
			break;
		case 6:
			ctl->bf_offset = 0x7ffffff0;
			break;
		case 7:
			ctl->ring = 1u << 30;
			ctl->comp_entries = 1u << 30;
			break;
		case 8:
			ctl->signal_every = 0;
			break;
		case 9:
			ctl->producers[1].state = SSQ_PROD_BUILDING;
			ctl->producers[1].pos = ~0ull - 3;
			ctl->producers[1].len = 0xffff;
			break;
		case 10:
			ctl->completed = ctl->reserve + 100;
			break;
		case 11:
			ctl->producers[2].state = 0x99;
			break;
		case 12:
			ctl->cq_ci += 1u << 20;
			break;
		case 13:
			ctl->magic = 0;
			break;
		case 14: /* in range, but record 5 is free: nobody will let it go */
			ctl->db_lease = 6;
			break;
		}
		expect_repaired(what);
	}
}

/* Random bytes over the whole block (and, in turn, the CQ), per seed. */
static void random_fills(uint64_t seed)
{
	unsigned r;

	for (r = 0; r < ROUNDS; r++) {
		char what[64];

		rng_state = seed * 0x9e3779b97f4a7c15ull + r + 1;
		setup();
		CHECK(post_and_complete(0, 1) == 0, "posts on a fresh queue");
		switch (r % 4) {
		case 0: /* everything */
			fill_random(ctl, ssq_ctl_size(RING));
			break;
		case 1: /* everything but the magic: the fields behind it are read */
			fill_random(ctl, ssq_ctl_size(RING));
			ctl->magic = SSQ_CTL_MAGIC;
			break;
		case 2: /* the header lines and records only, magic and ring kept */
			fill_random((uint8_t *)ctl + 8, sizeof(*ctl) - 8);
			ctl->ring = RING;
			break;
		case 3: /* slots, completion rings and the CQ */
			fill_random(ctl + 1, ssq_ctl_size(RING) - sizeof(*ctl));
			fill_random(cq_ring, sizeof(cq_ring));
			ctl->published = ctl->reserve + RING; /* walk them */
			break;
		}
		snprintf(what, sizeof(what), "seed %llu round %u",
		         (unsigned long long)seed, r);
		if (r % 4 == 3)
			/* The CQ's garbage stays, as a NIC's old CQEs would. */
			run_paths();
		expect_repaired(what);
	}
}

static int in_wait; /* the reserving thread is past its fetch-add */

/* This build's fault hook: after the fetch-add, make the wait for room endless. */
void ssq_fault_hook(int where)
{
	if (where != SSQ_HOOK_AFTER_ADD || !__atomic_load_n(&in_wait, __ATOMIC_ACQUIRE))
		return;
	__atomic_store_n(&ctl->completed, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&ctl->published, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&in_wait, 2, __ATOMIC_RELEASE);
}

static void *reserve_thread(void *arg)
{
	uint64_t pos;

	*(int *)arg = ssq_reserve(&cli[0], 1, &pos);
	return NULL;
}

/* A reservation open across a rebuild is void: its wait ends with -EIO. */
static void rebuild_under_wait(void)
{
	pthread_t t;
	int rc = 1, k;

	setup();
	for (k = 0; k < 3 * (int)RING; k++)
		if (post_and_complete(0, (uint64_t)k))
			break;
	CHECK(k == 3 * (int)RING, "posts before the wait");
	__atomic_store_n(&in_wait, 1, __ATOMIC_RELEASE);
	pthread_create(&t, NULL, reserve_thread, &rc);
	while (__atomic_load_n(&in_wait, __ATOMIC_ACQUIRE) != 2)
		usleep(100);
	usleep(20000); /* it spins in the wait now: completed is 3 rings behind */
	__atomic_store_n(&in_wait, 0, __ATOMIC_RELEASE);
	epoch++;
	CHECK(ssq_ctl_rebuild(&owner, epoch, 3, 5) == 0, "rebuild under a wait");
	{
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 5;
		if (pthread_timedjoin_np(t, NULL, &until)) {
			CHECK(0,
			      "ssq_reserve still waits for room 5 s after the rebuild");
			exit(test_exit("ctrl_ctl_fuzz"));
		}
	}
	CHECK(rc == -EIO, "ssq_reserve caught in its wait across a rebuild returned %d",
	      rc);
	CHECK(post_and_complete(0, 99) == 0, "the same producer posts after the rebuild");
}

int main(void)
{
	struct mlx5dv_qp dq = { 0 };
	struct mlx5dv_cq dc = { 0 };
	uint64_t seed;

	dq.sq.buf = sq_ring;
	dq.sq.wqe_cnt = RING;
	dq.sq.stride = MLX5_SEND_WQE_BB;
	dq.dbrec = qp_dbrec;
	dq.bf.reg = uar;
	dq.bf.size = BF_SIZE;
	dc.buf = cq_ring;
	dc.dbrec = cq_dbrec;
	dc.cqe_cnt = CQES;
	dc.cqe_size = sizeof(struct mlx5_cqe64);
	CHECK(ssq_sq_init(&sq, &dq, 0x123, 64, 4) == 0 && ssq_cq_init(&cq, &dc) == 0,
	      "stand-in queues");
	ctl = aligned_alloc(64, (ssq_ctl_size(RING) + 63) & ~(size_t)63);
	CHECK(ctl != NULL, "control block");
	if (!ctl)
		return 1;
	targeted();
	for (seed = 1; seed <= 5; seed++)
		random_fills(seed);
	rebuild_under_wait();
	free(ctl);
	return test_exit("ctrl_ctl_fuzz");
}
