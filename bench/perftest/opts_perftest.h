/* SPDX-License-Identifier: MIT */
/*
 * opts_perftest.c: perftest's flags beyond the basic set (private to the
 * option parser, opts.c).
 */
#ifndef SSQ_BENCH_PERFTEST_OPTS_PERFTEST_H
#define SSQ_BENCH_PERFTEST_OPTS_PERFTEST_H

#include "opts.h"

/* getopt's @opt (a letter, or PT_OPT_OUTPUT / PT_OPT_REPORT_BOTH), its @arg. */
void pt_perftest_flag(struct pt_opts *o, int opt, const char *arg);

#endif
