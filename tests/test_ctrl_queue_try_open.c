/* SPDX-License-Identifier: MIT */
/*
 * ssq_queue_try_open never waits for a peer's link (issue 30, newcomer
 * review F5: ssq_queue_open of a peer that is down blocked up to
 * SSQ_OPEN_LINK_MS, 5 s, which an event loop cannot afford). alice of a
 * cluster of alice and bob, bob not started:
 *  - try_open("bob/q0") returns -EINPROGRESS well within SSQ_OPEN_LINK_MS
 *    (under 2.5 s however busy the machine; the blocking open takes 5 s);
 *  - bob started, try_open again every 20 ms opens the queue within 15 s,
 *    and the queue has been linked (ssq_queue_peer_gen >= 1).
 */
#include "cluster_flow.h"

#define N 2
static const char *const names[N] = { "alice", "bob" };
static struct t_cluster cl;

int main(void)
{
	struct ssq_client *a = NULL;
	struct ssq_queue *q = NULL;
	double t0, took;
	int rc, tries = 0;

	t_need_ssqd();
	cf_cluster_files(&cl, "tryopen", N, names, 0);
	t_cluster_start(&cl, 0, NULL);
	a = t_cluster_connect(&cl, 0);
	CHECK(a, "alice serves");
	if (!a)
		goto out;
	t0 = now_s();
	rc = ssq_queue_try_open(a, "bob/q0", &q);
	took = now_s() - t0;
	printf("try_open with bob down: %d after %.3f s: '%s'\n", rc, took,
	       ssq_client_error(a));
	CHECK(rc == -EINPROGRESS && q == NULL,
	      "try_open with bob down: %d, want -EINPROGRESS", rc);
	CHECK(took < 2.5, "try_open waited %.2f s (the blocking open waits %u ms)", took,
	      SSQ_OPEN_LINK_MS);

	t_cluster_start(&cl, 1, NULL);
	t0 = now_s();
	do {
		rc = ssq_queue_try_open(a, "bob/q0", &q);
		tries++;
		if (rc == -EINPROGRESS)
			usleep(20000);
	} while (rc == -EINPROGRESS && now_s() - t0 < 15);
	printf("bob started: try_open %d after %d tries, %.2f s\n", rc, tries,
	       now_s() - t0);
	CHECK(rc == 0 && q, "try_open once bob runs: %d (%s)", rc, ssq_client_error(a));
	if (q) {
		CHECK(ssq_queue_peer_gen(q) >= 1, "bob/q0 opened but peer_gen %u",
		      ssq_queue_peer_gen(q));
		ssq_queue_close(q);
	}
out:
	if (a)
		ssq_client_close(a);
	t_cluster_stop(&cl);
	return test_exit("ctrl_queue_try_open");
}
