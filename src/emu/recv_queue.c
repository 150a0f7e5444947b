/* SPDX-License-Identifier: MIT */
/*
 * The responder's receive queues: the next receive WQE of a QP's own RQ
 * (in order, by its doorbell record) or of its SRQ (along the free list
 * the producer links), for the in-device responder (execute.c) and the
 * wire's (wire_resp.c).
 */
#include "emu/emu_pvt.h"

/* The receive doorbell record of @qp's RQ or SRQ and the device's counter. */
static void rq_counters(const struct emu_qp *qp, uint16_t *dbr, uint16_t *cc)
{
	if (qp->srq) {
		/* A1: pairs with ssq_srq_ring's release of the receive WQEs. */
		*dbr =
		    (uint16_t)be32toh(__atomic_load_n(qp->srq->dbrec, __ATOMIC_ACQUIRE));
		*cc = (uint16_t)qp->srq->cc;
	} else {
		/* A1: pairs with ssq_rq_ring's release of the receive WQEs. */
		*dbr = (uint16_t)be32toh(
		    __atomic_load_n(&qp->dbrec[MLX5_RCV_DBR], __ATOMIC_ACQUIRE));
		*cc = (uint16_t)qp->rq_cc;
	}
}

int emu_rq_empty(const struct emu_qp *qp)
{
	uint16_t dbr, cc;

	rq_counters(qp, &dbr, &cc);
	return dbr == cc;
}

int emu_rq_take(struct emu_qp *qp, const uint8_t **wqe_out, unsigned *nseg_out,
                uint16_t *idx_out)
{
	const uint8_t *wqe;
	unsigned nseg;
	uint16_t idx;

	if (emu_rq_empty(qp))
		return 1;
	if (qp->srq) {
		struct emu_srq *srq = qp->srq;

		idx = srq->head;
		wqe = srq->buf + (size_t)idx * srq->stride;
		nseg = srq->stride / SSQ_WQE_DS_BYTES - 1;
		srq->head =
		    be16toh(((const struct mlx5_wqe_srq_next_seg *)wqe)->next_wqe_index) &
		    (uint16_t)(srq->wqe_cnt - 1);
		srq->cc++;
		wqe += sizeof(struct mlx5_wqe_srq_next_seg);
	} else {
		idx = (uint16_t)qp->rq_cc;
		wqe = qp->rq_buf +
		      (size_t)(qp->rq_cc & (qp->rq_wqe_cnt - 1)) * qp->rq_stride;
		nseg = qp->rq_stride / SSQ_WQE_DS_BYTES;
		qp->rq_cc++;
	}
	if (nseg > EMU_MAX_SG)
		nseg = EMU_MAX_SG;
	if (ssq_unlikely(qp->dev->trace != NULL))
		emu_trace_recv(qp, wqe, nseg * SSQ_WQE_DS_BYTES, idx);
	*wqe_out = wqe;
	*nseg_out = nseg;
	*idx_out = idx;
	return 0;
}

void emu_rq_untake(struct emu_qp *qp, uint16_t idx)
{
	if (qp->srq) {
		qp->srq->head = idx;
		qp->srq->cc--;
	} else {
		qp->rq_cc--;
	}
}
