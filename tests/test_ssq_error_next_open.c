/* SPDX-License-Identifier: MIT */
/*
 * A queue its last client left in error is recovered for the next client
 * that opens it (issue 28, item 5). A client posts a WRITE with a wrong
 * lkey: a requester-side error (IBV_WC_LOC_PROT_ERR) that raises no async
 * event (only responder errors do, IB 11.6.3), so only the error CQE tells
 * of it, and that reaches the client through its own routing. The queue's
 * shared state goes to error and its next reservation gets -EIO. The client leaves
 * without ssq_queue_recover. The next client opens the queue (retrying while ssqd answers
 * -EAGAIN or -EINPROGRESS, as it does until the first client's departure is seen and what
 * was in flight has drained) and posts a WRITE that must complete, data checked.
 */
#include "ssq_flow.h"

static char sock[108];

/* Poll @prod for one completion, up to 10 s; its status, or -1. */
static int one_completion(struct ssq_producer *prod)
{
	struct ssq_completion comp;
	double t0 = now_s();

	while (now_s() - t0 < 10) {
		if (ssq_poll(prod, &comp, 1) == 1)
			return (int)comp.status;
		usleep(100);
	}
	return -1;
}

/* The first client: an access error, then gone. 0, or 1 on a setup failure. */
static int leave_in_error(void)
{
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_buf src, dst;
	struct ssq_producer *p;
	int rc, st;

	if (ssq_client_connect(sock, &c))
		return 1;
	if (ssq_queue_open(c, "q0", &q) || ssq_buf_alloc(c, 4096, &src) ||
	    ssq_buf_alloc(c, 4096, &dst)) {
		ssq_client_close(c);
		return 1;
	}
	p = ssq_queue_producer(q);
	rc = ssq_post_write(p, src.iova, src.lkey ^ 0x5a, 64, dst.remote_addr, dst.rkey,
	                    1, SSQ_WQE_SIGNALED);
	CHECK(rc == 0, "post with a wrong lkey: %d", rc);
	st = one_completion(p);
	CHECK(st == IBV_WC_LOC_PROT_ERR, "the wrong lkey completed with status %d", st);
	rc = ssq_post_write(p, src.iova, src.lkey, 64, dst.remote_addr, dst.rkey, 2,
	                    SSQ_WQE_SIGNALED);
	CHECK(rc == -EIO, "a post after the error CQE: %d, want -EIO", rc);
	ssq_client_close(c);
	return 0;
}

int main(void)
{
	struct ssq_client *c = NULL, *c2 = NULL;
	struct ssq_queue *q = NULL;
	struct ssq_buf src, dst;
	struct ssq_producer *p;
	double t0;
	int rc = -1, st, status;
	pid_t d;

	t_need_ssqd();
	snprintf(sock, sizeof(sock), "/tmp/ssq-nextopen-%d.sock", getpid());
	c = ssqd_start(sock, "8", "256", NULL, &d);
	if (!c) {
		fprintf(stderr, "ssqd did not start\n");
		return 1;
	}
	ssq_client_close(c);
	CHECK(leave_in_error() == 0, "first client's setup");

	CHECK(ssq_client_connect(sock, &c2) == 0, "second client connects");
	t0 = now_s();
	while (c2 && now_s() - t0 < 20) {
		rc = ssq_queue_open(c2, "q0", &q);
		if (rc != -EAGAIN && rc != -EINPROGRESS)
			break;
		usleep(10 * 1000);
	}
	CHECK(rc == 0, "the next open: %d (%s)", rc, c2 ? ssq_client_error(c2) : "");
	if (!rc && !ssq_buf_alloc(c2, 4096, &src) && !ssq_buf_alloc(c2, 4096, &dst)) {
		memset(src.addr, 0xa5, 64);
		p = ssq_queue_producer(q);
		rc = ssq_post_write(p, src.iova, src.lkey, 64, dst.remote_addr, dst.rkey,
		                    3, SSQ_WQE_SIGNALED);
		CHECK(rc == 0,
		      "a post on the queue the last client left in error: %d (the open "
		      "did not recover it)",
		      rc);
		st = rc ? -1 : one_completion(p);
		CHECK(rc || st == IBV_WC_SUCCESS, "the WRITE after the open: status %d",
		      st);
		CHECK(rc || memcmp(src.addr, dst.addr, 64) == 0,
		      "the WRITE's data did not land");
	}
	if (c2)
		ssq_client_close(c2);
	CHECK(t_ssqd_stop_ok(d, &status, NULL), "ssqd exit 0x%x", status);
	unlink(sock);
	return test_exit("ssq_error_next_open");
}
