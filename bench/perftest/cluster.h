/* SPDX-License-Identifier: MIT */
#ifndef SSQ_BENCH_PERFTEST_CLUSTER_H
#define SSQ_BENCH_PERFTEST_CLUSTER_H

#include <stddef.h>
#include <stdint.h>
#include <ssq/client.h>
#include "perftest.h"

/*
 * cluster.c: --peers. On the cluster this tool started: a destination of
 * @top bytes in each peer's arena (@cp[k], a client of each) into
 * @e->peer_dst, reached through this host's PEER/q0 on @c (*@q0, *@dst0:
 * the first peer's). 0 or -1 (said why).
 */
int pt_cl_local_open(const struct pt_opts *o, struct ssq_client *c,
                     struct ssq_client *const *cp, uint32_t top, struct pt_env *e,
                     struct ssq_queue **q0, struct ssq_buf *dst0);
/*
 * Against a running cluster (--ssq_socket), a server on each peer's host.
 * Open: each peer's PEER/q0 (linking it), its server's
 * side channel, its destination into @e->peer_dst (*@q0, *@dst0: the
 * first's); then per size start and done (each server checks its share,
 * @e->peer_msgs; their verdicts into @verdicts, a line each), then close
 * (@bye 0: the run failed, no BYE). Each returns 0 or -1 (said why).
 */
int pt_cl_open(const struct pt_opts *o, struct ssq_client *c, uint32_t top, int check,
               struct pt_env *e, struct ssq_queue **q0, struct ssq_buf *dst0);
int pt_cl_start(const struct pt_opts *o, const struct pt_env *e, uint32_t size);
int pt_cl_done(const struct pt_opts *o, const struct pt_env *e, uint32_t size, int ok,
               char *verdicts, size_t len);
void pt_cl_close(const struct pt_opts *o, struct pt_env *e, int bye);

#endif
