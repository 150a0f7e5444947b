/* SPDX-License-Identifier: MIT */
/*
 * A cluster wider than 16: eighteen daemons on the emulated wire from one
 * peers file (each has 17 peers and its own loopback queue: 18 queues, more
 * than a daemon had before SSQ_MAX_QUEUES was 64). A client of n00 opens
 * the queue to every other daemon (each linked on demand), WRITEs a value
 * into a buffer of that daemon's client and READs it back; afterwards n00
 * lists 17 peers, all ready, and 18 queues.
 */
#define _GNU_SOURCE
#include "cluster_flow.h"

#define N 18

static char socks[N][108], peers_path[108];
static pid_t pids[N];

int main(void)
{
	struct ssq_peer_info pi[N];
	struct ssq_queue_info qi[SSQ_MAX_QUEUES];
	struct ssq_client *c[N] = { NULL };
	struct ssq_buf buf[N];
	char name[N][16], lport[N][16], qn[40];
	int i, ok = 0, ready = 0, np, nq, st;
	FILE *f;

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	snprintf(peers_path, sizeof(peers_path), "/tmp/ssq-wide-peers-%d", getpid());
	f = fopen(peers_path, "w");
	for (i = 0; i < N; i++) {
		snprintf(name[i], sizeof(name[i]), "n%02d", i);
		snprintf(lport[i], sizeof(lport[i]), "%u", free_tcp_port());
		fprintf(f, "%s 127.0.0.1:%s\n", name[i], lport[i]);
	}
	fclose(f);
	for (i = 0; i < N; i++) {
		const char *args[] = { "--name",   name[i],    "--peers",
			               peers_path, "--listen", lport[i],
			               "--queues", "1",        NULL };

		snprintf(socks[i], sizeof(socks[i]), "/tmp/ssq-wide-%d-%d.sock", getpid(),
		         i);
		pids[i] = cf_start(socks[i], NULL, 0, NULL, args);
	}
	for (i = 0; i < N; i++) {
		c[i] = ssqd_connect_pid(socks[i], pids[i]);
		if (!c[i] || ssq_buf_alloc(c[i], 4096, &buf[i])) {
			fprintf(stderr, "%s did not come up\n", name[i]);
			goto out;
		}
		memset(buf[i].addr, 0, 4096);
	}
	for (i = 1; i < N; i++) {
		struct ssq_queue *q;
		uint64_t *src = (uint64_t *)buf[0].addr, v = 0x5100 + (uint64_t)i;
		int w, r;

		snprintf(qn, sizeof(qn), "%s/q0", name[i]);
		if (ssq_queue_open(c[0], qn, &q)) {
			fprintf(stderr, "%s: %s\n", qn, ssq_client_error(c[0]));
			continue;
		}
		*src = v;
		w = cf_one(ssq_queue_producer(q), IBV_WR_RDMA_WRITE, &buf[0], 0, 8,
		           &buf[i], 8, 1, 5, 0);
		r = cf_one(ssq_queue_producer(q), IBV_WR_RDMA_READ, &buf[0], 8, 8,
		           &buf[i], 8, 2, 5, 0);
		ok += !w && !r && *(uint64_t *)((uint8_t *)buf[i].addr + 8) == v &&
		      *(uint64_t *)((uint8_t *)buf[0].addr + 8) == v;
		if (w || r)
			fprintf(stderr, "%s: WRITE %d, READ %d\n", qn, w, r);
	}
	CHECK(ok == N - 1, "n00 WROTE to and READ back from %d of %d peers", ok, N - 1);
	np = ssq_client_peers(c[0], pi, N);
	for (i = 0; i < np && i < N; i++)
		ready += pi[i].state == SSQ_PEER_READY;
	nq = ssq_client_list(c[0], qi, SSQ_MAX_QUEUES);
	CHECK(np == N - 1 && ready == N - 1 && nq == N,
	      "n00 lists %d peers (%d ready) and %d queues: want %d, %d, %d", np, ready,
	      nq, N - 1, N - 1, N);
out:
	for (i = 0; i < N; i++) {
		if (c[i])
			ssq_client_close(c[i]);
		if (pids[i] > 0)
			kill(pids[i], SIGTERM);
	}
	for (i = 0; i < N; i++) {
		if (pids[i] > 0)
			waitpid(pids[i], &st, 0);
		unlink(socks[i]);
	}
	unlink(peers_path);
	return test_exit("ctrl_cluster_wide");
}
