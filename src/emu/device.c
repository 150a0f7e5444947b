/* SPDX-License-Identifier: MIT */
/*
 * The emulated device's objects: device, PDs, MRs, CQs, SRQs, QPs. Every
 * ring and doorbell record is the caller's memory; what lives here is the
 * device's own bookkeeping, as a NIC keeps its contexts in its own memory.
 */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include "emu/emu_pvt.h"

/*
 * Where this device's key slots start: a slot no earlier device (an ssqd
 * before a restart) started from, as firmware picks a ConnectX mkey's
 * index; the variant of each key is drawn anew (emu_key_variant), so a
 * restarted ssqd's first buffers do not get the very keys, at the very
 * IOVAs, a peer may still hold, and no key is its neighbour's plus 0x101.
 */
static void mr_key_start(struct emu_dev *dev)
{
	uint32_t r;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
		struct timespec t;

		clock_gettime(CLOCK_MONOTONIC, &t);
		r = (uint32_t)t.tv_nsec ^ (uint32_t)getpid() * 2654435761u;
	}
	dev->mr_next = (r >> 8) % SSQ_EMU_MAX_MR;
}

static int is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

int emu_open(struct emu_dev **devp, const struct emu_dev_attr *attr)
{
	struct emu_dev_attr a = { 0 };
	struct emu_dev *dev;
	int ret;

	if (!devp)
		return -EINVAL;
	if (attr)
		a = *attr;
	else
		a.stream_poll_ns = SSQ_EMU_STREAM_POLL_NS_DEFAULT;
	if (a.stream_poll_ns > SSQ_EMU_STREAM_POLL_NS_MAX)
		return -EINVAL;
	if (a.mode != SSQ_EMU_FULL && a.mode != SSQ_EMU_SINK)
		return -EINVAL;
	if (a.link_layer == IBV_LINK_LAYER_UNSPECIFIED)
		a.link_layer = IBV_LINK_LAYER_INFINIBAND;
	if (a.link_layer != IBV_LINK_LAYER_INFINIBAND &&
	    a.link_layer != IBV_LINK_LAYER_ETHERNET)
		return -EINVAL;
	if (!a.active_mtu)
		a.active_mtu =
		    a.link_layer == IBV_LINK_LAYER_ETHERNET ? IBV_MTU_1024 : IBV_MTU_4096;
	if (a.active_mtu < IBV_MTU_256 || a.active_mtu > IBV_MTU_4096)
		return -EINVAL;
	if (!a.ignore_env) {
		ret = emu_env_apply(&a);
		if (ret)
			return ret;
	}
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	/* What ends the device thread's nap early (emu_set_idle_nap). */
	dev->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (dev->kick_fd < 0) {
		ret = -errno;
		free(dev);
		return ret;
	}
	/* Readable while async events wait (emu_async_fd). */
	dev->async_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (dev->async_fd < 0) {
		ret = -errno;
		close(dev->kick_fd);
		free(dev);
		return ret;
	}
	if (a.trace_path) {
		dev->trace = fopen(a.trace_path, "a");
		if (!dev->trace) {
			ret = -errno;
			fprintf(stderr, "ssq_emu: cannot open trace file '%s'\n",
			        a.trace_path);
			close(dev->async_fd);
			close(dev->kick_fd);
			free(dev);
			return ret;
		}
	}
	pthread_mutex_init(&dev->lock, NULL);
	pthread_cond_init(&dev->fired, NULL);
	dev->mode = a.mode;
	dev->fault = a.fault;
	dev->stream_poll_ns = a.stream_poll_ns;
	dev->no_cq_events = a.no_cq_events;
	dev->link_layer = a.link_layer;
	dev->active_mtu = a.active_mtu;
	mr_key_start(dev);
	*devp = dev;
	return 0;
}

