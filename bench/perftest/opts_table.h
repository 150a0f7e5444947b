/* SPDX-License-Identifier: MIT */
/*
 * opts_table.c: the flags getopt_long reads (private to the option
 * parser: opts.c, opts_perftest.c).
 */
#ifndef SSQ_BENCH_PERFTEST_OPTS_TABLE_H
#define SSQ_BENCH_PERFTEST_OPTS_TABLE_H

#include <getopt.h>

/* getopt values of the long options without a short one. */
enum {
	PT_OPT_GBITS = 256,
	PT_OPT_MODE,
	PT_OPT_JSON,
	PT_OPT_WIRE,
	PT_OPT_SERVER,
	PT_OPT_TIMEOUT,
	PT_OPT_SSQ_SOCKET,
	PT_OPT_OUT_JSON,
	PT_OPT_OUT_JSON_FILE,
	PT_OPT_RUN_INF,
	PT_OPT_PEERS,
	PT_OPT_OUTPUT,
	PT_OPT_REPORT_BOTH,
	PT_OPT_QUEUE_PICK
};

extern const char pt_short_opts[];
extern const struct option pt_long_opts[];

#endif
