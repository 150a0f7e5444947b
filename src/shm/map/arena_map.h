/* SPDX-License-Identifier: MIT */
/*
 * The client side of the shared arena: map what ssqd sent over the unix
 * socket (SCM_RIGHTS). Clients never run EAL and never create arenas
 * (that is src/shm/create/, in ssqd only).
 */
#ifndef SSQ_SHM_MAP_ARENA_MAP_H
#define SSQ_SHM_MAP_ARENA_MAP_H

#include <stddef.h>
#include <sys/types.h>

/*
 * shm_arena_map - a client's mapping of an arena it was sent: mmap @len
 * bytes of @fd at @offset, shared, read-write, then shm_layout_check().
 * Returns the address, or NULL with a sentence in @why.
 */
void *shm_arena_map(int fd, off_t offset, size_t len, char *why, size_t whylen);

#endif /* SSQ_SHM_MAP_ARENA_MAP_H */
