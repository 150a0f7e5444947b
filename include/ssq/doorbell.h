/* SPDX-License-Identifier: MIT */
/*
 * ssq/doorbell.h - tell the NIC that WQEs are ready.
 *
 * Two steps, as libmlx5's post_send_db does them:
 *  1. the doorbell record (DBR, host memory the NIC reads by DMA) gets the
 *     producer counter after the last WQE, low 16 bits, big-endian;
 *  2. the UAR register (MMIO, write-combining) gets either the first 8 bytes
 *     of the last WQE's control segment ("8-byte doorbell") or, BlueFlame,
 *     the whole WQE, which saves the NIC the DMA read of it.
 * The register has two halves used alternately (bf_offset), so a BlueFlame
 * write never merges with the previous one in the CPU's WC buffer.
 *
 * Every 8-byte doorbell, the single-producer ssq_sq_ring_db() and the
 * shared queue's (<ssq/queue.h>, under its doorbell lease) alike, is the one
 * sequence of ssq_sq_ring_db_at(); BlueFlame shares its DBR step.
 *
 * Concurrency: one writer at a time per UAR register. Writes to WC memory
 * from two CPUs are flushed per CPU, so the NIC could see CPU B's newer
 * doorbell before CPU A's older one, and two BlueFlame copies could
 * interleave (openucx/ucx#2464). The shared queue therefore rings under a
 * doorbell lease and uses 8-byte doorbells; BlueFlame is for a queue with
 * one producer.
 */
#ifndef SSQ_DOORBELL_H
#define SSQ_DOORBELL_H

#include <ssq/common.h>
#include <ssq/barrier.h>
#include <ssq/sq.h>
#include <ssq/doorbell_pvt.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * ssq_sq_update_dbr - publish WQEs up to (not including) producer counter
 * @pi to the NIC's doorbell record. The WQE stores must be visible to the
 * device first, hence the barrier before the DBR store.
 */
SSQ_INLINE void ssq_sq_update_dbr(const struct ssq_sq *sq, uint32_t pi)
{
	ssq_udma_to_device_barrier();
	/*
	 * A release store as well as the barrier: the barrier orders the WQEs
	 * for the NIC; the release orders them for a CPU reader (the emulated
	 * device) in C11's terms. On x86-64 it is the same mov.
	 */
	__atomic_store_n(sq->dbrec, htobe32(pi & 0xffff), __ATOMIC_RELEASE);
}

/*
 * ssq_sq_ring_db_at - the doorbell sequence, as rdma-core's post_send_db
 * (providers/mlx5/qp.c) does it for an 8-byte doorbell:
 *
 *	ssq_udma_to_device_barrier();   WQE stores before the DBR store
 *	DBR := htobe32(@pi & 0xffff)     (ssq_sq_update_dbr)
 *	ssq_mmio_wc_start();            DBR store before the UAR store
 *	UAR + @bf_offset := the first 8 bytes of @last_ctrl
 *	ssq_mmio_flush_writes();        out of the WC buffer now, not merged
 *
 * @last_ctrl: the control segment of the last WQE posted (opmod/index/
 * opcode and qpn/ds); @pi: the producer counter after that WQE; @bf_offset:
 * which half of the register, 0 or sq->bf_size. The caller keeps the half
 * and flips it after the call: ssq_sq_ring_db() in @sq, the shared queue in
 * its control block in shared memory, as every producer rings through its
 * own copy of the struct ssq_sq.
 * One caller at a time per register, and the flush before the next one's
 * UAR store (rdma-core flushes inside its BlueFlame lock): WC buffers are
 * flushed per CPU, so a later doorbell from another CPU could reach the NIC
 * first.
 */
SSQ_INLINE void ssq_sq_ring_db_at(const struct ssq_sq *sq, uint32_t pi,
                                  const struct mlx5_wqe_ctrl_seg *last_ctrl,
                                  uint32_t bf_offset)
{
	uint64_t first8;

	ssq_sq_update_dbr(sq, pi);
	memcpy(&first8, last_ctrl, sizeof(first8));
	ssq_mmio_wc_start();
	ssq__mmio_write64(sq->bf_reg + bf_offset, first8);
	ssq_mmio_flush_writes();
}

/*
 * ssq_sq_ring_db - the 8-byte doorbell of a queue with one producer:
 * ssq_sq_ring_db_at() at the half @sq keeps, which then flips.
 * One caller at a time per @sq (see above).
 */
SSQ_INLINE void ssq_sq_ring_db(struct ssq_sq *sq, uint32_t pi,
                               const struct mlx5_wqe_ctrl_seg *last_ctrl)
{
	ssq_sq_ring_db_at(sq, pi, last_ctrl, sq->bf_offset);
	sq->bf_offset ^= sq->bf_size;
}

/*
 * ssq_sq_ring_bf - DBR update, then a BlueFlame copy of the one WQE of
 * @wqebbs WQEBBs at producer counter @wqe_pi (the caller has just built it;
 * @wqe_pi + @wqebbs is the new producer counter). Falls back to the 8-byte
 * doorbell when the WQE is larger than a BlueFlame half or the QP has none.
 * One caller at a time per @sq, and only for a single WQE: libmlx5 too uses
 * BlueFlame only when one WQE was posted.
 *
 * The copy is 64-bit volatile stores in 64-byte runs, not memcpy: memcpy
 * may use byte or overlapping stores, which on WC memory can reach the NIC
 * as partial or repeated writes; whole aligned 8-byte stores fill each
 * 64-byte WC line exactly once. The source may wrap at the ring end.
 */
SSQ_INLINE void ssq_sq_ring_bf(struct ssq_sq *sq, uint32_t wqe_pi, unsigned wqebbs)
{
	const uint8_t *src = (const uint8_t *)ssq_sq_wqebb(sq, wqe_pi);
	volatile uint64_t *dst;
	unsigned bb, w;

	if ((size_t)wqebbs * MLX5_SEND_WQE_BB > sq->bf_size) {
		ssq_sq_ring_db(sq, wqe_pi + wqebbs,
		               (const struct mlx5_wqe_ctrl_seg *)src);
		return;
	}
	ssq_sq_update_dbr(sq, wqe_pi + wqebbs);
	dst = (volatile uint64_t *)(sq->bf_reg + sq->bf_offset);
	ssq_mmio_wc_start(); /* DBR store before the UAR stores */
	for (bb = 0; bb < wqebbs; bb++) {
		for (w = 0; w < MLX5_SEND_WQE_BB / 8; w++) {
			uint64_t v;

			memcpy(&v, src + w * 8, sizeof(v));
			*dst++ = v;
		}
		src += MLX5_SEND_WQE_BB;
		if (src == sq->buf_end)
			src = sq->buf;
	}
	ssq_mmio_flush_writes();
	sq->bf_offset ^= sq->bf_size;
}

#ifdef __cplusplus
}
#endif

#endif /* SSQ_DOORBELL_H */
