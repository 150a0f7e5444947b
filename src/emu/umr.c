/* SPDX-License-Identifier: MIT */
/*
 * UMR WQEs on a send queue: the bind of a type-2 memory window and its
 * invalidation (IBV_WR_BIND_MW, IBV_WR_LOCAL_INV), read from the bytes
 * libmlx5 writes (rdma-core v44 providers/mlx5/qp.c: set_bind_wr,
 * set_umr_control_seg, set_umr_mkey_seg, set_umr_data_seg; ssq's builders
 * in <ssq/wqe_mw.h>), run as a ConnectX runs them: on the QP's own send
 * queue, in order, a local operation that sends nothing, its result in
 * the requester CQE. The effect is mw.c's (emu_mw_bind_locked,
 * emu_mw_unbind).
 *
 * Syndromes. A refused bind completes with MLX5_CQE_SYNDROME_MW_BIND_ERR
 * (IBV_WC_MW_BIND_ERR: mlx5_handle_error_cqe, providers/mlx5/cq.c), a
 * refused invalidate with MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR
 * (IBV_WC_LOC_QP_OP_ERR), and the QP goes to ERR, as every requester error
 * does. Which refusal gives which status is not in any public mlx5 code
 * (the checks are firmware's); these are the ones of the kernel's software
 * RoCE device, which implements the same IB rules in the open
 * (drivers/infiniband/sw/rxe/rxe_req.c, rxe_do_local_ops: a failed
 * rxe_bind_mw gives IB_WC_MW_BIND_ERR, a failed rxe_invalidate_mw
 * IB_WC_LOC_QP_OP_ERR). A WQE whose UMR segments are not the ones libmlx5
 * writes for a window (another flag, mask or size) is no bind this device
 * models: LOCAL_QP_OP_ERR, as for any malformed WQE.
 */
#include "emu/emu_pvt.h"

/* set_umr_control_seg's flags and mkey_mask for IBV_MW_TYPE_2. */
#define UMR_FLAGS_BIND                                                                   \
	(MLX5_WQE_UMR_CTRL_FLAG_INLINE | MLX5_WQE_UMR_CTRL_FLAG_TRNSLATION_OFFSET |      \
	 MLX5_WQE_UMR_CTRL_FLAG_CHECK_FREE)
#define UMR_FLAGS_INV                                                                    \
	(MLX5_WQE_UMR_CTRL_FLAG_INLINE | MLX5_WQE_UMR_CTRL_FLAG_TRNSLATION_OFFSET |      \
	 MLX5_WQE_UMR_CTRL_FLAG_CHECK_QPN)
#define UMR_MASK_INV                                                                     \
	(MLX5_WQE_UMR_CTRL_MKEY_MASK_FREE | MLX5_WQE_UMR_CTRL_MKEY_MASK_MKEY |           \
	 MLX5_WQE_UMR_CTRL_MKEY_MASK_QPN)
#define UMR_MASK_BIND                                                                    \
	(UMR_MASK_INV | MLX5_WQE_UMR_CTRL_MKEY_MASK_LEN |                                \
	 MLX5_WQE_UMR_CTRL_MKEY_MASK_START_ADDR |                                        \
	 MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_LOCAL_WRITE |                                \
	 MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_REMOTE_READ |                                \
	 MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_REMOTE_WRITE |                               \
	 MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_ATOMIC)

/* The key @key names exactly, of @type, or NULL. */
static struct emu_mr *key_obj(struct emu_dev *dev, uint32_t key, uint8_t type)
{
	struct emu_mr *m = (key >> 8) < SSQ_EMU_MAX_MR ? dev->mrs[key >> 8] : NULL;

	return m && m->type == type && m->key == key ? m : NULL;
}

/* The mkey context's access bits as IBV_ACCESS_* (set_umr_mkey_seg's map). */
static int mkey_access(uint8_t f)
{
	int a = 0;

	if (f & MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_LOCAL_WRITE)
		a |= IBV_ACCESS_LOCAL_WRITE;
	if (f & MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_REMOTE_WRITE)
		a |= IBV_ACCESS_REMOTE_WRITE;
	if (f & MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_REMOTE_READ)
		a |= IBV_ACCESS_REMOTE_READ;
	if (f & MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_ATOMIC)
		a |= IBV_ACCESS_REMOTE_ATOMIC;
	/* Bits libmlx5 never sets (LOCAL_READ, 0-1, 7): no access of ours. */
	if (f & ~(MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_LOCAL_WRITE |
	          MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_REMOTE_WRITE |
	          MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_REMOTE_READ |
	          MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_ATOMIC))
		a |= IBV_ACCESS_MW_BIND; /* refused by emu_mw_bind_locked */
	return a;
}

/*
 * IBV_WR_BIND_MW: ctrl->imm is the window's key as it is now
 * (_mlx5_post_send: htobe32(wr->bind_mw.mw->rkey)), the mkey context the
 * QP and new key byte, access and range, the KLM the MR under it.
 */
