/* SPDX-License-Identifier: MIT */
/*
 * The send CQ cannot overrun (issue 15, item 2). Flow control counts
 * WQEBBs, so a ring of --sq-size WQEBBs can have that many WRs
 * outstanding, each giving a CQE when signaled - or when an error flushes
 * it, signaled or not. With --cq-size 64 in front of a 256-WQEBB ring,
 * ssqd used to make a 64-CQE send CQ: all-signaled posting overran it and
 * the queue hung (an overrun mlx5 CQ stops). Now the CQ holds a CQE per
 * WQEBB and then some, and:
 *  - 200 signaled WRITEs posted without polling all complete;
 *  - a bad WRITE ahead of 150 more: every one of them comes back, the bad
 *    one REM_ACCESS, the rest flushed, and RECOVER brings the queue back.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <ssq/ssq.h>
#include <ssq/client.h>
#include "helpers.h"
#include "ctrl_flow.h"

static pid_t start_small_cq(void)
{
	const char *ssqd = getenv("SSQD");
	pid_t pid = fork();

	if (pid == 0) {
		execl(ssqd, ssqd, "--device", "emu", "--socket", sock_path,
		      "--hugepages=off", "--data-mib", "8", "--sq-size", "256",
		      "--cq-size", "64", (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* Post @n signaled WRITEs (the first with @bad_rkey if nonzero) unpolled. */
static int post_burst(struct ssq_queue *q, const struct ssq_buf *src,
                      const struct ssq_buf *dst, int n, uint32_t bad_rkey)
{
	struct ssq_producer *p = ssq_queue_producer(q);
	int k, rc;

	for (k = 0; k < n; k++) {
		rc = ssq_post_write(p, src->iova, src->lkey, 64, dst->remote_addr,
		                    k == 0 && bad_rkey ? bad_rkey : dst->rkey,
		                    (uint64_t)k, SSQ_WQE_SIGNALED);
		if (rc) {
			fprintf(stderr, "post %d: %d\n", k, rc);
			return -1;
		}
	}
	return 0;
}

/* Poll @n completions (10 s at most); count those that failed. */
static int collect(struct ssq_queue *q, int n, int *failed, int *flushed)
{
	struct ssq_producer *p = ssq_queue_producer(q);
	struct ssq_completion c[32];
	double t0 = now_s();
	int got = 0, k, r;

	*failed = *flushed = 0;
	while (got < n && now_s() - t0 < 10) {
		r = ssq_poll(p, c, 32);
		for (k = 0; k < r; k++) {
			if (c[k].status != IBV_WC_SUCCESS)
				(*failed)++;
			if (c[k].status == IBV_WC_WR_FLUSH_ERR)
				(*flushed)++;
		}
		got += r > 0 ? r : 0;
		if (r <= 0)
			usleep(100);
	}
	return got;
}

int main(void)
{
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_buf src, dst;
	int got, failed, flushed;
	pid_t d;

	snprintf(sock_path, sizeof(sock_path), "/tmp/ssq-cqroom-%d.sock", getpid());
	d = start_small_cq();
	c = connect_retry(d);
	if (!c) {
		kill(d, SIGKILL);
		return 1;
	}
	CHECK(ssq_queue_open(c, "q0", &q) == 0, "open: %s", ssq_client_error(c));
	CHECK(ssq_buf_alloc(c, 4096, &src) == 0 && ssq_buf_alloc(c, 4096, &dst) == 0,
	      "alloc: %s", ssq_client_error(c));
	if (test_failures)
		goto out;
	printf("send CQ: %u CQEs for %u WQEBBs (--cq-size 64)\n",
	       ssq_queue_cq(q)->cqe_cnt, ssq_queue_sq(q)->wqe_cnt);

	CHECK(post_burst(q, &src, &dst, 200, 0) == 0, "200 signaled WRITEs posted");
	usleep(50 * 1000); /* the device completes them all before anyone polls */
	got = collect(q, 200, &failed, &flushed);
	printf("all-signaled: %d of 200 completions, %d failed\n", got, failed);
	CHECK(got == 200 && failed == 0, "all-signaled: %d of 200, %d failed", got,
	      failed);

	CHECK(post_burst(q, &src, &dst, 151, dst.rkey ^ 0x5a5a) == 0,
	      "a bad WRITE and 150 more posted");
	usleep(50 * 1000);
	got = collect(q, 151, &failed, &flushed);
	printf("error + flush: %d of 151 completions, %d failed, %d flushed\n", got,
	       failed, flushed);
	CHECK(got == 151 && failed == 151 && flushed >= 140,
	      "error + flush: %d of 151, %d failed, %d flushed", got, failed, flushed);
	CHECK(ssq_queue_recover(q) == 0, "recover: %s", ssq_client_error(c));
	CHECK(write_and_wait(q, &src, &dst, 64) == 0, "a WRITE after the recovery");
out:
	ssq_client_close(c);
	t_ssqd_stop(d, NULL, NULL);
	return test_exit("ctrl_cq_room");
}
