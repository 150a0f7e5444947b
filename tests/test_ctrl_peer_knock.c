/* SPDX-License-Identifier: MIT */
/*
 * Connections to ssqd's peer port that do not say who they are hold no one
 * up (peers/accept.c). ssqd read a knocking peer's addresses inside its
 * loop, waiting up to 5 s: every TCP connection to the port that sent
 * nothing stopped every client of the daemon for 5 s, again and again.
 * Here, against ssqd --listen:
 *  1. three silent connections and one sending a byte every 100 ms: a
 *     client's LIST round trips stay fast meanwhile (before: ~5 s each);
 *  2. a real peer (ssqd --connect) links while they still hang;
 *  3. a ninth and tenth knock while eight are open take the slots of the
 *     oldest two (one source holds them all), which are closed at once;
 *  4. the silent ones are closed at their 5 s deadline.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include "recv_flow.h"

/* The slowest of @n LIST round trips on @c, in seconds. */
static double slowest_list(struct ssq_client *c, int n, int dribble)
{
	struct ssq_queue_info info[2];
	double worst = 0;
	int i;

	for (i = 0; i < n; i++) {
		double t0 = now_s(), dt;

		if (ssq_client_list(c, info, 2) < 0)
			return 99;
		dt = now_s() - t0;
		if (dt > worst)
			worst = dt;
		if (dribble >= 0 && i % 10 == 0)
			(void)!send(dribble, "S", 1, MSG_NOSIGNAL);
		usleep(10000);
	}
	return worst;
}

int main(void)
{
	uint16_t port = free_tcp_port();
	char sa[108], sb[108], arg[32], carg[32];
	const char *la_args[] = { "--listen", arg, NULL };
	const char *cb_args[] = { "--connect", carg, NULL };
	struct ssq_client *ca = NULL, *cb = NULL;
	int silent[9], dribble, i, st;
	double worst, t0;
	char b;
	pid_t la, lb = -1;

	t_need_ssqd();
	snprintf(sa, sizeof(sa), "/tmp/ssq-knock-l-%d.sock", getpid());
	snprintf(sb, sizeof(sb), "/tmp/ssq-knock-c-%d.sock", getpid());
	snprintf(arg, sizeof(arg), "%u", port);
	snprintf(carg, sizeof(carg), "127.0.0.1:%u", port);
	la = rssqd_start(sa, NULL, la_args);
	ca = ssqd_connect_pid(sa, la);
	CHECK(ca != NULL, "the listening ssqd serves");
	if (!ca)
		goto out;

	/* 1. */
	for (i = 0; i < 3; i++)
		silent[i] = t_tcp_connect(-1, port);
	dribble = t_tcp_connect(-1, port);
	CHECK(silent[0] >= 0 && silent[2] >= 0 && dribble >= 0, "knocks connected");
	worst = slowest_list(ca, 60, dribble);
	CHECK(worst < 0.2, "the slowest LIST while four knocks hang: %.3f s", worst);

	/* 2. */
	t0 = now_s();
	lb = rssqd_start(sb, NULL, cb_args);
	cb = ssqd_connect_pid(sb, lb);
	CHECK(cb && wait_q0_ready(ca, 1, 10) >= 0 && wait_q0_ready(cb, 1, 10) >= 0,
	      "a real peer linked while the knocks hang");
	CHECK(now_s() - t0 < 3.0, "within %.2f s", now_s() - t0);

	/*
	 * 3. Four open now: four more fill the slots, and the ninth and tenth
	 * take the two oldest's (all from one address).
	 */
	for (i = 3; i < 9; i++)
		silent[i] = t_tcp_connect(-1, port);
	usleep(200000);
	{
		struct pollfd p[2] = { { silent[0], POLLIN, 0 },
			               { silent[1], POLLIN, 0 } };
		struct pollfd n = { silent[8], POLLIN, 0 };

		CHECK(poll(p, 2, 2000) >= 1 && poll(p, 2, 2000) == 2 &&
		          recv(silent[0], &b, 1, MSG_DONTWAIT) <= 0 &&
		          recv(silent[1], &b, 1, MSG_DONTWAIT) <= 0,
		      "the two oldest knocks are closed at once for the newcomers");
		CHECK(poll(&n, 1, 0) == 0, "the newest knock holds a slot");
	}
	worst = slowest_list(ca, 20, -1);
	CHECK(worst < 0.2, "the slowest LIST with every slot held: %.3f s", worst);

	/* 4. */
	{
		struct pollfd p = { silent[2], POLLIN, 0 };
		double waited;

		t0 = now_s();
		st = poll(&p, 1, 8000);
		waited = now_s() - t0;
		CHECK(st == 1 && recv(silent[2], &b, 1, MSG_DONTWAIT) == 0,
		      "a silent knock closed at its deadline (%d after %.1f s)", st,
		      waited);
	}
	for (i = 0; i < 9; i++)
		if (silent[i] >= 0)
			close(silent[i]);
	close(dribble);
	CHECK(wait_q0_ready(ca, 1, 1) >= 0, "the linked peer's queue untouched");
out:
	ssq_client_close(ca);
	ssq_client_close(cb);
	t_ssqd_stop(la, &st, NULL);
	if (lb > 0) {
		t_ssqd_stop(lb, &st, NULL);
	}
	unlink(sa);
	unlink(sb);
	return test_exit("ctrl_peer_knock");
}
