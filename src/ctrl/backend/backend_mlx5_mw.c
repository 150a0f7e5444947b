/* SPDX-License-Identifier: MIT */
/*
 * Grants on a ConnectX (issue 28 item 1): a type-2 memory window over a
 * range of a buffer's or registration's MR, bound to the queue's QP, so
 * that only requests arriving at that QP reach the range, and only while
 * the window lives.
 *
 * The window is ibv_alloc_mw(pd, IBV_MW_TYPE_2) (mlx5_ib_alloc_mw,
 * drivers/infiniband/hw/mlx5/mr.c: an mkey free = 1, umr_en, en_rinval,
 * in ssqd's PD). A type-2 window is bound by a WQE on the very QP it binds
 * to (rdma-core v44 providers/mlx5/qp.c: _mlx5_post_send, IBV_WR_BIND_MW,
 * set_bind_wr), and that QP's send queue is the shared ring every client
 * posts on: ssqd posts the bind (<ssq/wqe_mw.h>) through its own producer
 * record, a reservation like any client's, and ssqd waits for the bind's
 * CQE before the key goes out (clients/grant.c, from its loop: the bind
 * runs only once every reservation ahead of it is published) - the ordering libmlx5 gets
 * from the initiator small fence on the next WQE (next_fence), which on a shared ring
 * would be another producer's to set.
 *
 * A refused bind completes in error (MLX5_CQE_SYNDROME_MW_BIND_ERR) and
 * puts the QP - every client's queue to that peer - in error. So what the
 * NIC would refuse is refused here first: no MR that may lack
 * IBV_ACCESS_MW_BIND (a client's own verbs registration carries the access
 * it chose), more than 2 GiB (a KLM's byte_count; set_bind_wr), access
 * other than remote. The range and the access the registration allows are
 * grant.c's (find_mem); PD, QP and MR are all ssqd's one PD.
 * revoke is ibv_dealloc_mw: mlx5_ib_dealloc_mw destroys the mkey, bound or
 * not, so its key reaches nothing once it returns.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <ssq/ssq.h>
#include "ctrl/backend/mlx5_pvt.h"

/* The wr_id of ssqd's bind at @pos: apart from its NOPs' (0). */
#define BIND_WR_ID(pos) (0xb1dull << 52 | (pos))

/*
 * The bind WQE at a reservation of ssqd's producer on @q's ring, rung; its
 * completion's wr_id in *@wr_id (grant.c waits for it, outside this call).
 */
static int post_bind(struct ssq_producer *p, uint32_t mw_rkey, uint32_t new_rkey,
                     uint32_t lkey, uint64_t iova, uint64_t len, int access,
                     uint64_t *wr_id, uint64_t *end, char *why, size_t whylen)
{
	uint64_t pos;
	unsigned i;
	int rc, n;

	rc = ssq_reserve(p, SSQ_WQE_BIND_MW_WQEBBS, &pos);
	if (rc) {
		snprintf(why, whylen, "no room on the queue's ring for the bind: %s",
		         strerror(-rc));
		return rc;
	}
	n = ssq_prep_bind_mw(
	    ssq_producer_sq(p), (uint32_t)pos, mw_rkey, new_rkey, lkey, iova, len,
	    (unsigned)access,
	    ssq_wqe_flags(p, pos, SSQ_WQE_BIND_MW_WQEBBS, SSQ_WQE_SIGNALED));
	if (n < 0) {
		/* Checked above, so never; but what was reserved is published. */
		for (i = 0; i < SSQ_WQE_BIND_MW_WQEBBS; i++) {
			ssq_prep_nop(ssq_producer_sq(p), (uint32_t)(pos + i),
			             ssq_wqe_flags(p, pos + i, 1, 0));
			ssq_publish(p, pos + i, 1, 0, 0);
		}
		ssq_submit(p);
		snprintf(why, whylen, "the bind WQE: %s", strerror(-n));
		return n;
	}
	rc = ssq_publish(p, pos, SSQ_WQE_BIND_MW_WQEBBS, BIND_WR_ID(pos),
	                 SSQ_WQE_SIGNALED);
	if (rc) {
		snprintf(why, whylen, "publishing the bind: %s", strerror(-rc));
		return rc;
	}
	ssq_submit(p);
	*wr_id = BIND_WR_ID(pos);
	*end = pos + SSQ_WQE_BIND_MW_WQEBBS;
	return 0;
}

int mlx5_grant_post(struct ssqd_backend *b, struct ssqd_bqueue *q, void *mem, int client,
                    uint64_t iova, uint64_t len, int access, void **mwp, uint32_t *rkey,
                    uint64_t *wr_id, uint64_t *end, char *why, size_t whylen)
{
	struct ibv_mr *mr = mem;
	struct ibv_mw *mw;
	uint32_t key;
	uint8_t v = 0;
	int rc;

	if (client) {
		int bindable;

		mr = mlx5_client_mr_of(mem, &bindable);
		if (!bindable) {
			/* A bind over it would fail (MW_BIND_ERR) and error the queue. */
			snprintf(why, whylen,
			         "the registration was made without "
			         "IBV_ACCESS_MW_BIND: no window can be bound to it");
			return -EOPNOTSUPP;
		}
	}
	if (!q->prod) {
		snprintf(why, whylen,
		         "a loopback queue's other end: its QP has no ring ssqd posts "
		         "binds on");
		return -EOPNOTSUPP;
	}
	if (!access || (access & ~SSQ_MW_ACCESS) || !len) {
		snprintf(why, whylen, "access 0x%x over %llu bytes: not a window", access,
		         (unsigned long long)len);
		return -EINVAL;
	}
	if (len > SSQ_MW_MAX_LEN) {
		snprintf(why, whylen, "%llu bytes: a window covers at most 2 GiB",
		         (unsigned long long)len);
		return -EOPNOTSUPP;
	}
	while (!v)
		if (getrandom(&v, 1, 0) != 1) {
			snprintf(why, whylen, "getrandom: %s", strerror(errno));
			return -errno;
		}
	mw = ibv_alloc_mw(b->pd, IBV_MW_TYPE_2);
	if (!mw) {
		rc = errno ? -errno : -ENOMEM;
		snprintf(why, whylen, "ibv_alloc_mw: %s", strerror(-rc));
		return rc;
	}
	/* The window's index, a byte drawn at random (not ibv_inc_rkey's count). */
	key = (mw->rkey & ~0xffu) | v;
	rc = post_bind(q->prod, mw->rkey, key, mr->lkey, iova, len, access, wr_id, end,
	               why, whylen);
	if (rc) {
		ibv_dealloc_mw(mw);
		return rc;
	}
	*mwp = mw;
	*rkey = key;
	return 0;
}

void mlx5_revoke(struct ssqd_backend *b, void *mw)
{
	(void)b;
	ibv_dealloc_mw(mw);
}
