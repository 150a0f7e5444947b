/* SPDX-License-Identifier: MIT */
/*
 * ssq/wqe.h - build RC send WQEs in an mlx5 send queue, byte for byte as a
 * ConnectX NIC reads them.
 *
 * A WQE is a run of 16-byte segments (PRM "DS" units) starting on a 64-byte
 * WQE basic block (WQEBB):
 *
 *	NOP                    ctrl
 *	SEND, SEND_IMM         ctrl, data x n  | ctrl, inline
 *	RDMA_WRITE(_IMM)       ctrl, raddr, data x n | ctrl, raddr, inline
 *	RDMA_READ              ctrl, raddr, data x n
 *	ATOMIC_CS, ATOMIC_FA   ctrl, raddr, atomic, data (8 bytes)
 *
 * Every field is big-endian (the structs of <infiniband/mlx5dv.h> are used
 * as they are). A WQE that reaches the end of the ring continues at WQEBB 0.
 *
 * Two ways in:
 *  - ssq_wqe_build() takes a struct ssq_wr (any opcode, gather list or
 *    inline), checks every argument first and writes nothing on error;
 *  - ssq_prep_*() take one local buffer as plain arguments: the hot path,
 *    about 30 instructions for a 1-SGE RDMA WRITE.
 * Both return the number of WQEBBs the WQE used (advance the producer counter
 * by that much) or a negative errno. Neither rings the doorbell: see
 * <ssq/doorbell.h>. Both only write the WQEBBs at @pi; callers that share a
 * ring must own those WQEBBs (a reservation) before calling.
 */
#ifndef SSQ_WQE_H
#define SSQ_WQE_H

#include <ssq/common.h>
#include <ssq/sq.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Flags: the control segment's fm_ce_se byte, so a WQE's flags are stored as
 * given. OR at most one fence mode with SIGNALED and/or SOLICITED.
 */
enum {
	/* SE: the responder's receive CQE raises a solicited event. */
	SSQ_WQE_SOLICITED = MLX5_WQE_CTRL_SOLICITED, /* 0x02 */
	/* CE = 2: a CQE on success too (errors always give one). */
	SSQ_WQE_SIGNALED = MLX5_WQE_CTRL_CQ_UPDATE, /* 0x08 */
	/*
	 * Fence modes, PRM "fm", bits 7..5. libmlx5 uses SMALL_AND_FENCE for
	 * IBV_SEND_FENCE (wait for earlier READs/atomics to complete) and
	 * INITIATOR_SMALL after a local invalidate.
	 */
	SSQ_WQE_FENCE_NONE = 0,
	SSQ_WQE_FENCE_INITIATOR_SMALL = MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE, /* 1 << 5 */
	SSQ_WQE_FENCE_FENCE = 2 << 5,
	SSQ_WQE_FENCE_STRONG_ORDERING = 3 << 5,
	SSQ_WQE_FENCE_SMALL_AND_FENCE = MLX5_WQE_CTRL_FENCE, /* 4 << 5 */
	SSQ_WQE_FENCE_MASK = 7 << 5,
};

/*
 * True when @f is a flag set a control segment may carry: no bits outside
 * SIGNALED | SOLICITED | fm, and fm <= 4, i.e. f < 0xa0. Adding 0x60 (in 64
 * bits, so nothing wraps) carries past bit 7 exactly when f >= 0xa0 and
 * leaves bits 0..4 alone, so one test covers both rules: this sits on every
 * post.
 */
SSQ_INLINE int ssq_wqe_flags_valid(unsigned f)
{
	return !(((uint64_t)f + 0x60u) & ~(uint64_t)0xea);
}

/* A work request for ssq_wqe_build(). */
struct ssq_wr {
	uint8_t opcode;      /* MLX5_OPCODE_{NOP,SEND,SEND_IMM,RDMA_WRITE,...} */
	uint8_t flags;       /* SSQ_WQE_* */
	uint8_t inline_data; /* nonzero: copy the gather list into the WQE */
	uint8_t reserved;
	__be32 imm;                    /* *_IMM only, network order as in ibv_send_wr */
	uint32_t num_sge;              /* entries in sg_list */
	const struct ibv_sge *sg_list; /* lkey ignored when inline_data */
	uint64_t raddr;                /* RDMA and atomics: remote address */
	uint32_t rkey;                 /* RDMA and atomics: remote key */
	uint64_t compare_add;          /* ATOMIC_CS: compare; ATOMIC_FA: add */
	uint64_t swap;                 /* ATOMIC_CS: swap */
};

