/* SPDX-License-Identifier: MIT */
/*
 * ssq/ssq.h - ssq, one shared, lock-free send queue per peer for many
 * processes on NVIDIA ConnectX (mlx5) NICs, or on ssq's emulated mlx5 device.
 *
 * The headers, in the order a post uses them:
 *   ssq/sq.h        a send queue's geometry, filled from struct mlx5dv_qp
 *   ssq/wqe.h       build WQEs: ssq_prep_*() hot path, ssq_wqe_build() general
 *   ssq/wqe_mw.h    bind and invalidate a type-2 memory window (UMR WQEs)
 *   ssq/doorbell.h  doorbell record + UAR: 8-byte doorbell or BlueFlame
 *   ssq/cq.h        poll 64-byte CQEs, decode them, map error syndromes
 *   ssq/rq.h        receive WQEs for RQs and SRQs
 *   ssq/barrier.h   the DMA / MMIO barriers the above use, by purpose
 *   ssq/dump.h      print WQEs and CQEs field by field
 *   ssq/queue.h     one send queue shared by many producers: reserve,
 *                   publish, submit, poll, progress
 *   ssq/client.h    reach ssqd's shared queues from a process
 *   ssq/desc.h      pack a remote descriptor for a peer, check it back in
 * ssq/<name>_pvt.h hold what the inline calls of ssq/<name>.h
 * need but is not API (DPDK's rte_ring_*_pvt.h): never include them.
 *
 * Errors: every call returns 0, a count, or a negative errno; none sets
 * errno.
 */
#ifndef SSQ_SSQ_H
#define SSQ_SSQ_H

#include <ssq/common.h>
#include <ssq/barrier.h>
#include <ssq/sq.h>
#include <ssq/wqe.h>
#include <ssq/wqe_mw.h>
#include <ssq/doorbell.h>
#include <ssq/cq.h>
#include <ssq/rq.h>
#include <ssq/dump.h>
#include <ssq/queue.h>
#include <ssq/post_wr.h>
#include <ssq/desc.h>
#include <ssq/combine.h>

#define SSQ_VERSION_MAJOR 0
#define SSQ_VERSION_MINOR 1

#endif /* SSQ_SSQ_H */
