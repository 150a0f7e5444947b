/* SPDX-License-Identifier: MIT */
/*
 * RC QPs as libmlx5 44 creates them (sizes, one buffer RQ then SQ through
 * the allocator, doorbell record, a UAR page behind the command fd,
 * responder scatter-to-CQE), modified with the kernel's rules (emu), and
 * mlx5dv_init_obj for QPs and CQs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mlx5model.h"

int mm_qp_wire(struct mm_ctx *c, struct mm_qp *qp, const struct ibv_qp_attr *a, int mask);

/*
 * MLX5_SCATTER_TO_CQE=0 turns the default off for every QP
 * (use_scatter_to_cqe, providers/mlx5/verbs.c).
 */
static int scatter_default(void)
{
	const char *e = getenv("MLX5_SCATTER_TO_CQE");

	return !(e && !strcmp(e, "0"));
}

/*
 * create_qp (providers/mlx5/verbs.c, v44) for what ssq asks: an RC QP
 * with its own RQ, comp_mask PD and SEND_OPS_FLAGS (other types, SRQs,
 * XRC, RSS, create flags: not modelled, refused). Sizes: emu_qp_size,
 * which copies sq_overhead, mlx5_calc_send_wqe, mlx5_calc_sq_size and
 * mlx5_calc_rq_size, and writes back cap as they do. Buffer: one, the RQ
 * at offset 0 and the SQ after it (mlx5_calc_wq_size: rq.offset 0,
 * sq.offset = the RQ's bytes), page-aligned size through the allocator
 * (mlx5_alloc_qp_buf), zeroed. Responder scatter-to-CQE:
 * MLX5_QP_FLAG_SCATTER_CQE is set unless MLX5_SCATTER_TO_CQE=0 or
 * MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE, and mlx5_ib's create_user_qp
 * -> configure_responder_scat_cqe gives an RC QP with 64-byte receive
 * CQEs cs_res = MLX5_RES_SCAT_DATA32_CQE.
 */
