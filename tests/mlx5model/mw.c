/* SPDX-License-Identifier: MIT */
/*
 * Type-2 memory windows: ibv_alloc_mw / ibv_dealloc_mw, which libibverbs
 * inlines as calls of the context's ops.alloc_mw / ops.dealloc_mw
 * (libibverbs/verbs.h), filled as libmlx5 fills them (mlx5_alloc_mw,
 * mlx5_dealloc_mw, providers/mlx5/verbs.c: ibv_cmd_alloc_mw to the
 * kernel's mlx5_ib_alloc_mw, drivers/infiniband/hw/mlx5/mr.c: an mkey
 * free = 1, umr_en, en_rinval for type 2, qpn 0xffffff, in the PD). The
 * window is the emulated device's (emu_alloc_mw), so the bind and
 * LOCAL_INV WQEs a QP's ring carries (<ssq/wqe_mw.h>) are run by it as
 * a ConnectX runs them (src/emu/umr.c), with its refusals.
 *
 * Stricter than the hardware, as everything here that was not checked:
 * type 1 windows (mlx5_ib has them) and windows of an imported PD are
 * refused with EOPNOTSUPP. No ops.bind_mw: ibv_bind_mw takes type-1
 * windows only (libibverbs/verbs.h), and a type-2 one is bound by the
 * WQE ssq builds on its own ring.
 */
#include <stdlib.h>
#include "mlx5model.h"

struct mm_mw {
	struct ibv_mw mw;
	struct emu_mr *emw;
};

static struct ibv_mw *mm_alloc_mw(struct ibv_pd *p, enum ibv_mw_type type)
{
	struct mm_pd *pd = (struct mm_pd *)p;
	struct mm_ctx *c = mm_ctx(p->context);
	struct mm_mw *mw;
	uint32_t rkey;
	int h, rc;

	if (type != IBV_MW_TYPE_2 || c->imported || !pd->epd)
		return mm_fail(EOPNOTSUPP);
	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return mm_fail(ENOMEM);
	rc = emu_alloc_mw(pd->epd, &mw->emw, &rkey);
	if (rc) {
		free(mw);
		return mm_fail(-rc);
	}
	/* ib_uverbs_alloc_mw: a uobject, so an id of the file's table. */
	pthread_mutex_lock(&c->lock);
	h = mm_handle_alloc(c, MM_OBJ_MW, mw);
	pthread_mutex_unlock(&c->lock);
	if (h < 0) {
		emu_dealloc_mw(mw->emw);
		free(mw);
		return mm_fail(ENOMEM);
	}
	mw->mw.context = p->context;
	mw->mw.pd = p;
	mw->mw.rkey = rkey;
	mw->mw.handle = (uint32_t)h;
	mw->mw.type = type;
	return &mw->mw;
}

/* mlx5_ib_dealloc_mw destroys the mkey: bound or not, its key reaches nothing. */
static int mm_dealloc_mw(struct ibv_mw *m)
{
	struct mm_mw *mw = (struct mm_mw *)m;
	struct mm_ctx *c = mm_ctx(m->context);
	int rc = emu_dealloc_mw(mw->emw);

	if (rc)
		return -rc;
	pthread_mutex_lock(&c->lock);
	mm_handle_free(c, m->handle);
	pthread_mutex_unlock(&c->lock);
	free(mw);
	return 0;
}

void mm_mw_ops(struct ibv_context *ctx)
{
	ctx->ops.alloc_mw = mm_alloc_mw;
	ctx->ops.dealloc_mw = mm_dealloc_mw;
}

/* At close, as uverbs' cleanup: windows before the MRs under them. */
void mm_mw_fini(struct mm_ctx *c)
{
	uint32_t i;

	for (i = 0; i < MM_MAX_HANDLES; i++)
		if (c->objs[i].type == MM_OBJ_MW) {
			struct mm_mw *mw = c->objs[i].p;

			emu_dealloc_mw(mw->emw);
			mm_handle_free(c, i);
			free(mw);
		}
}
