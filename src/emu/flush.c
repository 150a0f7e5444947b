/* SPDX-License-Identifier: MIT */
/*
 * Flushing a QP in ERR: every send WQE a UAR doorbell covered (one posted
 * in ERR needs its doorbell too: the NIC learns of it no other way) and every
 * receive WQE of its own RQ (not of an SRQ, which other QPs share) gets a
 * WR_FLUSH_ERR error CQE, signaled or not, as the PRM says of a QP in the
 * error state.
 */
#include "emu/emu_pvt.h"

unsigned emu_qp_flush(struct emu_qp *qp, unsigned budget)
{
	struct emu_dev *dev = qp->dev;
	unsigned n = 0;
	uint16_t dbr;

	if (!qp->dbr_bad && !emu_sq_doorbell(qp, &dbr)) {
		while (n < budget && dbr != (uint16_t)qp->sq_cc && emu_sq_rung(qp)) {
			const struct mlx5_wqe_ctrl_seg *ctrl =
			    (const struct mlx5_wqe_ctrl_seg *)ssq_sq_wqebb(&qp->sq,
			                                                   qp->sq_cc);
			unsigned ds = be32toh(ctrl->qpn_ds) & 0x3f;
			uint16_t avail = (uint16_t)(dbr - (uint16_t)qp->sq_cc);
			unsigned wqebbs = ds ? SSQ_DS_TO_WQEBBS(ds) : 1;

			if (ssq_unlikely(dev->trace != NULL))
				emu_trace_wqe(qp, qp->sq_cc, "flush");
			/* Flushes are reported signaled or not (PRM). */
			emu_cqe_err(qp->send_cq, MLX5_CQE_REQ_ERR,
			            MLX5_CQE_SYNDROME_WR_FLUSH_ERR, 0,
			            be32toh(ctrl->opmod_idx_opcode) & 0xff, qp->qpn,
			            (uint16_t)qp->sq_cc);
			qp->sq_cc += wqebbs < avail ? wqebbs : avail;
			n++;
		}
	}
	if (!qp->srq) {
		uint16_t rdbr = (uint16_t)be32toh(
		    __atomic_load_n(&qp->dbrec[MLX5_RCV_DBR], __ATOMIC_ACQUIRE));

		while (n < budget && rdbr != (uint16_t)qp->rq_cc) {
			emu_cqe_err(qp->recv_cq, MLX5_CQE_RESP_ERR,
			            MLX5_CQE_SYNDROME_WR_FLUSH_ERR, 0, 0, qp->qpn,
			            (uint16_t)qp->rq_cc);
			qp->rq_cc++;
			n++;
		}
	}
	return n;
}
