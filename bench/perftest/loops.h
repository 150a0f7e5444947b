/* SPDX-License-Identifier: MIT */
/*
 * loops.c - a sender's loop once its lanes are open: bandwidth (batches of
 * -l, -t in flight per lane) or latency (one message outstanding: WRITE
 * polled in memory, READ / atomic by their CQE, SEND in the receive log).
 * Each returns 0, or -1 (why in pt->why).
 */
#ifndef SSQ_BENCH_PERFTEST_LOOPS_H
#define SSQ_BENCH_PERFTEST_LOOPS_H

#include <stdint.h>
#include <ssq/client.h>
#include "lanes.h"

/*
 * The loop of a bandwidth test: batches of -l requests, round-robin over
 * the lanes, at most -t in flight per lane, every -Q-th of a lane's
 * messages signaled and its last one too. Returns 0 or -1 (why in pt->why).
 */
int pt_bw_loop(const struct pt_opts *o, struct pt_port *pt, const struct pt_req *tmpl,
               struct pt_result *res);

/*
 * The loop of ssq_write_lat: one message outstanding. Each WRITE carries a
 * new last byte (1..255, never the one before); the time is from posting it
 * until that byte shows in the destination, polled in memory (perftest's
 * write_lat polls its buffer the same way; loopback has no second host to
 * bounce it back, so this is one way, not RTT/2). Its CQE is reaped after
 * the clock stops, before the next post. @dst is this sender's slot.
 */
int pt_lat_loop(const struct pt_opts *o, struct pt_port *pt, const struct pt_req *tmpl,
                struct pt_result *res, double *samples, uint8_t *src,
                volatile uint8_t *dst, uint32_t size);

/*
 * The loop of ssq_read_lat and ssq_atomic_lat: one READ (atomic)
 * outstanding, timed from just before its post until its completion is
 * polled: the requester's CQE is written only once the response is back
 * in memory (the answer of a READ or an atomic is the response), so this
 * is perftest's run_iter_lat for READ and ATOMIC, a round trip reported
 * whole (perftest's print_report_lat: rtt_factor 1 for READ and ATOMIC).
 */
int pt_cqe_lat_loop(const struct pt_opts *o, struct pt_port *pt,
                    const struct pt_req *tmpl, struct pt_result *res, double *samples,
                    uint8_t *src, uint32_t size);

/*
 * The loop of ssq_send_lat: one message outstanding, timed from posting the
 * SEND until the receive pool's log (ssq_recv_peek) shows it: spinning on
 * ssq_recv_arrived, or with -e asleep in ssq_recv_wait. Each SEND's
 * payload says whose (first byte: sender + 1) and which (last byte, as in
 * write_lat); other senders' messages on the same queue are skipped. The
 * CQE is reaped after the clock stops. @rq: each lane's queue as its
 * receiver sees it, @next: where each lane's log is read from.
 */
int pt_send_lat_loop(const struct pt_opts *o, struct pt_port *pt,
                     const struct pt_req *tmpl, struct pt_result *res, double *samples,
                     uint8_t *src, uint32_t idx, uint32_t size, struct ssq_queue **rq,
                     uint64_t *next);

#endif
