/* SPDX-License-Identifier: MIT */
/*
 * The send queue's doorbells as the device sees them: the UAR register
 * halves (8-byte doorbell or BlueFlame copy) and the send doorbell record,
 * each checked, a bad one a device error that freezes the SQ. Used by the
 * in-device execution (execute.c), the wire requester (wire_req.c) and the
 * flush (flush.c).
 */
#include "emu/emu_pvt.h"

/*
 * The UAR doorbells since the last look: each BlueFlame half holds the
 * first 8 bytes of the control segment of the last WQE rung through it
 * (8-byte doorbell or BlueFlame copy). The DBR stays the producer index the
 * device executes up to; a doorbell is checked against it (emu_sq_doorbell): it must
 * carry this QP's number and name a WQE the DBR has posted.
 * Returns 0, or -1 for a doorbell of another QP.
 */
static int sq_uar(struct emu_qp *qp, uint16_t *idx_out, int *rung)
{
	unsigned h;

	for (h = 0; h < 2; h++) {
		/*
		 * A1: pairs with the producer's DBR store, ordered before its
		 * UAR store by ssq_mmio_wc_start: a doorbell seen here implies
		 * its DBR value is seen by the DBR load that follows.
		 */
		uint64_t v = __atomic_load_n(
		    (uint64_t *)(qp->bf_reg + h * SSQ_EMU_BF_SIZE), __ATOMIC_ACQUIRE);
		struct mlx5_wqe_ctrl_seg c;

		if (ssq_likely(v == qp->bf_seen[h]))
			continue;
		qp->bf_seen[h] = v;
		memcpy(&c, &v, sizeof(v));
		if ((be32toh(c.qpn_ds) >> 8) != qp->qpn) {
			emu_dev_error(qp, "UAR doorbell carries QPN 0x%06x",
			              be32toh(c.qpn_ds) >> 8);
			return -1;
		}
		*idx_out = (uint16_t)(be32toh(c.opmod_idx_opcode) >> 8);
		*rung = 1;
	}
	return 0;
}

int emu_sq_doorbell(struct emu_qp *qp, uint16_t *out)
{
	uint16_t dbr, cc = (uint16_t)qp->sq_cc, db_idx = 0;
	int rung = 0;

	/* The UAR first: see A1. */
	if (qp->bf_reg && sq_uar(qp, &db_idx, &rung))
		goto bad;
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
	/*
	 * The doorbell's WQE must be one the DBR has posted: not after dbr - 1
	 * (16-bit, half the index space either way). It may lie well behind:
	 * the device may read a new DBR in the window between a ringer's DBR
	 * and UAR stores, when the UAR still holds the previous ringer's
	 * doorbell, and with doorbells combined over many WQEs (ssq's shared
	 * queue) that one can be more than a ring behind. A stale doorbell
	 * asks for nothing the DBR does not already give.
	 */
	if (ssq_unlikely(rung) && (int16_t)(db_idx - (uint16_t)(dbr - 1)) > 0) {
		emu_dev_error(
		    qp, "UAR doorbell names WQE index %u, the doorbell record is %u",
		    db_idx, dbr);
		goto bad;
	}
	*out = dbr;
	return 0;
bad:
	qp->dbr_bad = 1;
	emu_qp_to_err(qp);
	return -1;
}
