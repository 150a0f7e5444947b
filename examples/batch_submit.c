/* SPDX-License-Identifier: MIT */
/*
 * A batch in liburing's style: reserve 32 WQEBBs with one fetch-add, build
 * 32 RDMA WRITEs in place, publish each, and ring one doorbell for all of
 * them. Only the last WQE asks for a completion (the queue adds the CQEs it
 * needs itself); a completion covers every earlier WQE of this producer.
 * Exit 0 when all 32 destinations hold their source.
 */
#include <stdio.h>
#include <string.h>
#include <ssq/ssq.h>
#include <ssq/client.h>

#define N   32
#define LEN 64

int main(void)
{
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_buf src, dst;
	struct ssq_completion comp = { 0 }; /* printed on error too */
	struct ssq_producer *p;
	uint64_t pos;
	int rc, i;

	if (ssq_client_connect(NULL, &c)) {
		fprintf(stderr, "connect: %s\n", ssq_client_strerror_last());
		return 1;
	}
	if (ssq_queue_open(c, "q0", &q) || ssq_buf_alloc(c, N * LEN, &src) ||
	    ssq_buf_alloc(c, N * LEN, &dst)) {
		fprintf(stderr, "setup: %s\n", ssq_client_error(c));
		return 1;
	}
	memset(src.addr, 0xab, N * LEN);
	memset(dst.addr, 0, N * LEN);
	p = ssq_queue_producer(q);

	rc = ssq_reserve(p, N, &pos); /* -EAGAIN: full; poll and retry */
	if (rc) {
		fprintf(stderr, "reserve: %d\n", rc);
		return 1;
	}
	for (i = 0; i < N; i++) {
		unsigned flags = i == N - 1 ? SSQ_WQE_SIGNALED : 0;

		/* ssq_wqe_flags adds the signal the queue forces now and then. */
		ssq_prep_rdma_write(ssq_producer_sq(p), (uint32_t)(pos + i),
		                    src.iova + (uint64_t)i * LEN, src.lkey, LEN,
		                    dst.remote_addr + (uint64_t)i * LEN, dst.rkey,
		                    ssq_wqe_flags(p, pos + i, 1, flags));
		ssq_publish(p, pos + i, 1, /* wr_id */ (uint64_t)i, flags);
	}
	ssq_submit(p); /* one doorbell for the 32 */

	while ((rc = ssq_poll(p, &comp, 1)) == 0)
		;
	if (rc < 0 || comp.wr_id != N - 1 || comp.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "completion: rc %d, wr_id %llu, status %d\n", rc,
		        (unsigned long long)comp.wr_id, comp.status);
		return 1;
	}
	if (memcmp(src.addr, dst.addr, N * LEN)) {
		fprintf(stderr, "a destination does not hold its source\n");
		return 1;
	}
	printf("batch_submit: %d WRITEs, one doorbell, checked\n", N);
	ssq_client_close(c);
	return 0;
}
