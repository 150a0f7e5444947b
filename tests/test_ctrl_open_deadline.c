/* SPDX-License-Identifier: MIT */
/*
 * ssq_queue_open's wait for a peer's link is SSQ_OPEN_LINK_MS by the
 * clock, however long ssqd takes to answer each ask. ssqd has one peer,
 * "zed", that nobody answers for, and is stopped for 90 ms of every 100 ms
 * (SIGSTOP / SIGCONT) while a client opens zed/q0: the open returns
 * -ETIMEDOUT within 8 s. Before, the wait counted only its own 10 ms
 * sleeps between asks, so each ask's answer added to it: about 50 s here.
 */
#define _GNU_SOURCE
#include "cluster_flow.h"

int main(void)
{
	char sock[108], lport[16], peer[64];
	const char *args[] = { "--name", "a", "--listen", lport, "--peer", peer, NULL };
	struct ssq_client *c;
	struct ssq_queue *q;
	double t0, took;
	int rc, st;
	pid_t d, stutter;

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	snprintf(sock, sizeof(sock), "/tmp/ssq-open-deadline-%d.sock", getpid());
	snprintf(lport, sizeof(lport), "%u", free_tcp_port());
	snprintf(peer, sizeof(peer), "zed=127.0.0.1:%u", free_tcp_port());
	d = cf_start(sock, NULL, 0, NULL, args);
	c = ssqd_connect_pid(sock, d);
	if (!c) {
		kill(d, SIGKILL);
		return 1;
	}
	stutter = fork();
	if (stutter == 0) {
		for (;;) {
			kill(d, SIGSTOP);
			usleep(90000);
			kill(d, SIGCONT);
			usleep(10000);
		}
	}
	t0 = now_s();
	rc = ssq_queue_open(c, "zed/q0", &q);
	took = now_s() - t0;
	kill(stutter, SIGKILL);
	waitpid(stutter, &st, 0);
	kill(d, SIGCONT);
	CHECK(rc == -ETIMEDOUT && took < 8,
	      "zed/q0 with ssqd stuttering: %d after %.1f s", rc, took);
	ssq_client_close(c);
	t_ssqd_stop(d, &st, sock);
	return test_exit("ctrl_open_deadline");
}
