/* SPDX-License-Identifier: MIT */
/*
 * The deadlines of the shared queue's repair calls (ssq_ctl_heal,
 * ssq_ctl_reset): milliseconds of CLOCK_MONOTONIC, which no clock step
 * moves. Private to src/dv; the includer defines _GNU_SOURCE first.
 */
#ifndef DV_QUEUE_CLOCK_H
#define DV_QUEUE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t dv_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

#endif /* DV_QUEUE_CLOCK_H */
