/* SPDX-License-Identifier: MIT */
/*
 * What the kernel says of a client's process - evidence no client can
 * forge, unlike the records and leases in shared memory that name a
 * holder (proc_evidence.c). For the stall watch.
 */
#ifndef SSQ_CTRL_DAEMON_PROC_EVIDENCE_H
#define SSQ_CTRL_DAEMON_PROC_EVIDENCE_H

#include <sys/types.h>

/* 1 when process @pid is stopped (SIGSTOP: T; a tracer: t), else 0. */
int ssqd_proc_stopped(pid_t pid);

/*
 * Could a thread of process @pid be in the middle of a hold on a shared
 * queue? 0 only when every thread is blocked inside a system call: the
 * fast path makes none while it holds anything (reservations, leases and
 * the doorbell are stores and atomics), so none of them can be mid-hold.
 * 1 when a thread is in user code, a fault or an interrupt, or is
 * running, or when the kernel does not say (no /proc, no ptrace access to
 * the process: its syscall files need it).
 */
int ssqd_proc_may_hold(pid_t pid);

#endif /* SSQ_CTRL_DAEMON_PROC_EVIDENCE_H */
