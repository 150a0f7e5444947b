/* SPDX-License-Identifier: MIT */
/*
 * A peer link's states, as SSQD_TRACE_LINKS logs each change (one place
 * makes them: ssqd_peer_link_to, src/ctrl/daemon/peers/peer.c). Two
 * daemons on demand; alice (whose name sorts first) dials, bob asks:
 *  1. alice's client opens bob/q0: alice idle -> dialing -> exchanging ->
 *     linked;
 *  2. closed, alice's --idle-ms closes the link: linked -> closing -> idle;
 *  3. bob's client opens alice/q0: bob dials only to send its want, idle ->
 *     dialing -> want sent -> idle, and alice's dial back links it (bob:
 *     idle -> linked).
 * Every state of the six is entered; a daemon without SSQD_TRACE_LINKS
 * logs none of it.
 */
#define _GNU_SOURCE
#include "cluster_flow.h"

#define N 2
static const char *const names[N] = { "alice", "bob" };
static struct t_cluster cl;

/* Wait up to @secs for log @i to hold "link @change". */
static int logged(int i, const char *change, double secs)
{
	char needle[96];
	double end = now_s() + secs;

	snprintf(needle, sizeof(needle), ": link %s (fd", change);
	while (!cf_file_has(cl.log[i], needle)) {
		if (now_s() > end) {
			fprintf(stderr, "%s's log has no '%s'\n", names[i], needle);
			return 0;
		}
		usleep(20000);
	}
	return 1;
}

/*
 * A daemon started without SSQD_TRACE_LINKS logs no change, though its
 * --eager dials to bob (not up yet) go idle -> dialing -> idle each backoff.
 */
static void quiet(void)
{
	char port[16], sock[108], log[108];
	const char *args[] = { "--name",   "alice", "--peers", cl.peers,
		               "--listen", port,    "--eager", NULL };
	struct ssq_client *c;
	pid_t pid;

	snprintf(port, sizeof(port), "%u", free_tcp_port());
	snprintf(sock, sizeof(sock), "/tmp/ssq-ci-lt-quiet-%d.sock", getpid());
	snprintf(log, sizeof(log), "/tmp/ssq-ci-lt-quiet-%d.log", getpid());
	pid = cf_start(sock, log, 0, NULL, args);
	c = ssqd_connect_pid(sock, pid);
	CHECK(c != NULL, "a daemon without SSQD_TRACE_LINKS serves");
	if (c) {
		usleep(500000); /* a few dials to bob, refused */
		ssq_client_close(c);
	}
	CHECK(cf_file_has(log, "dialing 127.0.0.1:") &&
	          !cf_file_has(log, ": link idle -> "),
	      "it dialed, and logged no link change");
	t_ssqd_stop(pid, NULL, sock);
	unlink(log);
}

int main(void)
{
	struct ssq_client *a = NULL, *b = NULL;
	struct ssq_queue *q;
	int rc;

	t_need_ssqd();
	cf_cluster_files(&cl, "lt", N, names, 1);
	quiet();
	setenv("SSQD_TRACE_LINKS", "1", 1);
	t_cluster_start(&cl, 0, T_ARGS("--idle-ms", "300"));
	t_cluster_start(&cl, 1, NULL);
	unsetenv("SSQD_TRACE_LINKS");
	a = t_cluster_connect(&cl, 0);
	b = t_cluster_connect(&cl, 1);
	CHECK(a && b, "both daemons serve");
	if (!a || !b)
		goto out;

	/* 1. The dialer's way up. */
	rc = ssq_queue_open(a, "bob/q0", &q);
	CHECK(rc == 0, "alice's client opens bob/q0: %d %s", rc, ssq_client_error(a));
	if (!rc)
		ssq_queue_close(q);
	CHECK(logged(0, "idle -> dialing", 5) && logged(0, "dialing -> exchanging", 5) &&
	          logged(0, "exchanging -> linked", 5),
	      "alice: idle -> dialing -> exchanging -> linked");

	/* 2. --idle-ms: asked, agreed, closed. */
	CHECK(logged(0, "linked -> closing", 10) && logged(0, "closing -> idle", 10),
	      "alice: linked -> closing -> idle once idle");

	/* 3. The other side's want, and the dial back. */
	rc = ssq_queue_open(b, "alice/q0", &q);
	CHECK(rc == 0, "bob's client opens alice/q0: %d %s", rc, ssq_client_error(b));
	if (!rc)
		ssq_queue_close(q);
	CHECK(logged(1, "idle -> dialing", 5) && logged(1, "dialing -> want sent", 5) &&
	          logged(1, "want sent -> idle", 5) && logged(1, "idle -> linked", 5),
	      "bob: idle -> dialing -> want sent -> idle, then linked by alice's dial");
out:
	ssq_client_close(a);
	ssq_client_close(b);
	t_cluster_stop(&cl);
	return test_exit("ctrl_link_trace");
}
