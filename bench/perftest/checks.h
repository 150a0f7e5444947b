/* SPDX-License-Identifier: MIT */
/* checks.c: did the data arrive? */
#ifndef SSQ_BENCH_PERFTEST_CHECKS_H
#define SSQ_BENCH_PERFTEST_CHECKS_H

#include <stddef.h>
#include <stdint.h>
#include <ssq/client.h>
#include "perftest.h"

/* After a run of @size: did the WRITEs land in e->dst? 0 or 1 (said why). */
int pt_check_dst(const struct pt_opts *o, const struct pt_env *e, uint32_t size);
/* After a send_bw run: did every SEND reach the pool, intact? 0 or 1 (said why). */
int pt_check_recv(const struct pt_opts *o, const struct pt_env *e, uint32_t size,
                  const uint64_t *base, uint64_t sent);
/* SEND: open every queue's receive log of @cd into @e and check its pool. */
int pt_open_recv_logs(const struct pt_opts *o, struct ssq_client *c,
                      struct ssq_client *cd, struct ssq_queue *q0, struct pt_env *e);

#endif
