/* SPDX-License-Identifier: MIT */
#ifndef SSQ_BENCH_PERFTEST_TWOHOST_CLIENT_H
#define SSQ_BENCH_PERFTEST_TWOHOST_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <ssq/client.h>
#include "perftest.h"

/*
 * twohost_client.c: the client of a two-host run, over the side channel
 * (TCP, -p). The server (--server, twohost_server.c) holds the destination
 * in its ssqd's arena and checks what arrived; the client runs the senders
 * against its own ssqd, whose peer is the server's. The client: open (connect, agree on
 * the run, get the destination into
 * @e and its key for each of the client's queues @prefix q0.. of @c into
 * @rkeys, PT_MAX_LANES of them: a grant bound to that queue), then per
 * size start (the server clears the destination) and done
 * (the server checks; its verdict into @verdict; @ok 0: the client failed;
 * -b: the server's direction checked here and given in @rem),
 * then close. Each returns 0 or -1 (said why). write_lat: @pong, the
 * client's buffer the server WRITEs each sender's slot back into (perftest's
 * ping-pong); the client times until the echo lands and reports RTT/2.
 */
int pt_th_client_open(const struct pt_opts *o, struct ssq_client *c, const char *prefix,
                      struct ssq_queue *q0, uint32_t top, int check,
                      const struct ssq_buf *pong, struct pt_env *e, uint32_t *rkeys);
int pt_th_client_start(const struct pt_opts *o, const struct pt_env *e, uint32_t size);
int pt_th_client_done(const struct pt_opts *o, const struct pt_env *e, uint32_t size,
                      uint64_t msgs, int ok, struct pt_row *rem, char *verdict,
                      size_t len);
void pt_th_client_close(const struct pt_opts *o, struct pt_env *e);

#endif
