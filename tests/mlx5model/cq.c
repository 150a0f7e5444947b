/* SPDX-License-Identifier: MIT */
/*
 * CQs as libmlx5 44 and mlx5_ib make them (sizes, buffers, flags), their
 * resize as the device and libmlx5 do it, completion channels, arming
 * and completion events.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <ssq/cq.h>
#include "mlx5model.h"

/* align_queue_size (providers/mlx5/verbs.c): the next power of two. */
static uint32_t align_queue_size(uint64_t n)
{
	uint32_t s = 1;

	while (s < n && s < (1u << 31))
		s <<= 1;
	return s;
}

/*
 * ibv_create_comp_channel: an fd readable while an event waits
 * (ib_uverbs_create_comp_channel, uverbs_main.c ib_uverbs_event_poll),
 * one count per event.
 */
MM_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *ctx)
{
	struct ibv_comp_channel *ch;

	MM_FORWARD(struct ibv_comp_channel *, ibv_create_comp_channel,
	           (struct ibv_context *), (ctx));
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return mm_fail(ENOMEM);
	ch->context = ctx;
	ch->fd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
	if (ch->fd < 0) {
		free(ch);
		return mm_fail(EMFILE);
	}
	return ch;
}

/* libibverbs/verbs.c ibv_destroy_comp_channel: EBUSY while a CQ uses it. */
MM_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	MM_FORWARD(int, ibv_destroy_comp_channel, (struct ibv_comp_channel *), (ch));
	if (ch->refcnt)
		return EBUSY;
	close(ch->fd);
	free(ch);
	return 0;
}

/*
 * create_cq (providers/mlx5/verbs.c, v44) then mlx5_ib_create_cq
 * (drivers/infiniband/hw/mlx5/cq.c):
 *  - cqe 0, comp_mask past FLAGS | PD, flags past SINGLE_THREADED |
 *    IGNORE_OVERRUN, wc_flags: EINVAL (wc_flags other than 0 are not
 *    modelled: refused, stricter);
 *  - ncqe = align_queue_size(cqe + 1), EINVAL past 1 << 24; the kernel
 *    refuses more than 1 << log_max_cq_sz entries (max_cqe + 1);
 *  - comp_vector below num_comp_vectors (the kernel's check);
 *  - the buffer: align(ncqe * 64, page) through the allocator
 *    (mlx5_alloc_cq_buf), every CQE MLX5_CQE_INVALID; the doorbell record
 *    from mlx5_alloc_dbrec; IGNORE_OVERRUN sets the CQ context's oi bit.
 */
struct ibv_cq_ex *mm_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *a)
{
	struct mm_ctx *c = mm_ctx(ctx);
	struct emu_dev_caps caps;
	struct emu_cq_attr ea;
	struct mm_cq *cq;
	uint32_t ncqe;
	int rc, h, uar = -1;

	if (c->imported)
		return mm_fail(EOPNOTSUPP);
	if (!a->cqe || a->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS |
	                                          IBV_CQ_INIT_ATTR_MASK_PD))
		return mm_fail(EINVAL);
	if (a->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS &&
	    a->flags & ~(uint32_t)(IBV_CREATE_CQ_ATTR_SINGLE_THREADED |
	                           IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN))
		return mm_fail(EINVAL);
	if (a->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD || a->wc_flags)
		return mm_fail(EOPNOTSUPP); /* not modelled */
	if (a->comp_vector >= (uint32_t)ctx->num_comp_vectors)
		return mm_fail(EINVAL);
	emu_query_caps(&caps);
	ncqe = align_queue_size((uint64_t)a->cqe + 1);
	if (ncqe > (1u << 24) || ncqe < a->cqe + 1 || ncqe - 1 > caps.max_cqe)
		return mm_fail(EINVAL);
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return mm_fail(ENOMEM);
	memset(&ea, 0, sizeof(ea));
	pthread_mutex_lock(&c->lock);
	ea.buf = mm_buf_alloc(c, (size_t)ncqe * 64);
	ea.dbrec = mm_dbrec_alloc(c);
	ea.cqe_cnt = ncqe;
	ea.ignore_overrun = a->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS &&
	                    a->flags & IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
	uar = mm_uar_alloc(c);
	rc = ea.buf && ea.dbrec && uar >= 0
	         ? -emu_create_cq(c->dev, &ea, &cq->ecq, &cq->dv)
	         : ENOMEM;
	if (!rc && cq->dv.cqn >= MM_MAX_CQ)
		rc = ENOMEM;
	h = rc ? -1 : mm_handle_alloc(c, MM_OBJ_CQ, cq);
	if (!rc && h < 0)
		rc = ENOMEM;
	if (rc) {
		if (cq->ecq)
			emu_destroy_cq(cq->ecq);
		if (ea.buf)
			mm_buf_free(c, ea.buf);
		if (uar >= 0)
			mm_uar_free(c, (unsigned)uar);
		pthread_mutex_unlock(&c->lock);
		free(cq);
		return mm_fail(rc);
	}
	cq->dv.cq_uar = c->uar + (size_t)uar * MM_PAGE;
	*(uint64_t *)((uint8_t *)cq->dv.cq_uar + MLX5_CQ_DOORBELL) = MM_NO_STORE;
	cq->uar_index = (unsigned)uar;
	c->cqs[cq->dv.cqn] = cq;
	pthread_mutex_unlock(&c->lock);
	cq->cq.context = ctx;
	cq->cq.channel = a->channel;
	cq->cq.cq_context = a->cq_context;
	cq->cq.handle = (uint32_t)h;
	cq->cq.cqe = (int)ncqe - 1;
	pthread_mutex_init(&cq->cq.mutex, NULL);
	pthread_cond_init(&cq->cq.cond, NULL);
	if (a->channel)
		__atomic_add_fetch(&a->channel->refcnt, 1, __ATOMIC_RELAXED);
	return &cq->cq;
}

