/* SPDX-License-Identifier: MIT */
/*
 * The ConnectX backend: libibverbs for the objects, mlx5dv for their raw
 * layout. Every queue buffer and doorbell record lands in the arena through
 * the context-wide buffer-allocator hook (MLX5DV_CTX_ATTR_BUF_ALLOCATORS, as
 * DPDK's mlx5 driver registers mlx5_alloc_verbs_buf), so clients reach them
 * by mapping the arena; clients reach the UAR by mapping the device's
 * command fd at uar_mmap_offset, as DPDK's secondary processes do.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "ctrl/backend/backend.h"
#include "ctrl/proto/msg.h"
#include "ctrl/backend/mlx5_cq_arm.h"
#include "ctrl/backend/mlx5_pvt.h"

/* libmlx5 asks for page-aligned buffers; the arena's bump allocator serves them. */
static void *arena_buf_alloc(size_t size, void *data)
{
	return shm_arena_alloc((struct shm_arena *)data, size,
	                       (size_t)sysconf(_SC_PAGESIZE));
}

/* Arena memory lives as long as ssqd: nothing to give back piecewise. */
static void arena_buf_free(void *ptr, void *data)
{
	(void)ptr;
	(void)data;
}

/* A completion channel whose fd never blocks; NULL if none could be had. */
static struct ibv_comp_channel *comp_channel_nonblock(struct ibv_context *ctx)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	int fl;

	if (ch && ((fl = fcntl(ch->fd, F_GETFL)) < 0 ||
	           fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK) < 0)) {
		ibv_destroy_comp_channel(ch);
		ch = NULL;
	}
	return ch;
}

