/* SPDX-License-Identifier: MIT */
/*
 * The wire responder: request packets of a QP whose peer is remote, checked
 * against the expected PSN (duplicates re-acknowledged, the first packet
 * out of sequence NAKed once), then executed packet by packet: WRITE data
 * into the MR the RETH names, SEND data into the receive WQE taken at the
 * first packet, CQEs at the last one, as execute.c does for a local peer.
 */
#include "emu/wire_pvt.h"

/*
 * Take the next receive WQE (RQ or SRQ) of @qp, resolving its scatter list
 * when @resolve. Returns 0, 1 (none posted: receiver not ready), or
 * -syndrome for a scatter list the responder cannot use.
 */
static int take_rwqe(struct emu_qp *qp, int resolve)
{
	struct emu_wire_qp *wq = qp->wire;
	const uint8_t *wqe;
	unsigned nseg;
	uint16_t idx;
	int n;

	if (emu_rq_take(qp, &wqe, &nseg, &idx))
		return 1;
	wq->have_rwqe = 1;
	wq->rwqe_idx = idx;
	wq->rwqe = wqe;
	wq->rwqe_nseg = nseg;
	wq->cap = 0;
	if (resolve) {
		n = emu_rq_sg(qp, wqe, nseg, wq->sg, &wq->cap);
		if (n < 0)
			return n;
	}
	return 0;
}

/*
 * An error the responder detects itself: the receive WQE it holds (if any)
 * completes with @resp_synd, the QP goes to ERR (IB 9.9.3: invalid request
 * and access errors are fatal to the responder), and the requester gets the
 * NAK @aeth.
 */
static void resp_fail(struct emu_qp *qp, uint8_t aeth, uint8_t resp_synd)
{
	struct emu_wire_qp *wq = qp->wire;

	emu_wire_send_aeth(qp, aeth, wq->epsn);
	if (wq->have_rwqe && resp_synd) {
		emu_cqe_err(qp->recv_cq, MLX5_CQE_RESP_ERR, resp_synd, 0, 0, qp->qpn,
		            wq->rwqe_idx);
		emu_qp_to_err(qp);
	} else {
		/* No CQE says it: IB 9.9.3's affiliated asynchronous error does. */
		emu_qp_to_err_event(qp, aeth == AETH_NAK_ACCESS ? IBV_EVENT_QP_ACCESS_ERR
		                                                : IBV_EVENT_QP_REQ_ERR);
	}
	wq->have_rwqe = 0;
	wq->in_send = wq->in_write = 0;
}

/*
 * A new READ or atomic request needs one of the responder's
 * max_dest_rd_atomic resources; a requester that has more outstanding
 * than that (its max_rd_atomic set above our max_dest_rd_atomic) is
 * refused with NAK Invalid Request, fatal to both QPs (the requester
 * completes it with REM_INV_REQ_ERR), as a ConnectX does. Zero resources
 * refuse every READ and atomic.
 */
static int over_rd_atomic(const struct emu_qp *qp, const uint8_t *pkt)
{
	return !qp->max_dest_rd_atomic || pkt[WIRE_BTH_RD_DEPTH] > qp->max_dest_rd_atomic;
}

/*
 * RDMA READ request (@d: its PSN less the expected one, <= 0). A new one
 * (@d == 0) takes the PSNs of its responses; a duplicate (@d < 0: the
 * requester lost responses) is executed again from the PSN it names, as
 * IB responders do (reading is idempotent). Responses: FIRST, MIDDLE...,
 * LAST or ONLY, AETH (ACK, MSN) on all but MIDDLE.
 */
