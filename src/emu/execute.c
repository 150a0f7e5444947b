/* SPDX-License-Identifier: MIT */
/*
 * WQE execution: one QP's send queue, in order, as the ConnectX requester
 * runs it, with the peer QP's responder side done inline (an RC connection
 * between two QPs of this device). Every check and its syndrome follows
 * what the hardware reports; see <ssq/emu.h> for the list.
 */
#include <time.h>
#include "emu/wire_pvt.h"

/* What one WQE came to. */
enum {
	EX_OK = 0,
	EX_RNR_WAIT = -1, /* receiver not ready: retry on a later pass */
	                  /* > 0: a requester syndrome (MLX5_CQE_SYNDROME_*) */
};

/* The 16-byte segment @i units after the control segment at ring offset
 * @off; a WQE near the ring end continues at WQEBB 0, as the NIC reads it. */
static inline uint8_t *wqe_seg(const struct emu_qp *qp, size_t off, unsigned i)
{
	size_t ring = (size_t)qp->sq.wqe_cnt * MLX5_SEND_WQE_BB;

	return qp->sq.buf + ((off + (size_t)i * SSQ_WQE_DS_BYTES) & (ring - 1));
}

/*
 * Resolve the gather or scatter segments [@first, @ds) of the send WQE at
 * ring offset @off into @sg. Inline data is taken from the ring itself (in
 * at most two pieces, split by the wrap). @write: the device writes there
 * (READ and atomic results) and needs IBV_ACCESS_LOCAL_WRITE.
 * Returns the piece count, or -syndrome.
 */
static int sq_sg(const struct emu_qp *qp, size_t off, unsigned first, unsigned ds,
                 int write, struct emu_sg *sg, uint64_t *total)
{
	struct emu_dev *dev = qp->dev;
	size_t ring = (size_t)qp->sq.wqe_cnt * MLX5_SEND_WQE_BB;
	unsigned i = first;
	int n = 0;

	*total = 0;
	while (i < ds) {
		const struct mlx5_wqe_data_seg *d =
		    (const struct mlx5_wqe_data_seg *)wqe_seg(qp, off, i);
		uint32_t bc = be32toh(d->byte_count);

		if (bc & MLX5_INLINE_SEG) {
			uint32_t len = bc & ~(uint32_t)MLX5_INLINE_SEG;
			unsigned units =
			    (len + 4 + SSQ_WQE_DS_BYTES - 1) / SSQ_WQE_DS_BYTES;
			size_t start =
			    ((size_t)((const uint8_t *)d - qp->sq.buf) + 4) & (ring - 1);
			size_t room = ring - start;

			/* Inline data into memory the device writes is not a thing. */
			if (write || i + units > ds)
				return -MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
			if (len) {
				sg[n].p = qp->sq.buf + start;
				sg[n].len = (uint32_t)(len < room ? len : room);
				if (len > room) {
					n++;
					sg[n].p = qp->sq.buf;
					sg[n].len = (uint32_t)(len - room);
				}
				n++;
			}
			*total += len;
			i += units;
			continue;
		}
		{
			uint32_t lkey = be32toh(d->lkey);
			uint64_t addr = be64toh(d->addr);
			/* PRM: a byte_count of 0 in a send data segment means 2 GiB
			 * (libmlx5 never posts one: it skips empty SGEs). */
			uint64_t len = bc ? bc : 1ull << 31;
			struct emu_mr *mr = emu_mr_get(dev, qp->pd, lkey);

			if (!mr || (write && !(mr->access & IBV_ACCESS_LOCAL_WRITE)))
				return -MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
			sg[n].p = emu_mr_ptr(mr, addr, len);
			if (!sg[n].p)
				return -MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
			sg[n].len = (uint32_t)len;
			*total += len;
			n++;
			i++;
		}
	}
	/* IB's largest message is 2^31 bytes. */
	if (*total > 1ull << 31)
		return -MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
	return n;
}

