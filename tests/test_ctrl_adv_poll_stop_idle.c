/* SPDX-License-Identifier: MIT */
/*
 * Adversary, receive poller shutdown: while nothing can arrive
 * (ssqd_recv_idle: an idle ssqd whose queues are all loopback) the poller
 * sleeps on its kick futex for up to SSQD_IDLE_MS (250 ms) at a time, and
 * ssqd_recv_stop only set `stop` and joined it: every idle ssqd's exit
 * (SIGTERM, systemctl stop, a test's teardown) waited out the rest of that
 * sleep. Stopping must wake it.
 *
 * ssqd runs in this process (events off, so the poller naps on its own);
 * told it is idle, the poller falls asleep after a second without a CQE;
 * each of four stops must then take well under the idle sleep.
 */
#define _GNU_SOURCE
#include "poll_flow.h"

#define TRIES      4
#define MAX_STOP_S 0.05

int main(void)
{
	struct ssqd *d = poll_ssqd_up("stop");
	double t0, took, worst = 0;
	int i;

	if (!d)
		return test_exit("ctrl_adv_poll_stop_idle");
	for (i = 0; i < TRIES; i++) {
		if (i)
			CHECK(ssqd_recv_start(d) == 0, "the poller starts again");
		ssqd_recv_idle(d, SSQD_IDLE_MS);
		usleep(1300 * 1000); /* past SLEEP_AFTER: asleep on the kick */
		t0 = poll_now();
		ssqd_recv_stop(d);
		took = poll_now() - t0;
		if (took > worst)
			worst = took;
		ssqd_recv_idle(d, 0);
	}
	printf("stopping an idle poller took up to %.1f ms (%d tries)\n", worst * 1e3,
	       TRIES);
	CHECK(worst < MAX_STOP_S,
	      "stopping a poller asleep while idle took %.0f ms: it slept out its %u ms",
	      worst * 1e3, SSQD_IDLE_MS);
	CHECK(ssqd_recv_start(d) == 0, "the poller starts again");
	poll_ssqd_down(d);
	return test_exit("ctrl_adv_poll_stop_idle");
}