static void resp_read(struct emu_qp *qp, const uint8_t *pkt, uint32_t len, int32_t d)
{
	struct emu_wire_qp *wq = qp->wire;
	uint32_t psn = get_be32(pkt + 8) & PSN_MASK, mtu = emu_mtu_bytes(qp), rkey, dlen,
	         k, n;
	uint64_t va;
	struct emu_sg src;
	uint8_t out[WIRE_MAX_PKT];

	if (len < WIRE_BTH + WIRE_RETH || (d == 0 && (wq->in_send || wq->in_write)) ||
	    (d == 0 && over_rd_atomic(qp, pkt))) {
		if (d == 0)
			resp_fail(qp, AETH_NAK_INVAL, 0);
		return;
	}
	va = get_be64(pkt + WIRE_BTH);
	rkey = get_be32(pkt + WIRE_BTH + 8);
	dlen = get_be32(pkt + WIRE_BTH + 12);
	if (dlen && emu_remote_sg(qp, va, rkey, dlen, IBV_ACCESS_REMOTE_READ, &src)) {
		if (d == 0)
			resp_fail(qp, AETH_NAK_ACCESS, 0);
		return;
	}
	n = dlen ? (dlen + mtu - 1) / mtu : 1;
	if (d == 0) {
		wq->msn++;
		wq->epsn = (wq->epsn + n) & PSN_MASK;
		wq->nak_sent = 0;
	}
	for (k = 0; k < n; k++) {
		uint32_t h = WIRE_BTH, plen = dlen - k * mtu < mtu ? dlen - k * mtu : mtu;
		uint8_t op = n == 1       ? WIRE_READ_ONLY
		             : k == 0     ? WIRE_READ_FIRST
		             : k + 1 == n ? WIRE_READ_LAST
		                          : WIRE_READ_MIDDLE;

		emu_wire_bth(out, op, qp->dest_qpn, psn + k, 0);
		if (op != WIRE_READ_MIDDLE) {
			put_be32(out + h, ((uint32_t)(AETH_ACK | 0x1f) << 24) |
			                      (wq->msn & 0xffffff));
			h += WIRE_AETH;
		}
		/* The MR's memory gone (its process exited): an access error. */
		if (plen && qp->dev->mode == SSQ_EMU_FULL &&
		    emu_piece_read(&src, (uint64_t)k * mtu, out + h, plen)) {
			if (d == 0)
				resp_fail(qp, AETH_NAK_ACCESS, 0);
			return;
		}
		emu_wire_xmit(qp->dev->wire, &wq->peer, out, h + plen);
	}
}

static void send_atomic_ack(struct emu_qp *qp, uint32_t psn, const uint8_t *orig)
{
	uint8_t out[WIRE_BTH + WIRE_AETH + WIRE_ATOMIC_ACK_ETH];

	emu_wire_bth(out, WIRE_ATOMIC_ACK, qp->dest_qpn, psn, 0);
	put_be32(out + WIRE_BTH,
	         ((uint32_t)(AETH_ACK | 0x1f) << 24) | (qp->wire->msn & 0xffffff));
	memcpy(out + WIRE_BTH + WIRE_AETH, orig, 8);
	emu_wire_xmit(qp->dev->wire, &qp->wire->peer, out, sizeof(out));
}

/*
 * CMP_SWAP / FETCH_ADD (@d as in resp_read). A new one executes, as
 * do_atomic does for a local peer, and its original value is kept by PSN;
 * a duplicate gets the kept value again and changes nothing.
 */
static void resp_atomic(struct emu_qp *qp, const uint8_t *pkt, uint32_t len, int32_t d)
{
	struct emu_wire_qp *wq = qp->wire;
	uint32_t psn = get_be32(pkt + 8) & PSN_MASK, rkey;
	uint64_t va, arg, cmp, old = 0;
	struct emu_sg target;
	uint8_t orig[8];
	unsigned i;

	if (d < 0) {
		for (i = 0; i < sizeof(wq->atom) / sizeof(wq->atom[0]); i++)
			if (wq->atom[i].valid && wq->atom[i].psn == psn)
				send_atomic_ack(qp, psn, wq->atom[i].orig);
		return;
	}
	if (len != WIRE_BTH + WIRE_ATOMIC_ETH || wq->in_send || wq->in_write) {
		resp_fail(qp, AETH_NAK_INVAL, 0);
		return;
	}
	va = get_be64(pkt + WIRE_BTH);
	rkey = get_be32(pkt + WIRE_BTH + 8);
	arg = get_be64(pkt + WIRE_BTH + 12);
	cmp = get_be64(pkt + WIRE_BTH + 20);
	/* IB: an atomic needs an aligned target and responder resources. */
	if ((va & 7) || over_rd_atomic(qp, pkt)) {
		resp_fail(qp, AETH_NAK_INVAL, 0);
		return;
	}
	if (emu_remote_sg(qp, va, rkey, 8, IBV_ACCESS_REMOTE_ATOMIC, &target) ||
	    (qp->dev->mode == SSQ_EMU_FULL &&
	     emu_piece_atomic(&target, pkt[0] == WIRE_FETCH_ADD, arg, cmp, &old))) {
		resp_fail(qp, AETH_NAK_ACCESS, 0);
		return;
	}
	put_be64(orig, old);
	i = wq->atom_next++ % (sizeof(wq->atom) / sizeof(wq->atom[0]));
	wq->atom[i].valid = 1;
	wq->atom[i].psn = psn;
	memcpy(wq->atom[i].orig, orig, 8);
	wq->msn++;
	wq->epsn = (wq->epsn + 1) & PSN_MASK;
	wq->nak_sent = 0;
	send_atomic_ack(qp, psn, orig);
}

