/* SPDX-License-Identifier: MIT */
/* run.c: one sender process's part of a run of @size bytes; its exit code. */
#ifndef SSQ_BENCH_PERFTEST_RUN_H
#define SSQ_BENCH_PERFTEST_RUN_H

#include <stddef.h>
#include <stdint.h>
#include <ssq/client.h>
#include "perftest.h"

int pt_sender(const struct pt_opts *o, const struct pt_env *e, uint32_t idx,
              uint32_t size);

#endif
