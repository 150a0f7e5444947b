/* SPDX-License-Identifier: MIT */
/*
 * libibverbs' fork support with a hugepage arena. With RDMAV_FORK_SAFE (or
 * IBV_FORK_SAFE) set, libibverbs (rdma-core libibverbs/init.c, memory.c:
 * ibv_fork_init, ibv_madvise_range) marks every registered range
 * MADV_DONTFORK, rounded to sysconf(_SC_PAGESIZE) unless
 * RDMAV_HUGEPAGES_SAFE is set too, when it asks /proc for each range's page
 * size. madvise over part of a 2 MiB page fails, so ibv_reg_mr of a data
 * arena that does not start and end on 2 MiB boundaries fails with EINVAL.
 * (Kernels that keep pinned pages across fork, 5.13 on, make libibverbs
 * skip all this unless RDMAV_USE_MADVISE is set; the emulated device
 * behaves as an older kernel: it is never more lenient.)
 */
#ifndef SSQ_CTRL_BACKEND_FORK_SAFE_H
#define SSQ_CTRL_BACKEND_FORK_SAFE_H

#include <stddef.h>
#include "shm/create/arena.h"

/* 1 when libibverbs would turn its fork support on (RDMAV_FORK_SAFE, IBV_FORK_SAFE). */
int ssqd_fork_safe_requested(void);

/*
 * Before the device is opened: with fork support asked for and a hugepage
 * arena @a, set RDMAV_HUGEPAGES_SAFE=1 (saying so on stderr) so that
 * libibverbs rounds to the arena's pages. Returns 1 if it set it.
 */
int ssqd_fork_safe_prepare(const struct shm_arena *a);

/*
 * What libibverbs' fork support does to [addr, addr + len) at ibv_reg_mr,
 * for the emulated device: 0, or -errno of the madvise that fails, with a
 * sentence in @why.
 */
int ssqd_fork_safe_reg(const struct shm_arena *a, void *addr, size_t len, char *why,
                       size_t whylen);

#endif /* SSQ_CTRL_BACKEND_FORK_SAFE_H */