void emu_wire_resp_rx(struct emu_qp *qp, const uint8_t *pkt, uint32_t len)
{
	struct emu_wire_qp *wq = qp->wire;
	uint8_t op = pkt[0];
	uint32_t psn = get_be32(pkt + 8) & PSN_MASK, h = WIRE_BTH, plen,
	         mtu = emu_mtu_bytes(qp);
	int32_t d = psn_diff(psn, wq->epsn);
	int is_send = op <= WIRE_SEND_ONLY_IMM;
	int first = op == WIRE_SEND_FIRST || op == WIRE_SEND_ONLY ||
	            op == WIRE_SEND_ONLY_IMM || op == WIRE_WRITE_FIRST ||
	            op == WIRE_WRITE_ONLY || op == WIRE_WRITE_ONLY_IMM;
	int last = op != WIRE_SEND_FIRST && op != WIRE_SEND_MIDDLE &&
	           op != WIRE_WRITE_FIRST && op != WIRE_WRITE_MIDDLE;
	int imm = op == WIRE_SEND_LAST_IMM || op == WIRE_SEND_ONLY_IMM ||
	          op == WIRE_WRITE_LAST_IMM || op == WIRE_WRITE_ONLY_IMM;
	uint64_t va = 0, dlen = 0;
	uint32_t rkey = 0;
	struct emu_sg wdst;
	__be32 immdt = 0;
	int r;

	if (op == WIRE_READ_REQ && d <= 0) {
		resp_read(qp, pkt, len, d);
		return;
	}
	if ((op == WIRE_CMP_SWAP || op == WIRE_FETCH_ADD) && d <= 0) {
		resp_atomic(qp, pkt, len, d);
		return;
	}
	if (d < 0) {
		/* A duplicate: already executed; acknowledge again, do nothing. */
		wq->ack_pending = 1;
		qp->dev->wire->st.duplicates++;
		return;
	}
	if (d > 0) {
		if (!wq->nak_sent) {
			wq->nak_sent = 1;
			qp->dev->wire->st.seq_naks++;
			emu_wire_send_aeth(qp, AETH_NAK_SEQ, wq->epsn);
		}
		return;
	}
	/* The opcode must fit the message in progress (IB 9.8.3.1). */
	if (first ? (wq->in_send || wq->in_write)
	          : !(is_send ? wq->in_send : wq->in_write)) {
		resp_fail(qp, AETH_NAK_INVAL, 0);
		return;
	}
	if (!is_send && first) {
		if (len < h + WIRE_RETH) {
			resp_fail(qp, AETH_NAK_INVAL, 0);
			return;
		}
		va = get_be64(pkt + h);
		rkey = get_be32(pkt + h + 8);
		dlen = get_be32(pkt + h + 12);
		h += WIRE_RETH;
	}
	if (imm) {
		if (len < h + WIRE_IMMDT) {
			resp_fail(qp, AETH_NAK_INVAL, 0);
			return;
		}
		memcpy(&immdt, pkt + h, 4);
		h += WIRE_IMMDT;
	}
	plen = len - h;
	/* FIRST and MIDDLE carry exactly one MTU, LAST and ONLY at most one. */
	if (plen > mtu || (!last && plen != mtu)) {
		resp_fail(qp, AETH_NAK_INVAL, 0);
		return;
	}

	if (is_send) {
		if (first) {
			r = take_rwqe(qp, 1);
			if (r == 1) {
				qp->dev->wire->st.rnr_naks++;
				emu_wire_send_aeth(
				    qp, AETH_RNR | (qp->min_rnr_timer & 31), wq->epsn);
				return;
			}
			if (r < 0) {
				resp_fail(qp, AETH_NAK_OP, (uint8_t)-r);
				return;
			}
			wq->off = 0;
		}
		/* Resolved again: its MRs may have gone since the last packet. */
		r = first ? 0 : emu_rq_sg(qp, wq->rwqe, wq->rwqe_nseg, wq->sg, &wq->cap);
		if (r < 0) {
			resp_fail(qp, AETH_NAK_OP, (uint8_t)-r);
			return;
		}
		if (wq->off + plen > wq->cap) {
			resp_fail(qp, AETH_NAK_INVAL, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
			return;
		}
		/*
		 * A whole message of at most 32 bytes (one packet: every MTU
		 * is larger) goes into the CQE instead (emu_cqe_resp_scat).
		 */
		if (first && last && plen <= EMU_SCAT_CQE_MAX && qp->scatter_to_cqe) {
			wq->have_rwqe = 0;
			wq->in_send = 0;
			wq->msn++;
			emu_cqe_resp_scat(qp->recv_cq,
			                  imm ? MLX5_CQE_RESP_SEND_IMM
			                      : MLX5_CQE_RESP_SEND,
			                  qp->qpn, wq->rwqe_idx, plen, immdt, pkt + h);
			goto acked;
		}
		if (plen && qp->dev->mode == SSQ_EMU_FULL &&
		    emu_sg_scatter(wq->sg, wq->off, pkt + h, plen)) {
			resp_fail(qp, AETH_NAK_OP, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
			return;
		}
		wq->off += plen;
		wq->in_send = !last;
		if (last) {
			wq->have_rwqe = 0;
			wq->msn++;
			emu_cqe_resp(qp->recv_cq,
			             imm ? MLX5_CQE_RESP_SEND_IMM : MLX5_CQE_RESP_SEND,
			             qp->qpn, wq->rwqe_idx, (uint32_t)wq->off, immdt);
		}
	} else {
		if (first) {
			/* IB: a zero-length RDMA WRITE does not check its R_Key. */
			if (dlen && emu_remote_sg(qp, va, rkey, dlen,
			                          IBV_ACCESS_REMOTE_WRITE, &wdst)) {
				resp_fail(qp, AETH_NAK_ACCESS, 0);
				return;
			}
			wq->wlen = dlen;
			wq->wva = va;
			wq->wrkey = rkey;
			wq->off = 0;
		}
		/* The receive WQE before any of this packet's data lands. */
		if (imm && !wq->have_rwqe) {
			r = take_rwqe(qp, 0);
			if (r == 1) {
				qp->dev->wire->st.rnr_naks++;
				emu_wire_send_aeth(
				    qp, AETH_RNR | (qp->min_rnr_timer & 31), wq->epsn);
				return;
			}
		}
		if (wq->off + plen > wq->wlen || (last && wq->off + plen != wq->wlen)) {
			resp_fail(qp, AETH_NAK_INVAL, 0);
			return;
		}
		/* This packet's part, resolved now: the MR may have gone since. */
		if (plen && qp->dev->mode == SSQ_EMU_FULL &&
		    (emu_remote_sg(qp, wq->wva + wq->off, wq->wrkey, plen,
		                   IBV_ACCESS_REMOTE_WRITE, &wdst) ||
		     emu_piece_write(&wdst, 0, pkt + h, plen))) {
			resp_fail(qp, AETH_NAK_ACCESS, 0);
			return;
		}
		wq->off += plen;
		wq->in_write = !last;
		if (last) {
			wq->msn++;
			if (imm) {
				wq->have_rwqe = 0;
				emu_cqe_resp(qp->recv_cq, MLX5_CQE_RESP_WR_IMM, qp->qpn,
				             wq->rwqe_idx, (uint32_t)wq->wlen, immdt);
			}
		}
	}
acked:
	wq->epsn = (wq->epsn + 1) & PSN_MASK;
	wq->nak_sent = 0;
	wq->ack_pending = 1;
}
