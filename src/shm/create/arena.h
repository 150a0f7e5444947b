/* SPDX-License-Identifier: MIT */
/*
 * Arenas: one shared segment per device that holds the queue buffers, the
 * doorbell records, the control blocks and the data arena, exportable as
 * (fd, offset, length) so clients map it with one mmap.
 *
 * ssqd creates it (arena_eal.c: DPDK EAL hugepages; arena_memfd.c: 4 KiB
 * memfd pages when there are none) and carves it with shm_arena_alloc().
 * Clients map what they are sent (src/shm/map/) and never run EAL.
 */
#ifndef SSQ_SHM_CREATE_ARENA_H
#define SSQ_SHM_CREATE_ARENA_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum shm_hugepages {
	SSQ_HUGEPAGES_AUTO = 0,     /* hugepages if any, else memfd + a warning */
	SSQ_HUGEPAGES_REQUIRED = 1, /* hugepages or fail */
	SSQ_HUGEPAGES_OFF = 2,      /* memfd pages */
};

struct shm_arena {
	uint8_t *base;   /* mapped here in this process */
	size_t len;      /* bytes, a multiple of page_size */
	int fd;          /* what clients mmap: memfd or EAL's segment fd */
	off_t fd_offset; /* where the arena starts in @fd */
	size_t page_size;
	int hugepages; /* 1: backed by 2 MiB hugepages through EAL */
	size_t used;   /* bump pointer for shm_arena_alloc */
	/*
	 * Where shm_arena_alloc must stop (0: at len). ssqd sets it to the
	 * data arena's start once that is registered, so no queue buffer is
	 * ever carved out of memory the data MR covers.
	 */
	size_t limit;
	void *eal_memzone;
};

/*
 * shm_arena_create - a zeroed arena of at least @len bytes. @mode picks the
 * backing (see enum shm_hugepages); @tag names the memfd / EAL file prefix.
 * Returns 0, or a negative errno with a sentence in @why: -ENOMEM (no
 * hugepages with SSQ_HUGEPAGES_REQUIRED: the sentence says how to reserve
 * them), or the errno of memfd_create / ftruncate / mmap.
 */
int shm_arena_create(struct shm_arena *a, size_t len, enum shm_hugepages mode,
                     const char *tag, char *why, size_t whylen);

/* Hugepage backing through DPDK's EAL (arena_eal.c); same contract. */
int shm_arena_create_eal(struct shm_arena *a, size_t len, const char *tag, char *why,
                         size_t whylen);

/* memfd backing (arena_memfd.c); same contract. */
int shm_arena_create_memfd(struct shm_arena *a, size_t len, const char *tag, char *why,
                           size_t whylen);

/*
 * shm_arena_alloc - carve @len bytes aligned to @align (a power of two) from
 * the arena, below a->limit when set. Returns the address or NULL when it
 * does not fit. Also the
 * mlx5dv buffer-allocator hook's backend. Single-threaded (ssqd's setup).
 */
void *shm_arena_alloc(struct shm_arena *a, size_t len, size_t align);

/* Offset of @p in the arena (p must lie inside it). */
static inline uint64_t shm_arena_off(const struct shm_arena *a, const void *p)
{
	return (uint64_t)((const uint8_t *)p - a->base);
}

void shm_arena_destroy(struct shm_arena *a);

/*
 * shm_arena_destroy_emptied - destroy a memfd arena and truncate its file
 * to 0 first, so that what other processes still map of it holds no
 * memory (their next access faults SIGBUS). 0, or -EOPNOTSUPP for an EAL
 * arena (EAL's own heap lives in the same segment file: left alone, @a
 * untouched), or ftruncate's -errno (@a destroyed all the same).
 */
int shm_arena_destroy_emptied(struct shm_arena *a);

#endif /* SSQ_SHM_CREATE_ARENA_H */
