/* SPDX-License-Identifier: MIT */
/* Arming an mlx5 CQ through mlx5dv (see mlx5_cq_arm.h). */
#include <endian.h>
#include <string.h>
#include <ssq/barrier.h>
#include <ssq/cq.h>
#include "ctrl/backend/mlx5_cq_arm.h"

void ssqd_mlx5_cq_arm(const struct mlx5dv_cq *cq, uint32_t sn, uint32_t ci)
{
	/* The word mlx5_arm_cq builds: sequence, command (next CQE), index. */
	uint32_t word = (sn & 3) << 28 | MLX5_CQ_DB_REQ_NOT | (ci & 0xffffff);
	__be32 db[2] = { htobe32(word), htobe32(cq->cqn) };
	uint64_t v;

	cq->dbrec[SSQ_CQ_ARM_DB] = htobe32(word);
	/* The record before the UAR write that makes the NIC read it. */
	ssq_mmio_wc_start();
	memcpy(&v, db, sizeof(v));
	*(volatile uint64_t *)((uint8_t *)cq->cq_uar + MLX5_CQ_DOORBELL) = v;
	ssq_mmio_flush_writes();
}
