/* SPDX-License-Identifier: MIT */
/* twohost_echo.c: the latency tools' ping-pong, the server's half. */
#ifndef SSQ_BENCH_PERFTEST_TWOHOST_ECHO_H
#define SSQ_BENCH_PERFTEST_TWOHOST_ECHO_H

#include <stdint.h>
#include <ssq/client.h>
#include "twohost_frames.h"

/*
 * The latency tools' other half, perftest's ping-pong. write_lat: the
 * server watches the last byte of each sender's slot of the destination
 * and, when it changes, WRITEs the slot back through its own ssqd's q0 into
 * the client's pong slot (in the client's arena), where the client's
 * sender waits for it. send_lat: the server reads each queue's receive log
 * and SENDs every message back, from its receive buffer, through the same
 * queue, into the client's ssqd's log of that queue, where the sender looks
 * for it (its payload says whose and which).
 */
struct pt_th_echo {
	int send;
	uint32_t nprod;
	struct ssq_producer *prod[PT_MAX_LANES]; /* write: q0; send: each queue */
	uint64_t laddr;                          /* the destination's IOVA here */
	uint32_t lkey;
	uint64_t raddr; /* the client's pong slots */
	uint32_t rkey;
	uint32_t slot, procs, size;
	uint8_t *dst;
	uint8_t last[PT_MAX_PROCS];
	/* send: the queues' logs, the next message of each to echo */
	struct ssq_queue **rq;
	uint64_t next[PT_MAX_LANES];
	uint64_t posted, completed;
	char why[TH_TEXT];
};

/* Echo until the client says something on @fd. 0, or -1 (said why). */
int pt_th_echo_run(const struct pt_opts *o, struct pt_th_echo *x, int fd);

/* Every message echoed, every echo completed? Said in @v. */
int pt_th_echo_check(struct pt_th_echo *x, uint64_t msgs, struct th_msg *v);

#endif