/*
 * Why a work request is refused: ssq_wr_check() returns one, ssq_wqe_build()
 * turns it into an errno, ssq_wr_strerror() into a sentence.
 */
enum ssq_wr_fault {
	SSQ_WR_OK = 0,
	SSQ_WR_BAD_OPCODE,         /* -EINVAL: not an RC send opcode ssq builds */
	SSQ_WR_BAD_FLAGS,          /* -EINVAL: bits outside SSQ_WQE_*, fence > 4 */
	SSQ_WR_NULL_SG_LIST,       /* -EINVAL: num_sge > 0 with sg_list NULL */
	SSQ_WR_TOO_MANY_SGE,       /* -E2BIG: num_sge > the QP's max_sge */
	SSQ_WR_INLINE_TOO_LONG,    /* -EMSGSIZE: sum of lengths > max_inline */
	SSQ_WR_INLINE_NOT_ALLOWED, /* -EINVAL: inline READ or atomic */
	SSQ_WR_NOP_WITH_DATA,      /* -EINVAL: NOP with a gather list */
	SSQ_WR_ATOMIC_NOT_ONE_SGE, /* -EINVAL: an atomic needs exactly one SGE */
	SSQ_WR_ATOMIC_BAD_LENGTH,  /* -EINVAL: atomic SGE length not 8 (or 0) */
	SSQ_WR_ATOMIC_UNALIGNED,   /* -EINVAL: raddr not 8-byte aligned */
	SSQ_WR_LARGER_THAN_RING,   /* -ENOSPC: more WQEBBs than the ring has */
	SSQ_WR_FAULT_COUNT
};

/*
 * ssq_wr_check - validate @wr against @sq without touching the ring.
 * On success stores the WQE's size in DS units in *@ds_out.
 * Thread-safe; reads only.
 */
SSQ_INLINE enum ssq_wr_fault ssq_wr_check(const struct ssq_sq *sq,
                                          const struct ssq_wr *wr, unsigned *ds_out)
{
	unsigned ds = 1; /* control segment */
	int atomic = 0;
	uint64_t total = 0;
	uint32_t i;

	switch (wr->opcode) {
	case MLX5_OPCODE_NOP:
		if (wr->num_sge || wr->inline_data)
			return SSQ_WR_NOP_WITH_DATA;
		break;
	case MLX5_OPCODE_SEND:
	case MLX5_OPCODE_SEND_IMM:
		break;
	case MLX5_OPCODE_RDMA_WRITE:
	case MLX5_OPCODE_RDMA_WRITE_IMM:
		ds++; /* raddr */
		break;
	case MLX5_OPCODE_RDMA_READ:
		if (wr->inline_data)
			return SSQ_WR_INLINE_NOT_ALLOWED;
		ds++;
		break;
	case MLX5_OPCODE_ATOMIC_CS:
	case MLX5_OPCODE_ATOMIC_FA:
		if (wr->inline_data)
			return SSQ_WR_INLINE_NOT_ALLOWED;
		ds += 2; /* raddr, atomic */
		atomic = 1;
		break;
	default:
		return SSQ_WR_BAD_OPCODE;
	}
	if (!ssq_wqe_flags_valid(wr->flags))
		return SSQ_WR_BAD_FLAGS;
	if (wr->num_sge && !wr->sg_list)
		return SSQ_WR_NULL_SG_LIST;
	if (atomic) {
		if (wr->num_sge != 1)
			return SSQ_WR_ATOMIC_NOT_ONE_SGE;
		if (wr->sg_list[0].length != 8)
			return SSQ_WR_ATOMIC_BAD_LENGTH;
		if (wr->raddr & 7)
			return SSQ_WR_ATOMIC_UNALIGNED;
	}
	/* libmlx5 checks the count against max_gs for inline WRs too. */
	if (wr->num_sge > sq->max_sge)
		return SSQ_WR_TOO_MANY_SGE;
	if (wr->inline_data) {
		for (i = 0; i < wr->num_sge; i++)
			total += wr->sg_list[i].length;
		if (total > sq->max_inline)
			return SSQ_WR_INLINE_TOO_LONG;
		/* libmlx5: no inline segment at all for zero bytes. */
		if (total)
			ds += (unsigned)((total + 4 + SSQ_WQE_DS_BYTES - 1) /
			                 SSQ_WQE_DS_BYTES);
	} else {
		ds += wr->num_sge;
	}
	if (SSQ_DS_TO_WQEBBS(ds) > sq->wqe_cnt)
		return SSQ_WR_LARGER_THAN_RING;
	*ds_out = ds;
	return SSQ_WR_OK;
}

