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
#include "dv_queue.h"

static struct dvq q;
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
	struct mlx5_wqe_ctrl_seg *c = (struct mlx5_wqe_ctrl_seg *)q.ring;
	struct ssq_producer *p = &q.p;
	pthread_t t;
	long i, rung = 0, foreign = 0;
	uint32_t qpn, idx;
	double t0;

	if (dvq_init(&q))
		return test_exit("dv_doorbell_race");
	/* One NOP at 0, published as a client would. */
	c->opmod_idx_opcode = htobe32(MLX5_OPCODE_NOP);
	c->qpn_ds = htobe32((DVQ_QPN << 8) | 1);
	p->slots[0].len = 1;
	p->slots[0].owner = p->id;
	__atomic_store_n(&p->slots[0].seq, 1, __ATOMIC_RELEASE);
	CHECK(pthread_create(&t, NULL, scribble, &c->qpn_ds) == 0, "scribbler");
	t0 = now_s();
	for (i = 0; i < 4000000 && now_s() - t0 < 20; i++) {
		ssq__ring(p, 1);
		rung += dvq_doorbells(&q, &qpn, &idx, &foreign);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	CHECK(foreign == 0, "%ld of %ld doorbells named another QPN", foreign, rung);
	printf(
	    "dv_doorbell_race: %ld doorbells in %.2f s while a client flipped the QPN, "
	    "%ld named another\n",
	    rung, now_s() - t0, foreign);
	free(q.ctl);
	return test_exit("dv_doorbell_race");
}
