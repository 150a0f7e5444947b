/* SPDX-License-Identifier: MIT */
/*
 * An idle ssqd on the emulated device costs well under 1 % of a core, so a
 * test (or a small machine) can run several: its device thread, receive
 * poller and serve loop nap longer the longer nothing comes (before, the
 * device looked every 50 us for ever: 12.8 % of a core). CPU time is read
 * from each thread's schedstat in /proc (nanoseconds), so a loaded machine
 * makes the bound easier, not harder.
 */
#include <dirent.h>
#include "ctrl_flow.h"

/*
 * The bound is the product's: a sanitized build checks every load and
 * store of ssqd's loops and costs a few times as much CPU doing the same.
 */
#if defined(__SANITIZE_ADDRESS__)
#define IDLE_BOUND_PCT 3.0
#else
#define IDLE_BOUND_PCT 1.0
#endif

/* CPU time of every thread of @pid so far, in ns. */
static unsigned long long cpu_ns(pid_t pid)
{
	char path[64], tpath[400];
	unsigned long long sum = 0, v;
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	while (d && (e = readdir(d))) {
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(tpath, sizeof(tpath), "%s/%s/schedstat", path, e->d_name);
		f = fopen(tpath, "r");
		if (f && fscanf(f, "%llu", &v) == 1)
			sum += v;
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return sum;
}

int main(void)
{
	struct ssq_client *c;
	unsigned long long a, b;
	double t0, secs, pct;
	pid_t d;

	signal(SIGPIPE, SIG_IGN);
	snprintf(sock_path, sizeof(sock_path), "/tmp/ssq-idle-%d.sock", getpid());
	d = start_ssqd("off");
	c = connect_retry(d);
	if (!c) {
		kill(d, SIGKILL);
		return 1;
	}
	ssq_client_close(c);
	sleep(2); /* past the first naps */
	a = cpu_ns(d);
	t0 = now_s();
	sleep(4);
	b = cpu_ns(d);
	secs = now_s() - t0;
	pct = 100.0 * (double)(b - a) / 1e9 / secs;
	printf("idle ssqd: %.3f %% of a core over %.1f s\n", pct, secs);
	CHECK(a > 0 && pct < IDLE_BOUND_PCT,
	      "an idle ssqd used %.2f %% of a core (want < %.0f %%)", pct,
	      IDLE_BOUND_PCT);
	kill(d, SIGTERM);
	waitpid(d, NULL, 0);
	unlink(sock_path);
	return test_exit("ctrl_idle_cpu");
}