/* The negative errno ssq_wqe_build() returns for @f. */
SSQ_INLINE int ssq_wr_fault_errno(enum ssq_wr_fault f)
{
	switch (f) {
	case SSQ_WR_OK:
		return 0;
	case SSQ_WR_TOO_MANY_SGE:
		return -E2BIG;
	case SSQ_WR_INLINE_TOO_LONG:
		return -EMSGSIZE;
	case SSQ_WR_LARGER_THAN_RING:
		return -ENOSPC;
	default:
		return -EINVAL;
	}
}

/*
 * ssq_wr_strerror - one sentence naming what is wrong with a work request,
 * for logs and error messages: "num_sge 9 exceeds the QP's max_send_sge 4".
 * Writes into @buf (NUL-terminated, at most @len bytes) and returns @buf;
 * "ok" when ssq_wr_check() accepts @wr.
 */
const char *ssq_wr_strerror(const struct ssq_sq *sq, const struct ssq_wr *wr, char *buf,
                            size_t len);

/* ---- segment setters: plain values in, big-endian fields out ---- */

/*
 * Control segment (PRM "ctrl"). @pi is the producer counter; its low 16 bits
 * are the WQE index the NIC checks against its own count. @ds is the WQE
 * size in 16-byte units, 1..63. @imm is stored as given (network order).
 * Unlike mlx5dv_set_ctrl_seg it also zeroes signature and the DCI stream id,
 * so every byte of the segment is defined.
 */
SSQ_INLINE void ssq_wqe_set_ctrl(struct mlx5_wqe_ctrl_seg *ctrl, uint32_t pi,
                                 uint8_t opcode, uint32_t qpn, unsigned ds,
                                 uint8_t fm_ce_se, __be32 imm)
{
	/*
	 * Bytes 8..11 are signature, dci_stream_channel_id and fm_ce_se: one
	 * big-endian word with fm_ce_se in its low byte, stored at once.
	 */
	__be32 sig_dci_fm = htobe32(fm_ce_se);

	ctrl->opmod_idx_opcode = htobe32(((uint32_t)(uint16_t)pi << 8) | opcode);
	ctrl->qpn_ds = htobe32((qpn << 8) | ds);
	memcpy(&ctrl->signature, &sig_dci_fm, sizeof(sig_dci_fm));
	ctrl->imm = imm;
}

/*
 * ssq_wqe_set_ctrl for the hot path, same bytes: the QPN comes pre-shifted
 * and pre-swapped from @sq (byte-swapping commutes with OR, so
 * htobe32(qpn << 8 | ds) is qpn_ds_be | htobe32(ds), and a constant @ds
 * folds), and bytes 8..15 go in one store: signature 0,
 * dci_stream_channel_id 0, fm_ce_se, imm, as the one 64-bit host-order
 * value whose memory image is those bytes. @fm_ce_se must have passed
 * ssq_wqe_flags_valid(), so it fits its byte.
 */
SSQ_INLINE void ssq_wqe_set_ctrl_fast(const struct ssq_sq *sq,
                                      struct mlx5_wqe_ctrl_seg *ctrl, uint32_t pi,
                                      uint8_t opcode, unsigned ds, unsigned fm_ce_se,
                                      __be32 imm)
{
#if __BYTE_ORDER == __LITTLE_ENDIAN
	uint64_t tail = (uint64_t)fm_ce_se << 24 | (uint64_t)imm << 32;
#else
	uint64_t tail = (uint64_t)fm_ce_se << 32 | (uint64_t)imm;
#endif

	ctrl->opmod_idx_opcode = htobe32(((uint32_t)(uint16_t)pi << 8) | opcode);
	ctrl->qpn_ds = sq->qpn_ds_be | htobe32(ds);
	memcpy((uint8_t *)ctrl + 8, &tail, sizeof(tail));
}

/*
 * ssq_wqe_set_raddr for the hot path, same bytes: rkey and the reserved
 * word in one 64-bit store.
 */
