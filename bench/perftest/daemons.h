/* SPDX-License-Identifier: MIT */
/* daemons.c: the ssqd a run needs, started and stopped by the tool. */
#ifndef SSQ_BENCH_PERFTEST_DAEMONS_H
#define SSQ_BENCH_PERFTEST_DAEMONS_H

#include <stddef.h>
#include <stdint.h>
#include <ssq/client.h>
#include "perftest.h"

/*
 * Start what @o needs: one ssqd (loopback; @dc), or with --wire two on the
 * emulated device, the destination's --listen (@dl) and the senders'
 * --connect (@dc). *@c: the senders' ssqd, *@cd: the destination's (the
 * same in loopback). @dev gets the device. Returns 0 or -1 (said why).
 */
int pt_start_daemons(const struct pt_opts *o, char *dev, size_t devlen,
                     struct pt_daemon *dl, struct pt_daemon *dc, struct ssq_client **c,
                     struct ssq_client **cd);
/*
 * --peers: a cluster on the emulated wire, every ssqd --eager: this host's
 * (@dc, named "here", *@c) with a peer link to each of @o's peers (@dp[k],
 * *@cp[k] their clients), each with --queues pt_queues_needed(). Returns 0
 * once every queue is in RTS, or -1 (said why).
 */
int pt_start_cluster(const struct pt_opts *o, struct pt_daemon *dc, struct ssq_client **c,
                     struct pt_daemon *dp, struct ssq_client **cp);
/* Stop it (SIGTERM, wait), remove its socket and log. */
void pt_ssqd_stop(struct pt_daemon *d);
/* An mlx5 device's port @port (libibverbs): link layer, active MTU, LID into @in. */
void pt_port_facts(const char *dev, int port, struct pt_info *in);

#endif
