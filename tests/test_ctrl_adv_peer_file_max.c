/* SPDX-License-Identifier: MIT */
/*
 * The largest cluster, from one shared peers file. "The file may list
 * every daemon of the cluster, so one file serves them all" (ssqd(8)), its
 * own line giving a daemon its loopback queue: with --queues 1 a file of
 * SSQ_MAX_QUEUES (64) daemons is 63 peers and its own queue, all the
 * queues one ssqd has, and must be taken; one of 65 is refused saying how
 * many queues that would take; one of 66 (65 peers) saying there are too
 * many peers.
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
	char peers[108], sock[108], log[108], lport[16], most[48], over[64], me[8],
	    last[8];
	const char *args[] = { "--eager",  "--name", "n16",      "--peers", peers,
		               "--queues", "1",      "--listen", lport,     NULL };
	struct ssq_queue_info info[SSQ_MAX_QUEUES];
	struct ssq_client *c;
	int st, n;
	pid_t pid;

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	snprintf(peers, sizeof(peers), "/tmp/ssq-advmax-peers-%d", getpid());
	snprintf(sock, sizeof(sock), "/tmp/ssq-advmax-%d.sock", getpid());
	snprintf(log, sizeof(log), "/tmp/ssq-advmax-%d.log", getpid());
	/* ssqd links to as many peers as it has queues. */
	snprintf(most, sizeof(most), "more than %u peers", SSQ_MAX_QUEUES);
	snprintf(over, sizeof(over), "is %u queues, more than the %u", SSQ_MAX_QUEUES + 1,
	         SSQ_MAX_QUEUES);
	snprintf(lport, sizeof(lport), "%u", free_tcp_port());

	/* 64 daemons, n63 among them: its 63 peers and its own queue. */
	snprintf(me, sizeof(me), "n%02u", SSQ_MAX_QUEUES - 1);
	args[2] = me;
	write_file(peers, SSQ_MAX_QUEUES, 40000);
	pid = cf_start(sock, log, 0, NULL, args);
	c = ssqd_connect_pid(sock, pid);
	n = c ? ssq_client_list(c, info, SSQ_MAX_QUEUES) : -1;
	CHECK(c && n == (int)SSQ_MAX_QUEUES,
	      "a file of %u daemons is %u queues: ssqd serves %d (log: %s)",
	      SSQ_MAX_QUEUES, SSQ_MAX_QUEUES, n, cf_file_has(log, most) ? most : "-");
	ssq_client_close(c);
	t_ssqd_stop(pid, &st, NULL);

	/* 65 daemons: 65 queues, one too many. */
	snprintf(last, sizeof(last), "n%02u", SSQ_MAX_QUEUES);
	args[2] = last;
	write_file(peers, SSQ_MAX_QUEUES + 1, 40000);
	pid = cf_start(sock, log, 0, NULL, args);
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2 && cf_file_has(log, over),
	      "a file of %u daemons is refused: exit 0x%x", SSQ_MAX_QUEUES + 1, st);

	/* 66 daemons: 65 peers, one too many. */
	write_file(peers, SSQ_MAX_QUEUES + 2, 40000);
	pid = cf_start(sock, log, 0, NULL, args);
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2 && cf_file_has(log, most),
	      "a file of %u daemons is refused: exit 0x%x", SSQ_MAX_QUEUES + 2, st);

	unlink(peers);
	unlink(sock);
	unlink(log);
	return test_exit("ctrl_adv_peer_file_max");
}
