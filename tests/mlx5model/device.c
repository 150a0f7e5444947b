/* SPDX-License-Identifier: MIT */
/*
 * The devices the model lists, their names, opening and closing a
 * context, and the device, port and GID queries (see mlx5model.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include "mlx5model.h"

int mm_on(void)
{
	static int on = -1;

	if (on < 0) {
		const char *e = getenv("SSQ_MLX5MODEL");

		on = e && !strcmp(e, "1");
	}
	return on;
}

int mm_trace_on(void)
{
	static int on = -1;

	if (on < 0) {
		const char *e = getenv("SSQ_MLX5MODEL_TRACE");

		on = e && !strcmp(e, "1");
	}
	return on;
}

/*
 * Named as rdma-core's udev rule names a ConnectX on a stock distribution
 * (kernel-boot/rdma-persistent-naming.rules: rdma_rename %k NAME_FALLBACK,
 * installed by Debian 12's rdma-core): by bus position, "roce" for a port
 * whose link layer is Ethernet, "ib" for InfiniBand. Only MLNX_OFED keeps
 * mlx5_N. Both are mlx5 devices (mlx5dv_is_supported).
 */
static struct mm_desc descs[] = {
	{ .ibdev = { .node_type = IBV_NODE_CA,
	             .transport_type = IBV_TRANSPORT_IB,
	             .name = "rocep1s0f0",
	             .dev_name = "uverbs0",
	             .dev_path = "/sys/class/infiniband_verbs/uverbs0",
	             .ibdev_path = "/sys/class/infiniband/rocep1s0f0" },
	  .link_layer = IBV_LINK_LAYER_ETHERNET,
	  .guid = 0x0c42a1030010a0b0ull,
	  .index = 0 },
	{ .ibdev = { .node_type = IBV_NODE_CA,
	             .transport_type = IBV_TRANSPORT_IB,
	             .name = "ibp2s0f0",
	             .dev_name = "uverbs1",
	             .dev_path = "/sys/class/infiniband_verbs/uverbs1",
	             .ibdev_path = "/sys/class/infiniband/ibp2s0f0" },
	  .link_layer = IBV_LINK_LAYER_INFINIBAND,
	  .guid = 0x0c42a1030010a0c0ull,
	  .index = 1 },
};

#define NDESC (int)(sizeof(descs) / sizeof(descs[0]))

struct mm_desc *mm_desc_by_index(unsigned i)
{
	return i < (unsigned)NDESC ? &descs[i] : NULL;
}

struct mm_desc *mm_desc_of(struct ibv_device *d)
{
	int i;

	for (i = 0; i < NDESC; i++)
		if (d == &descs[i].ibdev)
			return &descs[i];
	return NULL;
}

MM_EXPORT struct ibv_device **ibv_get_device_list(int *num)
{
	struct ibv_device **l;
	int i;

	MM_FORWARD(struct ibv_device **, ibv_get_device_list, (int *), (num));
	l = calloc(NDESC + 1, sizeof(*l));
	if (!l)
		return mm_fail(ENOMEM);
	for (i = 0; i < NDESC; i++)
		l[i] = &descs[i].ibdev;
	if (num)
		*num = NDESC;
	return l;
}

MM_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
	if (!mm_on()) {
		void (*real)(struct ibv_device **) =
		    (void (*)(struct ibv_device **))dlsym(RTLD_NEXT,
		                                          "ibv_free_device_list");

		if (real)
			real(list);
		return;
	}
	free(list);
}

MM_EXPORT const char *ibv_get_device_name(struct ibv_device *d)
{
	MM_FORWARD(const char *, ibv_get_device_name, (struct ibv_device *), (d));
	return d->name;
}

MM_EXPORT __be64 ibv_get_device_guid(struct ibv_device *d)
{
	struct mm_desc *m;

	MM_FORWARD(__be64, ibv_get_device_guid, (struct ibv_device *), (d));
	m = mm_desc_of(d);
	return m ? htobe64(m->guid) : 0;
}

/* libmlx5's is_mlx5_dev: the device was made by the mlx5 provider. */
MM_EXPORT bool mlx5dv_is_supported(struct ibv_device *d)
{
	MM_FORWARD(bool, mlx5dv_is_supported, (struct ibv_device *), (d));
	return mm_desc_of(d) != NULL;
}

static int q_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *a,
                  size_t len)
{
	struct mm_ctx *c = mm_ctx(ctx);
	struct ibv_port_attr pa;
	int rc;

	if (c->imported || len < sizeof(pa))
		return EOPNOTSUPP; /* an importer never asks; stricter */
	rc = emu_query_port(c->dev, port, &pa);
	if (rc)
		return -rc;
	memcpy(a, &pa, sizeof(pa));
	return 0;
}