static int mlx5_open(struct ssqd_backend **bp, const char *dev, struct shm_arena *arena,
                     const struct ssqd_backend_conf *conf, char *why, size_t whylen)
{
	struct mlx5dv_ctx_allocators al = { arena_buf_alloc, arena_buf_free, arena };
	struct ibv_device **list, *found = NULL;
	struct ssqd_backend *b;
	int n = 0, i, rc, fl;

	(void)conf; /* its settings are the emulated device's */
	list = ibv_get_device_list(&n);
	if (!list) {
		/* No RDMA subsystem at all (ENOSYS): say what that means here. */
		snprintf(why, whylen,
		         "device %s not found: no RDMA devices on this host (%s); "
		         "--device emu runs on the emulated device",
		         dev ? dev : "mlx5", strerror(errno));
		return -ENODEV;
	}
	for (i = 0; i < n; i++) {
		const char *name = ibv_get_device_name(list[i]);

		if ((dev && !strcmp(name, dev)) ||
		    (!dev && mlx5dv_is_supported(list[i]))) {
			found = list[i];
			break;
		}
	}
	if (!found || !mlx5dv_is_supported(found)) {
		snprintf(why, whylen, "%s%s %s", dev ? "device " : "",
		         dev ? dev : "an mlx5 device",
		         found ? "is not an mlx5 device (mlx5dv_is_supported)"
		               : "not found among the RDMA devices (ssqd --list-devices "
		                 "lists them; --device emu runs on the emulated device)");
		ibv_free_device_list(list);
		return -ENODEV;
	}
	b = calloc(1, sizeof(*b));
	if (!b) {
		ibv_free_device_list(list);
		return -ENOMEM;
	}
	b->arena = arena;
	b->ctx = ibv_open_device(found);
	ibv_free_device_list(list);
	if (!b->ctx) {
		rc = -errno;
		snprintf(why, whylen, "ibv_open_device(%s): %s", dev ? dev : "mlx5",
		         strerror(errno));
		free(b);
		return rc;
	}
	rc = mlx5dv_set_context_attr(b->ctx, MLX5DV_CTX_ATTR_BUF_ALLOCATORS, &al);
	if (rc) {
		snprintf(why, whylen, "mlx5dv_set_context_attr(BUF_ALLOCATORS): %s",
		         strerror(rc));
		ibv_close_device(b->ctx);
		free(b);
		return -rc;
	}
	/*
	 * Async events are read from ssqd's poll loop, which must not block:
	 * ibv_get_async_event then fails with EAGAIN when none is pending
	 * (ibv_get_async_event(3)).
	 */
	fl = fcntl(b->ctx->async_fd, F_GETFL);
	if (fl < 0 || fcntl(b->ctx->async_fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		rc = -errno;
		snprintf(why, whylen, "async event fd to non-blocking: %s",
		         strerror(errno));
		ibv_close_device(b->ctx);
		free(b);
		return rc;
	}
	b->pd = ibv_alloc_pd(b->ctx);
	if (!b->pd) {
		rc = -errno;
		snprintf(why, whylen, "ibv_alloc_pd: %s", strerror(errno));
		ibv_close_device(b->ctx);
		free(b);
		return rc;
	}
	/* Read by the receive poller between naps: must not block either. */
	b->rx_chan = comp_channel_nonblock(b->ctx);
	/* Read by the send-arm thread after its poll says ready. */
	b->tx_chan = comp_channel_nonblock(b->ctx);
	*bp = b;
	return 0;
}

/*
 * A CQ of @cqe entries that ignores overruns: its consumer-index record is
 * in the arena every client maps read-write, and with overrun checking on,
 * one store there (an index a ring back) makes the next CQE an overrun and
 * stops the CQ for good (IBV_EVENT_CQ_ERR). ssq never needs the check: the
 * send CQ holds a CQE per WQEBB of the ring (shm_scq_cqes), the receive CQ
 * one per receive WQE. libibverbs' ibv_cmd_create_cq_ex (cmd_cq.c) passes
 * the flag as IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN, libmlx5's create_cq
 * (providers/mlx5/verbs.c, CREATE_CQ_SUPPORTED_FLAGS) accepts it, and
 * mlx5_ib_create_cq (drivers/infiniband/hw/mlx5/cq.c) sets the CQ
 * context's oi bit. Neither libmlx5 nor mlx5_ib_create_cq checks the
 * device's cq_oi capability first, so a device without it would refuse
 * the CQ with EINVAL: then it is made again without the flag, which the
 * sizing above already keeps from overrunning (only a client's scribbled
 * consumer index could still stop it).
 */
static struct ibv_cq *create_cq(struct ibv_context *ctx, uint32_t cqe,
                                struct ibv_comp_channel *chan)
{
	struct ibv_cq_init_attr_ex a;
	struct ibv_cq_ex *cq;

	memset(&a, 0, sizeof(a));
	a.cqe = cqe;
	a.channel = chan; /* NULL: no events */
	a.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	a.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
	cq = ibv_create_cq_ex(ctx, &a);
	if (!cq && errno == EINVAL) {
		a.comp_mask = 0;
		a.flags = 0;
		cq = ibv_create_cq_ex(ctx, &a);
		if (cq)
			fprintf(stderr, "ssqd: the device refuses CQs that ignore "
			                "overruns (no cq_oi?): made without\n");
	}
	return cq ? ibv_cq_ex_to_cq(cq) : NULL;
}

/* mlx5dv_init_obj of a CQ, and a check that libmlx5 put it in the arena. */
static int cq_obj(struct ssqd_backend *b, struct ibv_cq *cq, struct mlx5dv_cq *out)
{
	struct mlx5dv_obj obj;
	int rc;

	memset(&obj, 0, sizeof(obj));
	obj.cq.in = cq;
	obj.cq.out = out;
	rc = mlx5dv_init_obj(&obj, MLX5DV_OBJ_CQ);
	if (rc)
		return rc;
	if (!inside(b->arena, out->buf, (size_t)out->cqe_cnt * out->cqe_size) ||
	    !inside(b->arena, out->dbrec, 8))
		return EFAULT;
	return 0;
}

static int mlx5_create_queue(struct ssqd_backend *b, const struct ssqd_sq_request *sq,
                             uint32_t cqes, uint32_t rq_wqes, uint8_t port,
                             struct ssqd_bqueue *q, char *why, size_t whylen)
{
	uint32_t rcqes = shm_rcq_cqes(rq_wqes), scqes, predicted;
	struct ssqd_sq_request req = *sq;
	struct mlx5dv_qp_init_attr dv;
	struct ibv_qp_init_attr_ex init;
	struct ibv_device_attr da;
	struct mlx5dv_obj obj;
	struct mlx5_queue *mq;
	int rc;

	if (b->nqueues == MAX_QUEUES) {
		snprintf(why, whylen, "at most %d queues per device", MAX_QUEUES);
		return -ENOSPC;
	}
	rc = ibv_query_device(b->ctx, &da);
	if (rc) {
		snprintf(why, whylen, "ibv_query_device: %s", strerror(rc));
		return -rc;
	}
	/* Atomics only where the device has them (mlx5_qp_fill_wr_pfns refuses them). */
	if (da.atomic_cap == IBV_ATOMIC_NONE)
		req.send_ops &= ~(uint64_t)SSQD_SEND_ATOMIC_OPS;
	/*
	 * The ring libmlx5 will make, known now (sq_predict.c), and cut to
	 * the device's max_qp_wr WQEBBs (--sq-size 65536 on a ConnectX whose
	 * log_max_qp_sz is 15 would be EINVAL in mlx5_calc_sq_size).
	 */
	rc = ssqd_sq_clamp(&req, (uint32_t)da.max_qp_wr, &predicted);
	if (rc) {
		snprintf(why, whylen,
		         "an SQ of %u send WRs of %u SGEs / %u inline bytes: libmlx5 "
		         "refuses it (device max_qp_wr %d)",
		         sq->max_send_wr, sq->max_send_sge, sq->max_inline_data,
		         da.max_qp_wr);
		return rc;
	}
	if (req.max_send_wr != sq->max_send_wr)
		fprintf(
		    stderr,
		    "ssqd: the SQ cut to %u WQEBBs (%u WRs): the device takes at most "
		    "%d WQEBBs per SQ (max_qp_wr)\n",
		    predicted, req.max_send_wr, da.max_qp_wr);
	/*
	 * The send CQ at its final size from the start. Never ibv_resize_cq:
	 * the device writes a RESIZE CQE at the old buffer's producer index
	 * and libmlx5 steps its consumer index past it (providers/mlx5/
	 * verbs.c mlx5_resize_cq, cq.c mlx5_cq_resize_copy_cqes copying old
	 * CQE i to new slot i + 1; the kernel's copy_resize_cqes likewise), so
	 * the first real CQE lands in slot 1 while ssq polls slot 0 (its
	 * consumer index starts at 0, and mlx5dv_cq has no cons_index).
	 */
	scqes = shm_scq_cqes(predicted, cqes);
	if (rq_wqes > (uint32_t)da.max_qp_wr || rcqes > (uint32_t)da.max_cqe ||
	    scqes > (uint32_t)da.max_cqe + 1) {
		snprintf(why, whylen,
		         "--recv-depth %u / an SQ of %u WQEBBs: the device takes at most "
		         "%d receive WQEs per QP and %d CQEs per CQ",
		         rq_wqes, predicted, da.max_qp_wr, da.max_cqe);
		return -EINVAL;
	}
	mq = &b->queues[b->nqueues];
	memset(q, 0, sizeof(*q));
	/* libmlx5's mlx5_create_cq makes align_queue_size(cqe + 1) slots. */
	mq->cq = create_cq(b->ctx, scqes - 1, b->tx_chan);
	if (!mq->cq) {
		rc = -errno;
		snprintf(why, whylen, "ibv_create_cq_ex(%u): %s", scqes, strerror(errno));
		return rc;
	}
	mq->rcq = create_cq(b->ctx, rcqes - 1, b->rx_chan);
	if (!mq->rcq) {
		rc = -errno;
		snprintf(why, whylen, "ibv_create_cq_ex(%u) for receives: %s", rcqes,
		         strerror(errno));
		ibv_destroy_cq(mq->cq);
		return rc;
	}
	/*
	 * Naming the send ops: without them libmlx5 sizes every WQE for
	 * BIND_MW and LOCAL_INV too (providers/mlx5/verbs.c, sq_overhead),
	 * which ssq never builds.
	 */
	memset(&init, 0, sizeof(init));
	init.send_cq = mq->cq;
	init.recv_cq = mq->rcq;
	init.qp_type = IBV_QPT_RC;
	init.cap.max_send_wr = req.max_send_wr;
	init.cap.max_recv_wr = rq_wqes ? rq_wqes : 1;
	init.cap.max_send_sge = req.max_send_sge;
	init.cap.max_recv_sge = 1;
	init.cap.max_inline_data = req.max_inline_data;
	init.comp_mask = IBV_QP_INIT_ATTR_PD;
	init.pd = b->pd;
	if (req.send_ops) {
		init.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		init.send_ops_flags = req.send_ops;
	}
	/*
	 * Responder scatter-to-CQE off. libmlx5 asks for it on every QP
	 * unless MLX5_SCATTER_TO_CQE=0 (verbs.c create_qp, use_scatter_to_cqe),
	 * and for an RC QP with 64-byte CQEs the kernel then sets cs_res =
	 * MLX5_RES_SCAT_DATA32_CQE (drivers/infiniband/hw/mlx5/qp.c,
	 * configure_responder_scat_cqe): a SEND of at most 32 bytes lands in
	 * the CQE, flagged MLX5_INLINE_SCATTER_32 in op_own, and only
	 * libmlx5's poller copies it to the receive buffer (cq.c
	 * handle_responder -> mlx5_copy_to_recv_wqe, by the WQE's address as
	 * a VA). ssqd reaps its receive CQ through mlx5dv and its receive
	 * WQEs hold arena IOVAs, the case mlx5dv_create_qp(3) says the flag
	 * is for. mlx5dv_create_qp takes the same ibv_qp_init_attr_ex, send
	 * ops included (v44 verbs.c create_qp is the one both call).
	 */
	memset(&dv, 0, sizeof(dv));
	dv.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS;
	dv.create_flags = MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE;
	mq->qp = mlx5dv_create_qp(b->ctx, &init, &dv);
	if (!mq->qp) {
		rc = -errno;
		snprintf(why, whylen,
		         "mlx5dv_create_qp(RC, %u send WRs of %u SGEs / %u inline bytes, "
		         "send ops 0x%llx, %u receive WRs, no scatter to CQE): %s",
		         req.max_send_wr, req.max_send_sge, req.max_inline_data,
		         (unsigned long long)init.send_ops_flags, init.cap.max_recv_wr,
		         strerror(errno));
		ibv_destroy_cq(mq->rcq);
		ibv_destroy_cq(mq->cq);
		return rc;
	}
	memset(&obj, 0, sizeof(obj));
	q->dv_qp.comp_mask = MLX5DV_QP_MASK_UAR_MMAP_OFFSET;
	obj.qp.in = mq->qp;
	obj.qp.out = &q->dv_qp;
	rc = mlx5dv_init_obj(&obj, MLX5DV_OBJ_QP);
	if (rc || !(q->dv_qp.comp_mask & MLX5DV_QP_MASK_UAR_MMAP_OFFSET)) {
		snprintf(why, whylen, "mlx5dv_init_obj: %s",
		         rc ? strerror(rc) : "no uar_mmap_offset");
		goto fail;
	}
	if (q->dv_qp.sq.wqe_cnt > predicted) {
		snprintf(why, whylen,
		         "libmlx5 made an SQ of %u WQEBBs where %u were predicted "
		         "(src/ctrl/backend/sq_predict.c): the send CQ of %u CQEs "
		         "could overrun; refusing rather than resizing it",
		         q->dv_qp.sq.wqe_cnt, predicted, scqes);
		rc = ERANGE;
		goto fail;
	}
	rc = cq_obj(b, mq->cq, &q->dv_cq);
	if (!rc)
		rc = cq_obj(b, mq->rcq, &q->dv_rcq);
	if (!rc && q->dv_cq.cqe_cnt < shm_scq_cqes(q->dv_qp.sq.wqe_cnt, cqes))
		rc = ENOSPC;
	if (rc) {
		snprintf(why, whylen, "send or receive CQ: %s",
		         rc == EFAULT   ? "libmlx5 placed it outside the shared arena"
		         : rc == ENOSPC ? "fewer CQEs than the SQ can have outstanding"
		                        : strerror(rc));
		goto fail;
	}
	if (!inside(b->arena, q->dv_qp.sq.buf, (size_t)q->dv_qp.sq.wqe_cnt * 64) ||
	    !inside(b->arena, q->dv_qp.rq.buf,
	            (size_t)q->dv_qp.rq.wqe_cnt * q->dv_qp.rq.stride) ||
	    !inside(b->arena, q->dv_qp.dbrec, 8)) {
		snprintf(why, whylen,
		         "libmlx5 placed queue buffers outside the shared arena "
		         "(buffer allocator hook not honoured)");
		rc = EFAULT;
		goto fail;
	}
	q->qpn = mq->qp->qp_num;
	mq->cqn = q->dv_cq.cqn;
	mq->rcqn = q->dv_rcq.cqn;
	/* Sequence 0, not armed: as libmlx5's create_cq starts a CQ. */
	mq->rx = (struct cq_arm){ .cq = mq->rcq, .dv = q->dv_rcq };
	mq->tx = (struct cq_arm){ .cq = mq->cq, .dv = q->dv_cq };
	mq->bq = q;
	mq->no_atomics = da.atomic_cap == IBV_ATOMIC_NONE;
	/* What libmlx5 made of the request (mlx5_calc_sq_size writes it back). */
	q->max_inline = init.cap.max_inline_data;
	q->max_sge = init.cap.max_send_sge;
	q->port = port;
	q->impl = mq;
	b->nqueues++;
	return 0;
fail:
	ibv_destroy_qp(mq->qp);
	ibv_destroy_cq(mq->rcq);
	ibv_destroy_cq(mq->cq);
	return -(rc ? rc : EINVAL);
}

static int mlx5_modify_qp(struct ssqd_backend *b, struct ssqd_bqueue *q,
                          struct ibv_qp_attr *attr, int mask)
{
	struct mlx5_queue *mq = q->impl;
	struct ibv_qp_attr a = *attr;

	(void)b;
	/*
	 * No remote atomics on a device without them: mlx5_ib's
	 * set_qpc_atomic_flags (drivers/infiniband/hw/mlx5/qp.c) fails the
	 * transition with EOPNOTSUPP when get_atomic_mode finds none, and
	 * ssqd_qp_attr_init asks for SSQD_ACCESS_ALL on every device.
	 */
	if (mq->no_atomics && (mask & IBV_QP_ACCESS_FLAGS))
		a.qp_access_flags &= ~(unsigned)IBV_ACCESS_REMOTE_ATOMIC;
	return -ibv_modify_qp(mq->qp, &a, mask);
}

/* Cap a device limit at what a uint8_t QP attribute can carry. */
static uint8_t cap_u8(int v)
{
	return v < 0 ? 0 : v > 255 ? 255 : (uint8_t)v;
}

/*
 * Port @port's filled GID entries into @tab, through ibv_query_gid_table
 * (rdma-core 32+: one call for the whole device's @total entries, empty
 * ones left out, each with its type), never ibv_query_gid, which hands
 * back a zero GID for an empty entry (libibverbs/verbs.c keeps that
 * behaviour of the old API). Returns how many, or -errno with @why.
 */
static int gid_table(struct ssqd_backend *b, uint8_t port, size_t total,
                     struct ssqd_gid *tab, unsigned max, char *why, size_t whylen)
{
	struct ibv_gid_entry *all;
	ssize_t got;
	unsigned n = 0;
	int i;

	all = calloc(total, sizeof(*all));
	if (!all)
		return -ENOMEM;
	got = ibv_query_gid_table(b->ctx, all, total, 0);
	if (got < 0) {
		snprintf(why, whylen, "ibv_query_gid_table (port %u): %s", port,
		         strerror((int)-got));
		free(all);
		return (int)got;
	}
	for (i = 0; i < got && n < max; i++) {
		if (all[i].port_num != port)
			continue;
		tab[n].index = all[i].gid_index;
		tab[n].type = all[i].gid_type;
		memcpy(tab[n].raw, all[i].gid.raw, 16);
		n++;
	}
	free(all);
	return (int)n;
}

static int mlx5_query_port(struct ssqd_backend *b, uint8_t port, int gid_index,
                           struct ssqd_port_info *pi, char *why, size_t whylen)
{
	struct ssqd_gid tab[256];
	struct ibv_port_attr pa;
	struct ibv_device_attr da;
	int rc, n;

	memset(pi, 0, sizeof(*pi));
	rc = ibv_query_port(b->ctx, port, &pa);
	if (!rc)
		rc = ibv_query_device(b->ctx, &da);
	if (rc) {
		snprintf(why, whylen, "querying port %u: %s", port, strerror(rc));
		return -rc;
	}
	pi->link_layer = pa.link_layer == IBV_LINK_LAYER_ETHERNET
	                     ? IBV_LINK_LAYER_ETHERNET
	                     : IBV_LINK_LAYER_INFINIBAND;
	pi->active_mtu = pa.active_mtu;
	pi->lid = pa.lid;
	pi->max_init_rd_atom = cap_u8(da.max_qp_init_rd_atom);
	pi->max_resp_rd_atom = cap_u8(da.max_qp_rd_atom);
	/* Room for every port's whole table: the kernel refuses a smaller array. */
	n = gid_table(b, port,
	              (size_t)(pa.gid_tbl_len > 0 ? pa.gid_tbl_len : 1) *
	                  (da.phys_port_cnt ? da.phys_port_cnt : 1),
	              tab, sizeof(tab) / sizeof(tab[0]), why, whylen);
	if (n < 0)
		return n;
	return ssqd_port_gid(pi, gid_index, tab, (unsigned)n, why, whylen);
}

static int mlx5_uar_map(struct ssqd_backend *b, struct ssqd_bqueue *q,
                        struct shm_uar_map *m)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	m->fd = b->ctx->cmd_fd;
	m->offset = q->dv_qp.uar_mmap_offset;
	m->len = page;
	m->reg_off = (uint32_t)((uintptr_t)q->dv_qp.bf.reg & (page - 1));
	return 0;
}