/*
 * ibv_destroy_cq (libibverbs/cmd_cq.c): the kernel refuses while a QP uses
 * the CQ (EBUSY); libibverbs then waits until every event got was acked
 * (ibv_ack_cq_events(3)): the model says EBUSY instead of hanging.
 */
MM_EXPORT int ibv_destroy_cq(struct ibv_cq *ibcq)
{
	struct mm_cq *cq = (struct mm_cq *)ibcq;
	struct mm_ctx *c;
	int rc;

	MM_FORWARD(int, ibv_destroy_cq, (struct ibv_cq *), (ibcq));
	c = mm_ctx(ibcq->context);
	if (__atomic_load_n(&cq->events_got, __ATOMIC_RELAXED) !=
	    ibcq->comp_events_completed) {
		fprintf(stderr,
		        "mlx5model: ibv_destroy_cq with %u events not acked: "
		        "libibverbs would wait for ever\n",
		        cq->events_got - ibcq->comp_events_completed);
		return EBUSY;
	}
	pthread_mutex_lock(&c->lock);
	rc = -emu_destroy_cq(cq->ecq);
	if (rc) {
		pthread_mutex_unlock(&c->lock);
		return rc;
	}
	c->cqs[cq->dv.cqn] = NULL;
	mm_uar_free(c, cq->uar_index);
	mm_handle_free(c, ibcq->handle);
	mm_buf_free(c, cq->dv.buf);
	pthread_mutex_unlock(&c->lock);
	if (ibcq->channel)
		__atomic_sub_fetch(&ibcq->channel->refcnt, 1, __ATOMIC_RELAXED);
	free(cq);
	return 0;
}

/* sw_ownership_bit, is_hw (providers/mlx5/cq.c). */
static int is_hw(uint8_t own, uint32_t i, uint32_t cnt)
{
	return (own & MLX5_CQE_OWNER_MASK) ^ !!(i & cnt);
}

/*
 * mlx5_cq_resize_copy_cqes (providers/mlx5/cq.c, v44), as it is: from
 * libmlx5's cons_index (which a CQ polled through mlx5dv never moves) up
 * to the RESIZE_CQ CQE, old CQE i goes to new slot i + 1, then
 * ++cons_index, stepping over the resize CQE.
 */
static void resize_copy_cqes(struct mm_cq *cq, uint8_t *old, uint32_t old_cnt)
{
	uint32_t i = cq->cons_index, start = i & (old_cnt - 1);
	struct mlx5_cqe64 *s = (struct mlx5_cqe64 *)old + (i & (old_cnt - 1));

	if (is_hw(s->op_own, i, old_cnt)) {
		fprintf(stderr, "mlx5model: resize: expected cqe in sw ownership\n");
		return;
	}
	while ((s->op_own >> 4) != MLX5_CQE_RESIZE_CQ) {
		struct mlx5_cqe64 *d =
		    (struct mlx5_cqe64 *)cq->dv.buf + ((i + 1) & (cq->dv.cqe_cnt - 1));
		uint8_t sw = !!((i + 1) & cq->dv.cqe_cnt);

		memcpy(d, s, 64);
		d->op_own = (uint8_t)((d->op_own & ~MLX5_CQE_OWNER_MASK) | sw);
		++i;
		s = (struct mlx5_cqe64 *)old + (i & (old_cnt - 1));
		if (is_hw(s->op_own, i, old_cnt)) {
			fprintf(stderr,
			        "mlx5model: resize: expected cqe in sw ownership\n");
			return;
		}
		if ((i & (old_cnt - 1)) == start) {
			fprintf(stderr,
			        "mlx5model: resize CQ failed to get resize CQE\n");
			return;
		}
	}
	++cq->cons_index;
}

/*
 * mlx5_resize_cq (providers/mlx5/verbs.c, v44): cqe < 0 EINVAL; the same
 * rounded size is a no-op; a new buffer from the allocator
 * (mlx5_alloc_cq_buf), the kernel's resize (mlx5_ib_resize_cq: the
 * device writes a RESIZE_CQ CQE in the old buffer and goes on in the new
 * one, emu_resize_cq), the copy above, the old buffer freed.
 */
