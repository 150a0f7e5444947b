/* SPDX-License-Identifier: MIT */
/*
 * clock.h - the one clock of the perftest-style tools (private to
 * bench/perftest): CLOCK_MONOTONIC in seconds. Header-only, so every file
 * may use it without depending on another.
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

#endif
