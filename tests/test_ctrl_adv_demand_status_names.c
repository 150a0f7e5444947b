/* SPDX-License-Identifier: MIT */
/*
 * ssq_client_peers and ssqd --status at a cluster's limits: fifteen peers
 * and this daemon (sixteen queues), every name of the longest allowed (23
 * characters) and of every kind of character a name may hold (A-Z a-z 0-9
 * . _ -), one peer in each state: idle, connecting, failed and ready.
 * Every name comes back whole, and --status keeps its columns: each
 * peer's state under STATE, its address under ADDRESS. Before, a name
 * longer than 16 pushed the rest of its row to the right.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include "cluster_flow.h"

#define NP 16 /* the daemon and its fifteen peers */

static char names[NP][32], sock[108], sock1[108], log0[108], peers_path[108],
    out_path[108];
static struct ssq_client *c2;

static void *open_failing(void *name)
{
	struct ssq_queue *q;

	if (!ssq_queue_open(c2, name, &q))
		ssq_queue_close(q);
	return NULL;
}
static uint16_t ports[NP];

/* Name @i: 23 characters, of every kind a name may hold. */
static void make_name(int i)
{
	char head[16];

	snprintf(head, sizeof(head), "P%02d.Zz_9-", i % 100);
	memset(names[i], 'x', 23);
	memcpy(names[i], head, strlen(head));
	names[i][23] = 0;
}

int main(void)
{
	struct ssq_peer_info pi[NP];
	struct ssq_client *c = NULL, *c1 = NULL;
	struct ssq_queue *q = NULL;
	pid_t pid, pid1 = -1;
	pthread_t t;
	char cmd[512], line[512];
	int i, n, st, rows = 0, aligned = 0, state_col = -1, addr_col = -1;
	FILE *f;

	t_need_ssqd();
	snprintf(peers_path, sizeof(peers_path), "/tmp/ssq-ci-sn-peers-%d", getpid());
	snprintf(sock, sizeof(sock), "/tmp/ssq-ci-sn-%d.sock", getpid());
	snprintf(sock1, sizeof(sock1), "/tmp/ssq-ci-sn1-%d.sock", getpid());
	snprintf(log0, sizeof(log0), "/tmp/ssq-ci-sn-%d.log", getpid());
	snprintf(out_path, sizeof(out_path), "/tmp/ssq-ci-sn-%d.out", getpid());
	f = fopen(peers_path, "w");
	for (i = 0; i < NP; i++) {
		make_name(i);
		ports[i] = free_tcp_port();
		fprintf(f, "%s 127.0.0.1:%u\n", names[i], ports[i]);
	}
	fclose(f);
	{
		char lport[16];
		const char *args[] = { "--name",   names[0], "--peers", peers_path,
			               "--listen", lport,    NULL };

		snprintf(lport, sizeof(lport), "%u", ports[0]);
		pid = cf_start(sock, log0, 0, NULL, args);
		snprintf(lport, sizeof(lport), "%u", ports[1]);
		args[1] = names[1];
		pid1 = cf_start(sock1, NULL, 0, NULL, args);
	}
	c = ssqd_connect_pid(sock, pid);
	c1 = ssqd_connect_pid(sock1, pid1);
	CHECK(c && c1, "the daemon and its first peer serve");
	if (!c || !c1)
		goto out;
	/* Ready: peer 1 (it runs); failed: peer 2 (nobody there), asked for. */
	snprintf(line, sizeof(line), "%s/q0", names[1]);
	st = ssq_queue_open(c, line, &q);
	CHECK(!st, "%s opens: %d (%s)", line, st, st ? ssq_client_error(c) : "");
	snprintf(line, sizeof(line), "%s/q0", names[2]);
	c2 = ssqd_connect_pid(sock, pid);
	/* Gives up after 5 s; the peer stays failed meanwhile. */
	if (c2)
		pthread_create(&t, NULL, open_failing, line);
	usleep(600000);
	n = ssq_client_peers(c, pi, NP);
	CHECK(n == NP - 1, "ssq_client_peers: %d peers", n);
	for (i = 0; i < n && i < NP - 1; i++)
		if (strcmp(pi[i].name, names[i + 1]))
			break;
	CHECK(i == NP - 1, "every name comes back whole (first wrong: %d)", i);
	CHECK(n == NP - 1 && pi[0].state == SSQ_PEER_READY &&
	          pi[1].state == SSQ_PEER_FAILED && pi[2].state == SSQ_PEER_IDLE,
	      "states: ready %d, failed %d, idle %d", pi[0].state, pi[1].state,
	      pi[2].state);

	snprintf(cmd, sizeof(cmd), "'%s' --status --socket '%s' > %s 2>&1",
	         getenv("SSQD"), sock, out_path);
	CHECK(system(cmd) == 0, "ssqd --status runs");
	f = fopen(out_path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		char *s;

		if (!strncmp(line, "PEER ", 5)) {
			state_col = (int)(strstr(line, "STATE") - line);
			addr_col = (int)(strstr(line, "ADDRESS") - line);
			continue;
		}
		if (state_col < 0 || strncmp(line, "P", 1) || strchr(line, '/'))
			continue;
		rows++;
		s = line + state_col;
		if ((!strncmp(s, "ready", 5) || !strncmp(s, "idle", 4) ||
		     !strncmp(s, "failed", 6) || !strncmp(s, "connecting", 10)) &&
		    !strncmp(line + addr_col, "127.0.0.1:", 10))
			aligned++;
		else
			fprintf(stderr, "out of its columns: %s", line);
	}
	if (f)
		fclose(f);
	CHECK(rows == NP - 1 && aligned == rows,
	      "--status: %d peer rows, %d with state and address in their columns", rows,
	      aligned);
	if (q)
		ssq_queue_close(q);
	if (c2) {
		pthread_join(t, NULL);
		ssq_client_close(c2);
	}
out:
	if (c)
		ssq_client_close(c);
	if (c1)
		ssq_client_close(c1);
	t_ssqd_stop(pid, &st, NULL);
	if (pid1 > 0) {
		t_ssqd_stop(pid1, &st, NULL);
	}
	unlink(sock);
	unlink(sock1);
	unlink(out_path);
	if (!getenv("KEEP_LOGS"))
		unlink(log0);
	unlink(peers_path);
	return test_exit("ctrl_adv_demand_status_names");
}
