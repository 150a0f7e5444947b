/* SPDX-License-Identifier: MIT */
/*
 * The wire requester: send WQEs of a QP whose peer is remote are parsed
 * and checked as emu_sq_run does, given PSNs and kept in a ring of
 * outstanding WQEs until the responder acknowledges their last packet;
 * packets are built from the WQE again on each (re)transmission, so the
 * WQE and its buffers are the only copy, as on hardware. Go-back-N on a
 * sequence NAK or the ACK timeout; retry and RNR counts per <ssq/emu.h>.
 */
#include "emu/wire_pvt.h"

/* The local ACK timeout: 4.096 us * 2^timeout (IB), at least 1 ms; 0: none. */
static uint64_t timeout_ns(const struct emu_qp *qp)
{
	uint64_t ns = 4096ull << qp->timeout;

	if (!qp->timeout)
		return 0;
	return ns < 1000000 ? 1000000 : ns;
}

/* When the ACK timer set now expires; 0: never. */
static uint64_t deadline(const struct emu_qp *qp)
{
	uint64_t to = timeout_ns(qp);

	return to ? emu_now_ns() + to : 0;
}

/* READ and atomics: done when their response arrives, not on an ACK. */
static int needs_resp(uint8_t opcode)
{
	return opcode == MLX5_OPCODE_RDMA_READ || opcode == MLX5_OPCODE_ATOMIC_CS ||
	       opcode == MLX5_OPCODE_ATOMIC_FA;
}

static struct wire_ent *head_ent(struct emu_wire_qp *wq)
{
	return &wq->ent[wq->head % WIRE_MAX_OUT];
}

/* The WQE at the head completes with @syndrome; the QP goes to ERR and the
 * WQEs after it are flushed (emu_wire_qp_state rewinds sq_cc to them). */
static void fail_head(struct emu_qp *qp, uint8_t syndrome)
{
	struct emu_wire_qp *wq = qp->wire;
	struct wire_ent *e = head_ent(wq);
	struct emu_dev *dev = qp->dev;
	uint8_t vendor = 0;

	if (dev->fault_hit && syndrome == e->syndrome) {
		vendor = dev->fault.vendor_err;
		dev->fault_hit = 0;
	}
	emu_cqe_err(qp->send_cq, MLX5_CQE_REQ_ERR, syndrome, vendor, e->opcode, qp->qpn,
	            (uint16_t)e->idx);
	wq->head++;
	emu_qp_to_err(qp);
}

/* Complete, in order, the WQEs at the head that are done: all packets
 * acknowledged, or none to send (NOP, local error). */
static void complete_head(struct emu_qp *qp)
{
	struct emu_wire_qp *wq = qp->wire;

	while (wq->head != wq->tail && qp->state == IBV_QPS_RTS) {
		struct wire_ent *e = head_ent(wq);

		if (e->syndrome) {
			fail_head(qp, e->syndrome);
			return;
		}
		if (e->npkts && psn_diff(e->first_psn + e->npkts, wq->una) > 0)
			return;
		if (e->signaled)
			emu_cqe_req(qp->send_cq, e->opcode, qp->qpn, (uint16_t)e->idx,
			            needs_resp(e->opcode) ? e->len : 0);
		wq->head++;
	}
}

/* Parse the WQE at sq_cc into a ring entry. Returns 1, or 0 when the ring
 * or the PSN space in flight is full. */
