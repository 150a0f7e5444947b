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
#include "dv_queue.h"

static struct dvq q;
static uint8_t payload[128];

int main(void)
{
	struct ibv_sge sge = { (uintptr_t)payload, 100, 0 };
	struct ssq_wr wr = { .opcode = MLX5_OPCODE_SEND,
		             .inline_data = 1,
		             .num_sge = 1,
		             .sg_list = &sge };
	struct ssq_producer *p = &q.p;
	struct ssq_ctl_slot *s0, *s1;
	uint32_t qpn, idx;
	uint64_t pos;
	long foreign = 0;
	int n;

	memset(payload, 0xee, sizeof(payload)); /* inline bytes: QPN 0xeeeeee */
	if (dvq_init(&q))
		return test_exit("dv_doorbell_ctrl");

	/* A 2-WQEBB inline SEND at 0, published as one WQE, then rung: index 0. */
	CHECK(ssq_reserve(p, 2, &pos) == 0 && pos == 0, "reserve");
	n = ssq_wqe_build(&q.sq, 0, &wr);
	CHECK(n == 2, "the inline SEND took %d WQEBBs", n);
	ssq_publish(p, 0, 2, 1, 0);
	ssq_submit(p);
	dvq_doorbells(&q, &qpn, &idx, &foreign);
	CHECK(qpn == DVQ_QPN && idx == 0, "honest slots: doorbell QPN 0x%x index %u", qpn,
	      idx);

	/*
	 * The same at 2, but a client rewrites its slots before the lease holder
	 * scans: two 1-WQEBB WQEs at 2 and 3. WQEBB 3 is inline data.
	 */
	CHECK(ssq_reserve(p, 2, &pos) == 0 && pos == 2, "reserve 2");
	n = ssq_wqe_build(&q.sq, 2, &wr);
	s0 = &p->slots[2];
	s1 = &p->slots[3];
	ssq_publish(p, 2, 2, 2, 0);
	__atomic_store_n(&s0->len, 1, __ATOMIC_RELAXED);
	s1->len = 1;
	s1->owner = p->id;
	__atomic_store_n(&s1->seq, 4, __ATOMIC_RELEASE);
	ssq_submit(p);
	dvq_doorbells(&q, &qpn, &idx, &foreign);
	CHECK(qpn == DVQ_QPN, "scribbled slots: the doorbell names QPN 0x%x, not 0x%x",
	      qpn, DVQ_QPN);
	CHECK(idx == 2 || idx == 3, "scribbled slots: doorbell index %u", idx);
	printf("dv_doorbell_ctrl: scribbled slots rang QPN 0x%x index %u\n", qpn, idx);
	free(q.ctl);
	return test_exit("dv_doorbell_ctrl");
}
