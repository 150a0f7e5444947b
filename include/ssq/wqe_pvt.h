/* SPDX-License-Identifier: MIT */
/*
 * ssq/wqe_pvt.h - internals of <ssq/wqe.h>'s inline WQE preps.
 * Do not include directly: <ssq/wqe.h> includes it where the segment
 * setters it builds on are defined. It is installed because the inline API
 * needs it; nothing here is API.
 */
#ifndef SSQ_WQE_PVT_H
#define SSQ_WQE_PVT_H

#ifndef SSQ_WQE_H
#error "include <ssq/wqe.h>, not <ssq/wqe_pvt.h>"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A WQE of ctrl + raddr + one data segment (48 bytes, one WQEBB, so no wrap
 * is possible). Shared by the RDMA preps below; @opcode must be one of them.
 */
SSQ_INLINE int ssq__prep_rdma_1sge(const struct ssq_sq *sq, uint32_t pi, uint8_t opcode,
                                   unsigned fm_ce_se, __be32 imm, uint64_t laddr,
                                   uint32_t lkey, uint32_t len, uint64_t raddr,
                                   uint32_t rkey)
{
	struct mlx5_wqe_ctrl_seg *ctrl = (struct mlx5_wqe_ctrl_seg *)ssq_sq_wqebb(sq, pi);
	struct mlx5_wqe_raddr_seg *rseg = (struct mlx5_wqe_raddr_seg *)(ctrl + 1);
	struct mlx5_wqe_data_seg *dseg = (struct mlx5_wqe_data_seg *)(rseg + 1);

	if (ssq_unlikely(!ssq_wqe_flags_valid(fm_ce_se)))
		return -EINVAL;
	ssq_wqe_set_ctrl_fast(sq, ctrl, pi, opcode, 3, fm_ce_se, imm);
	ssq_wqe_set_raddr_fast(rseg, raddr, rkey);
	ssq_wqe_set_data(dseg, laddr, lkey, len);
	return 1;
}

#ifdef __cplusplus
}
#endif

#endif /* SSQ_WQE_PVT_H */
