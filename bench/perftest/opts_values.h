/* SPDX-License-Identifier: MIT */
/*
 * opts_values.c: a flag's value read and checked (private to the option
 * parser: opts.c, opts_checks.c, opts_perftest.c).
 */
#ifndef SSQ_BENCH_PERFTEST_OPTS_VALUES_H
#define SSQ_BENCH_PERFTEST_OPTS_VALUES_H

#include <stddef.h>
#include <stdint.h>
#include "opts.h"

/* A bad flag: "TOOL: " and @fmt on stderr, the usage, exit(1). */
void pt_bad_flag(const struct pt_opts *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));
/* @s, digits only, in @lo..@hi; else says so for @flag and exits as pt_bad_flag. */
uint64_t pt_flag_num(const struct pt_opts *o, const char *flag, const char *s,
                     uint64_t lo, uint64_t hi);
/* @path (--json, --out_json_file) can be written at the run's end; else exits. */
void pt_check_out_path(const struct pt_opts *o, const char *flag, const char *path);
/* The flag getopt stopped at (@word, argv's): "-c" in @buf (4 bytes), else @word. */
const char *pt_flag_name(char *buf, const char *word);
/* --peers LIST or FILE into @o's peers. 0, or -1 with @why. */
int pt_parse_peers(struct pt_opts *o, const char *list, char *why, size_t len);

#endif
