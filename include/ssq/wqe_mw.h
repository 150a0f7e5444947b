/* SPDX-License-Identifier: MIT */
/*
 * ssq/wqe_mw.h - bind a type-2 memory window, and invalidate it, with a UMR
 * WQE on an mlx5 send queue, byte for byte as libmlx5 writes
 * IBV_WR_BIND_MW and IBV_WR_LOCAL_INV (rdma-core v44 providers/mlx5/qp.c:
 * _mlx5_post_send, set_bind_wr, set_umr_control_seg, set_umr_mkey_seg,
 * set_umr_data_seg):
 *
 *	BIND_MW    ctrl, umr ctrl (48), mkey context (64), KLM (64)
 *	           12 DS, 3 WQEBBs
 *	LOCAL_INV  ctrl, umr ctrl (48), mkey context (64)
 *	           8 DS, 2 WQEBBs
 *
 * Opcode MLX5_OPCODE_UMR, opmod 0; the control segment's imm is the key
 * of the window to change (the window's current rkey for a bind,
 * invalidate_rkey for LOCAL_INV). Each segment after the control segment
 * starts 16 bytes into WQEBB 0 or on WQEBB 1 or 2 and does not cross a
 * WQEBB, so a WQE near the ring end wraps between segments only.
 *
 * The window (ibv_alloc_mw(pd, IBV_MW_TYPE_2); an mkey with free = 1,
 * umr_en = 1, en_rinval = 1, qpn = 0xffffff: mlx5_ib_alloc_mw,
 * drivers/infiniband/hw/mlx5/mr.c) binds to the QP that posts the WQE: its
 * QPN goes into the mkey context, and the NIC checks that the window is
 * free (CHECK_FREE) before a bind and that it is this QP's (CHECK_QPN)
 * before an invalidate. The MR under it needs IBV_ACCESS_MW_BIND and, for
 * remote write or atomic, IBV_ACCESS_LOCAL_WRITE (IB spec C10-74; libmlx5's
 * MW_DEBUG checks in set_bind_wr); a refusal completes with
 * MLX5_CQE_SYNDROME_MW_BIND_ERR (IBV_WC_MW_BIND_ERR, mlx5_handle_error_cqe
 * in providers/mlx5/cq.c) and moves the QP to error.
 *
 * Ordering: libmlx5 puts MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE
 * (SSQ_WQE_FENCE_INITIATOR_SMALL) on the WQE after a bind or invalidate
 * (next_fence in _mlx5_post_send), so that nothing behind it runs before
 * the window changed. These builders write their own WQE only: the next
 * WQE's fence is its poster's. On a shared ring, where the next WQE may be
 * anyone's, wait for the bind's CQE (post it signaled) before handing its
 * key out instead.
 *
 * Neither builder rings the doorbell; callers sharing a ring must own the
 * WQEBBs from @pi on (a reservation of SSQ_WQE_BIND_MW_WQEBBS or
 * SSQ_WQE_LOCAL_INV_WQEBBS).
 */
#ifndef SSQ_WQE_MW_H
#define SSQ_WQE_MW_H

#include <ssq/common.h>
#include <ssq/sq.h>
#include <ssq/wqe.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Sizes: ctrl 1 + umr ctrl 3 + mkey context 4 (+ KLM 4) DS. */
enum {
	SSQ_WQE_BIND_MW_DS = 12,
	SSQ_WQE_BIND_MW_WQEBBS = 3,
	SSQ_WQE_LOCAL_INV_DS = 8,
	SSQ_WQE_LOCAL_INV_WQEBBS = 2,
};

/*
 * The longest window: a KLM's byte_count covers up to 2 GiB, so
 * set_bind_wr refuses longer binds with EOPNOTSUPP (struct
 * mlx5_wqe_umr_klm_seg in mlx5dv.h: "up to 2GB").
 */
#define SSQ_MW_MAX_LEN (1ull << 31)

/* The access a window may grant: remote only (IB spec 10.6.7.2). */
#define SSQ_MW_ACCESS                                                                    \
	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

/*
 * UMR control segment (struct mlx5_wqe_umr_ctrl_seg, 48 bytes), as
 * set_umr_control_seg writes it for a type-2 window: inline translation,
 * offset 0; a bind (@bind) checks the free state and changes length,
 * start address and access too, with one KLM (klm_octowords =
 * get_klm_octo(1) = 4); an invalidate checks the QPN and has none.
 */
