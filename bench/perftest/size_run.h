/* SPDX-License-Identifier: MIT */
/*
 * size_run.c: one size of a run of @o with @e: its processes forked,
 * started together, collected into @r (and checked, as @e says). 0, or 1
 * (said why). @in: the run's facts, for --run_infinitely's files.
 */
#ifndef SSQ_BENCH_PERFTEST_SIZE_RUN_H
#define SSQ_BENCH_PERFTEST_SIZE_RUN_H

#include <signal.h>
#include <stdint.h>
#include "perftest.h"

/* --run_infinitely: set by the tool's SIGINT / SIGTERM handler; rows stop. */
extern volatile sig_atomic_t pt_interrupted;

int pt_run_size(const struct pt_opts *o, struct pt_env *e, const struct pt_info *in,
                uint32_t size, struct pt_row *r);

#endif