MM_EXPORT int ibv_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct mm_cq *cq = (struct mm_cq *)ibcq;
	struct emu_dev_caps caps;
	struct mm_ctx *c;
	uint32_t ncqe, old_cnt;
	uint8_t *old, *buf;
	int rc;

	MM_FORWARD(int, ibv_resize_cq, (struct ibv_cq *, int), (ibcq, cqe));
	c = mm_ctx(ibcq->context);
	if (cqe < 0 || (long long)cqe * 64 > INT32_MAX) {
		errno = EINVAL;
		return EINVAL;
	}
	ncqe = align_queue_size((uint64_t)cqe + 1);
	if (ncqe == (uint32_t)ibcq->cqe + 1)
		return 0;
	emu_query_caps(&caps);
	if (ncqe - 1 > caps.max_cqe) {
		errno = EINVAL;
		return EINVAL;
	}
	pthread_mutex_lock(&c->lock);
	buf = mm_buf_alloc(c, (size_t)ncqe * 64);
	if (!buf) {
		pthread_mutex_unlock(&c->lock);
		errno = ENOMEM;
		return ENOMEM;
	}
	old = cq->dv.buf;
	old_cnt = cq->dv.cqe_cnt;
	rc = -emu_resize_cq(cq->ecq, buf, ncqe, &cq->dv);
	if (rc) {
		mm_buf_free(c, buf);
		pthread_mutex_unlock(&c->lock);
		errno = rc;
		return rc;
	}
	resize_copy_cqes(cq, old, old_cnt);
	mm_buf_free(c, old);
	ibcq->cqe = (int)ncqe - 1;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/*
 * mlx5_arm_cq (providers/mlx5/cq.c): the arm word sn << 28 | cmd | ci
 * (ci = libmlx5's cons_index) into the arm doorbell record, then the word
 * and the CQN as one 64-bit store to the CQ UAR at MLX5_CQ_DOORBELL,
 * which the model's NIC thread takes (uar.c) as it takes ssq's own.
 */
int mm_req_notify_cq(struct ibv_cq *ibcq, int solicited)
{
	struct mm_cq *cq = (struct mm_cq *)ibcq;
	uint32_t word =
	    (cq->armed_sn & 3) << 28 |
	    (uint32_t)(solicited ? MLX5_CQ_DB_REQ_NOT_SOL : MLX5_CQ_DB_REQ_NOT) |
	    (cq->cons_index & 0xffffff);
	__be32 db[2] = { htobe32(word), htobe32(cq->dv.cqn) };
	uint64_t v;

	cq->dv.dbrec[SSQ_CQ_ARM_DB] = htobe32(word);
	/* The record before the UAR store that makes the device read it. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	memcpy(&v, db, 8);
	__atomic_store_n((uint64_t *)((uint8_t *)cq->dv.cq_uar + MLX5_CQ_DOORBELL), v,
	                 __ATOMIC_RELEASE);
	return 0;
}

/*
 * ibv_get_cq_event (libibverbs/verbs.c): one event from the channel's fd
 * (blocking unless the caller made it O_NONBLOCK: EAGAIN then), naming
 * the CQ; libmlx5's mlx5_cq_event bumps the CQ's arm sequence.
 */
MM_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cqp,
                               void **cq_context)
{
	struct mm_ctx *c;
	uint64_t n;
	unsigned i;

	MM_FORWARD(int, ibv_get_cq_event,
	           (struct ibv_comp_channel *, struct ibv_cq **, void **),
	           (ch, cqp, cq_context));
	c = mm_ctx(ch->context);
	if (read(ch->fd, &n, sizeof(n)) != sizeof(n))
		return -1; /* errno from read: EAGAIN on a non-blocking fd */
	pthread_mutex_lock(&c->lock);
	for (i = 0; i < MM_MAX_CQ; i++) {
		struct mm_cq *cq = c->cqs[i];

		if (!cq || cq->cq.channel != ch || !cq->armed ||
		    emu_cq_arm_pending(cq->ecq) != 0)
			continue;
		mm_trace("pid %d CQ 0x%x event\n", (int)getpid(), cq->dv.cqn);
		cq->armed = 0;
		cq->armed_sn++;
		cq->events_got++;
		pthread_mutex_unlock(&c->lock);
		*cqp = (struct ibv_cq *)&cq->cq;
		*cq_context = cq->cq.cq_context;
		return 0;
	}
	pthread_mutex_unlock(&c->lock);
	/* A count with no CQ behind it: its CQ was destroyed meanwhile. */
	errno = EAGAIN;
	return -1;
}

MM_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int n)
{
	if (!mm_on()) {
		void (*real)(struct ibv_cq *, unsigned int) =
		    (void (*)(struct ibv_cq *, unsigned int))dlsym(RTLD_NEXT,
		                                                   "ibv_ack_cq_events");

		if (real)
			real(cq, n);
		return;
	}
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += n;
	pthread_mutex_unlock(&cq->mutex);
}
