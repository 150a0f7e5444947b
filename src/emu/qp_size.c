/* SPDX-License-Identifier: MIT */
/*
 * The device's limits, and how big a QP's queues come out for the caps a
 * caller asks for, computed as libmlx5 (rdma-core v44.0) computes them on
 * a ConnectX, so that a sizing mistake shows on the emulated device first:
 *  - providers/mlx5/verbs.c: _sq_overhead, sq_overhead, mlx5_calc_send_wqe,
 *    mlx5_calc_sq_size, mlx5_calc_rcv_wqe, mlx5_calc_rq_size;
 *  - providers/mlx5/qp.c: mlx5_qp_fill_wr_pfns (the send ops an RC QP
 *    accepts, MLX5_SUPPORTED_SEND_OPS_FLAGS_RC);
 *  - the limits libmlx5 checks against come from the kernel at
 *    alloc_ucontext (drivers/infiniband/hw/mlx5/main.c,
 *    mlx5_ib_alloc_ucontext: max_sq_desc_sz = max_wqe_sz_sq, max_rq_desc_sz
 *    = max_wqe_sz_rq, max_send_wqebb = max_recv_wr = 1 << log_max_qp_sz),
 *    and ibv_query_device's from mlx5_ib_query_device.
 * A leaf: it calls nothing else in the device.
 */
#include <errno.h>
#include "emu/emu_pvt.h"

/*
 * HCA caps of the emulated ConnectX (values a ConnectX-5/6 reports:
 * ibv_devinfo -v gives max_qp_wr 32768, max_sge 30, max_cqe 4194303).
 * max_wqe_sz_sq is not visible through verbs; 1024 bytes (63 DS and the
 * control segment fit) is assumed, unverified without a NIC.
 */
#define EMU_LOG_MAX_QP_SZ   15
#define EMU_LOG_MAX_CQ_SZ   22
#define EMU_MAX_WQE_SZ_SQ   1024
#define EMU_MAX_WQE_SZ_RQ   512
#define EMU_MAX_SQ_DESC_CAP 512 /* mlx5_ib_query_device: min(max_wqe_sz_sq, 512) */

/* Segment sizes of providers/mlx5/mlx5dv.h and wqe.h, in bytes. */
enum {
	SZ_CTRL = 16,      /* struct mlx5_wqe_ctrl_seg */
	SZ_RADDR = 16,     /* struct mlx5_wqe_raddr_seg */
	SZ_ATOMIC = 16,    /* struct mlx5_wqe_atomic_seg */
	SZ_DATA = 16,      /* struct mlx5_wqe_data_seg */
	SZ_INL = 4,        /* struct mlx5_wqe_inl_data_seg */
	SZ_UMR_CTRL = 48,  /* struct mlx5_wqe_umr_ctrl_seg */
	SZ_MKEY_CTX = 64,  /* struct mlx5_wqe_mkey_context_seg */
	SZ_UMR_KLM_64 = 64 /* max(sizeof(struct mlx5_wqe_umr_klm_seg), 64) */
};

/* libmlx5's default send ops of an RC QP created without send_ops_flags. */
#define RC_DEFAULT_OPS                                                                   \
	(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_INV |                            \
	 IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_WRITE |                      \
	 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |                 \
	 IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |       \
	 IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW)
/* MLX5_SUPPORTED_SEND_OPS_FLAGS_RC: the same set. */
#define RC_SUPPORTED_OPS RC_DEFAULT_OPS

void emu_query_caps(struct emu_dev_caps *caps)
{
	caps->max_sq_desc_sz = EMU_MAX_WQE_SZ_SQ;
	caps->max_rq_desc_sz = EMU_MAX_WQE_SZ_RQ;
	caps->max_send_wqebb = 1u << EMU_LOG_MAX_QP_SZ;
	caps->max_recv_wr = 1u << EMU_LOG_MAX_QP_SZ;
	caps->max_qp_wr = 1u << EMU_LOG_MAX_QP_SZ;
	caps->max_send_sge = (EMU_MAX_SQ_DESC_CAP - SZ_CTRL - SZ_RADDR) / SZ_DATA;
	caps->max_recv_sge = EMU_MAX_WQE_SZ_RQ / SZ_DATA;
	caps->max_cqe = (1u << EMU_LOG_MAX_CQ_SZ) - 1;
}

