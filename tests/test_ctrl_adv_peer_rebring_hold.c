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
	char res[64] = "";
	struct t_pair pair;
	const char *sa = pair.sock[0];
	int hold[2], lst[2], st, worst_ms = -1, failed = -1;
	pid_t holder = -1, lister = -1;

	t_need_ssqd();
	t_pair_init(&pair, "advh2", RDEPTH, RMAX);
	pair.extra[0] = T_ARGS("--stall-ms", "0");
	CHECK(t_pair_run(&pair) == 0, "alice and bob linked");
	if (!pair.c[0] || !pair.c[1] || pipe(hold) || pipe(lst))
		goto out;
	ssq_client_close(pair.c[1]);
	pair.c[1] = NULL;

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
	kill(pair.pid[1], SIGKILL);
	waitpid(pair.pid[1], &st, 0);
	usleep(300000);
	t_pair_exec(&pair, 1);
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
	t_pair_stop(&pair);
	return test_exit("ctrl_adv_peer_rebring_hold");
}
