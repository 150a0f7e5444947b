/* SPDX-License-Identifier: MIT */
/*
 * The doorbell's bytes are checked and rung as one copy: a client flipping
 * the QPN of a published control segment while the lease holder rings must
 * never get a doorbell naming another QP through (checking the ring's bytes
 * and then ringing with the ring's bytes again let 70270 of 20 million
 * doorbells through, on two CPUs).
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <ssq/ssq.h>
#include <ssq/queue_pvt.h>
#include "helpers.h"

#define RING    64u
#define BF_SIZE 256u
#define QPN     0x4321u

static uint8_t ring[RING * 64] __attribute__((aligned(4096)));
static struct mlx5_cqe64 cqes[RING] __attribute__((aligned(4096)));
static uint64_t uar[2 * BF_SIZE / 8] __attribute__((aligned(64)));
static int stop;

/* The scribbling client: the QPN word of WQEBB 0, ours and not, over and over. */
static void *scribble(void *arg)
{
	uint32_t *qpn_ds = arg, good = *qpn_ds, bad = htobe32((0xeeeeeeu << 8) | 1);

	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		__atomic_store_n(qpn_ds, bad, __ATOMIC_RELAXED);
		__atomic_store_n(qpn_ds, good, __ATOMIC_RELAXED);
	}
	return NULL;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(void)
{
	struct mlx5dv_qp dv = { 0 };
	struct mlx5dv_cq dvc = { 0 };
	__be32 dbrec[2] = { 0, 0 }, cq_dbrec[2] = { 0, 0 };
	struct mlx5_wqe_ctrl_seg *c = (struct mlx5_wqe_ctrl_seg *)ring;
	struct ssq_producer p;
	struct ssq_ctl *ctl;
	struct ssq_sq sq;
	struct ssq_cq cq;
	pthread_t t;
	long i, rung = 0, foreign = 0;
	double t0;

	dv.dbrec = dbrec;
	dv.sq.buf = ring;
	dv.sq.wqe_cnt = RING;
	dv.sq.stride = 64;
	dv.bf.reg = uar;
	dv.bf.size = BF_SIZE;
	dvc.buf = cqes;
	dvc.dbrec = cq_dbrec;
	dvc.cqe_cnt = RING;
	dvc.cqe_size = 64;
	ctl = aligned_alloc(64, (ssq_ctl_size(RING) + 63) & ~(size_t)63);
	memset(ctl, 0, ssq_ctl_size(RING));
	CHECK(ssq_sq_init(&sq, &dv, QPN, 220, 4) == 0 && ssq_cq_init(&cq, &dvc) == 0 &&
	          ssq_ctl_init(ctl, RING, 16) == 0 &&
	          ssq_producer_init(&p, ctl, 0, &sq, &cq, 1) == 0,
	      "setup");
	if (test_failures)
		return test_exit("dv_doorbell_race");
	/* One NOP at 0, published as a client would. */
	c->opmod_idx_opcode = htobe32(MLX5_OPCODE_NOP);
	c->qpn_ds = htobe32((QPN << 8) | 1);
	p.slots[0].len = 1;
	p.slots[0].owner = p.id;
	__atomic_store_n(&p.slots[0].seq, 1, __ATOMIC_RELEASE);
	CHECK(pthread_create(&t, NULL, scribble, &c->qpn_ds) == 0, "scribbler");
	t0 = now_s();
	for (i = 0; i < 4000000 && now_s() - t0 < 20; i++) {
		unsigned h;

		ssq__ring(&p, 1);
		for (h = 0; h < 2; h++) {
			uint64_t *r = &uar[h * BF_SIZE / 8];
			struct mlx5_wqe_ctrl_seg d;

			if (!*r)
				continue;
			memcpy(&d, r, 8);
			*r = 0;
			rung++;
			foreign += (be32toh(d.qpn_ds) >> 8) != QPN;
		}
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	CHECK(foreign == 0, "%ld of %ld doorbells named another QPN", foreign, rung);
	printf(
	    "dv_doorbell_race: %ld doorbells in %.2f s while a client flipped the QPN, "
	    "%ld named another\n",
	    rung, now_s() - t0, foreign);
	free(ctl);
	return test_exit("dv_doorbell_race");
}
