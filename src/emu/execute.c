/* SPDX-License-Identifier: MIT */
/*
 * WQE execution: the send queue of a QP whose peer is on this device, in
 * order, as the ConnectX requester runs it, with the peer QP's responder
 * side done inline (an RC connection between two QPs of this device; a
 * remote peer is the wire's, wire_req.c). Every check and its syndrome follows
 * what the hardware reports; see <ssq/emu.h> for the list.
 */
#include "emu/emu_pvt.h"

/* What one WQE came to. */
enum {
	EX_OK = 0,
	EX_RNR_WAIT = -1, /* receiver not ready: retry on a later pass */
	EX_MORE = -2,     /* a segment moved, more of the message to come */
	                  /* > 0: a requester syndrome (MLX5_CQE_SYNDROME_*) */
};

/* The responder QP at the other end, or NULL when no packet would reach
 * one that accepts it (the requester then runs out of transport retries). */
static struct emu_qp *peer_of(const struct emu_qp *qp)
{
	struct emu_qp *peer = emu_qp_by_qpn(qp->dev, qp->dest_qpn);

	if (!peer || peer->dest_qpn != qp->qpn)
		return NULL;
	if (peer->state != IBV_QPS_RTR && peer->state != IBV_QPS_RTS)
		return NULL;
	return peer;
}

/*
 * A responder-side error the responder detects itself: it completes the
 * receive WQE it consumed (if any) with @syndrome, and its QP goes to ERR,
 * as the IB responder does on an invalid request or access violation.
 */
static void responder_fail(struct emu_qp *peer, int have_wqe, uint8_t syndrome,
                           uint16_t idx, enum ibv_event_type event)
{
	if (have_wqe)
		emu_cqe_err(peer->recv_cq, MLX5_CQE_RESP_ERR, syndrome, 0, 0, peer->qpn,
		            idx);
	/*
	 * IB 9.9.3's affiliated asynchronous errors: @event (an access
	 * violation or an invalid request) where no CQE says it, else the CQE.
	 */
	if (have_wqe)
		emu_qp_to_err(peer);
	else
		emu_qp_to_err_event(peer, event);
}

/*
 * Take the responder's next receive WQE for a SEND or WRITE_IMM carrying
 * @len bytes from @src (NULL for WRITE_IMM: no data lands in the receive
 * buffers) and complete it. Returns EX_OK, EX_RNR_WAIT or a requester
 * syndrome.
 */
static int recv_one(struct emu_qp *qp, struct emu_qp *peer, const struct emu_sg *src,
                    uint64_t len, uint8_t cqe_op, __be32 imm)
{
	struct emu_dev *dev = qp->dev;
	struct emu_sg dst[EMU_MAX_SG];
	const uint8_t *wqe;
	unsigned nseg;
	uint64_t cap;
	uint16_t idx;
	int n;

	if (emu_rq_take(peer, &wqe, &nseg, &idx))
		return EX_RNR_WAIT;
	if (src) {
		n = emu_rq_sg(peer, wqe, nseg, dst, &cap);
		if (n < 0) {
			responder_fail(peer, 1, (uint8_t)-n, idx, IBV_EVENT_QP_REQ_ERR);
			return MLX5_CQE_SYNDROME_REMOTE_OP_ERR;
		}
		if (len > cap) {
			responder_fail(peer, 1, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR, idx,
			               IBV_EVENT_QP_REQ_ERR);
			return MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR;
		}
		if (peer->scatter_to_cqe && len <= EMU_SCAT_CQE_MAX) {
			/* Into the CQE, never the buffer (emu_cqe_resp_scat). */
			uint8_t data[EMU_SCAT_CQE_MAX] = { 0 };

			if (dev->mode == SSQ_EMU_FULL && len &&
			    emu_sg_gather(data, src, 0, (uint32_t)len)) {
				emu_rq_untake(peer, idx);
				return MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
			}
			emu_cqe_resp_scat(peer->recv_cq, cqe_op, peer->qpn, idx,
			                  (uint32_t)len, imm, data);
			return EX_OK;
		}
		if (dev->mode == SSQ_EMU_FULL) {
			int rc = emu_sg_copy(dst, src, len);

			if (rc == EMU_FAULT_SRC) {
				emu_rq_untake(peer, idx);
				return MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
			}
			if (rc) {
				responder_fail(peer, 1, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR,
				               idx, IBV_EVENT_QP_REQ_ERR);
				return MLX5_CQE_SYNDROME_REMOTE_OP_ERR;
			}
		}
	}
	emu_cqe_resp(peer->recv_cq, cqe_op, peer->qpn, idx, (uint32_t)len, imm);
	return EX_OK;
}

