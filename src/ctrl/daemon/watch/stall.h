/* SPDX-License-Identifier: MIT */
/*
 * ssqd's watchdog over what a live client can hold up in a shared queue
 * (stall_watch.c): an open reservation, the doorbell lease, the CQ lease,
 * and the queue's progress as a whole. What it keeps between looks.
 */
#ifndef SSQ_CTRL_DAEMON_STALL_WATCH_H
#define SSQ_CTRL_DAEMON_STALL_WATCH_H

#include <stdint.h>
#include <ssq/queue.h>

/* One hold as last looked at: what moves while it is healthy, and since when it
 * has not. */
struct ssqd_hold_seen {
	uint64_t mark[3];       /* the hold's state: generation, position, counts */
	uint64_t since_ns;      /* first look at this very hold; 0: not held */
	uint32_t client;        /* the holder's client id (never reused) */
	unsigned looks;         /* looks that found it unmoved, the first included */
	unsigned stopped_looks; /* looks in a row, to the last, that found the
	                         * holder stopped */
};

struct ssqd_stall {
	struct ssqd_hold_seen resv[SSQ_MAX_PRODUCERS]; /* by producer record */
	struct ssqd_hold_seen db, cq;                  /* the two leases */
	int suspect;        /* some hold was seen unmoved at the last look */
	uint64_t completed; /* the queue's `completed` at the last look */
	uint64_t stuck_ns;  /* since when work is outstanding and none completes */
	unsigned repairs;   /* repairs tried since it got stuck */
};

struct ssqd;

/*
 * ssqd_stall_watch - one look at every queue, from the serve loop (at most
 * every --stall-ms / 8): a live client's hold that has not moved for
 * --stall-ms gets the client killed (SIGKILL; its death is then healed as
 * any other), and a queue with work outstanding and no completion for
 * --stall-ms is repaired (doorbell rung, CQ routed). Never waits on a
 * client. Nothing when --stall-ms is 0.
 */
void ssqd_stall_watch(struct ssqd *d, uint64_t now_ns);

#endif /* SSQ_CTRL_DAEMON_STALL_WATCH_H */
