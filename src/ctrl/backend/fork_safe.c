/* SPDX-License-Identifier: MIT */
/* libibverbs' fork support and the hugepage arena: see fork_safe.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include "ctrl/backend/fork_safe.h"

/* libibverbs' check_env: set, and not "0". */
static int env_on(const char *name)
{
	const char *v = getenv(name);

	return v && strcmp(v, "0") != 0;
}

int ssqd_fork_safe_requested(void)
{
	return env_on("RDMAV_FORK_SAFE") || env_on("IBV_FORK_SAFE");
}

int ssqd_fork_safe_prepare(const struct shm_arena *a)
{
	if (!ssqd_fork_safe_requested() || !a->hugepages ||
	    getenv("RDMAV_HUGEPAGES_SAFE"))
		return 0;
	setenv("RDMAV_HUGEPAGES_SAFE", "1", 1);
	fprintf(stderr,
	        "ssqd: RDMAV_FORK_SAFE with a hugepage arena: setting "
	        "RDMAV_HUGEPAGES_SAFE=1, so that libibverbs marks whole %zu KiB pages "
	        "MADV_DONTFORK (with 4 KiB ranges its ibv_reg_mr of the arena fails)\n",
	        a->page_size >> 10);
	return 1;
}

int ssqd_fork_safe_reg(const struct shm_arena *a, void *addr, size_t len, char *why,
                       size_t whylen)
{
	size_t page =
	    getenv("RDMAV_HUGEPAGES_SAFE") ? a->page_size : (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t start, end;

	if (!ssqd_fork_safe_requested() || !len)
		return 0;
	start = (uintptr_t)addr & ~(uintptr_t)(page - 1);
	end = ((uintptr_t)addr + len + page - 1) & ~(uintptr_t)(page - 1);
	if (madvise((void *)start, end - start, MADV_DONTFORK)) {
		int err = errno;

		snprintf(
		    why, whylen,
		    "ibv_reg_mr: libibverbs' fork support (RDMAV_FORK_SAFE) failed to "
		    "madvise(MADV_DONTFORK) [0x%lx, 0x%lx) in %zu KiB pages of an "
		    "arena of %zu KiB pages: %s (set RDMAV_HUGEPAGES_SAFE=1)",
		    (unsigned long)start, (unsigned long)end, page >> 10,
		    a->page_size >> 10, strerror(err));
		return -err;
	}
	return 0;
}
