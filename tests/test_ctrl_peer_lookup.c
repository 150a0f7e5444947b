/* SPDX-License-Identifier: MIT */
/*
 * A peer named by a host whose lookup never answers: ssqd's loop must not
 * wait on it. ssqd runs in a mount namespace of its own whose resolv.conf
 * names a nameserver that swallows every query (127.0.0.2:53 here, a UDP
 * socket that reads and never answers; timeout 2 s, 1 attempt), with one
 * peer "slow" at "ssq-slow-peer.example:PORT". A client opens slow/q0, so
 * ssqd dials it, again after each failure, for the open's 5 s (which end
 * in -ETIMEDOUT); meanwhile another client LISTs every 20 ms: each LIST
 * is answered within 0.5 s. Before, every dial called getaddrinfo in the
 * serve loop, and LISTs waited the resolver's 4 s (A and AAAA) each time. Needs root (a
 * mount namespace, port 53): skipped otherwise.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <sys/mount.h>
#include "cluster_flow.h"

static pid_t blackhole(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		struct sockaddr_in sa;
		char buf[512];
		int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

		memset(&sa, 0, sizeof(sa));
		sa.sin_family = AF_INET;
		sa.sin_port = htons(53);
		sa.sin_addr.s_addr = htonl(0x7f000002);
		if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)))
			_exit(1);
		for (;;)
			if (recv(s, buf, sizeof(buf), 0) < 0 && errno != EINTR)
				_exit(1);
	}
	return pid;
}

int main(void)
{
	char sock[108], conf[108], lport[16], peer[96];
	const char *args[] = { "--name", "a", "--listen", lport, "--peer", peer, NULL };
	struct ssq_queue_info qi[4];
	struct ssq_client *c;
	double t0, t1, worst = 0;
	int lists = 0, failed = 0, st;
	pid_t bh, d, opener;
	FILE *f;

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	if (geteuid() != 0)
		SKIP("needs root: a mount namespace for resolv.conf, and port 53");
	snprintf(sock, sizeof(sock), "/tmp/ssq-lookup-%d.sock", getpid());
	snprintf(conf, sizeof(conf), "/tmp/ssq-lookup-%d.conf", getpid());
	snprintf(lport, sizeof(lport), "%u", free_tcp_port());
	snprintf(peer, sizeof(peer), "slow=ssq-slow-peer.example:%u", free_tcp_port());
	f = fopen(conf, "w");
	fprintf(f, "nameserver 127.0.0.2\noptions timeout:2 attempts:1\n");
	fclose(f);
	bh = blackhole();
	/* This process's own mount namespace, which ssqd inherits. */
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount(conf, "/etc/resolv.conf", NULL, MS_BIND, NULL)) {
		kill(bh, SIGKILL);
		SKIP("no mount namespace here (%s)", strerror(errno));
	}
	d = cf_start(sock, NULL, 0, NULL, args);
	c = ssqd_connect_pid(sock, d);
	CHECK(c != NULL, "ssqd serves");
	/* Another client opens slow/q0: ssqd dials it, again and again. */
	opener = fork();
	if (opener == 0) {
		struct ssq_client *c2;
		struct ssq_queue *q;

		_exit(ssq_client_connect(sock, &c2)                     ? 1
		      : ssq_queue_open(c2, "slow/q0", &q) == -ETIMEDOUT ? 0
		                                                        : 2);
	}
	for (t0 = now_s(); c && now_s() - t0 < 5; lists++) {
		t1 = now_s();
		failed += ssq_client_list(c, qi, 4) < 0; /* timed out waiting */
		t1 = now_s() - t1;
		worst = t1 > worst ? t1 : worst;
		usleep(20000);
	}
	CHECK(c && !failed && worst < 0.5,
	      "%d LISTs while ssqd looks the peer up, %d failed: the slowest %.2f s",
	      lists, failed, worst);
	waitpid(opener, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "the open of slow/q0 times out (-ETIMEDOUT): status 0x%x", st);
	if (c)
		ssq_client_close(c);
	t_ssqd_stop(d, &st, NULL);
	kill(bh, SIGKILL);
	waitpid(bh, &st, 0);
	umount("/etc/resolv.conf");
	unlink(conf);
	unlink(sock);
	return test_exit("ctrl_peer_lookup");
}