SSQ_INLINE void ssq_wqe_set_umr_ctrl(struct mlx5_wqe_umr_ctrl_seg *umr, int bind)
{
	uint64_t mask = MLX5_WQE_UMR_CTRL_MKEY_MASK_FREE |
	                MLX5_WQE_UMR_CTRL_MKEY_MASK_MKEY |
	                MLX5_WQE_UMR_CTRL_MKEY_MASK_QPN;

	memset(umr, 0, sizeof(*umr));
	umr->flags =
	    MLX5_WQE_UMR_CTRL_FLAG_TRNSLATION_OFFSET | MLX5_WQE_UMR_CTRL_FLAG_INLINE;
	if (bind) {
		umr->flags |= MLX5_WQE_UMR_CTRL_FLAG_CHECK_FREE;
		umr->klm_octowords = htobe16(4);
		mask |= MLX5_WQE_UMR_CTRL_MKEY_MASK_LEN |
		        MLX5_WQE_UMR_CTRL_MKEY_MASK_START_ADDR |
		        MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_LOCAL_WRITE |
		        MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_REMOTE_READ |
		        MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_REMOTE_WRITE |
		        MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_ATOMIC;
	} else {
		umr->flags |= MLX5_WQE_UMR_CTRL_FLAG_CHECK_QPN;
	}
	umr->mkey_mask = htobe64(mask);
}

/*
 * Mkey context segment (struct mlx5_wqe_mkey_context_seg, 64 bytes), as
 * set_umr_mkey_seg writes it. A bind (@len > 0): not free, qpn_mkey = the
 * QP's number and the new key byte, the access bits, start address and
 * length (not zero-based: mlx5_bind_mw refuses IBV_ACCESS_ZERO_BASED).
 * An invalidate (@len 0): free, qpn_mkey 0xffffff00 (the key byte of
 * set_bind_wr's rkey 0). libmlx5 leaves the fields the mask does not name
 * as the ring held them; here they are 0, so every byte is defined.
 */
SSQ_INLINE void ssq_wqe_set_umr_mkey(struct mlx5_wqe_mkey_context_seg *mkey, uint32_t qpn,
                                     uint8_t key, uint64_t addr, uint64_t len,
                                     unsigned access)
{
	memset(mkey, 0, sizeof(*mkey));
	if (!len) {
		mkey->free = MLX5_WQE_MKEY_CONTEXT_FREE;
		mkey->qpn_mkey = htobe32(0xffffff00u | key);
		return;
	}
	/* Local read is the kernel's (mlx5_ib_alloc_mw: lr = 1). */
	if (access & IBV_ACCESS_LOCAL_WRITE)
		mkey->access_flags |= MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_LOCAL_WRITE;
	if (access & IBV_ACCESS_REMOTE_WRITE)
		mkey->access_flags |= MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_REMOTE_WRITE;
	if (access & IBV_ACCESS_REMOTE_READ)
		mkey->access_flags |= MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_REMOTE_READ;
	if (access & IBV_ACCESS_REMOTE_ATOMIC)
		mkey->access_flags |= MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_ATOMIC;
	mkey->qpn_mkey = htobe32(qpn << 8 | key);
	mkey->start_addr = htobe64(addr);
	mkey->len = htobe64(len);
}

/*
 * The inline KLM (struct mlx5_wqe_umr_klm_seg in a 64-byte unit, the rest
 * zero), as set_umr_data_seg writes it: the MR under the window by its
 * lkey, the window's first byte and length.
 */
SSQ_INLINE void ssq_wqe_set_umr_klm(void *seg, uint32_t mr_lkey, uint64_t addr,
                                    uint32_t len)
{
	struct mlx5_wqe_umr_klm_seg *klm = (struct mlx5_wqe_umr_klm_seg *)seg;

	memset((uint8_t *)seg + sizeof(*klm), 0, MLX5_SEND_WQE_BB - sizeof(*klm));
	klm->byte_count = htobe32(len);
	klm->mkey = htobe32(mr_lkey);
	klm->address = htobe64(addr);
}

