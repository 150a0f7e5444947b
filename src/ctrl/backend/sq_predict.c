/* SPDX-License-Identifier: MIT */
/*
 * The SQ libmlx5 will make of a request, known before the QP exists, so
 * that the send CQ is created at its final size and never resized
 * (backend_mlx5.c: ibv_resize_cq leaves libmlx5's consumer index past
 * slot 0, where ssq polls). rdma-core v44.0 providers/mlx5/verbs.c:
 *  - _sq_overhead (RC): ctrl 16; RDMA ops ctrl + raddr = 32; atomics ctrl
 *    + raddr + atomic = 48; BIND_MW / LOCAL_INV ctrl + umr_ctrl + mkey_ctx
 *    + max(klm, 64) = 192; the largest of those named; RC adds nothing.
 *    No send_ops_flags: RC's default set, BIND_MW and LOCAL_INV included
 *    (sq_overhead).
 *  - mlx5_calc_send_wqe: inl = overhead + align(4 + max_inline_data, 16)
 *    when inline is asked; overhead + 16 * max_send_sge; the larger,
 *    aligned to MLX5_SEND_WQE_BB.
 *  - mlx5_calc_sq_size: wqe_cnt = roundup_pow_of_two(max_send_wr *
 *    wqe_size) / MLX5_SEND_WQE_BB.
 * The device limits libmlx5 checks these against (max_sq_desc_sz,
 * max_send_wqebb from mlx5_ib_alloc_ucontext) are not exported by
 * libmlx5 (struct mlx5dv_context has neither); they decide only whether
 * the request is refused (EINVAL), never the size, so the caller checks
 * the prediction against what mlx5dv_init_obj reports afterwards.
 * tests/libmlx5_sizing.h holds an independent copy the tests compare with.
 */
#include <errno.h>
#include "ctrl/backend/backend.h"

#define RC_DEFAULT_OPS                                                                   \
	(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_INV |                            \
	 IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_WRITE |                      \
	 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |                 \
	 IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |       \
	 IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW)

static uint32_t overhead(uint64_t ops)
{
	uint32_t size = sizeof(struct mlx5_wqe_ctrl_seg);

	if (ops & (IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
	           IBV_QP_EX_WITH_RDMA_READ) &&
	    size < 32)
		size = 32;
	if (ops & (IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
	           IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD) &&
	    size < 48)
		size = 48;
	if (ops & (IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV) && size < 192)
		size = 192;
	return size;
}

int ssqd_sq_predict(const struct ssqd_sq_request *sq, uint32_t *wqe_cnt)
{
	uint64_t ops = sq->send_ops ? sq->send_ops : RC_DEFAULT_OPS;
	uint32_t size = overhead(ops), inl = 0, wqe;
	uint64_t wq = 1;

	if (!sq->max_send_wr) {
		*wqe_cnt = 0; /* mlx5_calc_sq_size: no SQ at all */
		return 0;
	}
	if (sq->max_inline_data)
		inl = size + ((4 + sq->max_inline_data + 15) & ~15u);
	size += sq->max_send_sge * 16;
	wqe = size > inl ? size : inl;
	wqe = (wqe + MLX5_SEND_WQE_BB - 1) & ~(uint32_t)(MLX5_SEND_WQE_BB - 1);
	/* mlx5_calc_sq_size refuses max_send_wr > 0x7fffffff / max_sq_desc_sz. */
	if ((uint64_t)sq->max_send_wr * wqe > 0x7fffffffu)
		return -EINVAL;
	while (wq < (uint64_t)sq->max_send_wr * wqe)
		wq <<= 1;
	*wqe_cnt = (uint32_t)(wq / MLX5_SEND_WQE_BB);
	return 0;
}

int ssqd_sq_clamp(struct ssqd_sq_request *sq, uint32_t max_wqebb, uint32_t *wqe_cnt)
{
	int rc = ssqd_sq_predict(sq, wqe_cnt);

	/* Halving the WRs halves the power-of-two ring: at most 31 rounds. */
	while (!rc && *wqe_cnt > max_wqebb && sq->max_send_wr > 1) {
		sq->max_send_wr /= 2;
		rc = ssqd_sq_predict(sq, wqe_cnt);
	}
	if (!rc && *wqe_cnt > max_wqebb)
		rc = -EINVAL;
	return rc;
}
