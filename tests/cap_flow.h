/* SPDX-License-Identifier: MIT */
/*
 * Shared pieces of the grant tests (remote access as a capability, issue
 * 28 item 1): one signaled work request against a granted window, a
 * queue recovered after the REM_ACCESS_ERR a refused one leaves, and a
 * buffer's bytes checked.
 */
#ifndef SSQ_TEST_CAP_FLOW_H
#define SSQ_TEST_CAP_FLOW_H

#include "cluster_flow.h"
#include "dv/ctl.h"

/* One signaled @op of 64 bytes between @l and (@raddr, @rkey) on @q's producer. */
static inline int cap_one(struct ssq_queue *q, enum ibv_wr_opcode op,
                          const struct ssq_buf *l, uint64_t raddr, uint32_t rkey,
                          uint64_t id)
{
	struct ssq_buf r = { 0 };

	r.remote_addr = raddr;
	r.rkey = rkey;
	return cf_one(ssq_queue_producer(q), op, l, 0, 64, &r, 0, id, 20, 1);
}

/* @c's queue @name recovered from an error and READY again: 0, else -1. */
static inline int cap_recover(struct ssq_client *c, struct ssq_queue *q, const char *name)
{
	double t0 = now_s();
	int rc;

	while ((rc = ssq_queue_recover(q)) && now_s() - t0 < 20)
		usleep(20000);
	if (rc)
		fprintf(stderr, "recover %s: %d\n", name, rc);
	return rc == 0 && cf_wait_ready(c, name, 1, 20) ? 0 : -1;
}

/* Whether all @n bytes at @p are @v. */
static inline int cap_all_bytes(const void *p, uint8_t v, size_t n)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		if (b[i] != v)
			return 0;
	return 1;
}

/*
 * A signaled NOP on @p and its completion: IBV_WC_SUCCESS when every WQE
 * ahead of it on the ring ran and none put the queue in error (a refused
 * bind does: its CQE is MW_BIND_ERR and what follows is flushed), else
 * the flush's status; -1000 + the reserve's or publish's -errno (-EIO:
 * the queue is in error); -1 when none came within 30 s.
 */
static inline int cap_nop_status(struct ssq_producer *p, uint64_t id)
{
	struct ssq_completion comp;
	double t0 = now_s();
	uint64_t pos;
	int rc, n;

	while ((rc = ssq_reserve(p, 1, &pos)) == -EAGAIN && now_s() - t0 < 20)
		usleep(1000);
	if (rc)
		return -1000 + rc;
	ssq_prep_nop(ssq_producer_sq(p), (uint32_t)pos,
	             ssq_wqe_flags(p, pos, 1, SSQ_WQE_SIGNALED));
	rc = ssq_publish(p, pos, 1, id, SSQ_WQE_SIGNALED);
	if (rc)
		return -1000 + rc;
	ssq_submit(p);
	while (now_s() - t0 < 30) {
		n = ssq_poll(p, &comp, 1);
		if (n < 0)
			return -1000 + n;
		if (n == 1 && comp.wr_id == id)
			return (int)comp.status;
		if (n != 1)
			usleep(100);
	}
	return -1;
}

/* @p's hole at @pos (one WQEBB it reserved) filled with a NOP: ssq_publish's rc. */
static inline int cap_hole_fill(struct ssq_producer *p, uint64_t pos)
{
	int rc;

	ssq_prep_nop(ssq_producer_sq(p), (uint32_t)pos, ssq_wqe_flags(p, pos, 1, 0));
	rc = ssq_publish(p, pos, 1, 0, 0);
	if (!rc)
		ssq_submit(p);
	return rc;
}

/*
 * Wait up to @secs until @p's ring has WQEBBs reserved past @pos + 1 (ssqd's
 * bind behind a hole at @pos, on a ConnectX; only ssqd reserves there).
 * 1 if it came.
 */
static inline int cap_wait_reserved(struct ssq_producer *p, uint64_t pos, double secs)
{
	double t0 = now_s();

	while (now_s() - t0 < secs) {
		if (ssq_ctl_reserved(p->ctl) > pos + 1)
			return 1;
		usleep(1000);
	}
	return 0;
}

#endif /* SSQ_TEST_CAP_FLOW_H */