static int issue(struct emu_qp *qp, uint16_t dbr)
{
	struct emu_wire_qp *wq = qp->wire;
	struct emu_dev *dev = qp->dev;
	const struct mlx5_wqe_ctrl_seg *ctrl =
	    (const struct mlx5_wqe_ctrl_seg *)ssq_sq_wqebb(&qp->sq, qp->sq_cc);
	uint32_t w0 = be32toh(ctrl->opmod_idx_opcode), w1 = be32toh(ctrl->qpn_ds);
	size_t off = (size_t)((const uint8_t *)ctrl - qp->sq.buf);
	unsigned ds = w1 & 0x3f, wqebbs = ds ? SSQ_DS_TO_WQEBBS(ds) : 1;
	uint16_t avail = (uint16_t)(dbr - (uint16_t)qp->sq_cc);
	struct emu_sg sg[EMU_MAX_SG];
	struct wire_ent *e;
	uint64_t total = 0;
	uint8_t depth = 0;
	int n;

	if (wq->tail - wq->head == WIRE_MAX_OUT ||
	    psn_diff(wq->next_psn, wq->una) >= 1 << 22)
		return 0;
	/* max_rd_atomic: READs and atomics in flight (at least one). */
	if (needs_resp(w0 & 0xff)) {
		unsigned reads = 0;
		uint32_t i;

		for (i = wq->head; i != wq->tail; i++)
			reads += needs_resp(wq->ent[i % WIRE_MAX_OUT].opcode);
		if (reads >= (qp->max_rd_atomic ? qp->max_rd_atomic : 1u))
			return 0;
		depth = reads + 1 > 255 ? 255 : (uint8_t)(reads + 1);
	}
	e = &wq->ent[wq->tail % WIRE_MAX_OUT];
	memset(e, 0, sizeof(*e));
	e->rd_depth = depth;
	e->idx = qp->sq_cc;
	e->opcode = w0 & 0xff;
	e->signaled = !!(ctrl->fm_ce_se & MLX5_WQE_CTRL_CQ_UPDATE);
	if (ssq_unlikely(dev->trace != NULL))
		emu_trace_wqe(qp, qp->sq_cc, "wire");
	if (((w0 >> 8) & 0xffff) != (qp->sq_cc & 0xffff) || (w1 >> 8) != qp->qpn || !ds ||
	    wqebbs > avail) {
		if (wqebbs > avail)
			wqebbs = avail;
		e->syndrome = MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
	} else if (dev->fault.err_at && ++dev->wqe_seq == dev->fault.err_at) {
		dev->fault_hit = 1;
		e->syndrome = dev->fault.syndrome ? dev->fault.syndrome
		                                  : MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
	} else {
		/* The fence after a UMR (umr.c), as emu_sq_run notes it. */
		emu_umr_fence_note(qp, ctrl->fm_ce_se);
		qp->umr_last = e->opcode == MLX5_OPCODE_UMR;
		switch (e->opcode) {
		case MLX5_OPCODE_NOP:
			break;
		case MLX5_OPCODE_UMR:
			/* Local: run at issue, nothing to send, completes in order. */
			e->syndrome = (uint8_t)emu_umr_exec(qp, ctrl, off, ds);
			break;
		case MLX5_OPCODE_SEND:
		case MLX5_OPCODE_SEND_IMM:
			n = emu_sq_sg(qp, off, 1, ds, 0, sg, &total);
			if (n < 0)
				e->syndrome = (uint8_t)-n;
			break;
		case MLX5_OPCODE_RDMA_WRITE:
		case MLX5_OPCODE_RDMA_WRITE_IMM:
			n = ds < 2 ? -MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR
			           : emu_sq_sg(qp, off, 2, ds, 0, sg, &total);
			if (n < 0)
				e->syndrome = (uint8_t)-n;
			break;
		case MLX5_OPCODE_RDMA_READ:
			n = ds < 2 ? -MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR
			           : emu_sq_sg(qp, off, 2, ds, 1, sg, &total);
			if (n < 0)
				e->syndrome = (uint8_t)-n;
			break;
		case MLX5_OPCODE_ATOMIC_CS:
		case MLX5_OPCODE_ATOMIC_FA:
			n = ds != 4 ? -MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR
			            : emu_sq_sg(qp, off, 3, 4, 1, sg, &total);
			if (n >= 0 && (n != 1 || total != 8))
				n = -MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
			if (n < 0)
				e->syndrome = (uint8_t)-n;
			break;
		default:
			e->syndrome = MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
			break;
		}
	}
	if (!e->syndrome && e->opcode != MLX5_OPCODE_NOP &&
	    e->opcode != MLX5_OPCODE_UMR) {
		uint32_t mtu = emu_mtu_bytes(qp);

		e->len = (uint32_t)total;
		e->npkts = total ? (uint32_t)((total + mtu - 1) / mtu) : 1;
		e->first_psn = wq->next_psn;
		wq->next_psn = (wq->next_psn + e->npkts) & PSN_MASK;
	}
	e->wqebbs = (uint16_t)wqebbs;
	qp->sq_cc += wqebbs;
	wq->tail++;
	return 1;
}

