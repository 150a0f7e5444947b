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

#endif /* SSQ_TEST_CAP_FLOW_H */
