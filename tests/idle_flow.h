/* SPDX-License-Identifier: MIT */
/*
 * What the idle-ssqd tests share (test_ctrl_idle_cpu.c, test_ctrl_idle_many.c):
 * the bound on an idle ssqd's CPU and how it is read. CPU time is read
 * from each thread's schedstat in /proc (nanoseconds it ran), so a loaded
 * machine makes the bound easier, not harder.
 */
#ifndef SSQ_TEST_IDLE_FLOW_H
#define SSQ_TEST_IDLE_FLOW_H

#include <dirent.h>
#include <stdio.h>
#include <sys/types.h>

/*
 * The product's bound; a sanitized build checks every load and store of
 * ssqd's loops and costs a few times as much CPU doing the same.
 */
#if defined(__SANITIZE_ADDRESS__)
#define IDLE_BOUND_PCT 0.75
#else
#define IDLE_BOUND_PCT 0.25
#endif

/* The first naps of an idle ssqd are short: measure after this long. */
#define IDLE_SETTLE_S 2

/* CPU time of every thread of @pid so far, in ns. */
static inline unsigned long long idle_cpu_ns(pid_t pid)
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

#endif
