/* SPDX-License-Identifier: MIT */
/*
 * An open on demand whose peer has no room. alice (--max-active-peers 1,
 * the daemon that dials bob and carol) has carol's link in use; bob's
 * client opens alice/q0, so bob asks alice to dial it (a want). alice
 * cannot without closing a link in use: bob's client must be told -EBUSY,
 * naming alice's --max-active-peers, at once, as a client of alice's
 * would be. Before, alice only logged it, bob kept asking, and the client
 * waited the whole 5 s for -ETIMEDOUT saying alice had been "asked to
 * dial". Once carol's queue is closed, bob's open links.
 */
#define _GNU_SOURCE
#include "cluster_flow.h"

#define N 3
static const char *const names[N] = { "alice", "bob", "carol" };
static struct t_cluster cl;

int main(void)
{
	struct ssq_client *a = NULL, *b = NULL;
	struct ssq_queue *qc = NULL, *qa = NULL;
	double t0, took;
	int i, st;

	t_need_ssqd();
	cf_cluster_files(&cl, "ci-wb", N, names, 0);
	t_cluster_start(&cl, 0, T_ARGS("--max-active-peers", "1"));
	for (i = 1; i < N; i++)
		t_cluster_start(&cl, i, NULL);
	a = t_cluster_connect(&cl, 0);
	b = t_cluster_connect(&cl, 1);
	ssq_client_close(t_cluster_connect(&cl, 2));
	CHECK(a && b, "alice and bob serve");
	if (!a || !b)
		goto out;
	st = ssq_queue_open(a, "carol/q0", &qc);
	CHECK(!st, "alice's client holds carol/q0: %d (%s)", st,
	      st ? ssq_client_error(a) : "");
	if (st)
		goto out;
	usleep(50000); /* carol hears alice is busy */
	t0 = now_s();
	st = ssq_queue_open(b, "alice/q0", &qa);
	took = now_s() - t0;
	CHECK(st == -EBUSY && strstr(ssq_client_error(b), "--max-active-peers") &&
	          took < 2,
	      "bob's client opens alice/q0 while alice's one link is in use: %d "
	      "after %.2f s (%s)",
	      st, took, ssq_client_error(b));
	if (!st)
		ssq_queue_close(qa);
	qa = NULL;
	ssq_queue_close(qc);
	usleep(100000); /* carol hears alice is idle */
	t0 = now_s();
	st = ssq_queue_open(b, "alice/q0", &qa);
	took = now_s() - t0;
	CHECK(!st && took < 3,
	      "once carol's link is idle, alice/q0 opens: %d after %.2f s (%s)", st, took,
	      st ? ssq_client_error(b) : "");
	if (!st)
		ssq_queue_close(qa);
out:
	ssq_client_close(a);
	ssq_client_close(b);
	t_cluster_stop(&cl);
	return test_exit("ctrl_adv_demand_want_busy");
}