/*
 * Move the next segment of a message of @total bytes from @src to @dst:
 * EX_OK once all of it has moved, EX_MORE when more is left for the QP's
 * next turn, else EMU_FAULT_SRC / EMU_FAULT_DST. An IB requester sends a
 * message as packets of at most the path MTU (the wire here does so too,
 * wire_req.c) and the NIC's send scheduler arbitrates between the QPs
 * with work, so one long message does not hold the port; here the unit is
 * EMU_SEG_BYTES and the turns are process()'s round robin. Both lists are resolved again
 * on every turn, as each packet's keys are checked, so memory deregistered mid-message is
 * never touched.
 */
static int move_segment(struct emu_qp *qp, const struct emu_sg *dst,
                        const struct emu_sg *src, uint64_t total)
{
	uint64_t left = total - qp->msg_off;
	uint64_t n = left < EMU_SEG_BYTES ? left : EMU_SEG_BYTES;
	int rc;

	if (qp->dev->mode != SSQ_EMU_FULL || !left)
		return EX_OK;
	rc = emu_sg_copy_at(dst, src, qp->msg_off, n);
	if (rc)
		return rc;
	qp->msg_off += n;
	return qp->msg_off < total ? EX_MORE : EX_OK;
}

/* RDMA WRITE (with or without immediate) to the peer's memory. */
static int do_write(struct emu_qp *qp, struct emu_qp *peer, size_t off, unsigned ds,
                    int with_imm, __be32 imm)
{
	const struct mlx5_wqe_raddr_seg *r =
	    (const struct mlx5_wqe_raddr_seg *)emu_wqe_seg(qp, off, 1);
	struct emu_sg src[EMU_MAX_SG], dst;
	uint64_t total;
	int n;

	n = emu_sq_sg(qp, off, 2, ds, 0, src, &total);
	if (n < 0)
		return -n;
	/* WRITE_IMM: the responder must have a receive WQE before data may land. */
	if (with_imm && emu_rq_empty(peer))
		return EX_RNR_WAIT;
	/* IB: a zero-length RDMA WRITE does not check its R_Key. */
	if (total && emu_remote_sg(peer, be64toh(r->raddr), be32toh(r->rkey), total,
	                           IBV_ACCESS_REMOTE_WRITE, &dst)) {
		responder_fail(peer, 0, 0, 0, IBV_EVENT_QP_ACCESS_ERR);
		return MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
	}
	if (total) {
		n = move_segment(qp, &dst, src, total);
		if (n == EX_MORE)
			return EX_MORE;
		if (n == EMU_FAULT_SRC)
			return MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
		if (n) {
			responder_fail(peer, 0, 0, 0, IBV_EVENT_QP_ACCESS_ERR);
			return MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
		}
	}
	if (with_imm)
		return recv_one(qp, peer, NULL, total, MLX5_CQE_RESP_WR_IMM, imm);
	return EX_OK;
}