/* Send packet @k of entry @e. Returns 0, or a syndrome when the WQE's
 * buffers no longer resolve (an MR went away under it). */
static int xmit(struct emu_qp *qp, const struct wire_ent *e, uint32_t k)
{
	struct emu_wire_qp *wq = qp->wire;
	const struct mlx5_wqe_ctrl_seg *ctrl =
	    (const struct mlx5_wqe_ctrl_seg *)ssq_sq_wqebb(&qp->sq, e->idx);
	size_t off = (size_t)((const uint8_t *)ctrl - qp->sq.buf);
	unsigned ds = be32toh(ctrl->qpn_ds) & 0x3f;
	int write = e->opcode == MLX5_OPCODE_RDMA_WRITE ||
	            e->opcode == MLX5_OPCODE_RDMA_WRITE_IMM;
	int imm =
	    e->opcode == MLX5_OPCODE_RDMA_WRITE_IMM || e->opcode == MLX5_OPCODE_SEND_IMM;
	int first = k == 0, last = k + 1 == e->npkts;
	uint32_t mtu = emu_mtu_bytes(qp), plen, h = WIRE_BTH;
	uint64_t poff = (uint64_t)k * mtu, total;
	struct emu_sg sg[EMU_MAX_SG];
	uint8_t pkt[WIRE_MAX_PKT], op;
	int n;

	n = emu_sq_sg(qp, off, write ? 2 : 1, ds, 0, sg, &total);
	if (n < 0 || total != e->len)
		return n < 0 ? -n : MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
	plen = e->len - poff < mtu ? (uint32_t)(e->len - poff) : mtu;
	if (write)
		op = first && last ? (imm ? WIRE_WRITE_ONLY_IMM : WIRE_WRITE_ONLY)
		     : first       ? WIRE_WRITE_FIRST
		     : last        ? (imm ? WIRE_WRITE_LAST_IMM : WIRE_WRITE_LAST)
		                   : WIRE_WRITE_MIDDLE;
	else
		op = first && last ? (imm ? WIRE_SEND_ONLY_IMM : WIRE_SEND_ONLY)
		     : first       ? WIRE_SEND_FIRST
		     : last        ? (imm ? WIRE_SEND_LAST_IMM : WIRE_SEND_LAST)
		                   : WIRE_SEND_MIDDLE;
	emu_wire_bth(pkt, op, qp->dest_qpn, e->first_psn + k, last);
	if (write && first) {
		const struct mlx5_wqe_raddr_seg *r =
		    (const struct mlx5_wqe_raddr_seg *)(qp->sq.buf +
		                                        ((off + SSQ_WQE_DS_BYTES) &
		                                         ((size_t)qp->sq.wqe_cnt *
		                                              MLX5_SEND_WQE_BB -
		                                          1)));

		put_be64(pkt + h, be64toh(r->raddr));
		put_be32(pkt + h + 8, be32toh(r->rkey));
		put_be32(pkt + h + 12, e->len);
		h += WIRE_RETH;
	}
	if (imm && last) {
		memcpy(pkt + h, &ctrl->imm, 4); /* as stored: network order */
		h += WIRE_IMMDT;
	}
	/* The requester's own memory gone (its process exited): nothing is sent. */
	if (plen && emu_sg_gather(pkt + h, sg, poff, plen))
		return MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
	emu_wire_xmit(qp->dev->wire, &wq->peer, pkt, h + plen);
	return 0;
}

