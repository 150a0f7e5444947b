/* SPDX-License-Identifier: MIT */
/*
 * What the kernel says of a client's process - evidence no client can
 * forge, unlike the records and leases in shared memory that name a
 * holder (proc_evidence.c). For the stall watch.
 */
#ifndef SSQ_CTRL_DAEMON_PROC_EVIDENCE_H
#define SSQ_CTRL_DAEMON_PROC_EVIDENCE_H

#include <sys/types.h>

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

#endif /* SSQ_CTRL_DAEMON_PROC_EVIDENCE_H */
