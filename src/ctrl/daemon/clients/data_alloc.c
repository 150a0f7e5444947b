/* SPDX-License-Identifier: MIT */
/* First-fit allocation of client buffers in the data arena. */
#include <errno.h>
#include <string.h>
#include "ctrl/daemon/clients/clients.h"

void ssqd_data_init(struct ssqd_data_alloc *d, uint64_t start, uint64_t len)
{
	memset(d, 0, sizeof(*d));
	d->start = start;
	d->end = start + len;
}

int ssqd_data_alloc(struct ssqd_data_alloc *d, uint64_t len, uint64_t align,
                    uint32_t owner, uint64_t *off)
{
	uint64_t at = d->start;
	uint32_t i;

	if (!len || !align || (align & (align - 1)) || d->n == SSQ_DATA_MAX_BUFS)
		return -ENOMEM;
	for (i = 0; i <= d->n; i++) {
		uint64_t gap_end = i < d->n ? d->bufs[i].off : d->end;
		uint64_t a = (at + align - 1) & ~(align - 1);

		if (a >= at && a <= gap_end && gap_end - a >= len) {
			memmove(&d->bufs[i + 1], &d->bufs[i],
			        (d->n - i) * sizeof(d->bufs[0]));
			d->bufs[i] =
			    (struct ssqd_data_buf){ a, len, owner, 0, NULL, 0, 0 };
			d->n++;
			*off = a;
			return 0;
		}
		if (i < d->n)
			at = d->bufs[i].off + d->bufs[i].len;
	}
	return -ENOMEM;
}

struct ssqd_data_buf *ssqd_data_find(struct ssqd_data_alloc *d, uint64_t off)
{
	uint32_t i;

	for (i = 0; i < d->n; i++)
		if (d->bufs[i].off == off)
			return &d->bufs[i];
	return NULL;
}

int ssqd_data_free(struct ssqd_data_alloc *d, uint64_t off, uint32_t owner,
                   struct ssqd_data_buf *gone)
{
	uint32_t i;

	for (i = 0; i < d->n; i++) {
		if (d->bufs[i].off != off)
			continue;
		if (d->bufs[i].owner != owner)
			return -ENOENT;
		if (gone)
			*gone = d->bufs[i];
		memmove(&d->bufs[i], &d->bufs[i + 1],
		        (d->n - i - 1) * sizeof(d->bufs[0]));
		d->n--;
		return 0;
	}
	return -ENOENT;
}

unsigned ssqd_data_free_owner(struct ssqd_data_alloc *d, uint32_t owner,
                              void (*release)(void *ctx, struct ssqd_data_buf *b),
                              void *ctx)
{
	uint32_t i, j = 0;
	unsigned freed = 0;

	for (i = 0; i < d->n; i++) {
		if (d->bufs[i].owner == owner) {
			if (release)
				release(ctx, &d->bufs[i]);
			freed++;
			continue;
		}
		d->bufs[j++] = d->bufs[i];
	}
	d->n = j;
	return freed;
}

unsigned ssqd_data_chown(struct ssqd_data_alloc *d, uint32_t from, uint32_t to)
{
	unsigned n = 0;
	uint32_t i;

	for (i = 0; i < d->n; i++)
		if (d->bufs[i].owner == from) {
			d->bufs[i].owner = to;
			n++;
		}
	return n;
}
