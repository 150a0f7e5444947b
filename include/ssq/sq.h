/* SPDX-License-Identifier: MIT */
/*
 * ssq/sq.h - a send queue as the WQE builder and doorbell see it.
 *
 * struct ssq_sq is filled once from the struct mlx5dv_qp that
 * mlx5dv_init_obj() returns (hardware) or the emulated device returns (same
 * fields), by ssq_sq_init(). It holds geometry and addresses only; who owns
 * the producer counter is the caller's business: the single-producer helpers
 * use sq->pi, the shared queue of <ssq/queue.h> a counter in shared memory.
 */
#ifndef SSQ_SQ_H
#define SSQ_SQ_H

#include <ssq/common.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ssq_sq {
	uint8_t *buf;        /* WQEBB 0 of the ring (mlx5dv_qp.sq.buf) */
	uint8_t *buf_end;    /* one past the last WQEBB: a WQE wraps here */
	uint32_t wqe_cnt;    /* WQEBBs in the ring, a power of two */
	uint32_t wqe_mask;   /* wqe_cnt - 1: producer counter to ring index */
	uint32_t qpn;        /* goes into every control segment */
	__be32 qpn_ds_be;    /* htobe32(qpn << 8): qpn_ds with DS 0, ready to OR */
	uint32_t max_inline; /* bytes of inline data one WQE may carry */
	uint32_t max_sge;    /* data segments one WQE may carry */
	__be32 *dbrec;       /* the send doorbell record, dbrec[MLX5_SND_DBR] */
	uint8_t *bf_reg;     /* UAR doorbell / BlueFlame register */
	uint32_t bf_size;    /* bytes of each BlueFlame half; 0: no BlueFlame */
	uint32_t bf_offset;  /* which half the next doorbell goes to */
	uint32_t pi;         /* producer counter in WQEBBs (single-producer use) */
};

/* Address of the WQEBB that producer counter value @pi lands on. */
SSQ_INLINE void *ssq_sq_wqebb(const struct ssq_sq *sq, uint32_t pi)
{
	return sq->buf + ((size_t)(pi & sq->wqe_mask) << MLX5_SEND_WQE_SHIFT);
}

/*
 * The 16-byte segment after @seg, continuing at the ring start when @seg is
 * the last one: a WQE that starts near the end of the ring goes on at WQEBB
 * 0, as the NIC fetches it.
 */
SSQ_INLINE void *ssq_sq_next_seg(const struct ssq_sq *sq, void *seg)
{
	uint8_t *next = (uint8_t *)seg + SSQ_WQE_DS_BYTES;

	return next == sq->buf_end ? sq->buf : next;
}

/*
 * ssq_sq_init - describe a send queue for the builder.
 * @dv:          from mlx5dv_init_obj (or ssq's emulated device): sq.buf,
 *               sq.wqe_cnt, sq.stride (must be 64), dbrec, bf.reg, bf.size
 * @qpn:         the QP number, written into every control segment
 * @max_inline:  the QP's max_inline_data (ibv_qp_cap), bytes
 * @max_sge:     the QP's max_send_sge
 * Clamps @max_inline and @max_sge to what a 63-DS WQE can hold.
 * Returns 0, or -EINVAL for a NULL buffer or doorbell record, a stride other
 * than 64, a WQE count that is zero, not a power of two or over 65536 (the
 * WQE index is 16 bits), or a QPN wider than 24 bits.
 * Not thread-safe: call before any producer uses @sq.
 */
int ssq_sq_init(struct ssq_sq *sq, const struct mlx5dv_qp *dv, uint32_t qpn,
                uint32_t max_inline, uint32_t max_sge);

#ifdef __cplusplus
}
#endif

#endif /* SSQ_SQ_H */
