/* SPDX-License-Identifier: MIT */
/*
 * Log lines a client can cause (bad messages, say) go through a limit: at
 * most SSQD_LOG_BURST a second, then one line saying how many were left
 * out, so a client cannot flood ssqd's log (and its disk, under journald).
 */
#ifndef SSQ_CTRL_DAEMON_LOG_LIMIT_H
#define SSQ_CTRL_DAEMON_LOG_LIMIT_H

#include <stdint.h>

#define SSQD_LOG_BURST 10

struct ssqd_log_limit {
	uint64_t window_ns; /* start of the current second */
	unsigned lines;     /* written in it */
	unsigned dropped;   /* left out in it */
};

/* printf to stderr under @l's limit, at CLOCK_MONOTONIC @now_ns. */
void ssqd_log_limited(struct ssqd_log_limit *l, uint64_t now_ns, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Once a second is over, say how many lines it left out (the serve loop calls it). */
void ssqd_log_tick(struct ssqd_log_limit *l, uint64_t now_ns);

#endif /* SSQ_CTRL_DAEMON_LOG_LIMIT_H */