/* The raddr segment of the WQE at ring offset @off. */
static const struct mlx5_wqe_raddr_seg *raddr_seg(const struct emu_qp *qp, size_t off)
{
	size_t ring = (size_t)qp->sq.wqe_cnt * MLX5_SEND_WQE_BB;

	return (
	    const struct mlx5_wqe_raddr_seg *)(qp->sq.buf +
	                                       ((off + SSQ_WQE_DS_BYTES) & (ring - 1)));
}

/* Request the READ of entry @e from its response packet @k on: a retry
 * asks only for what has not arrived. */
static void xmit_read(struct emu_qp *qp, const struct wire_ent *e, uint32_t k)
{
	const uint8_t *ctrl = ssq_sq_wqebb(&qp->sq, e->idx);
	const struct mlx5_wqe_raddr_seg *r = raddr_seg(qp, (size_t)(ctrl - qp->sq.buf));
	uint64_t skip = (uint64_t)k * emu_mtu_bytes(qp);
	uint8_t pkt[WIRE_BTH + WIRE_RETH];

	emu_wire_bth(pkt, WIRE_READ_REQ, qp->dest_qpn, e->first_psn + k, 1);
	pkt[WIRE_BTH_RD_DEPTH] = e->rd_depth;
	put_be64(pkt + WIRE_BTH, be64toh(r->raddr) + skip);
	put_be32(pkt + WIRE_BTH + 8, be32toh(r->rkey));
	put_be32(pkt + WIRE_BTH + 12, (uint32_t)(e->len - skip));
	emu_wire_xmit(qp->dev->wire, &qp->wire->peer, pkt, sizeof(pkt));
}

/* Send the atomic of entry @e: AtomicETH from the raddr and atomic
 * segments (swap_add and compare are big-endian in both). */
static void xmit_atomic(struct emu_qp *qp, const struct wire_ent *e)
{
	const uint8_t *ctrl = ssq_sq_wqebb(&qp->sq, e->idx);
	size_t off = (size_t)(ctrl - qp->sq.buf);
	size_t ring = (size_t)qp->sq.wqe_cnt * MLX5_SEND_WQE_BB;
	const struct mlx5_wqe_raddr_seg *r = raddr_seg(qp, off);
	const struct mlx5_wqe_atomic_seg *a =
	    (const struct mlx5_wqe_atomic_seg *)(qp->sq.buf +
	                                         ((off + 2 * SSQ_WQE_DS_BYTES) &
	                                          (ring - 1)));
	uint8_t pkt[WIRE_BTH + WIRE_ATOMIC_ETH];

	emu_wire_bth(pkt,
	             e->opcode == MLX5_OPCODE_ATOMIC_CS ? WIRE_CMP_SWAP : WIRE_FETCH_ADD,
	             qp->dest_qpn, e->first_psn, 1);
	pkt[WIRE_BTH_RD_DEPTH] = e->rd_depth;
	put_be64(pkt + WIRE_BTH, be64toh(r->raddr));
	put_be32(pkt + WIRE_BTH + 8, be32toh(r->rkey));
	memcpy(pkt + WIRE_BTH + 12, &a->swap_add, 8);
	memcpy(pkt + WIRE_BTH + 20, &a->compare, 8);
	emu_wire_xmit(qp->dev->wire, &qp->wire->peer, pkt, sizeof(pkt));
}

