/* SPDX-License-Identifier: MIT */
/*
 * An open, on demand, of a queue fenced while its peer stays linked.
 * alice's client WRITEs to bob/q0 with a wrong rkey: bob's responder QP
 * goes to ERR (IBV_EVENT_QP_ACCESS_ERR) and bob fences its alice/q0, which
 * nobody on bob has open. alice's client leaves without a RECOVER. The
 * link stays up (nothing closes it without --idle-ms), so bob's alice/q0
 * can only come back by a re-link. A client of bob that opens alice/q0
 * must get it (the re-link asked for and done) or a clear error at once;
 * alice's bob/q0 opens again too. Before, the open answered "linking"
 * for 5 s with nothing under way and failed -ETIMEDOUT saying the peer
 * did not link, though it was linked, and so did every open after it.
 * The same on a loopback queue (alice/q0, alice's own): one client's bad
 * WRITE, then its leaving, wedged the queue until ssqd restarted, every
 * open -EAGAIN "not connected yet (waiting for the peer ssqd)"; now the
 * next open recovers it.
 */
#define _GNU_SOURCE
#include "cluster_flow.h"

#define N 2
static const char *const names[N] = { "alice", "bob" };
static struct t_cluster cl;

/* A WRITE through @q with a key nobody gave out: its completion's status. */
static int bad_write(struct ssq_queue *q, const struct ssq_buf *b)
{
	struct ssq_producer *p = ssq_queue_producer(q);
	struct ssq_completion comp;
	double t0 = now_s();
	int rc = ssq_post_write(p, b->iova, b->lkey, 64, b->remote_addr,
	                        b->rkey ^ 0x5a5a00, 0xbad, SSQ_WQE_SIGNALED);

	if (rc)
		return -1000 + rc;
	while (now_s() - t0 < 10) {
		if (ssq_poll(p, &comp, 1) == 1)
			return comp.status;
		usleep(1000);
	}
	return -1;
}

int main(void)
{
	struct ssq_client *a = NULL, *b = NULL;
	struct ssq_queue *q = NULL;
	struct ssq_buf buf;
	double t0, took;
	int i, st;

	t_need_ssqd();
	cf_cluster_files(&cl, "ci-fen", N, names, 0);
	for (i = 0; i < N; i++)
		t_cluster_start(&cl, i, NULL);
	a = t_cluster_connect(&cl, 0);
	b = t_cluster_connect(&cl, 1);
	CHECK(a && b, "alice and bob serve");
	if (!a || !b)
		goto out;
	st = ssq_queue_open(a, "bob/q0", &q);
	CHECK(!st, "alice's client opens bob/q0: %d (%s)", st, ssq_client_error(a));
	if (st)
		goto out;
	CHECK(!ssq_buf_alloc(a, 4096, &buf), "a buffer");
	st = bad_write(q, &buf);
	CHECK(st == IBV_WC_REM_ACCESS_ERR, "the WRITE with a wrong rkey: status %d", st);
	for (i = 0; i < 300 && !cf_file_has(cl.log[1], "async event"); i++)
		usleep(10000);
	CHECK(cf_file_has(cl.log[1], "async event"), "bob fenced its alice/q0");
	ssq_buf_free(a, &buf);
	ssq_queue_close(q); /* no RECOVER: the client leaves */
	q = NULL;

	t0 = now_s();
	st = ssq_queue_open(b, "alice/q0", &q);
	took = now_s() - t0;
	CHECK(!st && took < 3, "bob's client opens alice/q0: %d after %.2f s (%s)", st,
	      took, st ? ssq_client_error(b) : "");
	if (!st)
		ssq_queue_close(q);
	q = NULL;
	t0 = now_s();
	st = ssq_queue_open(a, "bob/q0", &q);
	took = now_s() - t0;
	CHECK(!st && took < 3, "alice's client opens bob/q0 again: %d after %.2f s (%s)",
	      st, took, st ? ssq_client_error(a) : "");
	if (!st)
		ssq_queue_close(q);
	q = NULL;

	/* The same on alice's loopback queue (alice/q0, both ends in alice). */
	st = ssq_queue_open(a, "alice/q0", &q);
	CHECK(!st, "alice's client opens its loopback alice/q0: %d (%s)", st,
	      st ? ssq_client_error(a) : "");
	if (st)
		goto out;
	CHECK(!ssq_buf_alloc(a, 4096, &buf), "a buffer");
	st = bad_write(q, &buf);
	CHECK(st == IBV_WC_REM_ACCESS_ERR, "the WRITE with a wrong rkey: status %d", st);
	for (i = 0; i < 300 && !cf_file_has(cl.log[0], "async event"); i++)
		usleep(10000);
	CHECK(cf_file_has(cl.log[0], "async event"), "alice fenced alice/q0");
	ssq_buf_free(a, &buf);
	ssq_queue_close(q);
	q = NULL;
	t0 = now_s();
	st = ssq_queue_open(a, "alice/q0", &q);
	took = now_s() - t0;
	CHECK(!st && took < 3, "alice/q0 opens again: %d after %.2f s (%s)", st, took,
	      st ? ssq_client_error(a) : "");
	if (!st)
		ssq_queue_close(q);
out:
	ssq_client_close(a);
	ssq_client_close(b);
	t_cluster_stop(&cl);
	return test_exit("ctrl_adv_demand_fenced_open");
}
