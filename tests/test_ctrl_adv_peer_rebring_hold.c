/* SPDX-License-Identifier: MIT */
/*
 * A peer that comes back while a client of ours holds a reservation on
 * its queue. alice (--stall-ms 0: no hold is taken back) links to bob; a
 * client of alice reserves a slot on bob/q0 and keeps it (a producer
 * stopped mid-reservation); bob is killed and started again. alice's
 * re-bring of bob/q0 waits for that queue to drain - inside the serve
 * loop, for up to SSQD_RECOVER_DRAIN_MS (2 s), and again at every redial -
 * so meanwhile another client of alice, which has nothing to do with bob,
 * must still be answered at once (a LIST well under a second).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include "recv_flow.h"
#include "shm/layout.h"

int main(void)
{
	char sa[108], sb[108], pa[16], pb[16], peer_a[64], peer_b[64], res[64] = "";
	const char *a_args[] = { "--eager",  "--name", "alice",      "--peer", peer_a,
		                 "--listen", pa,       "--stall-ms", "0",      NULL };
	const char *b_args[] = { "--eager", "--name",   "bob", "--peer",
		                 peer_b,    "--listen", pb,    NULL };
	struct ssq_client *ca = NULL, *cb = NULL;
	uint16_t port_a = free_tcp_port(), port_b = free_tcp_port();
	int hold[2], lst[2], st, worst_ms = -1, failed = -1;
	pid_t la, lb, holder = -1, lister = -1;

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	signal(SIGPIPE, SIG_IGN);
	snprintf(sa, sizeof(sa), "/tmp/ssq-advh2-a-%d.sock", getpid());
	snprintf(sb, sizeof(sb), "/tmp/ssq-advh2-b-%d.sock", getpid());
	snprintf(pa, sizeof(pa), "%u", port_a);
	snprintf(pb, sizeof(pb), "%u", port_b);
	snprintf(peer_a, sizeof(peer_a), "bob=127.0.0.1:%u", port_b);
	snprintf(peer_b, sizeof(peer_b), "alice=127.0.0.1:%u", port_a);
	la = rssqd_start(sa, NULL, a_args);
	lb = rssqd_start(sb, NULL, b_args);
	ca = ssqd_connect_pid(sa, la);
	cb = ca ? ssqd_connect_pid(sb, lb) : NULL;
	CHECK(ca && cb && wait_q0_ready(ca, 1, 10) >= 0 && wait_q0_ready(cb, 1, 10) >= 0,
	      "alice and bob linked");
	if (!ca || !cb || pipe(hold) || pipe(lst))
		goto out;
	ssq_client_close(cb);
	cb = NULL;

	/* The holder: a reservation on bob/q0, never committed. */
	holder = fork();
	if (holder == 0) {
		struct ssq_client *c = NULL;
		struct ssq_queue *q = NULL;
		uint64_t pos;

		if (ssq_client_connect(sa, &c) || ssq_queue_open(c, "bob/q0", &q) ||
		    ssq_reserve(ssq_queue_producer(q), 1, &pos))
			_exit(3);
		(void)!write(hold[1], "H", 1);
		pause();
		_exit(0);
	}
	CHECK(read(hold[0], res, 1) == 1,
	      "a client of alice holds a reservation on bob/q0");

	/* The other client: LISTs for 6 s. */
	lister = fork();
	if (lister == 0) {
		struct ssq_queue_info info[SSQ_MAX_QUEUES];
		struct ssq_client *c = NULL;
		double t0, worst = 0;
		int nfail = 0;
		char out[64];

		if (ssq_client_connect(sa, &c))
			_exit(3);
		(void)!write(lst[1], "R", 1);
		for (t0 = now_s(); now_s() - t0 < 6; usleep(20000)) {
			double t = now_s();

			if (ssq_client_list(c, info, SSQ_MAX_QUEUES) < 1)
				nfail++;
			if (now_s() - t > worst)
				worst = now_s() - t;
		}
		snprintf(out, sizeof(out), "%d %d\n", (int)(worst * 1000), nfail);
		(void)!write(lst[1], out, strlen(out));
		_exit(0);
	}
	(void)!read(lst[0], res, 1);

	/* bob dies and comes back: alice re-brings bob/q0. */
	kill(lb, SIGKILL);
	waitpid(lb, &st, 0);
	usleep(300000);
	lb = rssqd_start(sb, NULL, b_args);
	waitpid(lister, &st, 0);
	lister = -1;
	close(lst[1]);
	memset(res, 0, sizeof(res));
	(void)!read(lst[0], res, sizeof(res) - 1);
	sscanf(res, "%d %d", &worst_ms, &failed);
	CHECK(worst_ms >= 0 && worst_ms < 800 && failed == 0,
	      "bob back while a reservation on bob/q0 is held: another client's slowest "
	      "LIST %d ms, %d failed",
	      worst_ms, failed);
out:
	if (holder > 0) {
		kill(holder, SIGKILL);
		waitpid(holder, &st, 0);
	}
	if (lister > 0) {
		kill(lister, SIGKILL);
		waitpid(lister, &st, 0);
	}
	ssq_client_close(ca);
	ssq_client_close(cb);
	kill(la, SIGTERM);
	waitpid(la, &st, 0);
	kill(lb, SIGTERM);
	waitpid(lb, &st, 0);
	unlink(sa);
	unlink(sb);
	return test_exit("ctrl_adv_peer_rebring_hold");
}