void emu_close(struct emu_dev *dev)
{
	unsigned i;

	if (!dev)
		return;
	if (dev->thread_running)
		emu_stop(dev);
	while (dev->pds) {
		struct emu_pd *pd = dev->pds;

		dev->pds = pd->next;
		free(pd);
	}
	emu_wire_close(dev);
	for (i = 0; i < SSQ_EMU_MAX_QP; i++)
		free(dev->qps[i]);
	for (i = 0; i < SSQ_EMU_MAX_CQ; i++)
		free(dev->cqs[i]);
	for (i = 0; i < SSQ_EMU_MAX_SRQ; i++)
		free(dev->srqs[i]);
	for (i = 0; i < SSQ_EMU_MAX_MR; i++)
		free(dev->mrs[i]);
	if (dev->trace)
		fclose(dev->trace);
	close(dev->kick_fd);
	close(dev->async_fd);
	pthread_cond_destroy(&dev->fired);
	pthread_mutex_destroy(&dev->lock);
	free(dev);
}

int emu_set_mode(struct emu_dev *dev, enum emu_mode mode)
{
	if (!dev || (mode != SSQ_EMU_FULL && mode != SSQ_EMU_SINK))
		return -EINVAL;
	pthread_mutex_lock(&dev->lock);
	dev->mode = mode;
	pthread_mutex_unlock(&dev->lock);
	return 0;
}

int emu_set_fault(struct emu_dev *dev, const struct emu_fault *f)
{
	if (!dev)
		return -EINVAL;
	pthread_mutex_lock(&dev->lock);
	if (f)
		dev->fault = *f;
	else
		memset(&dev->fault, 0, sizeof(dev->fault));
	dev->wqe_seq = 0;
	pthread_mutex_unlock(&dev->lock);
	return 0;
}

int emu_stall(struct emu_dev *dev, int on)
{
	if (!dev)
		return -EINVAL;
	pthread_mutex_lock(&dev->lock);
	dev->fault.stall = !!on;
	pthread_mutex_unlock(&dev->lock);
	return 0;
}

unsigned emu_dev_errors(struct emu_dev *dev)
{
	unsigned n;

	if (!dev)
		return 0;
	pthread_mutex_lock(&dev->lock);
	n = dev->dev_errors;
	pthread_mutex_unlock(&dev->lock);
	return n;
}

/* ---- PDs and MRs ---- */

int emu_alloc_pd(struct emu_dev *dev, struct emu_pd **pdp)
{
	struct emu_pd *pd;

	if (!dev || !pdp)
		return -EINVAL;
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return -ENOMEM;
	pd->dev = dev;
	pthread_mutex_lock(&dev->lock);
	pd->next = dev->pds;
	if (dev->pds)
		dev->pds->prev = pd;
	dev->pds = pd;
	pthread_mutex_unlock(&dev->lock);
	*pdp = pd;
	return 0;
}

int emu_dealloc_pd(struct emu_pd *pd)
{
	struct emu_dev *dev;

	if (!pd)
		return -EINVAL;
	dev = pd->dev;
	pthread_mutex_lock(&dev->lock);
	if (pd->users) {
		pthread_mutex_unlock(&dev->lock);
		return -EBUSY;
	}
	if (pd->prev)
		pd->prev->next = pd->next;
	else
		dev->pds = pd->next;
	if (pd->next)
		pd->next->prev = pd->prev;
	pthread_mutex_unlock(&dev->lock);
	free(pd);
	return 0;
}

#define EMU_ACCESS_ALL                                                                   \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |     \
	 IBV_ACCESS_REMOTE_ATOMIC)