SSQ_INLINE void ssq_wqe_set_raddr_fast(struct mlx5_wqe_raddr_seg *rseg, uint64_t raddr,
                                       uint32_t rkey)
{
#if __BYTE_ORDER == __LITTLE_ENDIAN
	uint64_t rkey_reserved = (uint64_t)htobe32(rkey);
#else
	uint64_t rkey_reserved = (uint64_t)htobe32(rkey) << 32;
#endif

	rseg->raddr = htobe64(raddr);
	memcpy(&rseg->rkey, &rkey_reserved, sizeof(rkey_reserved));
}

/* Remote address segment: RDMA and atomic target. */
SSQ_INLINE void ssq_wqe_set_raddr(struct mlx5_wqe_raddr_seg *rseg, uint64_t raddr,
                                  uint32_t rkey)
{
	rseg->raddr = htobe64(raddr);
	rseg->rkey = htobe32(rkey);
	rseg->reserved = 0;
}

/*
 * Atomic segment. ATOMIC_CS: @swap_add = swap, @compare = compare.
 * ATOMIC_FA: @swap_add = the addend, @compare unused (written as 0).
 */
SSQ_INLINE void ssq_wqe_set_atomic(struct mlx5_wqe_atomic_seg *aseg, uint64_t swap_add,
                                   uint64_t compare)
{
	aseg->swap_add = htobe64(swap_add);
	aseg->compare = htobe64(compare);
}

/* Data (gather) segment: @len bytes at @addr under @lkey. */
SSQ_INLINE void ssq_wqe_set_data(struct mlx5_wqe_data_seg *dseg, uint64_t addr,
                                 uint32_t lkey, uint32_t len)
{
	dseg->byte_count = htobe32(len);
	dseg->lkey = htobe32(lkey);
	dseg->addr = htobe64(addr);
}

/*
 * Inline segment at @seg: a 4-byte count with MLX5_INLINE_SEG set, then the
 * bytes of @sg (host pointers in .addr), then zeroes up to the next 16-byte
 * boundary. Wraps at the ring end. The caller has checked the total against
 * max_inline and that it is not zero.
 */
SSQ_INLINE void ssq_wqe_set_inline(const struct ssq_sq *sq, void *seg,
                                   const struct ibv_sge *sg, uint32_t num_sge,
                                   uint32_t total)
{
	uint8_t *dst = (uint8_t *)seg + sizeof(struct mlx5_wqe_inl_data_seg);
	uint32_t i, pad;

	((struct mlx5_wqe_inl_data_seg *)seg)->byte_count =
	    htobe32(total | MLX5_INLINE_SEG);
	for (i = 0; i < num_sge; i++) {
		const uint8_t *src = (const uint8_t *)(uintptr_t)sg[i].addr;
		uint32_t left = sg[i].length;

		while (left) {
			uint32_t room = (uint32_t)(sq->buf_end - dst);
			uint32_t n = left < room ? left : room;

			memcpy(dst, src, n);
			src += n;
			left -= n;
			dst += n;
			if (dst == sq->buf_end)
				dst = sq->buf;
		}
	}
	/* Padding stays inside the last 16-byte unit, so it never wraps. */
	pad = (SSQ_WQE_DS_BYTES - (total + 4) % SSQ_WQE_DS_BYTES) % SSQ_WQE_DS_BYTES;
	memset(dst, 0, pad);
}

/*
 * ssq_wqe_build - write the WQE for @wr at producer counter @pi.
 * Returns the WQEBBs used (1..16), or, writing nothing:
 *   -EINVAL    bad opcode or flags, NULL sg_list, inline READ/atomic, NOP
 *              with data, atomic without exactly one 8-byte SGE or with an
 *              unaligned raddr
 *   -E2BIG     more SGEs than the QP's max_send_sge
 *   -EMSGSIZE  more inline bytes than the QP's max_inline_data
 *   -ENOSPC    the WQE needs more WQEBBs than the whole ring
 * ssq_wr_strerror() says which. Reads @sq only; callers sharing @sq must own
 * the WQEBBs from @pi on.
 */
