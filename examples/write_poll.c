/* SPDX-License-Identifier: MIT */
/*
 * The smallest ssq sender: connect to ssqd, open shared queue q0, RDMA
 * WRITE 4 KiB from one arena buffer to another and wait for this process's
 * own completion. With ssqd in loopback (no peer ssqd) the queue's other
 * end is inside ssqd, so the data lands in this host's arena and we can
 * check it. Exit 0 when the bytes arrived.
 */
#include <stdio.h>
#include <string.h>
#include <ssq/ssq.h>
#include <ssq/client.h>

int main(void)
{
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_buf src, dst;
	struct ssq_completion comp = { 0 }; /* printed on error too */
	struct ssq_producer *p;
	int rc, i;

	/* NULL: $SSQ_SOCKET, else ssqd's default path. */
	rc = ssq_client_connect(NULL, &c);
	if (rc) {
		fprintf(stderr, "connect: %s\n", ssq_client_strerror_last());
		return 1;
	}
	if (ssq_queue_open(c, "q0", &q) || ssq_buf_alloc(c, 4096, &src) ||
	    ssq_buf_alloc(c, 4096, &dst)) {
		fprintf(stderr, "setup: %s\n", ssq_client_error(c));
		return 1;
	}
	for (i = 0; i < 4096; i++)
		((unsigned char *)src.addr)[i] = (unsigned char)(i * 7);
	memset(dst.addr, 0, 4096);

	/*
	 * WQEs carry IOVAs, the same in every process: the source with its
	 * local key, the destination at its remote descriptor (each buffer
	 * has keys of its own; a peer's comes from the client that owns it).
	 */
	p = ssq_queue_producer(q);
	rc = ssq_post_write(p, src.iova, src.lkey, 4096, dst.remote_addr, dst.rkey,
	                    /* wr_id */ 42, SSQ_WQE_SIGNALED);
	if (rc) {
		fprintf(stderr, "post: %d\n", rc);
		return 1;
	}
	/* Only this process's completions come back here, in posting order. */
	while ((rc = ssq_poll(p, &comp, 1)) == 0)
		;
	if (rc < 0 || comp.wr_id != 42 || comp.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "completion: rc %d, wr_id %llu, status %d\n", rc,
		        (unsigned long long)comp.wr_id, comp.status);
		return 1;
	}
	if (memcmp(src.addr, dst.addr, 4096)) {
		fprintf(stderr, "the destination does not hold what was written\n");
		return 1;
	}
	printf("write_poll: 4096 bytes written and checked\n");
	ssq_client_close(c); /* closes q0 too */
	return 0;
}
