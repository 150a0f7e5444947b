/* SPDX-License-Identifier: MIT */
/*
 * twohost_server.c: the server side of a two-host run (--server): it holds
 * the destination in its ssqd's arena, grants it to the client's queues,
 * checks what arrived after each size (and echoes for the latency tools;
 * -b: runs its own direction). The whole server; 0 or 1.
 */
#ifndef SSQ_BENCH_PERFTEST_TWOHOST_SERVER_H
#define SSQ_BENCH_PERFTEST_TWOHOST_SERVER_H

#include <ssq/client.h>
#include "perftest.h"

int pt_th_server(const struct pt_opts *o, struct ssq_client *c);

#endif