/*
 * Not modelled; a caller reaching them has gone past what ssq does: each
 * fails as a verb the provider lacks (EOPNOTSUPP), never silently.
 */
static int no_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	(void)cq;
	(void)n;
	(void)wc;
	fprintf(stderr, "mlx5model: ibv_poll_cq is not modelled\n");
	return -EOPNOTSUPP;
}

static int no_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
                        struct ibv_send_wr **bad)
{
	(void)qp;
	*bad = wr;
	fprintf(stderr, "mlx5model: ibv_post_send is not modelled\n");
	return EOPNOTSUPP;
}

static int no_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
                        struct ibv_recv_wr **bad)
{
	(void)qp;
	*bad = wr;
	fprintf(stderr, "mlx5model: ibv_post_recv is not modelled\n");
	return EOPNOTSUPP;
}

int mm_req_notify_cq(struct ibv_cq *cq, int solicited);
struct ibv_cq_ex *mm_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *a);
struct ibv_qp *mm_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *a);

/* A context's verbs, as the provider fills ibv_context.ops and verbs_context. */
static void ctx_ops(struct mm_ctx *c)
{
	struct ibv_context *ctx = &c->vctx.context;

	ctx->ops.poll_cq = no_poll_cq;
	ctx->ops.req_notify_cq = mm_req_notify_cq;
	ctx->ops.post_send = no_post_send;
	ctx->ops.post_recv = no_post_recv;
	mm_mw_ops(ctx);
	ctx->abi_compat = __VERBS_ABI_IS_EXTENDED;
	ctx->num_comp_vectors = 1;
	c->vctx.sz = sizeof(c->vctx);
	c->vctx.query_port = q_port;
	c->vctx.create_cq_ex = mm_create_cq_ex;
	c->vctx.create_qp_ex = mm_create_qp_ex;
	pthread_mutex_init(&ctx->mutex, NULL);
}

struct mm_ctx *mm_ctx_new(struct mm_desc *d)
{
	struct mm_ctx *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->desc = d;
	c->vctx.context.device = &d->ibdev;
	c->vctx.context.cmd_fd = -1;
	c->srv_fd = -1;
	c->conn_fd = -1;
	c->srv_wake[0] = c->srv_wake[1] = -1;
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->conn_lock, NULL);
	ctx_ops(c);
	/*
	 * The async event fd: readable while an event waits (uverbs'
	 * ib_uverbs_event_poll); one count per event, so it stays readable
	 * until each is read.
	 */
	c->vctx.context.async_fd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
	if (c->vctx.context.async_fd < 0) {
		free(c);
		return NULL;
	}
	return c;
}

void mm_ctx_free(struct mm_ctx *c)
{
	close(c->vctx.context.async_fd);
	if (c->vctx.context.cmd_fd >= 0)
		close(c->vctx.context.cmd_fd);
	free(c);
}

MM_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *d)
{
	struct emu_dev_attr da;
	struct mm_desc *m;
	struct mm_ctx *c;
	int rc;

	MM_FORWARD(struct ibv_context *, ibv_open_device, (struct ibv_device *), (d));
	m = mm_desc_of(d);
	if (!m)
		return mm_fail(ENODEV);
	c = mm_ctx_new(m);
	if (!c)
		return mm_fail(ENOMEM);
	memset(&da, 0, sizeof(da));
	da.link_layer = m->link_layer;
	da.stream_poll_ns = SSQ_EMU_STREAM_POLL_NS_DEFAULT;
	rc = emu_open(&c->dev, &da);
	if (rc) {
		mm_ctx_free(c);
		return mm_fail(-rc);
	}
	rc = mm_cmd_fd_init(c);
	if (!rc)
		rc = mm_wire_open(c);
	if (!rc)
		rc = -emu_start(c->dev);
	if (!rc)
		rc = mm_watcher_start(c);
	if (!rc)
		rc = mm_srv_start(c);
	if (rc) {
		mm_srv_stop(c);
		mm_watcher_stop(c);
		emu_close(c->dev);
		mm_cmd_fd_fini(c);
		mm_ctx_free(c);
		return mm_fail(rc);
	}
	fprintf(stderr,
	        "mlx5model: %s is a software model of a ConnectX (libmlx5 44 + "
	        "mlx5_ib), not hardware\n",
	        d->name);
	return &c->vctx.context;
}

void mm_import_close(struct mm_ctx *c);

MM_EXPORT int ibv_close_device(struct ibv_context *ctx)
{
	struct mm_ctx *c;

	MM_FORWARD(int, ibv_close_device, (struct ibv_context *), (ctx));
	c = mm_ctx(ctx);
	if (c->imported) {
		mm_import_close(c);
		return 0;
	}
	/*
	 * The last close of the uverbs file destroys every object left
	 * (ib_uverbs_close -> uverbs_destroy_ufile_hw): the device goes
	 * with its objects.
	 */
	mm_srv_stop(c);
	mm_watcher_stop(c);
	emu_stop(c->dev);
	mm_k_fini(c);
	emu_close(c->dev);
	mm_cmd_fd_fini(c);
	mm_ctx_free(c);
	return 0;
}

