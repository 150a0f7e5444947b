/* SPDX-License-Identifier: MIT */
/*
 * clock.h - the clocks of the perftest-style tools (private to
 * bench/perftest): CLOCK_MONOTONIC in seconds, and this process's CPU
 * time. Header-only, so every file may use it without depending on another.
 */
#ifndef SSQ_BENCH_PERFTEST_CLOCK_H
#define SSQ_BENCH_PERFTEST_CLOCK_H

#include <time.h>

static inline double pt_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/*
 * CPU seconds this process has used (CLOCK_PROCESS_CPUTIME_ID): a sender's
 * cost per WQE that a machine shared with other work does not inflate by
 * time slices it waited for a core, as it does the wall clock's rate.
 */
static inline double pt_cpu_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

#endif
