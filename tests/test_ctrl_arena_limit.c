/* SPDX-License-Identifier: MIT */
/*
 * No queue buffer lands in the data arena (issue 15, item 1). ssqd budgets
 * the arena's queue part from what it asks; a device that makes a bigger
 * ring than asked - libmlx5 sizing every WQE for BIND_MW and LOCAL_INV when
 * a QP names no send ops: 1024 WRs of 4 SGEs / 64 inline bytes become 8192
 * WQEBBs - must find the arena's end at the data arena's start
 * (arena.limit), and the queue is refused, rather than carved out of memory
 * the data MR covers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "helpers.h"
#include "ctrl/backend/backend.h"

#define QUEUE_PART (1u << 20) /* budget for one 1024-WQEBB queue, as ssqd's */
#define DATA_LEN   (2u << 20)

static int overlaps(const void *p, size_t len, const uint8_t *data)
{
	const uint8_t *b = p;

	return b + len > data && b < data + DATA_LEN;
}

int main(void)
{
	struct ssqd_sq_request req = { 1024, 4, 64, 0 };
	struct shm_arena a;
	struct ssqd_backend *b = NULL;
	struct ssqd_bqueue q;
	uint8_t *data;
	char why[256];
	int rc;

	rc = shm_arena_create(&a, 4096 + QUEUE_PART + DATA_LEN, SSQ_HUGEPAGES_OFF,
	                      "arenalimit", why, sizeof(why));
	CHECK(rc == 0, "arena: %s", why);
	if (rc)
		return test_exit("ctrl_arena_limit");
	/* ssqd's layout: header, queues, then the data arena at the end. */
	a.used = a.len - DATA_LEN;
	data = shm_arena_alloc(&a, DATA_LEN, 4096);
	a.used = 4096;
	a.limit = (size_t)(data - a.base);
	CHECK(shm_arena_alloc(&a, QUEUE_PART + 4096, 4096) == NULL,
	      "an allocation past the limit succeeded");

	rc = ssqd_backend_emu.open(&b, "emu", &a, NULL, why, sizeof(why));
	CHECK(rc == 0, "open: %s", why);
	if (!rc) {
		rc = ssqd_backend_emu.create_queue(b, &req, 64, 0, 1, &q, why,
		                                   sizeof(why));
		printf("ibv_create_qp-style request (no send ops): %s%s\n",
		       rc ? "refused: " : "created", rc ? why : "");
		CHECK(rc == -ENOSPC, "create_queue: %d, want -ENOSPC", rc);
		if (!rc) {
			CHECK(!overlaps(q.dv_qp.sq.buf, (size_t)q.dv_qp.sq.wqe_cnt * 64,
			                data),
			      "SQ of %u WQEBBs inside the data arena",
			      q.dv_qp.sq.wqe_cnt);
			CHECK(!overlaps(q.dv_cq.buf, (size_t)q.dv_cq.cqe_cnt * 64, data),
			      "CQ of %u CQEs inside the data arena", q.dv_cq.cqe_cnt);
		}
		CHECK(a.used <= a.limit,
		      "the arena's queue part ran %zu bytes into the data",
		      a.used - a.limit);
		/* What ssqd asks (the ops ssq builds) fits the same budget. */
		req.max_send_wr = 1024 * 64 / 256;
		req.max_inline_data = 204;
		req.send_ops = SSQD_SEND_OPS;
		rc = ssqd_backend_emu.create_queue(b, &req, 64, 0, 1, &q, why,
		                                   sizeof(why));
		CHECK(rc == 0 && q.dv_qp.sq.wqe_cnt == 1024,
		      "ssqd's request: %d (%s), %u", rc, rc ? why : "",
		      q.dv_qp.sq.wqe_cnt);
		ssqd_backend_emu.close(b);
	}
	shm_arena_destroy(&a);
	return test_exit("ctrl_arena_limit");
}