/* RDMA READ from the peer's memory into the local scatter list. */
static int do_read(struct emu_qp *qp, struct emu_qp *peer, size_t off, unsigned ds,
                   uint32_t *byte_cnt)
{
	const struct mlx5_wqe_raddr_seg *r =
	    (const struct mlx5_wqe_raddr_seg *)emu_wqe_seg(qp, off, 1);
	struct emu_sg dst[EMU_MAX_SG], src;
	uint64_t total;
	int n;

	n = emu_sq_sg(qp, off, 2, ds, 1, dst, &total);
	if (n < 0)
		return -n;
	if (!peer->max_dest_rd_atomic) {
		responder_fail(peer, 0, 0, 0, IBV_EVENT_QP_REQ_ERR);
		return MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR;
	}
	if (total && emu_remote_sg(peer, be64toh(r->raddr), be32toh(r->rkey), total,
	                           IBV_ACCESS_REMOTE_READ, &src)) {
		responder_fail(peer, 0, 0, 0, IBV_EVENT_QP_ACCESS_ERR);
		return MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
	}
	if (total) {
		n = move_segment(qp, dst, &src, total);
		if (n == EX_MORE)
			return EX_MORE;
		if (n == EMU_FAULT_DST)
			return MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
		if (n) {
			responder_fail(peer, 0, 0, 0, IBV_EVENT_QP_ACCESS_ERR);
			return MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
		}
	}
	*byte_cnt = (uint32_t)total;
	return EX_OK;
}

/* ATOMIC_CS / ATOMIC_FA: ctrl, raddr, atomic, one 8-byte data segment. */
static int do_atomic(struct emu_qp *qp, struct emu_qp *peer, size_t off, uint8_t opcode,
                     uint32_t *byte_cnt)
{
	const struct mlx5_wqe_raddr_seg *r =
	    (const struct mlx5_wqe_raddr_seg *)emu_wqe_seg(qp, off, 1);
	const struct mlx5_wqe_atomic_seg *a =
	    (const struct mlx5_wqe_atomic_seg *)emu_wqe_seg(qp, off, 2);
	struct emu_sg dst, target;
	uint64_t total, raddr = be64toh(r->raddr), old;
	int n;

	n = emu_sq_sg(qp, off, 3, 4, 1, &dst, &total);
	if (n < 0)
		return -n;
	if (n != 1 || total != 8)
		return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
	/* IB: an atomic needs an aligned target and responder resources. */
	if ((raddr & 7) || !peer->max_dest_rd_atomic) {
		responder_fail(peer, 0, 0, 0, IBV_EVENT_QP_REQ_ERR);
		return MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR;
	}
	if (emu_remote_sg(peer, raddr, be32toh(r->rkey), 8, IBV_ACCESS_REMOTE_ATOMIC,
	                  &target) ||
	    (qp->dev->mode == SSQ_EMU_FULL &&
	     emu_piece_atomic(&target, opcode == MLX5_OPCODE_ATOMIC_FA,
	                      be64toh(a->swap_add), be64toh(a->compare), &old))) {
		responder_fail(peer, 0, 0, 0, IBV_EVENT_QP_ACCESS_ERR);
		return MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
	}
	*byte_cnt = 8;
	if (qp->dev->mode != SSQ_EMU_FULL)
		return EX_OK;
	/*
	 * The original value lands in host order: mlx5_core puts the
	 * requester's 8-byte atomics in host-endianness mode
	 * (drivers/net/ethernet/mellanox/mlx5/core/main.c, handle_hca_cap_atomic)
	 * and mlx5_ib offers atomics only in that mode (get_atomic_caps).
	 */
	if (emu_piece_write(&dst, 0, &old, 8))
		return MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
	return EX_OK;
}

/*
 * Execute the WQE at qp->sq_cc, @avail WQEBBs posted. Returns EX_OK,
 * EX_RNR_WAIT or a syndrome; *@wqebbs gets the WQE's size and *@byte_cnt the
 * requester CQE's byte count.
 */
