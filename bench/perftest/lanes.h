/* SPDX-License-Identifier: MIT */
/*
 * lanes.c - how a sender reaches its queues ("lanes": the -q queues it
 * round-robins over, or its proxy's ring): post a batch, poll completions,
 * wait for room, in every --mode. The loops (loops.c) and the proxy
 * (proxy.c) post through it.
 */
#ifndef SSQ_BENCH_PERFTEST_LANES_H
#define SSQ_BENCH_PERFTEST_LANES_H

#include <stddef.h>
#include <stdint.h>
#include <ssq/ssq.h>
#include "perftest.h"

#define PT_STALL_S 60.0 /* no progress for this long: give up */

/* One of the -q queues a sender round-robins over. */
struct pt_lane {
	struct ssq_producer *prod; /* NULL in proxy mode */
	pthread_spinlock_t *lock;  /* spinlock mode: this queue's */
	uint64_t posted;           /* this sender's messages on it */
	uint64_t completed; /* known complete (a signaled one covers earlier ones) */
	uint64_t raddr;     /* where its RDMA goes (--peers: its peer's arena) */
	uint32_t rkey;
};

/* How a sender reaches its queues. */
struct pt_port {
	enum pt_mode mode;
	uint32_t nlanes;
	struct pt_lane lane[PT_MAX_LANES];
	struct pt_ring *ring; /* proxy mode */
	struct pt_shared *sh;
	struct pt_samples *smp; /* bandwidth tests: completion samples */
	uint64_t *live;         /* --run_infinitely: completed, for the parent */
	uint64_t completed;     /* over every lane */
	int events;             /* -e: wait for completions in ssq_wait */
	char *why;
	size_t why_len;
};

/*
 * Reserve, build, publish and submit @n requests on @p. Returns 0,
 * -EAGAIN (no room: nothing reserved; poll and retry), -EIO or -EINVAL.
 */
int pt_post_batch(struct ssq_producer *p, const struct pt_req *r, unsigned n);

/* Take a sample of the completion count if it is due (full: halve them). */
void pt_sample(struct pt_samples *s, uint64_t m, double t);

/* Collect completions on every lane of @pt. Returns 0 or -1 (why in pt->why). */
int pt_port_poll(struct pt_port *pt);

/*
 * A waiting process (window full, ring full, nothing to drain) spins a
 * little, then yields: with more busy processes than cores (the point of
 * -P 4 on 2 cores) a pure spinner would hold its core for a whole time slice
 * while the process it waits for cannot run. Every mode waits this way.
 */
void pt_backoff(unsigned *spins);

/*
 * Wait for a completion of lane @ln: with -e asleep in ssq_wait (woken by
 * whoever routes the queue's CQ, or on the emulated device by the device
 * as the CQE lands), for at most WAIT_NS so that the caller's stall and
 * abort checks still run; else pt_backoff().
 */
void pt_idle_wait(struct pt_port *pt, struct pt_lane *ln, unsigned *spins);

/* A lane with completions still to come (the first), else NULL. */
struct pt_lane *pt_owed_lane(struct pt_port *pt);

/* Has a process of the run failed (then every one stops)? */
int pt_stopped(const struct pt_shared *sh);

/* Say ready, then wait for the parent's go (everyone connected first). */
void pt_start_line(struct pt_shared *sh);

/* Post @k requests from @r on lane @li, polling while there is no room. */
int pt_post_wait(struct pt_port *pt, uint32_t li, const struct pt_req *r, unsigned k);

#endif