SSQ_INLINE int ssq_wqe_build(const struct ssq_sq *sq, uint32_t pi,
                             const struct ssq_wr *wr)
{
	struct mlx5_wqe_ctrl_seg *ctrl = (struct mlx5_wqe_ctrl_seg *)ssq_sq_wqebb(sq, pi);
	void *seg = ctrl + 1; /* segments 1..3 share WQEBB 0: no wrap check */
	enum ssq_wr_fault fault;
	unsigned ds = 0;
	__be32 imm = 0;
	uint32_t i;

	fault = ssq_wr_check(sq, wr, &ds);
	if (ssq_unlikely(fault != SSQ_WR_OK))
		return ssq_wr_fault_errno(fault);

	if (wr->opcode == MLX5_OPCODE_SEND_IMM ||
	    wr->opcode == MLX5_OPCODE_RDMA_WRITE_IMM)
		imm = wr->imm;
	ssq_wqe_set_ctrl(ctrl, pi, wr->opcode, sq->qpn, ds, wr->flags, imm);

	switch (wr->opcode) {
	case MLX5_OPCODE_NOP:
		return 1;
	case MLX5_OPCODE_RDMA_WRITE:
	case MLX5_OPCODE_RDMA_WRITE_IMM:
	case MLX5_OPCODE_RDMA_READ:
		ssq_wqe_set_raddr((struct mlx5_wqe_raddr_seg *)seg, wr->raddr, wr->rkey);
		seg = (uint8_t *)seg + SSQ_WQE_DS_BYTES;
		break;
	case MLX5_OPCODE_ATOMIC_CS:
	case MLX5_OPCODE_ATOMIC_FA:
		ssq_wqe_set_raddr((struct mlx5_wqe_raddr_seg *)seg, wr->raddr, wr->rkey);
		seg = (uint8_t *)seg + SSQ_WQE_DS_BYTES;
		if (wr->opcode == MLX5_OPCODE_ATOMIC_CS)
			ssq_wqe_set_atomic((struct mlx5_wqe_atomic_seg *)seg, wr->swap,
			                   wr->compare_add);
		else
			ssq_wqe_set_atomic((struct mlx5_wqe_atomic_seg *)seg,
			                   wr->compare_add, 0);
		seg = (uint8_t *)seg + SSQ_WQE_DS_BYTES;
		break;
	default:
		break;
	}

	if (wr->inline_data) {
		uint32_t total = 0;

		for (i = 0; i < wr->num_sge; i++)
			total += wr->sg_list[i].length;
		if (total)
			ssq_wqe_set_inline(sq, seg, wr->sg_list, wr->num_sge, total);
	} else {
		for (i = 0; i < wr->num_sge; i++) {
			/* Segment 4 on may sit past the ring end: wrap first. */
			if ((uint8_t *)seg == sq->buf_end)
				seg = sq->buf;
			ssq_wqe_set_data((struct mlx5_wqe_data_seg *)seg,
			                 wr->sg_list[i].addr, wr->sg_list[i].lkey,
			                 wr->sg_list[i].length);
			seg = (uint8_t *)seg + SSQ_WQE_DS_BYTES;
		}
	}
	return (int)SSQ_DS_TO_WQEBBS(ds);
}

/* ---- one-buffer preps: the hot path ---- */

/* ssq__prep_rdma_1sge, the RDMA preps' one body, on the setters above. */
#include <ssq/wqe_pvt.h>

/*
 * ssq_prep_rdma_write - RDMA WRITE of @len bytes at @laddr (@lkey) to @raddr
 * (@rkey), at producer counter @pi. Returns 1 (WQEBB) or -EINVAL for bad
 * @fm_ce_se, writing nothing then.
 */
SSQ_INLINE int ssq_prep_rdma_write(const struct ssq_sq *sq, uint32_t pi, uint64_t laddr,
                                   uint32_t lkey, uint32_t len, uint64_t raddr,
                                   uint32_t rkey, unsigned fm_ce_se)
{
	return ssq__prep_rdma_1sge(sq, pi, MLX5_OPCODE_RDMA_WRITE, fm_ce_se, 0, laddr,
	                           lkey, len, raddr, rkey);
}

/* As ssq_prep_rdma_write, with immediate data @imm (network order). */
SSQ_INLINE int ssq_prep_rdma_write_imm(const struct ssq_sq *sq, uint32_t pi,
                                       uint64_t laddr, uint32_t lkey, uint32_t len,
                                       uint64_t raddr, uint32_t rkey, __be32 imm,
                                       unsigned fm_ce_se)
{
	return ssq__prep_rdma_1sge(sq, pi, MLX5_OPCODE_RDMA_WRITE_IMM, fm_ce_se, imm,
	                           laddr, lkey, len, raddr, rkey);
}

/* RDMA READ of @len bytes from @raddr (@rkey) into @laddr (@lkey). */
SSQ_INLINE int ssq_prep_rdma_read(const struct ssq_sq *sq, uint32_t pi, uint64_t laddr,
                                  uint32_t lkey, uint32_t len, uint64_t raddr,
                                  uint32_t rkey, unsigned fm_ce_se)
{
	return ssq__prep_rdma_1sge(sq, pi, MLX5_OPCODE_RDMA_READ, fm_ce_se, 0, laddr,
	                           lkey, len, raddr, rkey);
}