static int mlx5_async_event(struct ssqd_backend *b, struct ssqd_async_event *ev)
{
	struct ibv_async_event e;
	unsigned i;

	if (ibv_get_async_event(b->ctx, &e))
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
	memset(ev, 0, sizeof(*ev));
	ev->type = e.event_type;
	switch (e.event_type) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		ev->qpn = e.element.qp->qp_num;
		break;
	case IBV_EVENT_CQ_ERR:
		ev->cqn = UINT32_MAX; /* not one of ours */
		for (i = 0; i < b->nqueues; i++) {
			if (b->queues[i].cq == e.element.cq)
				ev->cqn = b->queues[i].cqn;
			else if (b->queues[i].rcq == e.element.cq)
				ev->cqn = b->queues[i].rcqn;
		}
		break;
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE:
	case IBV_EVENT_SM_CHANGE:
	case IBV_EVENT_CLIENT_REREGISTER:
	case IBV_EVENT_GID_CHANGE:
		ev->port = (uint8_t)e.element.port_num;
		break;
	default: /* DEVICE_FATAL and the SRQ / WQ events ssq has no objects for */
		break;
	}
	/* Every event must be acknowledged, or destroying its object blocks. */
	ibv_ack_async_event(&e);
	return 1;
}

static int mlx5_async_fd(struct ssqd_backend *b)
{
	return b->ctx->async_fd;
}