static int exec_wqe(struct emu_qp *qp, uint32_t avail, unsigned *wqebbs,
                    uint32_t *byte_cnt)
{
	struct emu_dev *dev = qp->dev;
	const struct mlx5_wqe_ctrl_seg *ctrl =
	    (const struct mlx5_wqe_ctrl_seg *)ssq_sq_wqebb(&qp->sq, qp->sq_cc);
	uint32_t w0 = be32toh(ctrl->opmod_idx_opcode), w1 = be32toh(ctrl->qpn_ds);
	size_t off = (size_t)((const uint8_t *)ctrl - qp->sq.buf);
	unsigned ds = w1 & 0x3f;
	uint8_t opcode = w0 & 0xff;
	struct emu_qp *peer;
	struct emu_sg src[EMU_MAX_SG];
	uint64_t total;
	int n;

	*wqebbs = ds ? SSQ_DS_TO_WQEBBS(ds) : 1;
	*byte_cnt = 0;
	/* PRM: the WQE index must be the one the device expects, the WQE must
	 * belong to this QP and lie entirely within what the doorbell posted. */
	if (((w0 >> 8) & 0xffff) != (qp->sq_cc & 0xffff) || (w1 >> 8) != qp->qpn || !ds ||
	    *wqebbs > avail) {
		if (*wqebbs > avail)
			*wqebbs = avail;
		return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
	}
	/* Once per WQE: not again for a retry or a message's next segment. */
	if (qp->rnr_tries == 0 && qp->msg_off == 0 && dev->fault.err_at &&
	    ++dev->wqe_seq == dev->fault.err_at) {
		dev->fault_hit = 1;
		return dev->fault.syndrome ? dev->fault.syndrome
		                           : MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
	}

	/* Once per WQE, as the fault above: the fence after a UMR (umr.c). */
	if (qp->rnr_tries == 0 && qp->msg_off == 0) {
		emu_umr_fence_note(qp, ctrl->fm_ce_se);
		qp->umr_last = opcode == MLX5_OPCODE_UMR;
	}

	switch (opcode) {
	case MLX5_OPCODE_NOP:
		return EX_OK;
	case MLX5_OPCODE_UMR:
		/* A window's bind or invalidate: local, no peer needed. */
		return emu_umr_exec(qp, ctrl, off, ds);
	case MLX5_OPCODE_SEND:
	case MLX5_OPCODE_SEND_IMM:
	case MLX5_OPCODE_RDMA_WRITE:
	case MLX5_OPCODE_RDMA_WRITE_IMM:
	case MLX5_OPCODE_RDMA_READ:
		if (opcode != MLX5_OPCODE_SEND && opcode != MLX5_OPCODE_SEND_IMM &&
		    ds < 2)
			return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
		break;
	case MLX5_OPCODE_ATOMIC_CS:
	case MLX5_OPCODE_ATOMIC_FA:
		if (ds != 4)
			return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
		break;
	default:
		return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
	}

	peer = peer_of(qp);
	if (!peer)
		return MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR;

	switch (opcode) {
	case MLX5_OPCODE_SEND:
	case MLX5_OPCODE_SEND_IMM:
		n = emu_sq_sg(qp, off, 1, ds, 0, src, &total);
		if (n < 0)
			return -n;
		return recv_one(qp, peer, src, total,
		                opcode == MLX5_OPCODE_SEND ? MLX5_CQE_RESP_SEND
		                                           : MLX5_CQE_RESP_SEND_IMM,
		                opcode == MLX5_OPCODE_SEND ? 0 : ctrl->imm);
	case MLX5_OPCODE_RDMA_WRITE:
		return do_write(qp, peer, off, ds, 0, 0);
	case MLX5_OPCODE_RDMA_WRITE_IMM:
		return do_write(qp, peer, off, ds, 1, ctrl->imm);
	case MLX5_OPCODE_RDMA_READ:
		return do_read(qp, peer, off, ds, byte_cnt);
	default:
		return do_atomic(qp, peer, off, opcode, byte_cnt);
	}
}

/* The RNR NAK timer the responder advertises (its min_rnr_timer). */
static uint64_t rnr_timer_ns(const struct emu_qp *qp)
{
	const struct emu_qp *peer = peer_of(qp);

	return emu_rnr_timer_ns(peer ? peer->min_rnr_timer : qp->min_rnr_timer);
}

/* WQEBBs the device asks for ahead of the one it executes. */
#define PREFETCH_WQEBBS 8u

