/* SPDX-License-Identifier: MIT */
/*
 * watch/: what ssqd watches in queues clients can write to - the guard
 * over each control block (guard.c), the rebuild it and RECOVER use, the
 * stall watch over clients' holds (stall.c), the kernel's word on a
 * client's process (proc_evidence.c) and each queue's posting rate
 * (rate.c).
 */
#ifndef SSQ_CTRL_DAEMON_WATCH_H
#define SSQ_CTRL_DAEMON_WATCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "ctrl/daemon/ssqd.h"

/*
 * ssqd_queue_guard - at most every SSQD_GUARD_MS (@now_ns, CLOCK_MONOTONIC),
 * look at queue @qi's control block (ssq_ctl_check, against ssqd's own
 * copies of its bounds and epoch); one a client made inconsistent is
 * logged and the queue reset: the QP through RESET to RTS, the block
 * rebuilt (ssq_ctl_rebuild) keeping the connected clients' records
 * (watch/guard.c).
 */
void ssqd_queue_guard(struct ssqd *d, unsigned qi, uint64_t now_ns);

/*
 * ssqd_queue_rebuild - queue @qi's QP through RESET back to RTS and its
 * control block rebuilt (ssq_ctl_quiesce, ssq_ctl_rebuild), the attached
 * clients' records kept; what was in flight completes to its owners as
 * flushed. RECOVER's for a QP whose SQ froze. 0 or -errno with @why
 * (watch/guard.c).
 * ssqd_queue_rebuild_paced - the same for the guard and the stall watch,
 * which a client can make ask again and again (a scribble, a forged hold):
 * restarts of one queue less than a second apart wait 10 ms, then twice
 * as long each time up to a second, so that ssqd's loop - which a restart
 * holds for up to twice SSQD_LEASE_MS - goes on serving other queues.
 * -EAGAIN (nothing done) when it is too soon.
 */
int ssqd_queue_rebuild(struct ssqd *d, unsigned qi, char *why, size_t whylen);
int ssqd_queue_rebuild_paced(struct ssqd *d, unsigned qi, uint64_t now_ns, char *why,
                             size_t whylen);

/*
 * ssqd_stall_watch - one look at every queue, from the serve loop (at most
 * every --stall-ms / 8): a live client's hold that has not moved for
 * --stall-ms gets the client killed (SIGKILL; its death is then healed as
 * any other), and a queue with work outstanding and no completion for
 * --stall-ms is repaired (doorbell rung, CQ routed). Never waits on a
 * client. Nothing when --stall-ms is 0.
 */
void ssqd_stall_watch(struct ssqd *d, uint64_t now_ns);

/*
 * What the kernel says of a client's process - evidence no client can
 * forge, unlike the records and leases in shared memory that name a
 * holder (proc_evidence.c). For the stall watch.
 */

/*
 * 1 when a thread of process @pid is stopped (state T: a signal, or t: a
 * tracer, in /proc/PID/task/TID/stat) outside any system call: one that
 * may have been stopped in the middle of a hold on a shared queue. The
 * fast path makes no system call while it holds anything (reservations,
 * leases and the doorbell are stores and atomics), so a thread stopped
 * inside one holds nothing. A thread whose system call the kernel does
 * not say (no ptrace access to the process: its syscall files need it)
 * counts as outside. 0 otherwise, or when @pid has no /proc entry.
 */
int ssqd_proc_stopped_in_user(pid_t pid);

/*
 * Each queue's recent posting rate (rate.c), as the pick of "any" weighs it
 * and --status shows it: WQEBBs reserved per second, smoothed.
 * ssqd_queue_rate_sample - at most every SSQD_RATE_MS (@now_ns,
 *   CLOCK_MONOTONIC), queue @qi's `reserve` read and its rate updated: half
 *   the last window's, half what it was. Never waits, never fails.
 * ssqd_rate_window - WQEBBs per second from a count @from to @to over @ns:
 *   0 when the count went backwards (any difference of 2^63 or more),
 *   else at most UINT32_MAX, whatever the three values (client memory).
 * ssqd_rate_smooth - half @old, half @window, without overflow.
 * ssqd_rate_class - how busy @per_s is, for the pick: 0 below
 *   SSQD_RATE_IDLE, then one class per doubling, so that rates within
 *   about a factor of two compare equal and producer counts decide.
 */
#define SSQD_RATE_MS   100
#define SSQD_RATE_IDLE 1024u
void ssqd_queue_rate_sample(struct ssqd *d, unsigned qi, uint64_t now_ns);
uint32_t ssqd_rate_window(uint64_t from, uint64_t to, uint64_t ns);
uint32_t ssqd_rate_smooth(uint32_t old, uint32_t window);
unsigned ssqd_rate_class(uint32_t per_s);

#endif /* SSQ_CTRL_DAEMON_WATCH_H */