/*
 * Resolve the scatter list of a receive WQE (RQ: data x n; SRQ: after the
 * next segment) under the responder @peer's PD. A data segment with
 * MLX5_INVALID_LKEY ends the list early. Returns the piece count or
 * -syndrome (LOCAL_PROT_ERR) for the responder.
 */
static int rq_sg(const struct emu_qp *peer, const uint8_t *wqe, unsigned nseg,
                 struct emu_sg *sg, uint64_t *cap)
{
	const struct mlx5_wqe_data_seg *d = (const struct mlx5_wqe_data_seg *)wqe;
	unsigned i;
	int n = 0;

	*cap = 0;
	for (i = 0; i < nseg; i++) {
		uint32_t lkey = be32toh(d[i].lkey), len = be32toh(d[i].byte_count);
		struct emu_mr *mr;

		if (lkey == MLX5_INVALID_LKEY)
			break;
		if (!len)
			continue;
		mr = emu_mr_get(peer->dev, peer->pd, lkey);
		if (!mr || !(mr->access & IBV_ACCESS_LOCAL_WRITE))
			return -MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
		sg[n].p = emu_mr_ptr(mr, be64toh(d[i].addr), len);
		if (!sg[n].p)
			return -MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
		sg[n].len = len;
		*cap += len;
		n++;
	}
	return n;
}

/* Copy @total bytes from the pieces of @src to those of @dst. */
static void sg_copy(const struct emu_sg *dst, const struct emu_sg *src, uint64_t total)
{
	uint32_t so = 0, doff = 0;

	while (total) {
		uint32_t n = src->len - so;

		if (dst->len - doff < n)
			n = dst->len - doff;
		if (n > total)
			n = (uint32_t)total;
		memcpy(dst->p + doff, src->p + so, n);
		total -= n;
		so += n;
		doff += n;
		if (so == src->len) {
			src++;
			so = 0;
		}
		if (doff == dst->len) {
			dst++;
			doff = 0;
		}
	}
}

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
                           uint16_t idx)
{
	if (have_wqe)
		emu_cqe_err(peer->recv_cq, MLX5_CQE_RESP_ERR, syndrome, 0, 0, peer->qpn,
		            idx);
	emu_qp_to_err(peer);
}

/* The remote range [@raddr, +@len) under @rkey at @peer with @need access. */
static uint8_t *remote_ptr(struct emu_qp *peer, uint64_t raddr, uint32_t rkey,
                           uint64_t len, int need)
{
	struct emu_mr *mr = emu_mr_get(peer->dev, peer->pd, rkey);

	if (!mr || (mr->access & need) != need || (peer->access & need) != need)
		return NULL;
	return emu_mr_ptr(mr, raddr, len);
}

/*
 * Take the next receive WQE of @qp's RQ, or of its SRQ (from the free
 * list): its address (past the SRQ next segment), its data segment count
 * (at most EMU_MAX_SG) and the wqe_counter its CQE carries. Returns 0, or
 * 1 when none is posted (receiver not ready). Shared by the in-device
 * responder and the wire's.
 */
