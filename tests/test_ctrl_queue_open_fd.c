/* SPDX-License-Identifier: MIT */
/*
 * ssq_queue_open_start: an open an event loop waits for on a descriptor
 * (issue 30, newcomer review F5: "a non-blocking open, start, then
 * readiness on an fd"; ssq_queue_try_open alone left the loop a timer).
 * alice of a cluster of alice and bob, bob not started:
 *  - start("bob/q0") returns 0 at once (well within SSQ_OPEN_LINK_MS), and
 *    finish before anything says -EINPROGRESS;
 *  - bob started, the loop only polls the descriptor (no timer) and calls
 *    finish when it is readable: the queue opens within 15 s, linked
 *    (ssq_queue_peer_gen >= 1), after a handful of wakes, not a spin;
 *  - start on a queue that exists opens it at once: readable without
 *    waiting, finish hands the queue over; a second finish says -EALREADY;
 *  - start on a name ssqd does not have: readable at once, -ENOENT.
 */
#include <poll.h>
#include "cluster_flow.h"

#define N 2
static const char *const names[N] = { "alice", "bob" };
static struct t_cluster cl;

/* Poll @op's descriptor up to @ms: 1 readable, 0 not. */
static int readable(struct ssq_open *op, int ms)
{
	struct pollfd p = { .fd = ssq_queue_open_fd(op), .events = POLLIN };

	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

int main(void)
{
	struct ssq_client *a = NULL;
	struct ssq_queue *q = NULL;
	struct ssq_open *op = NULL;
	double t0, took;
	int rc, wakes = 0;

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	signal(SIGPIPE, SIG_IGN);
	cf_cluster_files(&cl, "openfd", N, names, 0);
	t_cluster_start(&cl, 0, NULL);
	a = t_cluster_connect(&cl, 0);
	CHECK(a, "alice serves");
	if (!a)
		goto out;

	t0 = now_s();
	rc = ssq_queue_open_start(a, "bob/q0", &op);
	took = now_s() - t0;
	CHECK(rc == 0 && op && ssq_queue_open_fd(op) >= 0,
	      "start with bob down: %d, fd %d", rc, op ? ssq_queue_open_fd(op) : -1);
	CHECK(took < 2.5, "start waited %.2f s (the blocking open waits %u ms)", took,
	      SSQ_OPEN_LINK_MS);
	if (!op)
		goto out;
	rc = ssq_queue_open_finish(op, &q);
	CHECK(rc == -EINPROGRESS && !q, "finish with bob down: %d, want -EINPROGRESS",
	      rc);

	t_cluster_start(&cl, 1, NULL);
	t0 = now_s();
	for (rc = -EINPROGRESS; rc == -EINPROGRESS && now_s() - t0 < 15;) {
		if (!readable(op, 15000))
			continue;
		wakes++;
		rc = ssq_queue_open_finish(op, &q);
	}
	printf("bob started: finish %d after %d wakes, %.2f s\n", rc, wakes,
	       now_s() - t0);
	CHECK(rc == 0 && q, "open once bob runs: %d (%s)", rc, ssq_client_error(a));
	/* One wake a look would be 100 a second: these come from changes. */
	CHECK(wakes <= 40, "%d wakes to open: the descriptor spins", wakes);
	if (q) {
		CHECK(ssq_queue_peer_gen(q) >= 1, "bob/q0 opened but peer_gen %u",
		      ssq_queue_peer_gen(q));
		ssq_queue_close(q);
		q = NULL;
	}
	rc = ssq_queue_open_finish(op, &q);
	CHECK(rc == -EALREADY, "finish after the answer: %d, want -EALREADY", rc);
	ssq_queue_open_free(op);
	op = NULL;

	/* Linked now: the first ask answers, the descriptor is readable at once. */
	rc = ssq_queue_open_start(a, "bob/q0", &op);
	CHECK(rc == 0 && op && readable(op, 0), "start of a linked queue: %d", rc);
	if (op) {
		rc = ssq_queue_open_finish(op, &q);
		CHECK(rc == 0 && q, "finish of a linked queue: %d", rc);
		if (q)
			ssq_queue_close(q);
		q = NULL;
		ssq_queue_open_free(op);
		op = NULL;
	}
	rc = ssq_queue_open_start(a, "carol/q0", &op);
	CHECK(rc == 0 && op && readable(op, 0), "start of an unknown peer's queue: %d",
	      rc);
	if (op) {
		rc = ssq_queue_open_finish(op, &q);
		CHECK(rc == -ENOENT && !q, "finish of carol/q0: %d, want -ENOENT", rc);
		ssq_queue_open_free(op);
		op = NULL;
	}
	/* Given up: free with the thread still looking. */
	rc = ssq_queue_open_start(a, "bob/q0", &op);
	ssq_queue_open_free(op);
	op = NULL;
out:
	if (a)
		ssq_client_close(a);
	t_cluster_stop(&cl);
	return test_exit("ctrl_queue_open_fd");
}
