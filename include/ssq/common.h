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

#define ssq_likely(x)	__builtin_expect(!!(x), 1)
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
	(((ds) * SSQ_WQE_DS_BYTES + MLX5_SEND_WQE_BB - 1) / MLX5_SEND_WQE_BB)

#ifdef __cplusplus
}
#endif

#endif /* SSQ_COMMON_H */