int emu_rq_take(struct emu_qp *qp, const uint8_t **wqe_out, unsigned *nseg_out,
                uint16_t *idx_out)
{
	const uint8_t *wqe;
	unsigned nseg;
	uint16_t idx;

	if (qp->srq) {
		struct emu_srq *srq = qp->srq;
		/* A1: pairs with ssq_srq_ring's release of the receive WQEs. */
		uint16_t dbr =
		    (uint16_t)be32toh(__atomic_load_n(srq->dbrec, __ATOMIC_ACQUIRE));

		if (dbr == (uint16_t)srq->cc)
			return 1;
		idx = srq->head;
		wqe = srq->buf + (size_t)idx * srq->stride;
		nseg = srq->stride / SSQ_WQE_DS_BYTES - 1;
		srq->head =
		    be16toh(((const struct mlx5_wqe_srq_next_seg *)wqe)->next_wqe_index) &
		    (uint16_t)(srq->wqe_cnt - 1);
		srq->cc++;
		wqe += sizeof(struct mlx5_wqe_srq_next_seg);
	} else {
		/* A1: pairs with ssq_rq_ring's release of the receive WQEs. */
		uint16_t dbr = (uint16_t)be32toh(
		    __atomic_load_n(&qp->dbrec[MLX5_RCV_DBR], __ATOMIC_ACQUIRE));

		if (dbr == (uint16_t)qp->rq_cc)
			return 1;
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
		n = rq_sg(peer, wqe, nseg, dst, &cap);
		if (n < 0) {
			responder_fail(peer, 1, (uint8_t)-n, idx);
			return MLX5_CQE_SYNDROME_REMOTE_OP_ERR;
		}
		if (len > cap) {
			responder_fail(peer, 1, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR, idx);
			return MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR;
		}
		if (dev->mode == SSQ_EMU_FULL)
			sg_copy(dst, src, len);
	}
	emu_cqe_ok(peer->recv_cq, cqe_op, peer->qpn, idx, (uint32_t)len, imm);
	return EX_OK;
}

/* RDMA WRITE (with or without immediate) to the peer's memory. */
static int do_write(struct emu_qp *qp, struct emu_qp *peer, size_t off, unsigned ds,
                    int with_imm, __be32 imm)
{
	const struct mlx5_wqe_raddr_seg *r =
	    (const struct mlx5_wqe_raddr_seg *)wqe_seg(qp, off, 1);
	struct emu_sg src[EMU_MAX_SG], dst;
	uint64_t total;
	int n;

	n = sq_sg(qp, off, 2, ds, 0, src, &total);
	if (n < 0)
		return -n;
	if (with_imm) {
		/* The responder must have a receive WQE before data may land. */
		struct emu_srq *srq = peer->srq;
		uint16_t dbr, cc;

		if (srq) {
			dbr = (uint16_t)be32toh(
			    __atomic_load_n(srq->dbrec, __ATOMIC_ACQUIRE));
			cc = (uint16_t)srq->cc;
		} else {
			dbr = (uint16_t)be32toh(__atomic_load_n(
			    &peer->dbrec[MLX5_RCV_DBR], __ATOMIC_ACQUIRE));
			cc = (uint16_t)peer->rq_cc;
		}
		if (dbr == cc)
			return EX_RNR_WAIT;
	}
	/* IB: a zero-length RDMA WRITE does not check its R_Key. */
	dst.p = total ? remote_ptr(peer, be64toh(r->raddr), be32toh(r->rkey), total,
	                           IBV_ACCESS_REMOTE_WRITE)
	              : NULL;
	if (!dst.p && total) {
		responder_fail(peer, 0, 0, 0);
		return MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
	}
	dst.len = (uint32_t)total;
	if (qp->dev->mode == SSQ_EMU_FULL && total)
		sg_copy(&dst, src, total);
	if (with_imm)
		return recv_one(qp, peer, NULL, total, MLX5_CQE_RESP_WR_IMM, imm);
	return EX_OK;
}

/* RDMA READ from the peer's memory into the local scatter list. */
static int do_read(struct emu_qp *qp, struct emu_qp *peer, size_t off, unsigned ds,
                   uint32_t *byte_cnt)
{
	const struct mlx5_wqe_raddr_seg *r =
	    (const struct mlx5_wqe_raddr_seg *)wqe_seg(qp, off, 1);
	struct emu_sg dst[EMU_MAX_SG], src;
	uint64_t total;
	int n;

	n = sq_sg(qp, off, 2, ds, 1, dst, &total);
	if (n < 0)
		return -n;
	if (!peer->max_dest_rd_atomic) {
		responder_fail(peer, 0, 0, 0);
		return MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR;
	}
	src.p = total ? remote_ptr(peer, be64toh(r->raddr), be32toh(r->rkey), total,
	                           IBV_ACCESS_REMOTE_READ)
	              : NULL;
	if (!src.p && total) {
		responder_fail(peer, 0, 0, 0);
		return MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
	}
	src.len = (uint32_t)total;
	if (qp->dev->mode == SSQ_EMU_FULL && total)
		sg_copy(dst, &src, total);
	*byte_cnt = (uint32_t)total;
	return EX_OK;
}

