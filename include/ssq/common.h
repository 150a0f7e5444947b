/* SPDX-License-Identifier: MIT */
/*
 * ssq/common.h - what every ssq header shares: the inline marker, branch
 * hints and the small integer helpers the WQE and CQE code is written in.
 *
 * Include <ssq/ssq.h> rather than this file.
 */
#ifndef SSQ_COMMON_H
#define SSQ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <endian.h>
#include <errno.h>
#include <infiniband/mlx5dv.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The hot path lives in the public headers as always-inline functions, as
 * liburing does: a call boundary costs more than building a 48-byte WQE.
 * One macro, so a binding generator or a debug build can change it once.
 */
#ifndef SSQ_INLINE
#define SSQ_INLINE static inline __attribute__((always_inline))
#endif

/*
 * The slow turns of the hot path's waits: kept out of line, in the cold
 * section, so that the code of a post that does not wait stays what it was
 * (callgrind's budgets, scripts/wqe-insns.sh). Unused, so that a unit
 * that does not call one is not warned about it (-Wunused-function).
 */
#ifndef SSQ_COLD
#define SSQ_COLD static __attribute__((noinline, cold, unused))
#endif

#define ssq_likely(x)   __builtin_expect(!!(x), 1)
#define ssq_unlikely(x) __builtin_expect(!!(x), 0)

/*
 * The 16-byte unit the control segment's DS field counts in. rdma-core does
 * not name it (libmlx5 divides by 16); the kernel's linux/mlx5/qp.h calls it
 * MLX5_SEND_WQE_DS.
 */
#define SSQ_WQE_DS_BYTES 16u
/* DS is 6 bits wide: one WQE spans at most 63 units (1008 bytes). */
#define SSQ_WQE_MAX_DS 63u
/* A WQE's WQEBBs: DS units rounded up to 64-byte basic blocks. */
#define SSQ_DS_TO_WQEBBS(ds)                                                             \
	(((ds)*SSQ_WQE_DS_BYTES + MLX5_SEND_WQE_BB - 1) / MLX5_SEND_WQE_BB)

#ifdef __cplusplus
#define SSQ_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define SSQ_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

/*
 * The wire layouts ssq writes and reads, checked against the PRM offsets at
 * build time: a different mlx5dv.h breaks the build, not a NIC's parser.
 */
SSQ_STATIC_ASSERT(sizeof(struct mlx5_wqe_ctrl_seg) == 16, "ctrl segment is 16 bytes");
SSQ_STATIC_ASSERT(offsetof(struct mlx5_wqe_ctrl_seg, qpn_ds) == 4, "qpn_ds at 4");
SSQ_STATIC_ASSERT(offsetof(struct mlx5_wqe_ctrl_seg, signature) == 8, "signature at 8");
SSQ_STATIC_ASSERT(offsetof(struct mlx5_wqe_ctrl_seg, fm_ce_se) == 11, "fm_ce_se at 11");
SSQ_STATIC_ASSERT(offsetof(struct mlx5_wqe_ctrl_seg, imm) == 12, "imm at 12");
SSQ_STATIC_ASSERT(sizeof(struct mlx5_wqe_raddr_seg) == 16, "raddr segment is 16 bytes");
SSQ_STATIC_ASSERT(offsetof(struct mlx5_wqe_raddr_seg, rkey) == 8, "rkey at 8");
SSQ_STATIC_ASSERT(sizeof(struct mlx5_wqe_atomic_seg) == 16, "atomic segment is 16 bytes");
SSQ_STATIC_ASSERT(sizeof(struct mlx5_wqe_data_seg) == 16, "data segment is 16 bytes");
SSQ_STATIC_ASSERT(sizeof(struct mlx5_wqe_srq_next_seg) == 16,
                  "SRQ next segment is 16 bytes");
SSQ_STATIC_ASSERT(sizeof(struct mlx5_cqe64) == 64, "CQE is 64 bytes");
SSQ_STATIC_ASSERT(offsetof(struct mlx5_cqe64, imm_inval_pkey) == 36, "imm at 36");
SSQ_STATIC_ASSERT(offsetof(struct mlx5_cqe64, byte_cnt) == 44, "byte_cnt at 44");
SSQ_STATIC_ASSERT(offsetof(struct mlx5_cqe64, sop_drop_qpn) == 56, "sop_drop_qpn at 56");
SSQ_STATIC_ASSERT(offsetof(struct mlx5_cqe64, wqe_counter) == 60, "wqe_counter at 60");
SSQ_STATIC_ASSERT(offsetof(struct mlx5_cqe64, op_own) == 63, "op_own at 63");
SSQ_STATIC_ASSERT(sizeof(struct mlx5_err_cqe) == 64, "error CQE is 64 bytes");
SSQ_STATIC_ASSERT(offsetof(struct mlx5_err_cqe, vendor_err_synd) == 54,
                  "vendor syndrome at 54");
SSQ_STATIC_ASSERT(offsetof(struct mlx5_err_cqe, syndrome) == 55, "syndrome at 55");
SSQ_STATIC_ASSERT(offsetof(struct mlx5_err_cqe, s_wqe_opcode_qpn) == 56,
                  "opcode_qpn at 56");
SSQ_STATIC_ASSERT(offsetof(struct mlx5_err_cqe, wqe_counter) == 60,
                  "err wqe_counter at 60");

#ifdef __cplusplus
}
#endif

#endif /* SSQ_COMMON_H */
