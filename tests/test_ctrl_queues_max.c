/* SPDX-License-Identifier: MIT */
/*
 * The most queues one ssqd has (SSQ_MAX_QUEUES, 64; a cluster of 63 peers
 * and itself needs them all): ssqd --queues 64 lists all 64 (q0..q63, one
 * LIST reply) with distinct QPNs; a client opens the last, WRITEs through
 * it into its own buffer, closes it (ssqd's per-client record of what it
 * has attached covers queue 63) and opens it again; --queues 65 is refused
 * naming the range.
 */
#define _GNU_SOURCE
#include "cluster_flow.h"

int main(void)
{
	char sock[108], log[108], n[16], name[16];
	const char *args[] = { "--queues", n, NULL };
	struct ssq_queue_info info[SSQ_MAX_QUEUES];
	struct ssq_completion comp[4];
	struct ssq_client *c;
	struct ssq_queue *q = NULL;
	struct ssq_buf src, dst;
	int i, j, k, dup = 0, named = 0, got = 0, rc, st;
	double t0;
	pid_t pid;

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	snprintf(sock, sizeof(sock), "/tmp/ssq-qmax-%d.sock", getpid());
	snprintf(log, sizeof(log), "/tmp/ssq-qmax-%d.log", getpid());
	snprintf(n, sizeof(n), "%u", SSQ_MAX_QUEUES);
	pid = cf_start(sock, log, 0, NULL, args);
	c = ssqd_connect_pid(sock, pid);
	k = c ? ssq_client_list(c, info, SSQ_MAX_QUEUES) : -1;
	CHECK(k == (int)SSQ_MAX_QUEUES, "--queues %u: LIST gives %d", SSQ_MAX_QUEUES, k);
	for (i = 0; i < k; i++) {
		snprintf(name, sizeof(name), "q%d", i);
		named += !strcmp(info[i].name, name);
		for (j = 0; j < i; j++)
			dup += info[i].qpn == info[j].qpn;
	}
	CHECK(k > 0 && named == k && !dup, "names q0..q%d: %d of %d; QPNs alike: %d",
	      k - 1, named, k, dup);
	snprintf(name, sizeof(name), "q%u", SSQ_MAX_QUEUES - 1);
	rc = c ? ssq_queue_open(c, name, &q) || ssq_buf_alloc(c, 64, &src) ||
	             ssq_buf_alloc(c, 64, &dst)
	       : -1;
	CHECK(rc == 0, "%s and two buffers: %s", name, c ? ssq_client_error(c) : "-");
	if (!rc) {
		memset(src.addr, 0x3c, 64);
		rc = ssq_post_write(ssq_queue_producer(q), src.iova, src.lkey, 64,
		                    dst.remote_addr, dst.rkey, 7, SSQ_WQE_SIGNALED);
		for (t0 = now_s(); !rc && !got && now_s() - t0 < 10;)
			got = ssq_poll(ssq_queue_producer(q), comp, 4);
		CHECK(!rc && got == 1 && comp[0].status == 0 &&
		          ((uint8_t *)dst.addr)[0] == 0x3c,
		      "a WRITE through %s lands: post %d, %d completion(s)", name, rc,
		      got);
		ssq_queue_close(q);
		q = NULL;
		rc = ssq_queue_open(c, name, &q);
		CHECK(rc == 0, "%s opens again after its close: %s", name,
		      rc ? ssq_client_error(c) : "ok");
		if (q)
			ssq_queue_close(q);
	}
	if (c)
		ssq_client_close(c);
	t_ssqd_stop(pid, &st, NULL);

	snprintf(n, sizeof(n), "%u", SSQ_MAX_QUEUES + 1);
	snprintf(name, sizeof(name), "1 to %u", SSQ_MAX_QUEUES);
	pid = cf_start(sock, log, 0, NULL, args);
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2 && cf_file_has(log, name),
	      "--queues %u refused naming the range: exit 0x%x", SSQ_MAX_QUEUES + 1, st);
	unlink(sock);
	unlink(log);
	return test_exit("ctrl_queues_max");
}
