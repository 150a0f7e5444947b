/* SPDX-License-Identifier: MIT */
/*
 * An idle ssqd on the emulated device costs well under 1 % of a core
 * (IDLE_BOUND_PCT: 0.25 %), so a test (or a small machine) can run several:
 * its device thread, receive poller and serve loop nap longer the longer
 * nothing comes, and while no client has a queue attached sleep up to
 * SSQD_IDLE_MS (src/ctrl/daemon/idle.c): three threads each looking every
 * 10 ms cost about 0.6 % of a core, a device looking every 50 us 12.8 %.
 */
#include "ctrl_flow.h"
#include "idle_flow.h"

int main(void)
{
	struct ssq_client *c;
	unsigned long long a, b;
	double t0, secs, pct;
	pid_t d;

	signal(SIGPIPE, SIG_IGN);
	c = flow_up("idle", "off", &d);
	if (!c)
		return 1;
	ssq_client_close(c);
	sleep(IDLE_SETTLE_S);
	a = idle_cpu_ns(d);
	t0 = now_s();
	sleep(4);
	b = idle_cpu_ns(d);
	secs = now_s() - t0;
	pct = 100.0 * (double)(b - a) / 1e9 / secs;
	printf("idle ssqd: %.3f %% of a core over %.1f s\n", pct, secs);
	CHECK(a > 0 && pct < IDLE_BOUND_PCT,
	      "an idle ssqd used %.3f %% of a core (want < %.2f %%)", pct,
	      IDLE_BOUND_PCT);
	t_ssqd_stop(d, NULL, sock_path);
	return test_exit("ctrl_idle_cpu");
}
