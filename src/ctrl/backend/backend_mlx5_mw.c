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
 * record, a reservation like any client's, and waits for the bind's CQE
 * before the key goes out - the ordering libmlx5 gets from the initiator
 * small fence on the next WQE (next_fence), which on a shared ring would
 * be another producer's to set.
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
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include <ssq/ssq.h>
#include "ctrl/backend/mlx5_pvt.h"

/* How long a bind may take to complete: a local operation, microseconds on a NIC. */
#define BIND_WAIT_MS 2000

/* The wr_id of ssqd's bind at @pos: apart from its NOPs' (0). */
#define BIND_WR_ID(pos) (0xb1dull << 52 | (pos))

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The completion of ssqd's WQE @wr_id on @p: 0, or -errno with @why. */
static int wait_done(struct ssq_producer *p, uint64_t wr_id, char *why, size_t whylen)
{
	uint64_t end = now_ms() + BIND_WAIT_MS;
	struct ssq_completion c[16];
	int n, i;

	for (;;) {
		n = ssq_poll(p, c, 16);
		if (n < 0) {
			snprintf(why, whylen, "waiting for the bind: %s", strerror(-n));
			return n;
		}
		/* Others are ssqd's signaled NOPs: nothing waits for them. */
		for (i = 0; i < n; i++) {
			if (c[i].wr_id != wr_id)
				continue;
			if (c[i].status == IBV_WC_SUCCESS)
				return 0;
			snprintf(
			    why, whylen,
			    "the bind completed with %s (syndrome 0x%x): the queue is "
			    "in error",
			    ibv_wc_status_str((enum ibv_wc_status)c[i].status),
			    c[i].syndrome);
			return -EIO;
		}
		if (now_ms() > end) {
			snprintf(why, whylen, "the bind did not complete in %d ms",
			         BIND_WAIT_MS);
			return -ETIMEDOUT;
		}
		if (!n)
			usleep(20);
	}
}

/* The bind WQE at a reservation of ssqd's producer on @q's ring, rung, completed. */
static int post_bind(struct ssq_producer *p, uint32_t mw_rkey, uint32_t new_rkey,
                     uint32_t lkey, uint64_t iova, uint64_t len, int access, char *why,
                     size_t whylen)
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
	return wait_done(p, BIND_WR_ID(pos), why, whylen);
}

int mlx5_grant(struct ssqd_backend *b, struct ssqd_bqueue *q, void *mem, int client,
               uint64_t iova, uint64_t len, int access, void **mwp, uint32_t *rkey,
               char *why, size_t whylen)
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
	rc = post_bind(q->prod, mw->rkey, key, mr->lkey, iova, len, access, why, whylen);
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