/* One MR of @len bytes at @addr (host, or in memory file @fd) as @iova. */
static int reg_mr(struct emu_pd *pd, int fd, void *addr, size_t len, uint64_t iova,
                  int access, struct emu_mr **mrp, uint32_t *key)
{
	struct emu_dev *dev;
	struct emu_mr *mr;

	if (!pd || !len || !mrp || !key || iova + len - 1 < iova)
		return -EINVAL;
	if (access & ~(EMU_ACCESS_ALL | IBV_ACCESS_MW_BIND))
		return -EINVAL;
	/* IB spec 10.6.3.1 (and ib_check_mr_access): remote write or atomic
	 * access needs local write. */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -ENOMEM;
	dev = pd->dev;
	pthread_mutex_lock(&dev->lock);
	mr->pd = pd;
	mr->fd = fd;
	mr->addr = addr;
	mr->iova = iova;
	mr->len = len;
	mr->access = access;
	mr->type = EMU_KEY_MR;
	if (emu_key_slot(dev, mr)) {
		pthread_mutex_unlock(&dev->lock);
		free(mr);
		return -ENOMEM;
	}
	pd->users++;
	pthread_mutex_unlock(&dev->lock);
	*mrp = mr;
	*key = mr->key;
	return 0;
}

int emu_reg_mr(struct emu_pd *pd, void *addr, size_t len, uint64_t iova, int access,
               struct emu_mr **mrp, uint32_t *key)
{
	if (!addr)
		return -EINVAL;
	return reg_mr(pd, -1, addr, len, iova, access, mrp, key);
}

int emu_reg_mr_file(struct emu_pd *pd, int fd, uint64_t addr, size_t len, uint64_t iova,
                    int access, struct emu_mr **mrp, uint32_t *key)
{
	/* Offsets of a memory file are off_t: the range must fit below 2^63. */
	if (fd < 0 || addr + len < addr || addr + len > (uint64_t)INT64_MAX)
		return -EINVAL;
	return reg_mr(pd, fd, (void *)(uintptr_t)addr, len, iova, access, mrp, key);
}

int emu_dereg_mr(struct emu_mr *mr)
{
	struct emu_dev *dev;

	if (!mr)
		return -EINVAL;
	dev = mr->pd->dev;
	pthread_mutex_lock(&dev->lock);
	/*
	 * ibv_dereg_mr(3): "fails if any memory window is still bound to
	 * this MR" - invalidate or free the windows first. A window's key is
	 * no MR to deregister either.
	 */
	if (mr->type != EMU_KEY_MR || mr->binds) {
		pthread_mutex_unlock(&dev->lock);
		return mr->type != EMU_KEY_MR ? -EINVAL : -EBUSY;
	}
	dev->mrs[mr->key >> 8] = NULL;
	mr->pd->users--;
	pthread_mutex_unlock(&dev->lock);
	free(mr);
	return 0;
}

/* ---- CQs ---- */

int emu_create_cq(struct emu_dev *dev, const struct emu_cq_attr *attr,
                  struct emu_cq **cqp, struct mlx5dv_cq *dv)
{
	struct emu_cq *cq;
	uint32_t i;

	if (!dev || !attr || !cqp || !dv || !attr->buf || !attr->dbrec)
		return -EINVAL;
	if ((uintptr_t)attr->buf & 63 || !is_pow2(attr->cqe_cnt) || attr->cqe_cnt < 2 ||
	    attr->cqe_cnt > (1u << 22))
		return -EINVAL;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -ENOMEM;
	pthread_mutex_lock(&dev->lock);
	for (i = 0; i < SSQ_EMU_MAX_CQ && dev->cqs[i]; i++)
		;
	if (i == SSQ_EMU_MAX_CQ) {
		pthread_mutex_unlock(&dev->lock);
		free(cq);
		return -ENOMEM;
	}
	cq->dev = dev;
	cq->buf = attr->buf;
	cq->dbrec = attr->dbrec;
	cq->cqe_cnt = attr->cqe_cnt;
	cq->ignore_overrun = attr->ignore_overrun;
	cq->cqn = i;
	/* As libmlx5's mlx5_alloc_cq_buf: every slot invalid, so the first
	 * pass's owner bit 0 does not make stale bytes look like CQEs. */
	memset(cq->buf, 0, (size_t)cq->cqe_cnt * 64);
	for (i = 0; i < cq->cqe_cnt; i++)
		((struct mlx5_cqe64 *)cq->buf)[i].op_own = MLX5_CQE_INVALID << 4;
	cq->dbrec[SSQ_CQ_SET_CI] = 0;
	cq->dbrec[SSQ_CQ_ARM_DB] = 0;
	dev->cqs[cq->cqn] = cq;
	pthread_mutex_unlock(&dev->lock);

