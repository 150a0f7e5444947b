/* SPDX-License-Identifier: MIT */
/*
 * One shared queue over plain memory, for tests of the host side alone: a
 * ring, a CQ no device writes, a UAR stand-in whose doorbells the test reads
 * back, a control block and one producer bound to it.
 */
#ifndef SSQ_TEST_DV_QUEUE_H
#define SSQ_TEST_DV_QUEUE_H

#include <stdlib.h>
#include <string.h>
#include <ssq/ssq.h>
#include "dv/ctl.h"
#include "helpers.h"

#define DVQ_RING    64u
#define DVQ_BF_SIZE 256u
#define DVQ_QPN     0x4321u

struct dvq {
	uint8_t ring[DVQ_RING * 64] __attribute__((aligned(4096)));
	struct mlx5_cqe64 cqes[DVQ_RING] __attribute__((aligned(4096)));
	uint64_t uar[2 * DVQ_BF_SIZE / 8] __attribute__((aligned(64)));
	__be32 dbrec[2], cq_dbrec[2];
	struct ssq_sq sq;
	struct ssq_cq cq;
	struct ssq_ctl *ctl;
	struct ssq_producer p;
};

/* Set @q up; 0, or -1 after a failed CHECK. */
static inline int dvq_init(struct dvq *q)
{
	struct mlx5dv_qp dv = { 0 };
	struct mlx5dv_cq dvc = { 0 };

	dv.dbrec = q->dbrec;
	dv.sq.buf = q->ring;
	dv.sq.wqe_cnt = DVQ_RING;
	dv.sq.stride = 64;
	dv.bf.reg = q->uar;
	dv.bf.size = DVQ_BF_SIZE;
	dvc.buf = q->cqes;
	dvc.dbrec = q->cq_dbrec;
	dvc.cqe_cnt = DVQ_RING;
	dvc.cqe_size = 64;
	q->ctl = aligned_alloc(64, (ssq_ctl_size(DVQ_RING) + 63) & ~(size_t)63);
	if (q->ctl)
		memset(q->ctl, 0, ssq_ctl_size(DVQ_RING));
	CHECK(q->ctl && ssq_sq_init(&q->sq, &dv, DVQ_QPN, 220, 4) == 0 &&
	          ssq_cq_init(&q->cq, &dvc) == 0 &&
	          ssq_ctl_init(q->ctl, DVQ_RING, 16) == 0 &&
	          ssq_producer_init(&q->p, q->ctl, 0, &q->sq, &q->cq, 1) == 0,
	      "a queue over plain memory");
	return test_failures ? -1 : 0;
}

/*
 * Take the doorbells written to the UAR stand-in (either half) since the
 * last look: how many; the last one's QPN and WQE index in *@qpn, *@idx
 * (~0 without any); those naming another QP than DVQ_QPN added to *@foreign.
 */
static inline unsigned dvq_doorbells(struct dvq *q, uint32_t *qpn, uint32_t *idx,
                                     long *foreign)
{
	struct mlx5_wqe_ctrl_seg c;
	unsigned h, n = 0;

	*qpn = *idx = ~0u;
	for (h = 0; h < 2; h++) {
		uint64_t *r = &q->uar[h * DVQ_BF_SIZE / 8];

		if (!*r)
			continue;
		memcpy(&c, r, 8);
		*r = 0;
		*qpn = be32toh(c.qpn_ds) >> 8;
		*idx = (be32toh(c.opmod_idx_opcode) >> 8) & 0xffff;
		*foreign += *qpn != DVQ_QPN;
		n++;
	}
	return n;
}

#endif
