/* SPDX-License-Identifier: MIT */
/*
 * Buffers carved from the data arena for clients: first fit over the
 * arena's range, each buffer remembering the client that owns it so a
 * client's death returns its buffers. ssqd's control thread only.
 */
#ifndef SSQ_CTRL_DATA_ALLOC_H
#define SSQ_CTRL_DATA_ALLOC_H

#include <stdint.h>

#define SSQ_DATA_MAX_BUFS 4096

struct ssqd_data_buf {
	uint64_t off, len;
	uint32_t owner;
	uint32_t key; /* its own MR's key; 0 under ssqd --arena-rkey */
	void *mr;     /* that MR (the backend's), or NULL */
};

struct ssqd_data_alloc {
	uint64_t start, end; /* arena offsets of the data arena */
	uint32_t n;
	struct ssqd_data_buf bufs[SSQ_DATA_MAX_BUFS]; /* sorted by off */
};

void ssqd_data_init(struct ssqd_data_alloc *d, uint64_t start, uint64_t len);

/*
 * Carve @len bytes aligned to @align for @owner. Returns 0 and *@off, or
 * -ENOMEM (no gap fits, or the table is full).
 */
int ssqd_data_alloc(struct ssqd_data_alloc *d, uint64_t len, uint64_t align,
                    uint32_t owner, uint64_t *off);

/* The buffer at @off, or NULL. */
struct ssqd_data_buf *ssqd_data_find(struct ssqd_data_alloc *d, uint64_t off);

/*
 * Free the buffer at @off if @owner has it (*@gone: what it was, if @gone).
 * 0 or -ENOENT.
 */
int ssqd_data_free(struct ssqd_data_alloc *d, uint64_t off, uint32_t owner,
                   struct ssqd_data_buf *gone);

/*
 * Free every buffer of @owner, @release(@ctx, buffer) on each first (NULL:
 * nothing to do); returns how many.
 */
unsigned ssqd_data_free_owner(struct ssqd_data_alloc *d, uint32_t owner,
                              void (*release)(void *ctx, struct ssqd_data_buf *b),
                              void *ctx);

/* Give every buffer of @from to @to; returns how many. */
unsigned ssqd_data_chown(struct ssqd_data_alloc *d, uint32_t from, uint32_t to);

#endif