	memset(dv, 0, sizeof(*dv));
	dv->buf = cq->buf;
	dv->dbrec = cq->dbrec;
	dv->cqe_cnt = cq->cqe_cnt;
	dv->cqe_size = 64;
	dv->cqn = cq->cqn;
	*cqp = cq;
	return 0;
}

int emu_resize_cq(struct emu_cq *cq, void *buf, uint32_t cqe_cnt, struct mlx5dv_cq *dv)
{
	struct mlx5_cqe64 *old;
	uint32_t i, ci;

	if (!cq || !buf || !dv)
		return -EINVAL;
	if ((uintptr_t)buf & 63 || !is_pow2(cqe_cnt) || cqe_cnt < 2 ||
	    cqe_cnt > (1u << 22))
		return -EINVAL;
	memset(buf, 0, (size_t)cqe_cnt * 64);
	for (i = 0; i < cqe_cnt; i++)
		((struct mlx5_cqe64 *)buf)[i].op_own = MLX5_CQE_INVALID << 4;
	pthread_mutex_lock(&cq->dev->lock);
	if (cq->overrun) {
		pthread_mutex_unlock(&cq->dev->lock);
		return -EOVERFLOW;
	}
	/* mlx5_ib_resize_cq refuses fewer entries than are outstanding. */
	ci = be32toh(__atomic_load_n(&cq->dbrec[SSQ_CQ_SET_CI], __ATOMIC_ACQUIRE)) &
	     0xffffff;
	if (!cq->ignore_overrun && ((cq->pi - ci) & 0xffffff) + 1 > cqe_cnt) {
		pthread_mutex_unlock(&cq->dev->lock);
		return -EINVAL;
	}
	/* The resize CQE, in the old buffer at the producer index. */
	old =
	    (struct mlx5_cqe64 *)(cq->buf + ((size_t)(cq->pi & (cq->cqe_cnt - 1)) << 6));
	memset(old, 0, 63);
	__atomic_store_n(&old->op_own,
	                 (uint8_t)(MLX5_CQE_RESIZE_CQ << 4) |
	                     ((cq->pi / cq->cqe_cnt) & 1),
	                 __ATOMIC_RELEASE);
	cq->pi++;
	cq->buf = buf;
	cq->cqe_cnt = cqe_cnt;
	pthread_mutex_unlock(&cq->dev->lock);
	dv->buf = buf;
	dv->cqe_cnt = cqe_cnt;
	return 0;
}

int emu_destroy_cq(struct emu_cq *cq)
{
	struct emu_dev *dev;

	if (!cq)
		return -EINVAL;
	dev = cq->dev;
	pthread_mutex_lock(&dev->lock);
	if (cq->users) {
		pthread_mutex_unlock(&dev->lock);
		return -EBUSY;
	}
	dev->cqs[cq->cqn] = NULL;
	if (cq->event_due) {
		unsigned i;

		for (i = 0; dev->due[i] != cq; i++)
			;
		dev->due[i] = dev->due[--dev->ndue];
	}
	/* A handler taken before is done: the caller may free its argument. */
	emu_cq_events_settle(dev);
	pthread_mutex_unlock(&dev->lock);
	free(cq);
	return 0;
}

int emu_cq_error(struct emu_cq *cq)
{
	if (!cq)
		return -EINVAL;
	return __atomic_load_n(&cq->overrun, __ATOMIC_RELAXED) ? -EOVERFLOW : 0;
}

/* ---- SRQs ---- */

int emu_create_srq(struct emu_pd *pd, const struct emu_srq_attr *attr,
                   struct emu_srq **srqp, struct mlx5dv_srq *dv)
{
	struct emu_dev *dev;
	struct emu_srq *srq;
	struct ssq_srq link;
	uint32_t i;