static struct ibv_qp *create_qp(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *a,
                                int scatter)
{
	struct mm_ctx *c = mm_ctx(ctx);
	struct mm_pd *pd = (struct mm_pd *)a->pd;
	struct emu_qp_size sz;
	struct emu_qp_attr ea;
	struct emu_qp_cap cap;
	struct mm_qp *qp;
	size_t rq_bytes, bytes;
	uint8_t *buf;
	uint32_t qpn;
	int rc, h, uar;

	if (c->imported)
		return mm_fail(EOPNOTSUPP);
	if (a->comp_mask &
	        ~(uint32_t)(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) ||
	    a->qp_type != IBV_QPT_RC || a->srq || !a->send_cq || !a->recv_cq ||
	    a->send_cq->context != ctx || a->recv_cq->context != ctx)
		return mm_fail(EOPNOTSUPP); /* not modelled */
	if (!(a->comp_mask & IBV_QP_INIT_ATTR_PD) || !pd || !pd->epd)
		return mm_fail(EINVAL);
	memset(&cap, 0, sizeof(cap));
	cap.max_send_wr = a->cap.max_send_wr;
	cap.max_recv_wr = a->cap.max_recv_wr;
	cap.max_send_sge = a->cap.max_send_sge;
	cap.max_recv_sge = a->cap.max_recv_sge;
	cap.max_inline_data = a->cap.max_inline_data;
	cap.has_send_ops = !!(a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS);
	cap.send_ops_flags = a->send_ops_flags;
	rc = emu_qp_size(&cap, &sz);
	if (rc)
		return mm_fail(-rc);
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return mm_fail(ENOMEM);
	rq_bytes = (size_t)sz.rq_wqe_cnt * sz.rq_stride;
	bytes = rq_bytes + (size_t)sz.sq_wqe_cnt * 64;
	bytes = (bytes + MM_PAGE - 1) & ~(size_t)(MM_PAGE - 1);
	pthread_mutex_lock(&c->lock);
	buf = mm_buf_alloc(c, bytes);
	uar = mm_uar_alloc(c);
	memset(&ea, 0, sizeof(ea));
	ea.send_cq = ((struct mm_cq *)a->send_cq)->ecq;
	ea.recv_cq = ((struct mm_cq *)a->recv_cq)->ecq;
	ea.rq_buf = sz.rq_wqe_cnt ? buf : NULL;
	ea.rq_wqe_cnt = sz.rq_wqe_cnt;
	ea.rq_stride = sz.rq_stride;
	ea.sq_buf = buf ? buf + rq_bytes : NULL;
	ea.sq_wqe_cnt = sz.sq_wqe_cnt;
	ea.dbrec = mm_dbrec_alloc(c);
	ea.uar = uar >= 0 ? c->uar + (size_t)uar * MM_PAGE : NULL;
	ea.cap = &cap;
	/*
	 * TODO(merge with hwfixes): emu_qp_attr.disable_scatter_to_cqe, the
	 * emulated device's scatter of <= 32-byte receives into the CQE.
	 */
#ifdef SSQ_EMU_QP_ATTR_HAS_DISABLE_SCATTER
	ea.disable_scatter_to_cqe = !scatter;
#endif
	if (!buf || uar < 0 || !ea.dbrec) {
		rc = ENOMEM;
	} else {
		memset(buf, 0, bytes);
		rc = -emu_create_qp(pd->epd, &ea, &qp->eqp, &qp->dv, &qpn);
	}
	h = rc ? -1 : mm_handle_alloc(c, MM_OBJ_QP, qp);
	if (!rc && h < 0)
		rc = ENOMEM;
	if (!rc && qpn - SSQ_EMU_QPN_BASE >= MM_MAX_QP)
		rc = ENOMEM;
	if (rc) {
		if (qp->eqp)
			emu_destroy_qp(qp->eqp);
		if (h >= 0)
			mm_handle_free(c, (uint32_t)h);
		if (uar >= 0)
			mm_uar_free(c, (unsigned)uar);
		if (buf)
			mm_buf_free(c, buf);
		pthread_mutex_unlock(&c->lock);
		free(qp);
		return mm_fail(rc);
	}
	qp->uar_index = (unsigned)uar;
	qp->scatter_to_cqe = scatter;
	/* Where a mapper of the command fd finds this QP's UAR page. */
	qp->dv.uar_mmap_offset = (uint64_t)uar * MM_PAGE;
	c->qps[qpn - SSQ_EMU_QPN_BASE] = qp;
	pthread_mutex_unlock(&c->lock);
	qp->qp.context = ctx;
	qp->qp.qp_context = a->qp_context;
	qp->qp.pd = a->pd;
	qp->qp.send_cq = a->send_cq;
	qp->qp.recv_cq = a->recv_cq;
	qp->qp.handle = (uint32_t)h;
	qp->qp.qp_num = qpn;
	qp->qp.state = IBV_QPS_RESET;
	qp->qp.qp_type = IBV_QPT_RC;
	pthread_mutex_init(&qp->qp.mutex, NULL);
	pthread_cond_init(&qp->qp.cond, NULL);
	a->cap.max_send_wr = sz.max_send_wr;
	a->cap.max_inline_data = sz.max_inline_data;
	a->cap.max_recv_wr = sz.max_recv_wr;
	a->cap.max_recv_sge = sz.max_recv_sge;
	return &qp->qp;
}

struct ibv_qp *mm_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *a)
{
	return create_qp(ctx, a, scatter_default());
}

/*
 * ibv_create_qp: what ibv_create_qp_ex (verbs.h) calls when comp_mask is
 * only IBV_QP_INIT_ATTR_PD; libmlx5's mlx5_create_qp goes to the same
 * create_qp, sizing for every RC op (no send ops named).
 */