/*
 * Arm @a for one event at consumer index @ci, unless it is armed already:
 * an arm holds until its event, and any CQE written meanwhile raises it,
 * so once per event, not once per look (a UAR write each).
 */
static int arm_once(const struct ibv_comp_channel *ch, struct cq_arm *a, uint32_t ci)
{
	if (!ch)
		return -EOPNOTSUPP;
	if (!a->armed) {
		ssqd_mlx5_cq_arm(&a->dv, a->sn, ci);
		a->armed = 1;
	}
	return 0;
}

/*
 * Every event pending on @ch, acknowledged at once (destroying a CQ waits
 * for its events' acks: ibv_ack_cq_events(3)), each bumping its CQ's arm
 * sequence as libmlx5's mlx5_cq_event does and disarming it; for a send
 * CQ (@send) @fn is told whose.
 */
static int take_events(struct ssqd_backend *b, struct ibv_comp_channel *ch, int send,
                       void (*fn)(void *arg, struct ssqd_bqueue *q), void *arg)
{
	struct ibv_cq *cq;
	void *ctx;
	unsigned i;
	int n = 0;

	while (ch && !ibv_get_cq_event(ch, &cq, &ctx)) {
		ibv_ack_cq_events(cq, 1);
		for (i = 0; i < b->nqueues; i++) {
			struct cq_arm *a = send ? &b->queues[i].tx : &b->queues[i].rx;

			if (a->cq != cq)
				continue;
			a->sn++;
			a->armed = 0;
			if (fn)
				fn(arg, b->queues[i].bq);
		}
		n++;
	}
	return n;
}