/*
 * ssq_prep_send - SEND of @len bytes at @laddr (@lkey); with
 * MLX5_OPCODE_SEND_IMM in @opcode, @imm goes along. ctrl + data, one WQEBB.
 * Returns 1, or -EINVAL for another opcode or bad @fm_ce_se.
 */
SSQ_INLINE int ssq_prep_send(const struct ssq_sq *sq, uint32_t pi, uint8_t opcode,
                             uint64_t laddr, uint32_t lkey, uint32_t len, __be32 imm,
                             unsigned fm_ce_se)
{
	struct mlx5_wqe_ctrl_seg *ctrl = (struct mlx5_wqe_ctrl_seg *)ssq_sq_wqebb(sq, pi);

	if (ssq_unlikely(!ssq_wqe_flags_valid(fm_ce_se) ||
	                 (opcode != MLX5_OPCODE_SEND && opcode != MLX5_OPCODE_SEND_IMM)))
		return -EINVAL;
	ssq_wqe_set_ctrl_fast(sq, ctrl, pi, opcode, 2, fm_ce_se,
	                      opcode == MLX5_OPCODE_SEND_IMM ? imm : 0);
	ssq_wqe_set_data((struct mlx5_wqe_data_seg *)(ctrl + 1), laddr, lkey, len);
	return 1;
}

/*
 * ssq_prep_atomic - ATOMIC_CS (@opcode MLX5_OPCODE_ATOMIC_CS: if *raddr ==
 * @compare_add then *raddr = @swap) or ATOMIC_FA (MLX5_OPCODE_ATOMIC_FA:
 * *raddr += @compare_add); the old 8-byte value lands at @laddr (@lkey).
 * ctrl + raddr + atomic + data: 64 bytes, one WQEBB.
 * Returns 1, or -EINVAL for another opcode, bad @fm_ce_se or an @raddr not
 * 8-byte aligned, writing nothing then.
 */
SSQ_INLINE int ssq_prep_atomic(const struct ssq_sq *sq, uint32_t pi, uint8_t opcode,
                               uint64_t laddr, uint32_t lkey, uint64_t raddr,
                               uint32_t rkey, uint64_t compare_add, uint64_t swap,
                               unsigned fm_ce_se)
{
	struct mlx5_wqe_ctrl_seg *ctrl = (struct mlx5_wqe_ctrl_seg *)ssq_sq_wqebb(sq, pi);
	struct mlx5_wqe_raddr_seg *rseg = (struct mlx5_wqe_raddr_seg *)(ctrl + 1);
	struct mlx5_wqe_atomic_seg *aseg = (struct mlx5_wqe_atomic_seg *)(rseg + 1);

	if (ssq_unlikely(
	        !ssq_wqe_flags_valid(fm_ce_se) || (raddr & 7) ||
	        (opcode != MLX5_OPCODE_ATOMIC_CS && opcode != MLX5_OPCODE_ATOMIC_FA)))
		return -EINVAL;
	ssq_wqe_set_ctrl_fast(sq, ctrl, pi, opcode, 4, fm_ce_se, 0);
	ssq_wqe_set_raddr_fast(rseg, raddr, rkey);
	if (opcode == MLX5_OPCODE_ATOMIC_CS)
		ssq_wqe_set_atomic(aseg, swap, compare_add);
	else
		ssq_wqe_set_atomic(aseg, compare_add, 0);
	ssq_wqe_set_data((struct mlx5_wqe_data_seg *)(aseg + 1), laddr, lkey, 8);
	return 1;
}

/* ssq_prep_nop - a NOP WQE (ctrl only). Returns 1 or -EINVAL (flags). */
SSQ_INLINE int ssq_prep_nop(const struct ssq_sq *sq, uint32_t pi, unsigned fm_ce_se)
{
	if (ssq_unlikely(!ssq_wqe_flags_valid(fm_ce_se)))
		return -EINVAL;
	ssq_wqe_set_ctrl((struct mlx5_wqe_ctrl_seg *)ssq_sq_wqebb(sq, pi), pi,
	                 MLX5_OPCODE_NOP, sq->qpn, 1, (uint8_t)fm_ce_se, 0);
	return 1;
}

#ifdef __cplusplus
}
#endif

#endif /* SSQ_WQE_H */
