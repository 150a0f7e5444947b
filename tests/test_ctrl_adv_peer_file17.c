/* SPDX-License-Identifier: MIT */
/*
 * The largest cluster, from one shared peers file. "The file may list
 * every daemon of the cluster, so one file serves them all" (ssqd(8)), its
 * own line giving a daemon its loopback queue: with --queues 1 a file of 16
 * daemons is 15 peers and its own queue, the 16 queues one ssqd has, and
 * must be taken (before, its own line counted against the peers' limit);
 * one of 17 is refused saying how many queues that would take; one of 18
 * (17 peers) saying there are too many peers.
 */
#define _GNU_SOURCE
#include "cluster_flow.h"

static void write_file(const char *path, unsigned n, uint16_t first_port)
{
	FILE *f = fopen(path, "w");
	unsigned i;

	for (i = 0; i < n; i++)
		fprintf(f, "n%02u 127.0.0.1:%u\n", i, first_port + i);
	fclose(f);
}

int main(void)
{
	char peers[108], sock[108], log[108], lport[16];
	const char *args[] = { "--eager",  "--name", "n16",      "--peers", peers,
		               "--queues", "1",      "--listen", lport,     NULL };
	struct ssq_queue_info info[SSQ_MAX_QUEUES];
	struct ssq_client *c;
	int st, n;
	pid_t pid;

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	snprintf(peers, sizeof(peers), "/tmp/ssq-adv17-peers-%d", getpid());
	snprintf(sock, sizeof(sock), "/tmp/ssq-adv17-%d.sock", getpid());
	snprintf(log, sizeof(log), "/tmp/ssq-adv17-%d.log", getpid());
	snprintf(lport, sizeof(lport), "%u", free_tcp_port());

	/* 16 daemons, n15 among them: its 15 peers and its own queue. */
	args[2] = "n15";
	write_file(peers, 16, 40000);
	pid = cf_start(sock, log, 0, NULL, args);
	c = ssqd_connect_pid(sock, pid);
	n = c ? ssq_client_list(c, info, SSQ_MAX_QUEUES) : -1;
	CHECK(c && n == 16, "a file of 16 daemons is 16 queues: ssqd serves %d (log: %s)",
	      n, cf_file_has(log, "more than 16 peers") ? "'more than 16 peers'" : "-");
	ssq_client_close(c);
	kill(pid, SIGTERM);
	waitpid(pid, &st, 0);

	/* 17 daemons: 17 queues, one too many. */
	args[2] = "n16";
	write_file(peers, 17, 40000);
	pid = cf_start(sock, log, 0, NULL, args);
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2 &&
	          cf_file_has(log, "is 17 queues, more than the 16"),
	      "a file of 17 daemons is refused: exit 0x%x", st);

	/* 18 daemons: 17 peers, one too many. */
	write_file(peers, 18, 40000);
	pid = cf_start(sock, log, 0, NULL, args);
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2 &&
	          cf_file_has(log, "more than 16 peers"),
	      "a file of 18 daemons is refused: exit 0x%x", st);

	unlink(peers);
	unlink(sock);
	unlink(log);
	return test_exit("ctrl_adv_peer_file17");
}