static int mlx5_rx_arm(struct ssqd_backend *b, struct ssqd_bqueue *q, uint32_t ci)
{
	return arm_once(b->rx_chan, &((struct mlx5_queue *)q->impl)->rx, ci);
}

static int mlx5_rx_event_fd(struct ssqd_backend *b)
{
	return b->rx_chan ? b->rx_chan->fd : -1;
}

static int mlx5_rx_events_take(struct ssqd_backend *b)
{
	return take_events(b, b->rx_chan, 0, NULL, NULL);
}

static int mlx5_tx_arm(struct ssqd_backend *b, struct ssqd_bqueue *q, uint32_t ci)
{
	return arm_once(b->tx_chan, &((struct mlx5_queue *)q->impl)->tx, ci);
}

static int mlx5_tx_event_fd(struct ssqd_backend *b)
{
	return b->tx_chan ? b->tx_chan->fd : -1;
}

static int mlx5_tx_events_take(struct ssqd_backend *b,
                               void (*fn)(void *arg, struct ssqd_bqueue *q), void *arg)
{
	return take_events(b, b->tx_chan, 1, fn, arg);
}

static int mlx5_start(struct ssqd_backend *b)
{
	(void)b; /* the NIC needs no progress thread */
	return 0;
}

static void mlx5_stop(struct ssqd_backend *b)
{
	(void)b;
}