MM_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a)
{
	struct ibv_qp_init_attr_ex ex;
	struct ibv_qp *qp;

	MM_FORWARD(struct ibv_qp *, ibv_create_qp,
	           (struct ibv_pd *, struct ibv_qp_init_attr *), (pd, a));
	memset(&ex, 0, sizeof(ex));
	memcpy(&ex, a, sizeof(*a));
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = pd;
	qp = create_qp(pd->context, &ex, scatter_default());
	if (qp)
		a->cap = ex.cap;
	return qp;
}

/*
 * mlx5dv_create_qp (providers/mlx5/verbs.c, v44, create_qp with
 * mlx5_qp_attr): the same, plus the vendor create flags; only
 * MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE is modelled.
 */
MM_EXPORT struct ibv_qp *mlx5dv_create_qp(struct ibv_context *ctx,
                                          struct ibv_qp_init_attr_ex *a,
                                          struct mlx5dv_qp_init_attr *dv)
{
	int scatter = scatter_default();

	MM_FORWARD(struct ibv_qp *, mlx5dv_create_qp,
	           (struct ibv_context *, struct ibv_qp_init_attr_ex *,
	            struct mlx5dv_qp_init_attr *),
	           (ctx, a, dv));
	if (dv) {
		if (dv->comp_mask & ~(uint64_t)MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS ||
		    dv->create_flags & ~(uint32_t)MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE)
			return mm_fail(EOPNOTSUPP); /* not modelled */
		if (dv->comp_mask & MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS &&
		    dv->create_flags & MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE)
			scatter = 0;
	}
	return create_qp(ctx, a, scatter);
}

MM_EXPORT int ibv_destroy_qp(struct ibv_qp *ibqp)
{
	struct mm_qp *qp = (struct mm_qp *)ibqp;
	struct mm_ctx *c;
	int rc;

	MM_FORWARD(int, ibv_destroy_qp, (struct ibv_qp *), (ibqp));
	c = mm_ctx(ibqp->context);
	pthread_mutex_lock(&c->lock);
	rc = -emu_destroy_qp(qp->eqp);
	if (rc) {
		pthread_mutex_unlock(&c->lock);
		return rc;
	}
	c->qps[ibqp->qp_num - SSQ_EMU_QPN_BASE] = NULL;
	mm_handle_free(c, ibqp->handle);
	mm_uar_free(c, qp->uar_index);
	/* The buffer starts with the RQ, or is the SQ when there is none. */
	mm_buf_free(c, qp->dv.rq.wqe_cnt ? qp->dv.rq.buf : qp->dv.sq.buf);
	pthread_mutex_unlock(&c->lock);
	free(qp);
	return 0;
}

/*
 * ibv_modify_qp: the kernel's state table and masks, mlx5_ib's value
 * checks, the RESET that zeroes the doorbell records as libmlx5's
 * mlx5_modify_qp does (emu_modify_qp); qp->state follows
 * (libibverbs/verbs.c ibv_modify_qp). Errors positive.
 */
MM_EXPORT int ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *a, int mask)
{
	struct mm_qp *qp = (struct mm_qp *)ibqp;
	int rc;

	MM_FORWARD(int, ibv_modify_qp, (struct ibv_qp *, struct ibv_qp_attr *, int),
	           (ibqp, a, mask));
	rc = mm_qp_wire(mm_ctx(ibqp->context), qp, a, mask);
	if (rc)
		return rc;
	rc = -emu_modify_qp(qp->eqp, a, mask);
	if (rc)
		return rc;
	if (mask & IBV_QP_STATE)
		ibqp->state = a->qp_state;
	return 0;
}

/*
 * mlx5dv_init_obj (providers/mlx5/verbs.c mlx5dv_get_qp, mlx5dv_get_cq):
 * QP: dbrec, sq, rq, bf; uar_mmap_offset only when asked
 * (MLX5DV_QP_MASK_UAR_MMAP_OFFSET), comp_mask saying what was filled.
 * CQ: buf, dbrec, cqe_cnt, cqe_size, cq_uar (the context's CQ UAR), cqn;
 * the CQ becomes DV-owned. Other objects: not modelled.
 */