static uint32_t align_to(uint32_t v, uint32_t a)
{
	return (v + a - 1) / a * a;
}

static uint64_t pow2_up(uint64_t v)
{
	uint64_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

/* _sq_overhead for IBV_QPT_RC: the largest fixed part of any op named. */
static uint32_t sq_overhead(uint64_t ops)
{
	uint32_t size = SZ_CTRL;

	if (ops & (IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
	           IBV_QP_EX_WITH_RDMA_READ) &&
	    size < SZ_CTRL + SZ_RADDR)
		size = SZ_CTRL + SZ_RADDR;
	if (ops & (IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
	           IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD) &&
	    size < SZ_CTRL + SZ_RADDR + SZ_ATOMIC)
		size = SZ_CTRL + SZ_RADDR + SZ_ATOMIC;
	if (ops & (IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV) &&
	    size < SZ_CTRL + SZ_UMR_CTRL + SZ_MKEY_CTX + SZ_UMR_KLM_64)
		size = SZ_CTRL + SZ_UMR_CTRL + SZ_MKEY_CTX + SZ_UMR_KLM_64;
	return size; /* RC adds no transport segment */
}

int emu_qp_size(const struct emu_qp_cap *cap, struct emu_qp_size *out)
{
	struct emu_dev_caps dc;
	uint64_t ops;
	uint32_t over, size, inl = 0, tot, wqe, rwqe;
	uint64_t wq;

	if (!cap || !out)
		return -EINVAL;
	emu_query_caps(&dc);
	memset(out, 0, sizeof(*out));
	ops = cap->has_send_ops ? cap->send_ops_flags : RC_DEFAULT_OPS;
	if (ops & ~(uint64_t)RC_SUPPORTED_OPS)
		return -EOPNOTSUPP; /* mlx5_qp_fill_wr_pfns */

	if (cap->max_send_wr) {
		/* mlx5_calc_send_wqe */
		over = sq_overhead(ops);
		size = over;
		if (cap->max_inline_data)
			inl = size + align_to(SZ_INL + cap->max_inline_data, 16);
		if (cap->max_send_sge > (dc.max_sq_desc_sz - size) / SZ_DATA)
			return -EINVAL;
		size += cap->max_send_sge * SZ_DATA;
		tot = size > inl ? size : inl;
		if (tot > dc.max_sq_desc_sz)
			return -EINVAL;
		wqe = align_to(tot, MLX5_SEND_WQE_BB);
		/* mlx5_calc_sq_size */
		if (wqe > dc.max_sq_desc_sz)
			return -EINVAL;
		out->max_inline_data = wqe - over - SZ_INL;
		if (cap->max_send_wr > 0x7fffffffu / dc.max_sq_desc_sz)
			return -EINVAL;
		wq = pow2_up((uint64_t)cap->max_send_wr * wqe);
		if (wq / MLX5_SEND_WQE_BB > dc.max_send_wqebb)
			return -EINVAL;
		out->sq_wqe_cnt = (uint32_t)(wq / MLX5_SEND_WQE_BB);
		out->sq_wqe_size = wqe;
		out->max_send_wr = (uint32_t)(wq / wqe);
	}

	if (cap->max_recv_wr) {
		/* mlx5_calc_rq_size and mlx5_calc_rcv_wqe (no SRQ, no signature) */
		if (cap->max_recv_wr > dc.max_recv_wr)
			return -EINVAL;
		rwqe = (cap->max_recv_sge ? cap->max_recv_sge : 1) * SZ_DATA;
		if (rwqe > dc.max_rq_desc_sz)
			return -EINVAL;
		rwqe = (uint32_t)pow2_up(rwqe);
		wq = pow2_up(cap->max_recv_wr) * rwqe;
		if (wq < MLX5_SEND_WQE_BB)
			wq = MLX5_SEND_WQE_BB;
		out->rq_wqe_cnt = (uint32_t)(wq / rwqe);
		out->rq_stride = rwqe;
		out->max_recv_wr = out->rq_wqe_cnt; /* create_qp: rq.max_post = wqe_cnt */
		out->max_recv_sge = rwqe / SZ_DATA;
	}
	return 0;
}
