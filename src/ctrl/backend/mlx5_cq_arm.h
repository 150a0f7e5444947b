/* SPDX-License-Identifier: MIT */
/*
 * Arming an mlx5 CQ for one completion event with the consumer's own
 * index: what libmlx5's mlx5_arm_cq (providers/mlx5/cq.c) does for
 * ibv_req_notify_cq, for a CQ whose consumer polls it through mlx5dv, so
 * that libmlx5's cons_index - which ibv_req_notify_cq would arm with - is
 * never moved. (UCX's uct_ib_mlx5 and DPDK's mlx5 PMD arm their dv-polled
 * CQs the same way.)
 */
#ifndef SSQ_CTRL_MLX5_CQ_ARM_H
#define SSQ_CTRL_MLX5_CQ_ARM_H

#include <stdint.h>
#include <infiniband/mlx5dv.h>

/*
 * Ask the NIC for a completion event on @cq once it holds a CQE at or past
 * consumer index @ci; @sn is the arm sequence (libmlx5's arm_sn: bumped
 * once per event taken, ibv_get_cq_event -> mlx5_cq_event). A CQE already
 * past @ci raises the event at once, so arming after a poll that found the
 * CQ empty misses nothing. Writes the arm doorbell record, then the CQ
 * doorbell in @cq's UAR (MLX5_CQ_DOORBELL), as one 64-bit store.
 */
void ssqd_mlx5_cq_arm(const struct mlx5dv_cq *cq, uint32_t sn, uint32_t ci);

#endif