	if (!pd || !attr || !srqp || !dv || !attr->buf || !attr->dbrec)
		return -EINVAL;
	if (!is_pow2(attr->wqe_cnt) || attr->wqe_cnt < 2 || attr->wqe_cnt > 65536 ||
	    !is_pow2(attr->stride) || attr->stride < 32 ||
	    attr->stride > EMU_MAX_RECV_STRIDE)
		return -EINVAL;
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return -ENOMEM;
	dev = pd->dev;
	pthread_mutex_lock(&dev->lock);
	for (i = 0; i < SSQ_EMU_MAX_SRQ && dev->srqs[i]; i++)
		;
	if (i == SSQ_EMU_MAX_SRQ) {
		pthread_mutex_unlock(&dev->lock);
		free(srq);
		return -ENOMEM;
	}
	srq->pd = pd;
	srq->buf = attr->buf;
	srq->dbrec = attr->dbrec;
	srq->wqe_cnt = attr->wqe_cnt;
	srq->stride = attr->stride;
	srq->srqn = i;
	memset(&link, 0, sizeof(link));
	link.buf = srq->buf;
	link.wqe_cnt = srq->wqe_cnt;
	link.stride = srq->stride;
	ssq_srq_link_free_list(&link);
	*srq->dbrec = 0;
	dev->srqs[i] = srq;
	pd->users++;
	pthread_mutex_unlock(&dev->lock);

	memset(dv, 0, sizeof(*dv));
	dv->buf = srq->buf;
	dv->dbrec = srq->dbrec;
	dv->stride = srq->stride;
	dv->head = link.head;
	dv->tail = link.tail;
	dv->srqn = srq->srqn;
	*srqp = srq;
	return 0;
}

int emu_destroy_srq(struct emu_srq *srq)
{
	struct emu_dev *dev;

	if (!srq)
		return -EINVAL;
	dev = srq->pd->dev;
	pthread_mutex_lock(&dev->lock);
	if (srq->users) {
		pthread_mutex_unlock(&dev->lock);
		return -EBUSY;
	}
	dev->srqs[srq->srqn] = NULL;
	srq->pd->users--;
	pthread_mutex_unlock(&dev->lock);
	free(srq);
	return 0;
}

/* ---- QPs ---- */

static int qp_attr_ok(const struct emu_pd *pd, const struct emu_qp_attr *a)
{
	struct emu_dev *dev = pd->dev;
	struct emu_dev_caps dc;

	/* Without a UAR nothing could ring the SQ: only a doorbell starts it. */
	if (!a->send_cq || !a->recv_cq || !a->sq_buf || !a->dbrec || !a->uar)
		return 0;
	if (a->send_cq->dev != dev || a->recv_cq->dev != dev)
		return 0;
	/* The kernel refuses queues over 1 << log_max_qp_sz (mlx5_ib qp.c). */
	emu_query_caps(&dc);
	if (!is_pow2(a->sq_wqe_cnt) || a->sq_wqe_cnt > dc.max_send_wqebb)
		return 0;
	if (a->srq)
		return a->srq->pd == pd && !a->rq_buf && !a->rq_wqe_cnt;
	return a->rq_buf && is_pow2(a->rq_wqe_cnt) && a->rq_wqe_cnt <= dc.max_recv_wr &&
	       is_pow2(a->rq_stride) && a->rq_stride >= 16 &&
	       a->rq_stride <= EMU_MAX_RECV_STRIDE;
}

int emu_create_qp(struct emu_pd *pd, const struct emu_qp_attr *attr, struct emu_qp **qpp,
                  struct mlx5dv_qp *dv, uint32_t *qpn)
{
	struct emu_dev *dev;
	struct emu_qp *qp;
	struct mlx5dv_qp d;
	unsigned i;