/* Transmit from snd_psn, within the window; returns packets sent. */
static unsigned transmit(struct emu_qp *qp, unsigned max)
{
	struct emu_wire_qp *wq = qp->wire;
	unsigned sent = 0;
	uint32_t i = wq->head;

	while (sent < max && wq->snd_psn != wq->next_psn &&
	       psn_diff(wq->snd_psn, wq->una) < WIRE_WINDOW) {
		struct wire_ent *e;
		int32_t k;
		int r;

		/* The entry holding snd_psn: entries are in PSN order. */
		for (; i != wq->tail; i++) {
			e = &wq->ent[i % WIRE_MAX_OUT];
			k = psn_diff(wq->snd_psn, e->first_psn);
			if (e->npkts && k >= 0 && (uint32_t)k < e->npkts)
				break;
		}
		if (i == wq->tail)
			break; /* cannot happen: snd_psn is in [una, next_psn) */
		if (e->opcode == MLX5_OPCODE_ATOMIC_CS ||
		    e->opcode == MLX5_OPCODE_ATOMIC_FA) {
			xmit_atomic(qp, e);
			wq->snd_psn = (e->first_psn + 1) & PSN_MASK;
			if (psn_diff(wq->snd_psn, wq->max_sent) > 0)
				wq->max_sent = wq->snd_psn;
			sent++;
			continue;
		}
		if (e->opcode == MLX5_OPCODE_RDMA_READ) {
			/* One request packet covers the PSNs of all responses. */
			xmit_read(qp, e, (uint32_t)k);
			wq->snd_psn = (e->first_psn + e->npkts) & PSN_MASK;
			if (psn_diff(wq->snd_psn, wq->max_sent) > 0)
				wq->max_sent = wq->snd_psn;
			sent++;
			continue;
		}
		r = xmit(qp, e, (uint32_t)k);
		if (r) {
			/* Stop sending it; the head reaches it and fails. */
			e->syndrome = (uint8_t)r;
			e->npkts = 0;
			break;
		}
		if (psn_diff(wq->snd_psn, wq->max_sent) < 0)
			qp->dev->wire->st.retransmits++;
		else
			wq->max_sent = (wq->snd_psn + 1) & PSN_MASK;
		wq->snd_psn = (wq->snd_psn + 1) & PSN_MASK;
		sent++;
	}
	return sent;
}

