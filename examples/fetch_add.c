/* SPDX-License-Identifier: MIT */
/*
 * An 8-byte FETCH_ADD on a counter in the arena, built with the WQE
 * builder: the old value lands in a local buffer in host byte order (as on
 * a ConnectX, whose driver puts the requester in host-endian atomic mode).
 * Exit 0 when the counter went from 40 to 42 and 40 came back.
 */
#include <stdio.h>
#include <stdint.h>
#include <ssq/ssq.h>
#include <ssq/client.h>

int main(void)
{
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_buf counter, old;
	struct ssq_completion comp = { 0 }; /* printed on error too */
	struct ssq_producer *p;
	uint64_t pos;
	int rc;

	if (ssq_client_connect(NULL, &c)) {
		fprintf(stderr, "connect: %s\n", ssq_client_strerror_last());
		return 1;
	}
	if (ssq_queue_open(c, "q0", &q) || ssq_buf_alloc(c, 8, &counter) ||
	    ssq_buf_alloc(c, 8, &old)) {
		fprintf(stderr, "setup: %s\n", ssq_client_error(c));
		return 1;
	}
	*(volatile uint64_t *)counter.addr = 40;
	*(volatile uint64_t *)old.addr = 0;
	p = ssq_queue_producer(q);

	rc = ssq_reserve(p, 1, &pos);
	if (rc) {
		fprintf(stderr, "reserve: %d\n", rc);
		return 1;
	}
	ssq_prep_atomic(ssq_producer_sq(p), (uint32_t)pos, MLX5_OPCODE_ATOMIC_FA,
	                old.iova, old.lkey, counter.remote_addr, counter.rkey,
	                /* add */ 2, 0, ssq_wqe_flags(p, pos, 1, SSQ_WQE_SIGNALED));
	ssq_publish(p, pos, 1, /* wr_id */ 7, SSQ_WQE_SIGNALED);
	ssq_submit(p);

	while ((rc = ssq_poll(p, &comp, 1)) == 0)
		;
	if (rc < 0 || comp.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "completion: rc %d, status %d\n", rc, comp.status);
		return 1;
	}
	if (*(volatile uint64_t *)old.addr != 40 ||
	    *(volatile uint64_t *)counter.addr != 42) {
		fprintf(stderr, "fetched %llu (want 40), counter %llu (want 42)\n",
		        (unsigned long long)*(volatile uint64_t *)old.addr,
		        (unsigned long long)*(volatile uint64_t *)counter.addr);
		return 1;
	}
	printf("fetch_add: 40 + 2 = 42, 40 fetched\n");
	ssq_client_close(c);
	return 0;
}
