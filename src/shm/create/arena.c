/* SPDX-License-Identifier: MIT */
/* Pick an arena's backing, carve it, tear it down. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <rte_memzone.h>
#include "shm/create/arena.h"
#include "shm/create/hugepage_holders.h"

/* 2 MiB pages the kernel has free now, from /proc/meminfo. */
static long free_hugepages(void)
{
	char line[128];
	long n = 0;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "HugePages_Free: %ld", &n) == 1)
			break;
	fclose(f);
	return n;
}

/*
 * ", or stop what holds them: pid 12 (name), ..." when processes map
 * hugepages: clients of an ssqd that died keep its arena's pages until
 * they exit. "" otherwise.
 */
static const char *held_by(void)
{
	static char text[600];
	char list[440];

	text[0] = 0;
	if (shm_hugepage_holders(list, sizeof(list)))
		snprintf(
		    text, sizeof(text),
		    ", or stop what holds them (clients of an ssqd that is gone keep "
		    "its pages): %s",
		    list);
	return text;
}

int shm_arena_create(struct shm_arena *a, size_t len, enum shm_hugepages mode,
                     const char *tag, char *why, size_t whylen)
{
	size_t need = (len + (2u << 20) - 1) >> 21;
	int rc;

	if (mode == SSQ_HUGEPAGES_OFF)
		return shm_arena_create_memfd(a, len, tag, why, whylen);
	if ((size_t)free_hugepages() >= need) {
		rc = shm_arena_create_eal(a, len, tag, why, whylen);
		if (!rc || mode == SSQ_HUGEPAGES_REQUIRED)
			return rc;
	} else if (mode == SSQ_HUGEPAGES_REQUIRED) {
		snprintf(
		    why, whylen,
		    "--hugepages=required but only %ld free 2 MiB hugepages for a "
		    "%zu-page "
		    "arena; reserve them as root: echo %zu > /proc/sys/vm/nr_hugepages%s",
		    free_hugepages(), need, need + 16, held_by());
		return -ENOMEM;
	} else {
		snprintf(why, whylen, "no free 2 MiB hugepages%s", held_by());
	}
	fprintf(
	    stderr,
	    "ssqd: warning: %s; using 4 KiB memfd pages for the arena (reserve hugepages "
	    "with: echo %zu > /proc/sys/vm/nr_hugepages)\n",
	    why, need + 16);
	return shm_arena_create_memfd(a, len, tag, why, whylen);
}

void *shm_arena_alloc(struct shm_arena *a, size_t len, size_t align)
{
	size_t start = (a->used + align - 1) & ~(align - 1);
	size_t end = a->limit && a->limit < a->len ? a->limit : a->len;

	if (!align || (align & (align - 1)) || start > end || len > end - start)
		return NULL;
	a->used = start + len;
	return a->base + start;
}

int shm_arena_destroy_emptied(struct shm_arena *a)
{
	int rc = 0;

	if (!a->base)
		return 0;
	if (a->eal_memzone)
		return -EOPNOTSUPP;
	/*
	 * Truncating a shmem file (a memfd) unmaps the cut range from every
	 * mapping of it, ours too, and frees its pages (mm/shmem.c
	 * shmem_setattr: unmap_mapping_range, shmem_truncate_range); a later
	 * access past i_size faults SIGBUS (shmem_fault, shmem_get_folio_gfp's
	 * -EINVAL past EOF). Nothing of ours touches it after: the teardown
	 * is shm_arena_destroy's.
	 */
	if (ftruncate(a->fd, 0) < 0)
		rc = -errno;
	shm_arena_destroy(a);
	return rc;
}

void shm_arena_destroy(struct shm_arena *a)
{
	if (!a->base)
		return;
	if (a->eal_memzone) {
		/* EAL owns the segment fd; freeing the memzone is all. */
		rte_memzone_free((const struct rte_memzone *)a->eal_memzone);
	} else {
		munmap(a->base, a->len);
		close(a->fd);
	}
	memset(a, 0, sizeof(*a));
	a->fd = -1;
}