unsigned emu_wire_sq_run(struct emu_qp *qp, unsigned budget)
{
	struct emu_wire_qp *wq = qp->wire;
	uint64_t now = emu_now_ns(), to = timeout_ns(qp);
	unsigned n = 0, sent;
	uint16_t dbr;

	if (emu_sq_doorbell(qp, &dbr))
		return 0;
	if (wq->timer_ns && now >= wq->timer_ns && wq->una != wq->next_psn &&
	    emu_wire_peer_unread(&wq->peer)) {
		/*
		 * The peer's device has not read what came to it: its process
		 * is off the CPU, where a NIC never is (wire_peer.c). Not a
		 * retry, and nothing sent again onto its unread queue: the
		 * timer runs another period.
		 */
		qp->dev->wire->st.peer_waits++;
		wq->timer_ns = now + to;
	} else if (wq->timer_ns && now >= wq->timer_ns && wq->una != wq->next_psn) {
		/* No progress for a whole timeout: go back to the oldest. */
		qp->dev->wire->st.timeouts++;
		if (++wq->retries > qp->retry_cnt) {
			fail_head(qp, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
			return 1;
		}
		wq->snd_psn = wq->una;
		wq->timer_ns = now + to;
	}
	while (n < budget && dbr != (uint16_t)qp->sq_cc && emu_sq_rung(qp) &&
	       issue(qp, dbr))
		n++;
	complete_head(qp);
	if (qp->state != IBV_QPS_RTS)
		return n;
	if (wq->rnr_until_ns) {
		if (now < wq->rnr_until_ns)
			return n;
		wq->rnr_until_ns = 0;
	}
	sent = transmit(qp, 64);
	if (sent && !wq->timer_ns && to)
		wq->timer_ns = now + to;
	/* Packets sent count as work (the device thread stays busy), within
	 * the caller's budget. */
	return n + sent < budget ? n + sent : budget;
}

/* Go back to una, once per una (a sequence NAK names a PSN once; later
 * copies, or a gap seen again, would only resend what is on its way). */
static void go_back(struct emu_qp *qp)
{
	struct emu_wire_qp *wq = qp->wire;

	if (wq->nak_una_valid && wq->nak_una == wq->una)
		return;
	wq->nak_una_valid = 1;
	wq->nak_una = wq->una;
	wq->snd_psn = wq->una;
	wq->timer_ns = deadline(qp);
}

/* Everything before @una is acknowledged: complete what that finishes. */
static void advance(struct emu_qp *qp, uint32_t una)
{
	struct emu_wire_qp *wq = qp->wire;

	if (una == wq->una)
		return;
	wq->una = una;
	wq->nak_una_valid = 0;
	wq->retries = 0;
	wq->rnr_tries = 0;
	if (psn_diff(wq->snd_psn, una) < 0)
		wq->snd_psn = una;
	wq->timer_ns = una == wq->next_psn ? 0 : deadline(qp);
	complete_head(qp);
}

/*
 * An ACK or NAK acknowledges the PSNs before it, but a READ is done only
 * when its responses have arrived: the first PSN in [una, @upto) of a READ
 * still missing responses, or @upto.
 */
static uint32_t clamp_reads(const struct emu_wire_qp *wq, uint32_t upto)
{
	uint32_t i;

	for (i = wq->head; i != wq->tail; i++) {
		const struct wire_ent *e = &wq->ent[i % WIRE_MAX_OUT];
		uint32_t p;

		if (!e->npkts)
			continue;
		if (psn_diff(e->first_psn, upto) >= 0)
			break;
		if (!needs_resp(e->opcode))
			continue;
		p = psn_diff(wq->una, e->first_psn) > 0 ? wq->una : e->first_psn;
		if (psn_diff(upto, p) > 0)
			return p;
	}
	return upto;
}

/* A READ not yet started has its first response PSN at @psn. */
static int read_starts_at(const struct emu_wire_qp *wq, uint32_t psn)
{
	uint32_t i;

	for (i = wq->head; i != wq->tail; i++) {
		const struct wire_ent *e = &wq->ent[i % WIRE_MAX_OUT];

		if (e->npkts && e->first_psn == psn)
			return needs_resp(e->opcode);
	}
	return 0;
}

/* A READ response or atomic ACK: accepted only at una, in order. */
static void read_resp(struct emu_qp *qp, const uint8_t *pkt, uint32_t len)
{
	struct emu_wire_qp *wq = qp->wire;
	uint32_t psn = get_be32(pkt + 8) & PSN_MASK, mtu = emu_mtu_bytes(qp),
	         h = WIRE_BTH;
	uint8_t op = pkt[0];
	int last;
	struct emu_sg sg[EMU_MAX_SG];
	const struct wire_ent *e;
	const uint8_t *ctrl;
	uint64_t total, poff;
	uint32_t plen;
	int32_t k;
	int n;

	if (psn_diff(psn, wq->una) < 0 || psn_diff(psn, wq->next_psn) >= 0)
		return; /* a duplicate, or bogus */
	if (psn != wq->una) {
		/*
		 * The first response of a READ acknowledges the requests before
		 * it (IB 9.7.5.1.1: implied ACK), often before the coalesced
		 * ACK arrives. Any other response after a gap: the ones before
		 * it were lost; ask again.
		 */
		if (clamp_reads(wq, psn) != psn || !read_starts_at(wq, psn)) {
			go_back(qp);
			return;
		}
		advance(qp, psn);
		if (qp->state != IBV_QPS_RTS || psn != wq->una)
			return;
	}
	if (wq->head == wq->tail)
		return;
	e = head_ent(wq);
	k = psn_diff(psn, e->first_psn);
	ctrl = ssq_sq_wqebb(&qp->sq, e->idx);
	if (op == WIRE_ATOMIC_ACK) {
		/*
		 * The original value: big-endian in the AtomicAckETH, written
		 * to the local buffer in host order, the requester's 8-byte
		 * atomic endianness mode mlx5_core sets (handle_hca_cap_atomic,
		 * drivers/net/ethernet/mellanox/mlx5/core/main.c).
		 */
		uint64_t orig;

		if ((e->opcode != MLX5_OPCODE_ATOMIC_CS &&
		     e->opcode != MLX5_OPCODE_ATOMIC_FA) ||
		    k != 0 || len != WIRE_BTH + WIRE_AETH + WIRE_ATOMIC_ACK_ETH)
			return;
		n = emu_sq_sg(qp, (size_t)(ctrl - qp->sq.buf), 3, 4, 1, sg, &total);
		if (n != 1 || total != 8) {
			fail_head(qp, n < 0 ? (uint8_t)-n
			                    : MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
			return;
		}
		orig = get_be64(pkt + WIRE_BTH + WIRE_AETH);
		if (qp->dev->mode == SSQ_EMU_FULL &&
		    emu_piece_write(&sg[0], 0, &orig, 8)) {
			fail_head(qp, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
			return;
		}
		advance(qp, (psn + 1) & PSN_MASK);
		return;
	}
	if (e->opcode != MLX5_OPCODE_RDMA_READ || k < 0 || (uint32_t)k >= e->npkts)
		return; /* not a response to anything asked: dropped */
	/*
	 * A READ asked again from response k on is a new request to the
	 * responder: its responses start again at FIRST (or ONLY). So only
	 * the end is checked: LAST or ONLY exactly at the last PSN.
	 */
	last = op == WIRE_READ_LAST || op == WIRE_READ_ONLY;
	if (op != WIRE_READ_MIDDLE)
		h += WIRE_AETH;
	poff = (uint64_t)k * mtu;
	plen = e->len - poff < mtu ? (uint32_t)(e->len - poff) : mtu;
	if (last != ((uint32_t)k + 1 == e->npkts) || len != h + plen)
		return;
	n = emu_sq_sg(qp, (size_t)(ctrl - qp->sq.buf), 2,
	              be32toh(((const struct mlx5_wqe_ctrl_seg *)ctrl)->qpn_ds) & 0x3f, 1,
	              sg, &total);
	if (n < 0 || total != e->len) {
		fail_head(qp, n < 0 ? (uint8_t)-n : MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
		return;
	}
	if (plen && qp->dev->mode == SSQ_EMU_FULL &&
	    emu_sg_scatter(sg, poff, pkt + h, plen)) {
		fail_head(qp, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
		return;
	}
	advance(qp, (psn + 1) & PSN_MASK);
}

void emu_wire_req_rx(struct emu_qp *qp, const uint8_t *pkt, uint32_t len)
{
	struct emu_wire_qp *wq = qp->wire;
	uint32_t psn, aeth, una, upto;
	uint8_t synd;

	if (pkt[0] != WIRE_ACK) {
		read_resp(qp, pkt, len);
		return;
	}
	if (len < WIRE_BTH + WIRE_AETH)
		return;
	psn = get_be32(pkt + 8) & PSN_MASK;
	aeth = get_be32(pkt + WIRE_BTH);
	synd = (uint8_t)(aeth >> 24);
	/* An ACK names the last PSN received; a NAK the PSN expected. */
	una = (synd & AETH_KIND) == AETH_ACK ? (psn + 1) & PSN_MASK : psn;
	if (psn_diff(una, wq->una) < 0 || psn_diff(una, wq->next_psn) > 0)
		return; /* stale (duplicate, reordered) or bogus */
	upto = clamp_reads(wq, una);
	advance(qp, upto);
	if (qp->state != IBV_QPS_RTS)
		return;
	if (upto != una) {
		/* The READ's responses were lost: ask again (IB: implied NAK). */
		go_back(qp);
		return;
	}
	switch (synd & AETH_KIND) {
	case AETH_ACK:
		return;
	case AETH_RNR:
		if (una == wq->next_psn)
			return;
		if (qp->rnr_retry != 7 && wq->rnr_tries++ >= qp->rnr_retry) {
			fail_head(qp, MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR);
			return;
		}
		wq->rnr_until_ns = emu_now_ns() + emu_rnr_timer_ns(synd & 31);
		wq->snd_psn = una;
		wq->timer_ns = 0;
		return;
	case AETH_NAK_SEQ &AETH_KIND:
		if (una == wq->next_psn)
			return;
		switch (synd) {
		case AETH_NAK_SEQ:
			go_back(qp);
			return;
		case AETH_NAK_INVAL:
			fail_head(qp, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
			return;
		case AETH_NAK_ACCESS:
			fail_head(qp, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
			return;
		default:
			fail_head(qp, MLX5_CQE_SYNDROME_REMOTE_OP_ERR);
			return;
		}
	default:
		return;
	}
}
