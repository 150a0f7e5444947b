/* SPDX-License-Identifier: MIT */
/*
 * An eviction under --max-active-peers against an open at the far end.
 * alice (--max-active-peers 1) has peers bob and carol, and a link to bob
 * idle at both ends. Each round: bob's client opens alice/q0 (attached at
 * once: the link is up) and at once alice's client opens carol/q0, which
 * needs bob's slot while bob's word that his end is in use may still be
 * on its way. alice now
 * asks bob to close first (as --idle-ms does) and bob, busy, says so: the
 * open of carol/q0 is refused -EBUSY naming the limit, and bob's queue
 * keeps working (a WRITE through it lands). Once bob has closed his queue,
 * alice's open of carol/q0 gets the slot. Before, alice closed bob's link
 * at once: bob's freshly opened queue went to error under his client.
 */
#define _GNU_SOURCE
#include "cluster_flow.h"

#define N      3
#define ROUNDS 10
static const char *const names[N] = { "alice", "bob", "carol" };
static char socks[N][108], peers_path[108];
static pid_t pids[N];

int main(void)
{
	struct ssq_client *c[N] = { NULL };
	struct ssq_buf buf[N];
	char lport[N][16];
	struct ssq_queue *qa;
	double t0;
	int i, r, st, lost = 0, refused = 0;
	FILE *f;

	t_need_ssqd();
	snprintf(peers_path, sizeof(peers_path), "/tmp/ssq-lru-ask-peers-%d", getpid());
	f = fopen(peers_path, "w");
	for (i = 0; i < N; i++) {
		snprintf(lport[i], sizeof(lport[i]), "%u", free_tcp_port());
		fprintf(f, "%s 127.0.0.1:%s\n", names[i], lport[i]);
	}
	fclose(f);
	for (i = 0; i < N; i++) {
		const char *args[] = { "--name",
			               names[i],
			               "--peers",
			               peers_path,
			               "--listen",
			               lport[i],
			               i ? NULL : "--max-active-peers",
			               "1",
			               NULL };

		snprintf(socks[i], sizeof(socks[i]), "/tmp/ssq-lru-ask-%s-%d.sock",
		         names[i], getpid());
		pids[i] = cf_start(socks[i], NULL, 0, NULL, args);
	}
	for (i = 0; i < N; i++) {
		c[i] = ssqd_connect_pid(socks[i], pids[i]);
		if (!c[i] || ssq_buf_alloc(c[i], 4096, &buf[i]))
			goto out;
	}
	/* bob's link up, then idle at both ends for longer than an open's hold. */
	{
		struct ssq_queue *qb;

		if (ssq_queue_open(c[1], "alice/q0", &qb)) {
			fprintf(stderr, "bob's first open: %s\n", ssq_client_error(c[1]));
			goto out;
		}
		ssq_queue_close(qb);
		usleep(2000000);
	}
	for (r = 0; r < ROUNDS; r++) {
		struct ssq_queue *qb = NULL, *qa = NULL;
		int rc, st2;

		/* The link is up: bob's open attaches at once; his BUSY follows. */
		if (ssq_queue_open(c[1], "alice/q0", &qb)) {
			fprintf(stderr, "round %d: bob's open: %s\n", r,
			        ssq_client_error(c[1]));
			lost++;
			continue;
		}
		rc = ssq_queue_open(c[0], "carol/q0", &qa);
		refused +=
		    rc == -EBUSY && strstr(ssq_client_error(c[0]), "--max-active-peers");
		if (!rc)
			ssq_queue_close(qa);
		st2 = cf_one(ssq_queue_producer(qb), IBV_WR_RDMA_WRITE, &buf[1], 0, 8,
		             &buf[0], 8 * (uint64_t)r, 1, 2, 0);
		if (st2)
			fprintf(stderr, "round %d: bob's WRITE: %d (alice's open %d)\n",
			        r, st2, rc);
		lost += st2 != 0;
		ssq_queue_close(qb);
		usleep(100000); /* his IDLE arrives */
	}
	CHECK(lost == 0, "bob's queue lost under him in %d of %d rounds", lost, ROUNDS);
	CHECK(refused == ROUNDS, "alice's open while bob's end is busy: -EBUSY %d of %d",
	      refused, ROUNDS);
	/* bob's end idle: alice's open takes the slot, asking first. */
	for (t0 = now_s();
	     (st = ssq_queue_open(c[0], "carol/q0", &qa)) == -EBUSY && now_s() - t0 < 3;)
		usleep(20000);
	CHECK(st == 0, "alice's open once bob's end is idle: %d (%s)", st,
	      st ? ssq_client_error(c[0]) : "ok");
out:
	for (i = 0; i < N; i++) {
		if (c[i])
			ssq_client_close(c[i]);
		kill(pids[i], SIGTERM);
	}
	for (i = 0; i < N; i++) {
		waitpid(pids[i], &st, 0);
		unlink(socks[i]);
	}
	unlink(peers_path);
	return test_exit("ctrl_adv_demand_lru_ask");
}
