/* SPDX-License-Identifier: MIT */
/* engine.c: the whole run of @o (after pt_parse); the tool's exit code. */
#ifndef SSQ_BENCH_PERFTEST_ENGINE_H
#define SSQ_BENCH_PERFTEST_ENGINE_H

#include "opts.h"

int pt_main(const struct pt_opts *o);

#endif