/* ATOMIC_CS / ATOMIC_FA: ctrl, raddr, atomic, one 8-byte data segment. */
static int do_atomic(struct emu_qp *qp, struct emu_qp *peer, size_t off, uint8_t opcode,
                     uint32_t *byte_cnt)
{
	const struct mlx5_wqe_raddr_seg *r =
	    (const struct mlx5_wqe_raddr_seg *)wqe_seg(qp, off, 1);
	const struct mlx5_wqe_atomic_seg *a =
	    (const struct mlx5_wqe_atomic_seg *)wqe_seg(qp, off, 2);
	struct emu_sg dst;
	uint64_t total, raddr = be64toh(r->raddr), old, want;
	uint8_t *target;
	int n;

	n = sq_sg(qp, off, 3, 4, 1, &dst, &total);
	if (n < 0)
		return -n;
	if (n != 1 || total != 8)
		return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
	/* IB: an atomic needs an aligned target and responder resources. */
	if ((raddr & 7) || !peer->max_dest_rd_atomic) {
		responder_fail(peer, 0, 0, 0);
		return MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR;
	}
	target = remote_ptr(peer, raddr, be32toh(r->rkey), 8, IBV_ACCESS_REMOTE_ATOMIC);
	if (!target) {
		responder_fail(peer, 0, 0, 0);
		return MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
	}
	*byte_cnt = 8;
	if (qp->dev->mode != SSQ_EMU_FULL)
		return EX_OK;
	/* An MR's host address may be unaligned even when the IOVA is not. */
	if ((uintptr_t)target & 7) {
		memcpy(&old, target, 8);
		want = opcode == MLX5_OPCODE_ATOMIC_FA ? old + be64toh(a->swap_add)
		       : old == be64toh(a->compare)    ? be64toh(a->swap_add)
		                                       : old;
		memcpy(target, &want, 8);
	} else if (opcode == MLX5_OPCODE_ATOMIC_FA) {
		old = __atomic_fetch_add((uint64_t *)target, be64toh(a->swap_add),
		                         __ATOMIC_SEQ_CST);
	} else {
		old = be64toh(a->compare);
		__atomic_compare_exchange_n((uint64_t *)target, &old,
		                            be64toh(a->swap_add), 0, __ATOMIC_SEQ_CST,
		                            __ATOMIC_SEQ_CST);
	}
	/* ConnectX returns the original value big-endian. */
	old = htobe64(old);
	memcpy(dst.p, &old, 8);
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
	if (qp->rnr_tries == 0 && dev->fault.err_at &&
	    ++dev->wqe_seq == dev->fault.err_at) {
		dev->fault_hit = 1;
		return dev->fault.syndrome ? dev->fault.syndrome
		                           : MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
	}

	switch (opcode) {
	case MLX5_OPCODE_NOP:
		return EX_OK;
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
		n = sq_sg(qp, off, 1, ds, 0, src, &total);
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

/*
 * The UAR doorbells since the last look: each BlueFlame half holds the
 * first 8 bytes of the control segment of the last WQE rung through it
 * (8-byte doorbell or BlueFlame copy). The DBR stays the producer index the
 * device executes up to; a doorbell is checked against it (sq_dbr): it must
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

/*
 * The RNR NAK timer the responder advertises, from its min_rnr_timer code
 * (IB spec table 45, in units of 10 us; code 0 means 655.36 ms).
 */
static uint64_t rnr_timer_ns(const struct emu_qp *qp)
{
	static const uint16_t ten_us[32] = { 65535, 1,     2,     3,    4,    6,    8,
		                             12,    16,    24,    32,   48,   64,   96,
		                             128,   192,   256,   384,  512,  768,  1024,
		                             1536,  2048,  3072,  4096, 6144, 8192, 12288,
		                             16384, 24576, 32768, 49152 };
	const struct emu_qp *peer = peer_of(qp);
	uint8_t code = peer ? peer->min_rnr_timer : qp->min_rnr_timer;

	return (uint64_t)(code & 31 ? ten_us[code & 31] : 65536) * 10000;
}

/*
 * The send doorbell record, checked: returns 0 and the DBR, or -1 after a
 * device error (QP to ERR, SQ frozen until RESET).
 */
static int sq_dbr(struct emu_qp *qp, uint16_t *out)
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

/* WQEBBs the device asks for ahead of the one it executes. */
#define PREFETCH_WQEBBS 8u

unsigned emu_sq_run(struct emu_qp *qp, unsigned budget)
{
	struct emu_dev *dev = qp->dev;
	unsigned n = 0, wqebbs, i;
	uint32_t byte_cnt;
	uint16_t dbr;
	int r;

	if (sq_dbr(qp, &dbr))
		return 0;
	/* The peer is in another process: the wire requester (wire_req.c). */
	if (ssq_unlikely(qp->wire != NULL))
		return emu_wire_sq_run(qp, dbr, budget);
	if (dbr == (uint16_t)qp->sq_cc)
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
	while (n < budget && dbr != (uint16_t)qp->sq_cc) {
		if ((uint16_t)(dbr - qp->sq_cc) > PREFETCH_WQEBBS)
			__builtin_prefetch(
			    ssq_sq_wqebb(&qp->sq, qp->sq_cc + PREFETCH_WQEBBS));
		if (ssq_unlikely(qp->rnr_until_ns) && emu_now_ns() < qp->rnr_until_ns)
			break; /* the responder's RNR NAK said: not before then */
		const struct mlx5_wqe_ctrl_seg *ctrl =
		    (const struct mlx5_wqe_ctrl_seg *)ssq_sq_wqebb(&qp->sq, qp->sq_cc);
		uint16_t idx = (uint16_t)qp->sq_cc;

		if (ssq_unlikely(dev->trace != NULL) && !qp->rnr_tries)
			emu_trace_wqe(qp, qp->sq_cc, "execute");
		r = exec_wqe(qp, (uint16_t)(dbr - idx), &wqebbs, &byte_cnt);
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
		if (r == EX_OK) {
			if (ctrl->fm_ce_se & MLX5_WQE_CTRL_CQ_UPDATE)
				emu_cqe_ok(qp->send_cq, MLX5_CQE_REQ, qp->qpn, idx,
				           byte_cnt, 0);
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
	if (dbr == (uint16_t)qp->sq_cc)
		qp->db_pending = 0;
	return n;
}

unsigned emu_qp_flush(struct emu_qp *qp, unsigned budget)
{
	struct emu_dev *dev = qp->dev;
	unsigned n = 0;
	uint16_t dbr;

	if (!qp->dbr_bad && !sq_dbr(qp, &dbr)) {
		while (n < budget && dbr != (uint16_t)qp->sq_cc) {
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

/* The resolvers above, for the wire (wire_req.c, wire_resp.c). */
int emu_sq_sg(const struct emu_qp *qp, size_t off, unsigned first, unsigned ds, int write,
              struct emu_sg *sg, uint64_t *total)
{
	return sq_sg(qp, off, first, ds, write, sg, total);
}

int emu_rq_sg(const struct emu_qp *qp, const uint8_t *wqe, unsigned nseg,
              struct emu_sg *sg, uint64_t *cap)
{
	return rq_sg(qp, wqe, nseg, sg, cap);
}

uint8_t *emu_remote_ptr(struct emu_qp *qp, uint64_t raddr, uint32_t rkey, uint64_t len,
                        int need)
{
	return remote_ptr(qp, raddr, rkey, len, need);
}