MM_EXPORT int ibv_query_device(struct ibv_context *ctx, struct ibv_device_attr *a)
{
	struct mm_ctx *c;
	int rc;

	MM_FORWARD(int, ibv_query_device,
	           (struct ibv_context *, struct ibv_device_attr *), (ctx, a));
	c = mm_ctx(ctx);
	if (c->imported)
		return EOPNOTSUPP;
	rc = emu_query_device(c->dev, a);
	if (!rc)
		a->node_guid = htobe64(c->desc->guid);
	return -rc;
}

/*
 * _ibv_query_gid_ex (libibverbs/cmd_device.c, v44): flags must be 0; an
 * empty entry is ENODATA; errors positive.
 */
MM_EXPORT int _ibv_query_gid_ex(struct ibv_context *ctx, uint32_t port, uint32_t index,
                                struct ibv_gid_entry *e, uint32_t flags, size_t size)
{
	struct mm_ctx *c;
	int rc;

	MM_FORWARD(int, _ibv_query_gid_ex,
	           (struct ibv_context *, uint32_t, uint32_t, struct ibv_gid_entry *,
	            uint32_t, size_t),
	           (ctx, port, index, e, flags, size));
	c = mm_ctx(ctx);
	if (flags || size < sizeof(*e) || c->imported || port > 255)
		return EINVAL;
	rc = -emu_query_gid(c->dev, (uint8_t)port, index, e);
	if (!rc)
		mm_gid_fix(c, e);
	return rc;
}

/*
 * _ibv_query_gid_table (libibverbs/cmd_device.c, v44): every filled entry
 * of every port, or -errno; the kernel's rdma_query_gid_table
 * (drivers/infiniband/core/cache.c) fails with -EINVAL when the filled
 * entries do not fit @max.
 */
MM_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *ctx, struct ibv_gid_entry *e,
                                       size_t max, uint32_t flags, size_t size)
{
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	struct ibv_gid_entry g;
	struct mm_ctx *c;
	size_t n = 0;
	unsigned p, i;

	MM_FORWARD(
	    ssize_t, _ibv_query_gid_table,
	    (struct ibv_context *, struct ibv_gid_entry *, size_t, uint32_t, size_t),
	    (ctx, e, max, flags, size));
	c = mm_ctx(ctx);
	if (flags || size < sizeof(*e) || !max || c->imported)
		return -EINVAL;
	if (emu_query_device(c->dev, &da))
		return -EINVAL;
	for (p = 1; p <= da.phys_port_cnt; p++) {
		if (emu_query_port(c->dev, (uint8_t)p, &pa))
			return -EINVAL;
		for (i = 0; i < (unsigned)pa.gid_tbl_len; i++) {
			if (emu_query_gid(c->dev, (uint8_t)p, i, &g))
				continue;
			if (n == max)
				return -EINVAL;
			mm_gid_fix(c, &g);
			memcpy((uint8_t *)e + n * size, &g, sizeof(g));
			n++;
		}
	}
	return (ssize_t)n;
}

/* mlx5dv_query_device (providers/mlx5/mlx5.c): what the model fills. */
MM_EXPORT int mlx5dv_query_device(struct ibv_context *ctx, struct mlx5dv_context *a)
{
	MM_FORWARD(int, mlx5dv_query_device,
	           (struct ibv_context *, struct mlx5dv_context *), (ctx, a));
	a->version = 1;
	a->flags = MLX5DV_CONTEXT_FLAGS_CQE_V1;
	a->comp_mask = 0; /* none of the optional parts is modelled */
	return 0;
}

/*
 * mlx5dv_set_context_attr (providers/mlx5/mlx5.c, mlx5_set_context_attr):
 * only MLX5DV_CTX_ATTR_BUF_ALLOCATORS, kept for every later buffer of the
 * context; other types ENOTSUP.
 */
MM_EXPORT int mlx5dv_set_context_attr(struct ibv_context *ctx,
                                      enum mlx5dv_set_ctx_attr_type type, void *attr)
{
	struct mm_ctx *c;

	MM_FORWARD(int, mlx5dv_set_context_attr,
	           (struct ibv_context *, enum mlx5dv_set_ctx_attr_type, void *),
	           (ctx, type, attr));
	c = mm_ctx(ctx);
	if (type != MLX5DV_CTX_ATTR_BUF_ALLOCATORS)
		return ENOTSUP;
	c->al = *(struct mlx5dv_ctx_allocators *)attr;
	c->has_al = c->al.alloc && c->al.free;
	return 0;
}
