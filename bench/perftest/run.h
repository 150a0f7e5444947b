/* SPDX-License-Identifier: MIT */
/* run.c: one process's part of a run of @size bytes; returns its exit code. */
#ifndef SSQ_BENCH_PERFTEST_RUN_H
#define SSQ_BENCH_PERFTEST_RUN_H

#include <stddef.h>
#include <stdint.h>
#include <ssq/client.h>
#include "perftest.h"

int pt_sender(const struct pt_opts *o, const struct pt_env *e, uint32_t idx,
              uint32_t size);
int pt_proxy(const struct pt_opts *o, const struct pt_env *e);

#endif
