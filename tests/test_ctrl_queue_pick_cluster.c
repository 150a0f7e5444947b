/* SPDX-License-Identifier: MIT */
/*
 * ssq_queue_open of "PEER/any" in a cluster (issue 29): alice and bob, each
 * --queues 2 per peer.
 *  - "bob/any" links bob on demand and opens one of bob's queues; once both
 *    are up, further opens alternate bob/q0, bob/q1 (fewest producers
 *    first), each named by ssq_queue_name as ssqd lists it, and a WRITE
 *    goes through a picked queue to bob's buffer granted on that queue;
 *  - "alice/any" (this ssqd's own name) picks among its loopback queues;
 *  - "any" alone names no peer (-ENOENT saying "PEER/any" and the peers);
 *    "carol/any" names a peer the cluster has not (-ENOENT naming it).
 */
#define _GNU_SOURCE
#include "cluster_flow.h"

#define N 2
static const char *const names[N] = { "alice", "bob" };

int main(void)
{
	struct ssq_client *a, *b;
	struct ssq_queue *q[4], *ql;
	struct ssq_buf src, dst;
	struct ssq_desc desc;
	int i, rc;
	struct t_cluster cl;

	t_need_ssqd();
	t_rssqd_grants = 1;
	cf_cluster_files(&cl, "qpc", N, names, 0);
	for (i = 0; i < N; i++)
		t_cluster_start(&cl, (unsigned)i, T_ARGS("--queues", "2"));
	a = t_cluster_connect(&cl, 0);
	b = t_cluster_connect(&cl, 1);
	CHECK(a && b, "alice and bob serve");
	if (!a || !b)
		goto out;

	rc = ssq_queue_open(a, "bob/any", &q[0]);
	CHECK(rc == 0, "bob/any (linked on demand): %d (%s)", rc, ssq_client_error(a));
	if (rc)
		goto out;
	CHECK(!strcmp(ssq_queue_name(q[0]), "bob/q0"), "the first bob/any: %s",
	      ssq_queue_name(q[0]));
	CHECK(cf_wait_ready(a, "bob/q1", 1, 20), "bob/q1 up with the link");
	for (i = 1; i < 4; i++) {
		const char *want = i % 2 ? "bob/q1" : "bob/q0";

		rc = ssq_queue_open(a, "bob/any", &q[i]);
		CHECK(rc == 0 && !strcmp(ssq_queue_name(q[i]), want),
		      "open %d of bob/any: %d %s, want %s (%s)", i, rc,
		      rc ? "-" : ssq_queue_name(q[i]), want, ssq_client_error(a));
		if (rc)
			goto out;
	}

	/* A WRITE through the picked bob/q1 to bob's buffer granted on it. */
	CHECK(ssq_buf_alloc(a, 64, &src) == 0 && ssq_buf_alloc(b, 64, &dst) == 0,
	      "buffers: %s / %s", ssq_client_error(a), ssq_client_error(b));
	rc = ssq_buf_grant(b, "alice/q1", &dst, 0, 64, IBV_ACCESS_REMOTE_WRITE, &desc);
	CHECK(rc == 0, "bob grants alice/q1: %d (%s)", rc, ssq_client_error(b));
	if (!test_failures) {
		memset(src.addr, 0x6b, 64);
		memset(dst.addr, 0, 64);
		rc = ssq_post_write(ssq_queue_producer(q[1]), src.iova, src.lkey, 64,
		                    desc.remote_addr, desc.rkey, 7, SSQ_WQE_SIGNALED);
		CHECK(rc == 0, "WRITE on bob/q1: %d", rc);
		for (i = 0; i < 2000 && !rc && memcmp(src.addr, dst.addr, 64); i++)
			usleep(10000);
		CHECK(!memcmp(src.addr, dst.addr, 64), "the WRITE through bob/q1 landed");
	}

	rc = ssq_queue_open(a, "alice/any", &ql);
	CHECK(rc == 0 && !strcmp(ssq_queue_name(ql), "alice/q0"),
	      "alice/any (loopback): %d %s (%s)", rc, rc ? "-" : ssq_queue_name(ql),
	      ssq_client_error(a));
	rc = ssq_queue_open(a, "any", &ql);
	CHECK(rc == -ENOENT && strstr(ssq_client_error(a), "PEER/any") &&
	          strstr(ssq_client_error(a), "bob"),
	      "\"any\" in a cluster: %d (%s)", rc, ssq_client_error(a));
	rc = ssq_queue_open(a, "carol/any", &ql);
	CHECK(rc == -ENOENT && strstr(ssq_client_error(a), "\"carol\"") &&
	          strstr(ssq_client_error(a), "alice") &&
	          strstr(ssq_client_error(a), "bob"),
	      "carol/any: %d (%s)", rc, ssq_client_error(a));
out:
	if (a)
		ssq_client_close(a);
	if (b)
		ssq_client_close(b);
	t_cluster_stop(&cl);
	return test_exit("ctrl_queue_pick_cluster");
}
