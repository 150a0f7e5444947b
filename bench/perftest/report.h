/* SPDX-License-Identifier: MIT */
/* report.c: what a run's numbers become. */
#ifndef SSQ_BENCH_PERFTEST_REPORT_H
#define SSQ_BENCH_PERFTEST_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <ssq/client.h>
#include "perftest.h"

/* The run's peak rate over every sender's samples (messages/s). */
double pt_peak_rate(const struct pt_shared *sh, uint32_t nsend);
/* Sorts @s (n samples, ns) and fills @r's latency columns (usec). */
void pt_lat_stats(double *s, uint64_t n, struct pt_row *r);
/* @in's host, time (now) and CPU list. */
void pt_info_where(struct pt_info *in);
/* perftest's parameter banner and the local/remote address lines. */
void pt_print_banner(const struct pt_opts *o, const struct pt_info *in);
void pt_print_header(const struct pt_opts *o);
/* --output: the real stdout for the rows' numbers, the rest to /dev/null. 0/-1. */
int pt_output_start(const struct pt_opts *o);
/* -C: time-stamp counter ticks per usec (perftest's cycles); 0: none here. */
double pt_cycles_per_usec(void);
/* -H / -U: @n latency samples in ns, printed in usec times @scale. */
void pt_print_samples(const struct pt_opts *o, const double *ns, uint64_t n,
                      double scale);
void pt_print_row(const struct pt_opts *o, const struct pt_row *r);
/* -b: @rem's BW peak, average and message rate added to @sum (perftest's). */
void pt_bidir_sum(struct pt_row *sum, const struct pt_row *rem);
/* -b --report-both: the two directions' rows apart, after the sum. */
void pt_print_report_both(const struct pt_opts *o, const struct pt_row *local,
                          const struct pt_row *rem);
/* --json (ssq's records, one per row) and --out_json (perftest's): 0 or 1. */
int pt_write_json(const struct pt_opts *o, const struct pt_info *in,
                  const struct pt_row *rows, unsigned n);
int pt_write_out_json(const struct pt_opts *o, const struct pt_info *in,
                      const struct pt_row *rows, unsigned n);

#endif