/*
 * ssq_prep_bind_mw - bind the type-2 window whose key is @mw_rkey to
 * [@addr, +@len) of the MR @mr_lkey, granting @access (IBV_ACCESS_REMOTE_*)
 * to the peer of this QP, under the new key @new_rkey: the window's index
 * (@mw_rkey & ~0xff) with a new key byte (IBV_WR_BIND_MW's bind_mw.rkey;
 * ibv_bind_mw uses ibv_inc_rkey). At producer counter @pi.
 * Returns SSQ_WQE_BIND_MW_WQEBBS, or, writing nothing:
 *   -EINVAL      bad @fm_ce_se, @len 0, @access 0 or outside SSQ_MW_ACCESS,
 *                @new_rkey of another index than @mw_rkey
 *   -EOPNOTSUPP  @len over SSQ_MW_MAX_LEN (set_bind_wr's refusal)
 *   -ENOSPC      a ring of fewer WQEBBs than the WQE
 * The NIC's own checks (free window, same PD, MW_BIND on the MR, the range
 * inside it) come back in the CQE.
 */
SSQ_INLINE int ssq_prep_bind_mw(const struct ssq_sq *sq, uint32_t pi, uint32_t mw_rkey,
                                uint32_t new_rkey, uint32_t mr_lkey, uint64_t addr,
                                uint64_t len, unsigned access, unsigned fm_ce_se)
{
	struct mlx5_wqe_ctrl_seg *ctrl = (struct mlx5_wqe_ctrl_seg *)ssq_sq_wqebb(sq, pi);

	if (ssq_unlikely(!ssq_wqe_flags_valid(fm_ce_se) || !len || !access ||
	                 (access & ~(unsigned)SSQ_MW_ACCESS) ||
	                 (new_rkey & ~0xffu) != (mw_rkey & ~0xffu)))
		return -EINVAL;
	if (ssq_unlikely(len > SSQ_MW_MAX_LEN))
		return -EOPNOTSUPP;
	if (ssq_unlikely(sq->wqe_cnt < SSQ_WQE_BIND_MW_WQEBBS))
		return -ENOSPC;
	ssq_wqe_set_ctrl(ctrl, pi, MLX5_OPCODE_UMR, sq->qpn, SSQ_WQE_BIND_MW_DS,
	                 (uint8_t)fm_ce_se, htobe32(mw_rkey));
	ssq_wqe_set_umr_ctrl((struct mlx5_wqe_umr_ctrl_seg *)(ctrl + 1), 1);
	ssq_wqe_set_umr_mkey((struct mlx5_wqe_mkey_context_seg *)ssq_sq_wqebb(sq, pi + 1),
	                     sq->qpn, (uint8_t)new_rkey, addr, len, access);
	ssq_wqe_set_umr_klm(ssq_sq_wqebb(sq, pi + 2), mr_lkey, addr, (uint32_t)len);
	return SSQ_WQE_BIND_MW_WQEBBS;
}

/*
 * ssq_prep_local_inv - invalidate the type-2 window @rkey bound to this QP
 * (IBV_WR_LOCAL_INV): back to free, its key reaching nothing. At producer
 * counter @pi. Returns SSQ_WQE_LOCAL_INV_WQEBBS, or, writing nothing,
 * -EINVAL (bad @fm_ce_se) or -ENOSPC (a ring of one WQEBB).
 */
SSQ_INLINE int ssq_prep_local_inv(const struct ssq_sq *sq, uint32_t pi, uint32_t rkey,
                                  unsigned fm_ce_se)
{
	struct mlx5_wqe_ctrl_seg *ctrl = (struct mlx5_wqe_ctrl_seg *)ssq_sq_wqebb(sq, pi);

	if (ssq_unlikely(!ssq_wqe_flags_valid(fm_ce_se)))
		return -EINVAL;
	if (ssq_unlikely(sq->wqe_cnt < SSQ_WQE_LOCAL_INV_WQEBBS))
		return -ENOSPC;
	ssq_wqe_set_ctrl(ctrl, pi, MLX5_OPCODE_UMR, sq->qpn, SSQ_WQE_LOCAL_INV_DS,
	                 (uint8_t)fm_ce_se, htobe32(rkey));
	ssq_wqe_set_umr_ctrl((struct mlx5_wqe_umr_ctrl_seg *)(ctrl + 1), 0);
	ssq_wqe_set_umr_mkey((struct mlx5_wqe_mkey_context_seg *)ssq_sq_wqebb(sq, pi + 1),
	                     sq->qpn, 0, 0, 0, 0);
	return SSQ_WQE_LOCAL_INV_WQEBBS;
}

#ifdef __cplusplus
}
#endif

#endif /* SSQ_WQE_MW_H */