static void mlx5_close(struct ssqd_backend *b)
{
	unsigned i;

	if (!b)
		return;
	for (i = 0; i < b->nqueues; i++) {
		ibv_destroy_qp(b->queues[i].qp);
		ibv_destroy_cq(b->queues[i].rcq);
		ibv_destroy_cq(b->queues[i].cq);
	}
	/* After their CQs: a channel outlives none of them. */
	if (b->rx_chan)
		ibv_destroy_comp_channel(b->rx_chan);
	if (b->tx_chan)
		ibv_destroy_comp_channel(b->tx_chan);
	if (b->mr)
		ibv_dereg_mr(b->mr);
	free(b->buf_handles);
	ibv_dealloc_pd(b->pd);
	ibv_close_device(b->ctx);
	free(b);
}

const struct ssqd_backend_ops ssqd_backend_mlx5 = {
	.kind = "mlx5",
	.open = mlx5_open,
	.reg_data = mlx5_reg_data,
	.reg_buf = mlx5_reg_buf,
	.dereg_buf = mlx5_dereg_buf,
	.reg_client = mlx5_reg_client,
	.dereg_client = mlx5_dereg_client,
	.verbs_handles = mlx5_verbs_handles,
	.grant_post = mlx5_grant_post,
	.revoke = mlx5_revoke,
	.create_queue = mlx5_create_queue,
	.modify_qp = mlx5_modify_qp,
	.query_port = mlx5_query_port,
	.rx_arm = mlx5_rx_arm,
	.rx_event_fd = mlx5_rx_event_fd,
	.rx_events_take = mlx5_rx_events_take,
	.tx_arm = mlx5_tx_arm,
	.tx_event_fd = mlx5_tx_event_fd,
	.tx_events_take = mlx5_tx_events_take,
	.uar_map = mlx5_uar_map,
	.async_event = mlx5_async_event,
	.async_fd = mlx5_async_fd,
	.start = mlx5_start,
	.stop = mlx5_stop,
	.close = mlx5_close,
};