static int run_bind(struct emu_qp *qp, uint32_t imm,
                    const struct mlx5_wqe_mkey_context_seg *mkey,
                    const struct mlx5_wqe_umr_klm_seg *klm)
{
	struct emu_dev *dev = qp->dev;
	uint32_t qpn_mkey = be32toh(mkey->qpn_mkey);
	uint64_t start = be64toh(mkey->start_addr), len = be64toh(mkey->len);
	struct emu_mr *mw, *mr;

	/* rxe_bind_mw: no window of that index, or another key: refused. */
	mw = key_obj(dev, imm, EMU_KEY_MW);
	/* The KLM's mkey is the MR's lkey (set_umr_data_seg). */
	mr = key_obj(dev, be32toh(klm->mkey), EMU_KEY_MR);
	if (!mw || !mr)
		return MLX5_CQE_SYNDROME_MW_BIND_ERR;
	/*
	 * A type-2 window binds to the QP that posts the bind
	 * (set_umr_mkey_seg writes ibqp->qp_num << 8; rxe_do_bind_mw,
	 * drivers/infiniband/sw/rxe/rxe_mw.c, takes mw->qp = qp): a context
	 * naming another QP is refused, not honoured.
	 */
	if ((qpn_mkey >> 8) != qp->qpn)
		return MLX5_CQE_SYNDROME_MW_BIND_ERR;
	/*
	 * One range, twice: the mkey context's start and length, the KLM's
	 * address and byte_count (set_umr_mkey_seg, set_umr_data_seg). A KLM
	 * covers up to 2 GiB (set_bind_wr refuses more, EOPNOTSUPP); a
	 * zero-based window (start 0) is refused by mlx5_bind_mw and not
	 * modelled.
	 */
	if (len > 1ull << 31 || len != be32toh(klm->byte_count) ||
	    start != be64toh(klm->address))
		return MLX5_CQE_SYNDROME_MW_BIND_ERR;
	/*
	 * The rest is the IB rules emu_bind_mw applies: the window free
	 * (CHECK_FREE), one PD for QP, window and MR, MW_BIND on the MR,
	 * local write under remote write or atomic, the range inside the
	 * MR, the new key of the window's index with a nonzero byte.
	 */
	if (emu_mw_bind_locked(qp, mw, mr, start, len, mkey_access(mkey->access_flags),
	                       (imm & ~0xffu) | (qpn_mkey & 0xff)))
		return MLX5_CQE_SYNDROME_MW_BIND_ERR;
	return 0;
}

/*
 * IBV_WR_LOCAL_INV: ctrl->imm is invalidate_rkey. rxe_invalidate_mw
 * refuses a key that is not the window's exact key; CHECK_QPN
 * (set_umr_control_seg, type 2) has the NIC check the window is bound to
 * this QP, which a free window (qpn 0xffffff, mlx5_ib_alloc_mw) is not.
 * The key byte stays (the next bind's imm is the key the window had,
 * libmlx5's mw->rkey, which LOCAL_INV does not change).
 */
static int run_inv(struct emu_qp *qp, uint32_t imm)
{
	struct emu_mr *mw = key_obj(qp->dev, imm, EMU_KEY_MW);

	if (!mw || !mw->bound || mw->qp != qp)
		return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
	emu_mw_unbind(mw);
	return 0;
}

int emu_umr_exec(struct emu_qp *qp, const struct mlx5_wqe_ctrl_seg *ctrl, size_t off,
                 unsigned ds)
{
	/* Segments 1-3 share WQEBB 0, 4-7 fill WQEBB 1, 8-11 WQEBB 2. */
	const struct mlx5_wqe_umr_ctrl_seg *umr =
	    (const struct mlx5_wqe_umr_ctrl_seg *)emu_wqe_seg(qp, off, 1);
	const struct mlx5_wqe_mkey_context_seg *mkey =
	    (const struct mlx5_wqe_mkey_context_seg *)emu_wqe_seg(qp, off, 4);
	uint32_t imm = be32toh(ctrl->imm);
	uint64_t mask;
	int bind;

	/* opmod 0: libmlx5 posts UMR with opmod 0 (_mlx5_post_send). */
	if (be32toh(ctrl->opmod_idx_opcode) >> 24 || (ds != 12 && ds != 8))
		return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
	bind = ds == 12;
	mask = be64toh(umr->mkey_mask);
	if (umr->flags != (bind ? UMR_FLAGS_BIND : UMR_FLAGS_INV) ||
	    mask != (bind ? UMR_MASK_BIND : UMR_MASK_INV) ||
	    be16toh(umr->klm_octowords) != (bind ? 4 : 0) || umr->translation_offset ||
	    mkey->free != (bind ? 0 : MLX5_WQE_MKEY_CONTEXT_FREE))
		return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
	/* An invalidate's context: qpn_mkey 0xffffff00 (set_umr_mkey_seg, length 0). */
	if (!bind && be32toh(mkey->qpn_mkey) != 0xffffff00u)
		return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
	return bind ? run_bind(
	                  qp, imm, mkey,
	                  (const struct mlx5_wqe_umr_klm_seg *)emu_wqe_seg(qp, off, 8))
	            : run_inv(qp, imm);
}

void emu_umr_fence_note(struct emu_qp *qp, uint8_t fm_ce_se)
{
	uint8_t fm = fm_ce_se & SSQ_WQE_FENCE_MASK;

	/*
	 * libmlx5 fences the WQE after a bind or invalidate with
	 * INITIATOR_SMALL_FENCE, or SMALL_AND_FENCE for IBV_SEND_FENCE
	 * (_mlx5_post_send: next_fence, then fence = MLX5_WQE_CTRL_FENCE);
	 * without it a ConnectX may start the next WQE before the window
	 * changed. It reports nothing then, and neither does this device,
	 * which runs WQEs one by one: it counts them (emu_qp_umr_unfenced).
	 */
	if (qp->umr_last && fm != SSQ_WQE_FENCE_INITIATOR_SMALL &&
	    fm != SSQ_WQE_FENCE_SMALL_AND_FENCE)
		qp->umr_unfenced++;
}

uint64_t emu_qp_umr_unfenced(struct emu_qp *qp)
{
	uint64_t n;

	if (!qp)
		return 0;
	pthread_mutex_lock(&qp->dev->lock);
	n = qp->umr_unfenced;
	pthread_mutex_unlock(&qp->dev->lock);
	return n;
}