	if (!pd || !attr || !qpp || !dv || !qpn || !qp_attr_ok(pd, attr))
		return -EINVAL;
	if (attr->cap) {
		/* The buffers must be the ones libmlx5 would have allocated. */
		struct emu_qp_size sz;
		int rc = emu_qp_size(attr->cap, &sz);

		if (rc)
			return rc;
		if (sz.sq_wqe_cnt != attr->sq_wqe_cnt ||
		    (!attr->srq && (sz.rq_wqe_cnt != attr->rq_wqe_cnt ||
		                    sz.rq_stride != attr->rq_stride)))
			return -EINVAL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	dev = pd->dev;
	pthread_mutex_lock(&dev->lock);
	for (i = 0; i < SSQ_EMU_MAX_QP && dev->qps[i]; i++)
		;
	if (i == SSQ_EMU_MAX_QP) {
		pthread_mutex_unlock(&dev->lock);
		free(qp);
		return -ENOMEM;
	}
	qp->dev = dev;
	qp->pd = pd;
	qp->send_cq = attr->send_cq;
	qp->recv_cq = attr->recv_cq;
	qp->srq = attr->srq;
	qp->qpn = SSQ_EMU_QPN_BASE + i;
	qp->dbrec = attr->dbrec;
	qp->rq_buf = attr->rq_buf;
	qp->rq_wqe_cnt = attr->rq_wqe_cnt;
	qp->rq_stride = attr->rq_stride;
	qp->state = IBV_QPS_RESET;
	qp->port = 1;
	qp->scatter_to_cqe = !attr->disable_scatter_to_cqe;

	memset(&d, 0, sizeof(d));
	d.dbrec = attr->dbrec;
	d.sq.buf = attr->sq_buf;
	d.sq.wqe_cnt = attr->sq_wqe_cnt;
	d.sq.stride = MLX5_SEND_WQE_BB;
	d.rq.buf = attr->rq_buf;
	d.rq.wqe_cnt = attr->rq_wqe_cnt;
	d.rq.stride = attr->srq ? 0 : attr->rq_stride;
	d.bf.reg = (uint8_t *)attr->uar + SSQ_EMU_BF_OFFSET;
	d.bf.size = SSQ_EMU_BF_SIZE;
	/* The device reads the ring through the same geometry the builder
	 * writes it with; the inline and SGE limits do not matter here. */
	ssq_sq_init(&qp->sq, &d, qp->qpn, 0, 0);
	qp->dbrec[MLX5_RCV_DBR] = 0;
	qp->dbrec[MLX5_SND_DBR] = 0;
	qp->bf_reg = (uint8_t *)d.bf.reg;
	memset(qp->bf_reg, 0, 2 * SSQ_EMU_BF_SIZE);

	dev->qps[i] = qp;
	if (i + 1 > dev->nqp)
		dev->nqp = i + 1;
	pd->users++;
	qp->send_cq->users++;
	qp->recv_cq->users++;
	if (qp->srq)
		qp->srq->users++;
	pthread_mutex_unlock(&dev->lock);

	*dv = d;
	*qpn = qp->qpn;
	*qpp = qp;
	return 0;
}

int emu_destroy_qp(struct emu_qp *qp)
{
	struct emu_dev *dev;

	if (!qp)
		return -EINVAL;
	dev = qp->dev;
	pthread_mutex_lock(&dev->lock);
	dev->qps[qp->qpn - SSQ_EMU_QPN_BASE] = NULL;
	while (dev->nqp && !dev->qps[dev->nqp - 1])
		dev->nqp--;
	qp->pd->users--;
	qp->send_cq->users--;
	qp->recv_cq->users--;
	if (qp->srq)
		qp->srq->users--;
	emu_mw_qp_gone(qp);
	emu_wire_qp_free(qp);
	pthread_mutex_unlock(&dev->lock);
	free(qp);
	return 0;
}

enum ibv_qp_state emu_qp_state(struct emu_qp *qp)
{
	enum ibv_qp_state s;

	pthread_mutex_lock(&qp->dev->lock);
	s = qp->state;
	pthread_mutex_unlock(&qp->dev->lock);
	return s;
}
