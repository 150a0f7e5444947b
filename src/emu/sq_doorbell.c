/* SPDX-License-Identifier: MIT */
/*
 * The send queue's doorbells as a ConnectX takes them. The UAR doorbell
 * starts the SQ: rdma-core's post_send_db (providers/mlx5/qp.c) stores the
 * doorbell record, then writes the first 8 bytes of the last WQE's control
 * segment (opmod_idx_opcode with its WQE index, qpn_ds with its QPN) to
 * bf->reg + bf->offset, an 8-byte MMIO write or the start of a BlueFlame
 * copy, alternating between the register's two halves; mlx5_ib's post_send
 * (drivers/infiniband/hw/mlx5/wr.c) rings the same way. The register may be
 * shared by several QPs of a context (post_send_db's bf->need_lock), so it
 * is the doorbell's QPN that names the SQ. The doorbell record only says
 * how far the NIC may read once it has been woken: WQEs it posted that no
 * doorbell reached are not executed, and a lost doorbell hangs the SQ here
 * as it does on a NIC.
 *
 * Each UAR write is an event to the NIC. Here the register is memory, so
 * the device takes a doorbell by swapping it with 0 (0 is never a
 * doorbell: the QPN is not 0): a later write of the same bytes, after a
 * RESET, is seen again. Two writes to one half between two looks count as
 * the later one, which names the later WQE (one ringer at a time).
 *
 * Used by the in-device execution (execute.c), the wire requester
 * (wire_req.c) and the flush (flush.c).
 */
#include "emu/emu_pvt.h"

/*
 * Take the UAR doorbells written since the last look, the furthest one (on
 * the circle of 16-bit WQE indices, seen from the consumer) in *@idx.
 * Returns 1 with one, 0 without, -1 after a doorbell of another QP.
 */
static int sq_uar(struct emu_qp *qp, uint16_t *idx)
{
	int found = 0;
	unsigned h;

	for (h = 0; h < 2; h++) {
		uint64_t *reg = (uint64_t *)(qp->bf_reg + h * SSQ_EMU_BF_SIZE);
		struct mlx5_wqe_ctrl_seg c;
		uint64_t v;
		uint16_t i;

		/* Look before taking: an idle device must not write the line
		 * the producer writes next. */
		if (ssq_likely(!__atomic_load_n(reg, __ATOMIC_RELAXED)))
			continue;
		/*
		 * A1: pairs with the producer's DBR store, ordered before its
		 * UAR store by ssq_mmio_wc_start: a doorbell taken here
		 * implies its DBR value is seen by the DBR load that follows.
		 */
		v = __atomic_exchange_n(reg, 0, __ATOMIC_ACQUIRE);
		memcpy(&c, &v, sizeof(v));
		if ((be32toh(c.qpn_ds) >> 8) != qp->qpn) {
			emu_dev_error(qp, "UAR doorbell carries QPN 0x%06x",
			              be32toh(c.qpn_ds) >> 8);
			return -1;
		}
		i = (uint16_t)(be32toh(c.opmod_idx_opcode) >> 8);
		if (!found || (int16_t)(i - (uint16_t)qp->sq_cc) >
		                  (int16_t)(*idx - (uint16_t)qp->sq_cc))
			*idx = i;
		found = 1;
	}
	return found;
}

int emu_sq_doorbell(struct emu_qp *qp, uint16_t *out)
{
	uint16_t dbr, cc = (uint16_t)qp->sq_cc, db_idx = 0;
	int rung;

	/* The UAR first: see A1. */
	rung = sq_uar(qp, &db_idx);
	if (rung < 0)
		goto bad;
	/* Not woken, nothing left of the last doorbell: the DBR is not read. */
	if (!rung && !emu_sq_rung(qp)) {
		*out = cc;
		return 0;
	}
	/*
	 * A0: pairs with the producer's WQE stores, ordered before its DBR
	 * store by ssq_udma_to_device_barrier (a release on x86 and Arm).
	 */
	dbr = (uint16_t)be32toh(
	    __atomic_load_n(&qp->dbrec[MLX5_SND_DBR], __ATOMIC_ACQUIRE));
	if (ssq_likely(dbr == qp->last_dbr))
		goto ok;
	if ((int16_t)(dbr - qp->last_dbr) < 0) {
		emu_dev_error(qp, "send doorbell record moved backwards from %u to %u",
		              qp->last_dbr, dbr);
		goto bad;
	}
	if ((uint16_t)(dbr - cc) > qp->sq.wqe_cnt) {
		emu_dev_error(qp,
		              "send doorbell record %u is %u WQEBBs past consumer %u, "
		              "ring holds %u",
		              dbr, (uint16_t)(dbr - cc), cc, qp->sq.wqe_cnt);
		goto bad;
	}
	qp->last_dbr = dbr;
ok:
	if (rung) {
		uint32_t pos = qp->sq_cc + (uint32_t)(int16_t)(db_idx - cc);

		/*
		 * The doorbell's WQE must be one the DBR has posted: not after
		 * dbr - 1 (16-bit, half the index space either way).
		 */
		if ((int16_t)(db_idx - (uint16_t)(dbr - 1)) > 0) {
			emu_dev_error(
			    qp,
			    "UAR doorbell names WQE index %u, the doorbell record is %u",
			    db_idx, dbr);
			goto bad;
		}
		/*
		 * It may lie behind the last one taken: of two ringers, the
		 * earlier one's doorbell may be taken at the next look, after
		 * the later one's (the device reads the halves in turn). A
		 * stale doorbell asks for nothing more.
		 */
		if (!qp->db_rung || (int32_t)(pos - qp->db_last) > 0)
			qp->db_last = pos;
		qp->db_rung = 1;
	}
	*out = dbr;
	return 0;
bad:
	qp->dbr_bad = 1;
	/* No CQE can say it: the SQ is frozen (catastrophic QP error). */
	emu_qp_to_err_event(qp, IBV_EVENT_QP_FATAL);
	return -1;
}
