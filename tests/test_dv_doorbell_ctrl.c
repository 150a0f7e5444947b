/* SPDX-License-Identifier: MIT */
/*
 * The shared queue's doorbell carries this QP's number and the index of a
 * WQE's first WQEBB, whatever a client wrote into the slots: a 2-WQEBB WQE
 * whose slot metadata a client rewrote as two 1-WQEBB WQEs made the lease
 * holder ring with the bytes of the WQE's second WQEBB (inline data), so
 * the doorbell named another QPN - on a UAR page shared by several QPs a
 * doorbell for another QP. Also when the slots name no WQE ending where the
 * scan stopped, the doorbell is one the queue made itself, never the bytes
 * of whatever WQEBB lies there.
 */
#include <stdlib.h>
#include <ssq/ssq.h>
#include <ssq/queue_pvt.h>
#include "helpers.h"

#define RING    64u
#define BF_SIZE 256u
#define QPN     0x4321u

static uint8_t ring[RING * 64] __attribute__((aligned(4096)));
static struct mlx5_cqe64 cqes[RING] __attribute__((aligned(4096)));
static uint64_t uar[2 * BF_SIZE / 8] __attribute__((aligned(64)));
static uint8_t payload[128];

/* The doorbell the last ssq_submit wrote (either half), as (qpn, index). */
static void rung(uint32_t *qpn, uint32_t *idx)
{
	struct mlx5_wqe_ctrl_seg c;
	unsigned h;

	*qpn = *idx = ~0u;
	for (h = 0; h < 2; h++) {
		uint64_t *r = &uar[h * BF_SIZE / 8];

		if (!*r)
			continue;
		memcpy(&c, r, 8);
		*qpn = be32toh(c.qpn_ds) >> 8;
		*idx = (be32toh(c.opmod_idx_opcode) >> 8) & 0xffff;
		*r = 0;
	}
}

int main(void)
{
	struct mlx5dv_qp dv = { 0 };
	struct mlx5dv_cq dvc = { 0 };
	__be32 dbrec[2] = { 0, 0 }, cq_dbrec[2] = { 0, 0 };
	struct ibv_sge sge = { (uintptr_t)payload, 100, 0 };
	struct ssq_wr wr = { .opcode = MLX5_OPCODE_SEND,
		             .inline_data = 1,
		             .num_sge = 1,
		             .sg_list = &sge };
	struct ssq_producer p;
	struct ssq_ctl *ctl;
	struct ssq_sq sq;
	struct ssq_cq cq;
	struct ssq_ctl_slot *s0, *s1;
	uint32_t qpn, idx;
	uint64_t pos;
	int n;

	memset(payload, 0xee, sizeof(payload)); /* inline bytes: QPN 0xeeeeee */
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
	CHECK(ssq_sq_init(&sq, &dv, QPN, 220, 4) == 0 && ssq_cq_init(&cq, &dvc) == 0,
	      "sq/cq");
	ctl = aligned_alloc(64, (ssq_ctl_size(RING) + 63) & ~(size_t)63);
	memset(ctl, 0, ssq_ctl_size(RING));
	CHECK(ssq_ctl_init(ctl, RING, 16) == 0 &&
	          ssq_producer_init(&p, ctl, 0, &sq, &cq, 1) == 0,
	      "ctl/producer");
	if (test_failures)
		return test_exit("dv_doorbell_ctrl");

	/* A 2-WQEBB inline SEND at 0, published as one WQE, then rung: index 0. */
	CHECK(ssq_reserve(&p, 2, &pos) == 0 && pos == 0, "reserve");
	n = ssq_wqe_build(&sq, 0, &wr);
	CHECK(n == 2, "the inline SEND took %d WQEBBs", n);
	ssq_publish(&p, 0, 2, 1, 0);
	ssq_submit(&p);
	rung(&qpn, &idx);
	CHECK(qpn == QPN && idx == 0, "honest slots: doorbell QPN 0x%x index %u", qpn,
	      idx);

	/*
	 * The same at 2, but a client rewrites its slots before the lease holder
	 * scans: two 1-WQEBB WQEs at 2 and 3. WQEBB 3 is inline data.
	 */
	CHECK(ssq_reserve(&p, 2, &pos) == 0 && pos == 2, "reserve 2");
	n = ssq_wqe_build(&sq, 2, &wr);
	s0 = &p.slots[2];
	s1 = &p.slots[3];
	ssq_publish(&p, 2, 2, 2, 0);
	__atomic_store_n(&s0->len, 1, __ATOMIC_RELAXED);
	s1->len = 1;
	s1->owner = p.id;
	__atomic_store_n(&s1->seq, 4, __ATOMIC_RELEASE);
	ssq_submit(&p);
	rung(&qpn, &idx);
	CHECK(qpn == QPN, "scribbled slots: the doorbell names QPN 0x%x, not 0x%x", qpn,
	      QPN);
	CHECK(idx == 2 || idx == 3, "scribbled slots: doorbell index %u", idx);
	printf("dv_doorbell_ctrl: scribbled slots rang QPN 0x%x index %u\n", qpn, idx);
	free(ctl);
	return test_exit("dv_doorbell_ctrl");
}
