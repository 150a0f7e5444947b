/* SPDX-License-Identifier: MIT */
/*
 * Describe mlx5 queues for the fast path from what mlx5dv_init_obj returns
 * (or the emulated device, which fills the same structs).
 */
#include <ssq/ssq.h>

static int is_pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

/* What one WQE can carry besides the control and remote-address segments. */
#define WQE_PAYLOAD_DS (SSQ_WQE_MAX_DS - 2)

int ssq_sq_init(struct ssq_sq *sq, const struct mlx5dv_qp *dv, uint32_t qpn,
                uint32_t max_inline, uint32_t max_sge)
{
	uint32_t inline_cap = WQE_PAYLOAD_DS * SSQ_WQE_DS_BYTES - 4;

	if (!sq || !dv || !dv->sq.buf || !dv->dbrec)
		return -EINVAL;
	if (dv->sq.stride != MLX5_SEND_WQE_BB)
		return -EINVAL;
	/* The WQE index in the control segment is 16 bits. */
	if (!is_pow2(dv->sq.wqe_cnt) || dv->sq.wqe_cnt > 65536)
		return -EINVAL;
	if (qpn > 0xffffff)
		return -EINVAL;
	memset(sq, 0, sizeof(*sq));
	sq->buf = (uint8_t *)dv->sq.buf;
	sq->buf_end = sq->buf + (size_t)dv->sq.wqe_cnt * MLX5_SEND_WQE_BB;
	sq->wqe_cnt = dv->sq.wqe_cnt;
	sq->wqe_mask = dv->sq.wqe_cnt - 1;
	sq->qpn = qpn;
	sq->qpn_ds_be = htobe32(qpn << 8);
	sq->max_inline = max_inline < inline_cap ? max_inline : inline_cap;
	sq->max_sge = max_sge < WQE_PAYLOAD_DS ? max_sge : WQE_PAYLOAD_DS;
	sq->dbrec = &dv->dbrec[MLX5_SND_DBR];
	sq->bf_reg = (uint8_t *)dv->bf.reg;
	sq->bf_size = dv->bf.reg ? dv->bf.size : 0;
	return 0;
}

int ssq_cq_init(struct ssq_cq *cq, const struct mlx5dv_cq *dv)
{
	if (!cq || !dv || !dv->buf || !dv->dbrec)
		return -EINVAL;
	if (dv->cqe_size != sizeof(struct mlx5_cqe64) || !is_pow2(dv->cqe_cnt))
		return -EINVAL;
	memset(cq, 0, sizeof(*cq));
	cq->buf = (uint8_t *)dv->buf;
	cq->dbrec = dv->dbrec;
	cq->cqe_cnt = dv->cqe_cnt;
	cq->cqn = dv->cqn;
	return 0;
}

int ssq_rq_init(struct ssq_rq *rq, const struct mlx5dv_qp *dv)
{
	if (!rq || !dv || !dv->rq.buf || !dv->dbrec)
		return -EINVAL;
	if (!is_pow2(dv->rq.wqe_cnt) || !is_pow2(dv->rq.stride) ||
	    dv->rq.stride < sizeof(struct mlx5_wqe_data_seg))
		return -EINVAL;
	memset(rq, 0, sizeof(*rq));
	rq->buf = (uint8_t *)dv->rq.buf;
	rq->dbrec = &dv->dbrec[MLX5_RCV_DBR];
	rq->wqe_cnt = dv->rq.wqe_cnt;
	rq->stride = dv->rq.stride;
	rq->max_sge = dv->rq.stride / sizeof(struct mlx5_wqe_data_seg);
	return 0;
}

int ssq_srq_init(struct ssq_srq *srq, const struct mlx5dv_srq *dv, uint32_t wqe_cnt)
{
	if (!srq || !dv || !dv->buf || !dv->dbrec)
		return -EINVAL;
	if (!is_pow2(wqe_cnt) || wqe_cnt > 65536 || !is_pow2(dv->stride) ||
	    dv->stride < 2 * sizeof(struct mlx5_wqe_data_seg))
		return -EINVAL;
	if (dv->head >= wqe_cnt || dv->tail >= wqe_cnt)
		return -EINVAL;
	memset(srq, 0, sizeof(*srq));
	srq->buf = (uint8_t *)dv->buf;
	srq->dbrec = dv->dbrec;
	srq->wqe_cnt = wqe_cnt;
	srq->stride = dv->stride;
	srq->max_sge = dv->stride / sizeof(struct mlx5_wqe_data_seg) - 1;
	srq->head = (uint16_t)dv->head;
	srq->tail = (uint16_t)dv->tail;
	return 0;
}

void ssq_srq_link_free_list(struct ssq_srq *srq)
{
	uint32_t i;

	for (i = 0; i < srq->wqe_cnt; i++)
		ssq_srq_wqe(srq, i)->next_wqe_index =
		    htobe16((i + 1) & (srq->wqe_cnt - 1));
	srq->head = 0;
	srq->tail = (uint16_t)(srq->wqe_cnt - 1);
}
