/* SPDX-License-Identifier: MIT */
/*
 * Type-2 memory windows: remote access to a range of an MR, granted to the
 * one QP a window is bound to, revocable at once. The rules are the IB
 * spec's (vol. 1, 10.6.7), as rdma_rxe checks them
 * (drivers/infiniband/sw/rxe/rxe_mw.c: rxe_check_bind_mw, rxe_do_bind_mw,
 * rxe_lookup_mw) and a ConnectX enforces them in its mkey context
 * (mlx5_ib_alloc_mw, drivers/infiniband/hw/mlx5/mr.c: an mkey with
 * free = 1 and umr_en, en_rinval; bound by a UMR WQE, set_bind_wr in
 * rdma-core's providers/mlx5/qp.c).
 */
#include <sys/random.h>
#include <stdlib.h>
#include "emu/emu_pvt.h"

int emu_alloc_mw(struct emu_pd *pd, struct emu_mr **mwp, uint32_t *rkey)
{
	struct emu_dev *dev;
	struct emu_mr *mw;

	if (!pd || !mwp || !rkey)
		return -EINVAL;
	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return -ENOMEM;
	dev = pd->dev;
	pthread_mutex_lock(&dev->lock);
	mw->pd = pd;
	mw->fd = -1;
	mw->type = EMU_KEY_MW;
	if (emu_key_slot(dev, mw)) {
		pthread_mutex_unlock(&dev->lock);
		free(mw);
		return -ENOMEM;
	}
	pd->users++;
	pthread_mutex_unlock(&dev->lock);
	*mwp = mw;
	*rkey = mw->key;
	return 0;
}

/* Back to the free state: its key reaches nothing (lock held). */
void emu_mw_unbind(struct emu_mr *mw)
{
	if (!mw->bound)
		return;
	mw->target->binds--;
	mw->bound = 0;
	mw->qp = NULL;
	mw->target = NULL;
	mw->access = 0;
	mw->len = 0;
}

#define EMU_REMOTE_ACCESS                                                                \
	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

int emu_mw_bind_locked(struct emu_qp *qp, struct emu_mr *mw, struct emu_mr *mr,
                       uint64_t iova, uint64_t len, int access, uint32_t rkey)
{
	int rc = 0;

	if (mw->type != EMU_KEY_MW || mr->type != EMU_KEY_MR)
		rc = -EINVAL;
	/* The WQE runs on the QP's send queue: only once it sends. */
	else if (qp->state != IBV_QPS_RTS)
		rc = -EINVAL;
	/* C10-72 and rxe's PD checks: QP, window and region of one PD. */
	else if (qp->pd != mw->pd || mr->pd != mw->pd)
		rc = -EPERM;
	/* o10-37.2.30: a type-2 window binds only from the free state. */
	else if (mw->bound)
		rc = -EBUSY;
	/*
	 * The new key keeps the window's index; only the variant (the low
	 * byte, the consumer's key of IBV_WR_BIND_MW's bind_mw.rkey) may
	 * change (rxe_do_bind_mw: rkey & 0xffffff00 | wr.mw.rkey & 0xff).
	 */
	else if ((rkey & ~0xffu) != (mw->key & ~0xffu) || !(rkey & 0xff))
		rc = -EINVAL;
	/* o10-37.2.40: a type-2 window is bound to a non-empty range. */
	else if (!len || !access || (access & ~EMU_REMOTE_ACCESS))
		rc = -EINVAL;
	/* The region must allow binds at all (IBV_ACCESS_MW_BIND). */
	else if (!(mr->access & IBV_ACCESS_MW_BIND))
		rc = -EACCES;
	/* C10-74: remote write or atomic through a window needs local write. */
	else if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	         !(mr->access & IBV_ACCESS_LOCAL_WRITE))
		rc = -EACCES;
	/* C10-75: the window lies inside the region. */
	else if (iova < mr->iova || len > mr->len || iova - mr->iova > mr->len - len)
		rc = -ERANGE;
	if (!rc) {
		mw->key = rkey;
		mw->addr = mr->addr + (iova - mr->iova);
		mw->fd = mr->fd;
		mw->iova = iova;
		mw->len = len;
		mw->access = access;
		mw->qp = qp;
		mw->target = mr;
		mw->bound = 1;
		mr->binds++;
	}
	return rc;
}

int emu_bind_mw(struct emu_qp *qp, struct emu_mr *mw, struct emu_mr *mr, uint64_t iova,
                uint64_t len, int access, uint32_t rkey)
{
	int rc;

	if (!qp || !mw || !mr)
		return -EINVAL;
	pthread_mutex_lock(&qp->dev->lock);
	rc = emu_mw_bind_locked(qp, mw, mr, iova, len, access, rkey);
	pthread_mutex_unlock(&qp->dev->lock);
	return rc;
}

/* The device of window @mw, or NULL where @mw is not a window. */
static struct emu_dev *mw_dev(const struct emu_mr *mw)
{
	return mw && mw->type == EMU_KEY_MW ? mw->pd->dev : NULL;
}

int emu_invalidate_mw(struct emu_mr *mw)
{
	struct emu_dev *dev = mw_dev(mw);

	if (!dev)
		return -EINVAL;
	pthread_mutex_lock(&dev->lock);
	emu_mw_unbind(mw);
	pthread_mutex_unlock(&dev->lock);
	return 0;
}

int emu_dealloc_mw(struct emu_mr *mw)
{
	struct emu_dev *dev = mw_dev(mw);

	if (!dev)
		return -EINVAL;
	pthread_mutex_lock(&dev->lock);
	emu_mw_unbind(mw);
	dev->mrs[mw->key >> 8] = NULL;
	mw->pd->users--;
	pthread_mutex_unlock(&dev->lock);
	free(mw);
	return 0;
}

void emu_mw_qp_gone(struct emu_qp *qp)
{
	struct emu_dev *dev = qp->dev;
	unsigned i;

	for (i = 0; i < SSQ_EMU_MAX_MR; i++)
		if (dev->mrs[i] && dev->mrs[i]->type == EMU_KEY_MW &&
		    dev->mrs[i]->qp == qp)
			emu_mw_unbind(dev->mrs[i]);
}

uint64_t emu_qp_access_errors(struct emu_qp *qp)
{
	uint64_t n;

	if (!qp)
		return 0;
	pthread_mutex_lock(&qp->dev->lock);
	n = qp->access_errors;
	pthread_mutex_unlock(&qp->dev->lock);
	return n;
}