unsigned emu_sq_run(struct emu_qp *qp, unsigned budget)
{
	struct emu_dev *dev = qp->dev;
	unsigned n = 0, wqebbs, i;
	uint32_t byte_cnt;
	uint16_t dbr;
	int r;

	if (emu_sq_doorbell(qp, &dbr))
		return 0;
	if (dbr == (uint16_t)qp->sq_cc || !emu_sq_rung(qp))
		return 0;
	if (ssq_unlikely(dev->fault.delay)) {
		if (!qp->db_pending) {
			qp->db_pending = 1;
			qp->db_seen = dev->pass;
		}
		if (dev->pass - qp->db_seen < dev->fault.delay)
			return 0;
	}
	/*
	 * Ask for the lines of the WQEs the doorbell posted before reading the
	 * first: each was written on a producer's core, and the next WQE's
	 * address depends on this one's DS count, so without this their misses
	 * come one after another (a ConnectX fetches WQEs in bursts too).
	 */
	for (i = 0; i < PREFETCH_WQEBBS && (uint16_t)(dbr - qp->sq_cc) > i; i++)
		__builtin_prefetch(ssq_sq_wqebb(&qp->sq, qp->sq_cc + i));
	while (n < budget && dbr != (uint16_t)qp->sq_cc && emu_sq_rung(qp)) {
		if ((uint16_t)(dbr - qp->sq_cc) > PREFETCH_WQEBBS)
			__builtin_prefetch(
			    ssq_sq_wqebb(&qp->sq, qp->sq_cc + PREFETCH_WQEBBS));
		if (ssq_unlikely(qp->rnr_until_ns) && emu_now_ns() < qp->rnr_until_ns)
			break; /* the responder's RNR NAK said: not before then */
		const struct mlx5_wqe_ctrl_seg *ctrl =
		    (const struct mlx5_wqe_ctrl_seg *)ssq_sq_wqebb(&qp->sq, qp->sq_cc);
		uint16_t idx = (uint16_t)qp->sq_cc;

		if (ssq_unlikely(dev->trace != NULL) && !qp->rnr_tries && !qp->msg_off)
			emu_trace_wqe(qp, qp->sq_cc, "execute");
		r = exec_wqe(qp, (uint16_t)(dbr - idx), &wqebbs, &byte_cnt);
		if (r == EX_MORE) {
			/* The rest at this QP's next turn: the other QPs' first. */
			n++;
			break;
		}
		if (r == EX_RNR_WAIT) {
			/*
			 * rnr_retry 7 retries forever (IB spec 9.7.5.2.8); each retry
			 * waits the RNR NAK timer, the responder's min_rnr_timer.
			 */
			if (qp->rnr_retry == 7 || qp->rnr_tries++ < qp->rnr_retry) {
				qp->rnr_until_ns = emu_now_ns() + rnr_timer_ns(qp);
				break;
			}
			r = MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR;
		}
		qp->rnr_tries = 0;
		qp->rnr_until_ns = 0;
		qp->msg_off = 0;
		if (r == EX_OK) {
			if (ctrl->fm_ce_se & MLX5_WQE_CTRL_CQ_UPDATE)
				emu_cqe_req(qp->send_cq,
				            be32toh(ctrl->opmod_idx_opcode) & 0xff,
				            qp->qpn, idx, byte_cnt);
		} else {
			uint8_t vendor = dev->fault_hit ? dev->fault.vendor_err : 0;

			dev->fault_hit = 0;

			emu_cqe_err(qp->send_cq, MLX5_CQE_REQ_ERR, (uint8_t)r, vendor,
			            be32toh(ctrl->opmod_idx_opcode) & 0xff, qp->qpn, idx);
			emu_qp_to_err(qp);
		}
		qp->sq_cc += wqebbs;
		n++;
		if (qp->state != IBV_QPS_RTS)
			break;
	}
	if (dbr == (uint16_t)qp->sq_cc || !emu_sq_rung(qp))
		qp->db_pending = 0;
	return n;
}
