/* SPDX-License-Identifier: MIT */
/* proxy.c: --mode proxy's posting process; its exit code. */
#ifndef SSQ_BENCH_PERFTEST_PROXY_H
#define SSQ_BENCH_PERFTEST_PROXY_H

#include "perftest.h"

int pt_proxy(const struct pt_opts *o, const struct pt_env *e);

#endif
