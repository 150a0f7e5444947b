/* SPDX-License-Identifier: MIT */
/*
 * ssq/rq.h - receive WQEs for an RC receive queue (RQ) or a shared receive
 * queue (SRQ), as libmlx5's mlx5_post_recv / mlx5_post_srq_recv lay them out.
 *
 * RQ WQE (stride bytes):   data x n [, terminator]
 * SRQ WQE (stride bytes):  next segment, data x n [, terminator]
 *
 * A WQE shorter than the stride ends with a data segment whose lkey is
 * MLX5_INVALID_LKEY, so the NIC stops scattering there. Zero-length SGEs are
 * skipped, as libmlx5 does. An SRQ's free WQEs form a list through the next
 * segment's next_wqe_index: post takes the head, ssq_srq_free_wqe() (once
 * the WQE's CQE is consumed) appends at the tail; the list always keeps one
 * WQE, so an SRQ of n WQEs holds n - 1 posted receives.
 *
 * Posting builds and advances a counter; ssq_rq_ring / ssq_srq_ring publish
 * the counter to the doorbell record, once per batch. One poster per queue.
 */
#ifndef SSQ_RQ_H
#define SSQ_RQ_H

#include <ssq/common.h>
#include <ssq/barrier.h>
#include <ssq/rq_pvt.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ssq_rq {
	uint8_t *buf;     /* mlx5dv_qp.rq.buf */
	__be32 *dbrec;    /* &dbrec[MLX5_RCV_DBR] of the QP */
	uint32_t wqe_cnt; /* a power of two */
	uint32_t stride;  /* bytes per WQE, a power of two >= 16 */
	uint32_t max_sge; /* stride / 16 */
	uint32_t head;    /* receives posted, free-running */
};

struct ssq_srq {
	uint8_t *buf;     /* mlx5dv_srq.buf */
	__be32 *dbrec;    /* mlx5dv_srq.dbrec: the WQE counter */
	uint32_t wqe_cnt; /* a power of two */
	uint32_t stride;  /* bytes per WQE, a power of two >= 32 */
	uint32_t max_sge; /* stride / 16 - 1 */
	uint16_t head;    /* first free WQE */
	uint16_t tail;    /* last free WQE */
	uint16_t counter; /* receives posted, mod 2^16, what the DBR holds */
};

/*
 * ssq_rq_post_recv - write a receive WQE at rq->head and advance it.
 * Returns 0, -E2BIG for more SGEs than the stride holds, -EINVAL for a NULL
 * @sg with @num_sge > 0; nothing is written on error. The caller keeps
 * head - (receives completed) <= wqe_cnt.
 */
SSQ_INLINE int ssq_rq_post_recv(struct ssq_rq *rq, const struct ibv_sge *sg,
                                uint32_t num_sge)
{
	if (ssq_unlikely(num_sge > rq->max_sge))
		return -E2BIG;
	if (ssq_unlikely(num_sge && !sg))
		return -EINVAL;
	ssq__set_scatter(
	    (struct mlx5_wqe_data_seg *)(rq->buf +
	                                 (size_t)(rq->head & (rq->wqe_cnt - 1)) *
	                                     rq->stride),
	    rq->max_sge, sg, num_sge);
	rq->head++;
	return 0;
}

/* Publish rq->head to the NIC: receive WQE stores before the DBR store. */
SSQ_INLINE void ssq_rq_ring(struct ssq_rq *rq)
{
	ssq_udma_to_device_barrier();
	__atomic_store_n(rq->dbrec, htobe32(rq->head & 0xffff), __ATOMIC_RELEASE);
}

/* Address of SRQ WQE @idx. */
SSQ_INLINE struct mlx5_wqe_srq_next_seg *ssq_srq_wqe(const struct ssq_srq *srq,
                                                     uint32_t idx)
{
	return (struct mlx5_wqe_srq_next_seg *)(srq->buf + (size_t)idx * srq->stride);
}

/*
 * ssq_srq_post_recv - take the free-list head, write the receive there.
 * Returns the WQE index used (the wqe_counter its CQE will carry), or
 * -ENOMEM when the SRQ is full, -E2BIG for too many SGEs, -EINVAL for a NULL
 * @sg; nothing is written on error.
 */
SSQ_INLINE int ssq_srq_post_recv(struct ssq_srq *srq, const struct ibv_sge *sg,
                                 uint32_t num_sge)
{
	struct mlx5_wqe_srq_next_seg *next;
	uint16_t idx = srq->head;

	if (ssq_unlikely(num_sge > srq->max_sge))
		return -E2BIG;
	if (ssq_unlikely(num_sge && !sg))
		return -EINVAL;
	if (ssq_unlikely(srq->head == srq->tail))
		return -ENOMEM;
	next = ssq_srq_wqe(srq, idx);
	srq->head = be16toh(next->next_wqe_index);
	ssq__set_scatter((struct mlx5_wqe_data_seg *)(next + 1), srq->max_sge, sg,
	                 num_sge);
	srq->counter++;
	return idx;
}

/* Publish the SRQ's WQE counter: WQE stores before the DBR store. */
SSQ_INLINE void ssq_srq_ring(struct ssq_srq *srq)
{
	ssq_udma_to_device_barrier();
	__atomic_store_n(srq->dbrec, htobe32(srq->counter), __ATOMIC_RELEASE);
}

/*
 * ssq_srq_free_wqe - return WQE @idx to the free list once its CQE has been
 * consumed: it is linked after the current tail.
 */
SSQ_INLINE void ssq_srq_free_wqe(struct ssq_srq *srq, uint16_t idx)
{
	ssq_srq_wqe(srq, srq->tail)->next_wqe_index = htobe16(idx);
	srq->tail = idx;
}

/*
 * ssq_rq_init - describe a QP's receive queue from mlx5dv_qp.rq and dbrec.
 * Returns 0, or -EINVAL for a NULL buffer, a wqe_cnt or stride that is not a
 * power of two, or a stride under 16.
 */
int ssq_rq_init(struct ssq_rq *rq, const struct mlx5dv_qp *dv);

/*
 * ssq_srq_init - describe an SRQ of @wqe_cnt WQEs (mlx5dv_srq does not
 * carry the count) from mlx5dv_srq, taking its free-list head and tail.
 * Returns 0 or -EINVAL (NULL buffer, count or stride not a power of two,
 * stride under 32, count over 65536).
 */
int ssq_srq_init(struct ssq_srq *srq, const struct mlx5dv_srq *dv, uint32_t wqe_cnt);

/*
 * ssq_srq_link_free_list - link every WQE of a fresh SRQ buffer into the
 * free list (WQE i -> i + 1, head 0, tail wqe_cnt - 1), as libmlx5 does when
 * it creates an SRQ. For buffers the caller allocated (the emulated device).
 */
void ssq_srq_link_free_list(struct ssq_srq *srq);

#ifdef __cplusplus
}
#endif

#endif /* SSQ_RQ_H */