MM_EXPORT int mlx5dv_init_obj(struct mlx5dv_obj *obj, uint64_t type)
{
	MM_FORWARD(int, mlx5dv_init_obj, (struct mlx5dv_obj *, uint64_t), (obj, type));
	if (type & ~(uint64_t)(MLX5DV_OBJ_QP | MLX5DV_OBJ_CQ))
		return EOPNOTSUPP;
	if (type & MLX5DV_OBJ_QP) {
		struct mm_qp *qp = (struct mm_qp *)obj->qp.in;
		uint64_t want = obj->qp.out->comp_mask, got = 0;

		*obj->qp.out = qp->dv;
		if (want & MLX5DV_QP_MASK_UAR_MMAP_OFFSET)
			got |= MLX5DV_QP_MASK_UAR_MMAP_OFFSET;
		else
			obj->qp.out->uar_mmap_offset = 0;
		obj->qp.out->comp_mask = got;
	}
	if (type & MLX5DV_OBJ_CQ) {
		struct mm_cq *cq = (struct mm_cq *)obj->cq.in;

		*obj->cq.out = cq->dv;
		obj->cq.out->comp_mask = 0;
		cq->dv_owned = 1;
	}
	return 0;
}

/* ---- async events ---- */

/*
 * ibv_get_async_event (libibverbs/verbs.c): one event from the context's
 * async fd (EAGAIN on a non-blocking fd when none), its element the
 * verbs object; events of objects destroyed meanwhile are not reported
 * (the kernel drops the events of a destroyed uobject).
 */
MM_EXPORT int ibv_get_async_event(struct ibv_context *ctx, struct ibv_async_event *ev)
{
	struct mm_ctx *c;
	struct emu_async_event e;
	uint64_t n;

	MM_FORWARD(int, ibv_get_async_event,
	           (struct ibv_context *, struct ibv_async_event *), (ctx, ev));
	c = mm_ctx(ctx);
	for (;;) {
		if (read(ctx->async_fd, &n, sizeof(n)) != sizeof(n))
			return -1;
		pthread_mutex_lock(&c->lock);
		if (c->async_head == c->async_tail) {
			pthread_mutex_unlock(&c->lock);
			continue;
		}
		e = c->async_ring[c->async_head++ % MM_ASYNC_RING];
		memset(ev, 0, sizeof(*ev));
		ev->event_type = e.type;
		switch (e.type) {
		case IBV_EVENT_CQ_ERR:
			if (e.cqn < MM_MAX_CQ && c->cqs[e.cqn])
				ev->element.cq = (struct ibv_cq *)&c->cqs[e.cqn]->cq;
			break;
		case IBV_EVENT_QP_FATAL:
		case IBV_EVENT_QP_REQ_ERR:
		case IBV_EVENT_QP_ACCESS_ERR:
			if (e.qpn - SSQ_EMU_QPN_BASE < MM_MAX_QP &&
			    c->qps[e.qpn - SSQ_EMU_QPN_BASE])
				ev->element.qp = &c->qps[e.qpn - SSQ_EMU_QPN_BASE]->qp;
			break;
		default:
			break;
		}
		pthread_mutex_unlock(&c->lock);
		if (ev->element.cq || ev->element.qp)
			return 0;
	}
}

MM_EXPORT void ibv_ack_async_event(struct ibv_async_event *ev)
{
	if (!mm_on()) {
		void (*real)(struct ibv_async_event *) =
		    (void (*)(struct ibv_async_event *))dlsym(RTLD_NEXT,
		                                              "ibv_ack_async_event");

		if (real)
			real(ev);
		return;
	}
	/* events_completed counts only for destroy's wait, not modelled. */
}
