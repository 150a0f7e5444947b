/* SPDX-License-Identifier: MIT */
/*
 * A program built against an installed ssq only (tests/test_pkg_*.sh): it
 * builds a WQE through the installed headers and prints it; given an ssqd
 * socket, it also connects, opens q0, and moves 64 bytes with one RDMA
 * WRITE through the shared queue (loopback: the peer's arena is this one),
 * checking the completion and the bytes.
 */
#include <ssq/ssq.h>
#include <ssq/client.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int wqe(void)
{
	static unsigned char ring[4 * 64] __attribute__((aligned(64)));
	static __be32 dbrec[2];
	struct mlx5dv_qp dv = { 0 };
	struct ssq_sq sq;

	dv.dbrec = dbrec;
	dv.sq.buf = ring;
	dv.sq.wqe_cnt = 4;
	dv.sq.stride = 64;
	if (ssq_sq_init(&sq, &dv, 5, 0, 1))
		return 1;
	if (ssq_prep_rdma_write(&sq, 0, 0x1000, 1, 8, 0x2000, 2, SSQ_WQE_SIGNALED) != 1)
		return 1;
	return ssq_wqe_dump(stdout, &sq, 0) == 1 ? 0 : 1;
}

static int write_through(const char *sock)
{
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_producer *p;
	struct ssq_buf b;
	struct ssq_completion comp[4];
	time_t t0;
	int rc, n;

	if (ssq_client_connect(sock, &c)) {
		fprintf(stderr, "consumer: %s\n", ssq_client_strerror_last());
		return 1;
	}
	if (ssq_queue_open(c, "q0", &q) || ssq_buf_alloc(c, 4096, &b)) {
		fprintf(stderr, "consumer: %s\n", ssq_client_error(c));
		return 1;
	}
	p = ssq_queue_producer(q);
	memset(b.addr, 0x5a, 64);
	memset((char *)b.addr + 2048, 0, 64);
	/* Loopback: b is its own destination, at its remote descriptor. */
	while ((rc = ssq_post_write(p, b.iova, b.lkey, 64, b.remote_addr + 2048, b.rkey,
	                            7, SSQ_WQE_SIGNALED)) == -EAGAIN)
		ssq_poll(p, comp, 0);
	if (rc) {
		fprintf(stderr, "consumer: ssq_post_write: %s\n", strerror(-rc));
		return 1;
	}
	t0 = time(NULL);
	while ((n = ssq_poll(p, comp, 4)) == 0 && time(NULL) - t0 < 10)
		;
	if (n != 1 || comp[0].wr_id != 7 || comp[0].status != IBV_WC_SUCCESS) {
		fprintf(stderr,
		        "consumer: completion: %d of them, wr_id %llu status %d\n", n,
		        n > 0 ? (unsigned long long)comp[0].wr_id : 0ull,
		        n > 0 ? comp[0].status : -1);
		return 1;
	}
	if (memcmp(b.addr, (char *)b.addr + 2048, 64)) {
		fprintf(stderr, "consumer: the WRITE's bytes did not arrive\n");
		return 1;
	}
	printf("write through %s on %s: ok\n", sock, ssq_client_device(c));
	ssq_queue_close(q);
	ssq_client_close(c);
	return 0;
}

int main(int argc, char **argv)
{
	if (wqe())
		return 1;
	return argc > 1 ? write_through(argv[1]) : 0;
}
