/* SPDX-License-Identifier: MIT */
/*
 * Whether ssqd may pin what it is about to register. Every ibv_reg_mr
 * charges its pages to the process's mm->pinned_vm, and ib_umem_get
 * (drivers/infiniband/core/umem.c) refuses with ENOMEM past
 * RLIMIT_MEMLOCK unless the process has CAP_IPC_LOCK. A non-root ssqd
 * under the kernel's default limit (8 MiB since Linux 5.16) would fail at
 * its first registration with "Cannot allocate memory" and nothing saying
 * why: checked up front instead, naming the size.
 */
#ifndef SSQ_CTRL_DAEMON_MEMLOCK_H
#define SSQ_CTRL_DAEMON_MEMLOCK_H

#include <stddef.h>
#include <stdint.h>

/*
 * ssqd_memlock_check - 0 when @need bytes may be pinned (CAP_IPC_LOCK in
 * the effective set, or RLIMIT_MEMLOCK unlimited or at least @need), else
 * -ENOMEM with a sentence in @why naming @need, the limit and the ways to
 * raise it.
 */
int ssqd_memlock_check(uint64_t need, char *why, size_t whylen);

/* 1 when ssqd has capability @cap (linux/capability.h) in its effective set. */
int ssqd_self_cap(int cap);

#endif
