/* SPDX-License-Identifier: MIT */
/*
 * The client side of an arena: map what the daemon sent and refuse anything
 * that is not an ssq arena of this layout version, or whose offsets point
 * outside it, before a single queue field is used.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <ssq/queue.h>
#include "dv/ctl.h"
#include "shm/map/arena_map.h"
#include "shm/layout.h"

/* [off, off + len) inside [0, total), without overflow. */
static int in_arena(uint64_t off, uint64_t len, uint64_t total)
{
	return off <= total && len <= total - off;
}

/*
 * A queue's receive pool: none (every field zero), or a power-of-two depth
 * with twice as many slots, buffers inside the data arena (the only memory
 * the data MR covers) and the log inside the arena, 64-byte aligned.
 */
static int recv_pool_bad(const struct shm_arena_header *h,
                         const struct shm_queue_layout *q, uint64_t total)
{
	if (!q->recv_depth)
		return q->recv_slots || q->recv_size || q->recv_buf_off ||
		       q->recv_log_off;
	return (q->recv_depth & (q->recv_depth - 1)) ||
	       q->recv_depth > SSQ_RECV_DEPTH_MAX || q->recv_slots != 2 * q->recv_depth ||
	       !q->recv_size || q->recv_size > SSQ_RECV_SIZE_MAX || (q->recv_size & 63) ||
	       q->recv_buf_off < h->data_off ||
	       !in_arena(q->recv_buf_off - h->data_off,
	                 (uint64_t)q->recv_slots * q->recv_size, h->data_len) ||
	       (q->recv_log_off & 63) ||
	       !in_arena(q->recv_log_off, shm_recv_log_size(q->recv_slots), total);
}

int shm_layout_check(const struct shm_arena_header *h, size_t len, char *why,
                     size_t whylen)
{
	uint32_t i;

	if (len < sizeof(*h)) {
		snprintf(why, whylen,
		         "arena of %zu bytes is smaller than its header (%zu)", len,
		         sizeof(*h));
		return -EBADMSG;
	}
	if (h->magic != SSQ_LAYOUT_MAGIC) {
		snprintf(why, whylen, "not an ssq arena (magic 0x%016llx)",
		         (unsigned long long)h->magic);
		return -EPROTO;
	}
	if (h->version != SSQ_LAYOUT_VERSION || h->header_size != sizeof(*h) ||
	    h->queue_layout_size != sizeof(struct shm_queue_layout)) {
		snprintf(
		    why, whylen,
		    "arena layout version %u (header %u, queue %u bytes); this library "
		    "speaks version %u (%zu, %zu)",
		    h->version, h->header_size, h->queue_layout_size, SSQ_LAYOUT_VERSION,
		    sizeof(*h), sizeof(struct shm_queue_layout));
		return -EPROTO;
	}
	if (h->arena_len != len) {
		snprintf(why, whylen, "arena header says %llu bytes, %zu were mapped",
		         (unsigned long long)h->arena_len, len);
		return -EBADMSG;
	}
	if (h->nqueues > SSQ_MAX_QUEUES || !in_arena(h->data_off, h->data_len, len)) {
		snprintf(why, whylen,
		         "arena header out of bounds (%u queues, data %llu+%llu)",
		         h->nqueues, (unsigned long long)h->data_off,
		         (unsigned long long)h->data_len);
		return -EBADMSG;
	}
	for (i = 0; i < h->nqueues; i++) {
		const struct shm_queue_layout *q = &h->queues[i];

		if (q->state == SSQ_QUEUE_UNUSED)
			continue;
		if (!q->sq_wqe_cnt || (q->sq_wqe_cnt & (q->sq_wqe_cnt - 1)) ||
		    !q->cqe_cnt || (q->cqe_cnt & (q->cqe_cnt - 1)) ||
		    !in_arena(q->sq_off, (uint64_t)q->sq_wqe_cnt * 64, len) ||
		    !in_arena(q->cq_off, (uint64_t)q->cqe_cnt * 64, len) ||
		    !in_arena(q->qp_dbrec_off, 8, len) ||
		    !in_arena(q->cq_dbrec_off, 8, len) ||
		    !in_arena(q->ctl_off, q->ctl_len, len) || (q->ctl_off & 63) ||
		    q->ctl_len < ssq_ctl_size(q->sq_wqe_cnt) ||
		    memchr(q->name, 0, sizeof(q->name)) == NULL) {
			snprintf(why, whylen, "queue %u of the arena is out of bounds",
			         i);
			return -EBADMSG;
		}
		if (recv_pool_bad(h, q, len)) {
			snprintf(why, whylen,
			         "queue %u's receive pool is out of bounds (depth %u, "
			         "%u slots of %u bytes)",
			         i, q->recv_depth, q->recv_slots, q->recv_size);
			return -EBADMSG;
		}
	}
	return 0;
}

void *shm_arena_map(int fd, off_t offset, size_t len, char *why, size_t whylen)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset);

	if (p == MAP_FAILED) {
		snprintf(why, whylen, "mmap of the %zu-byte arena at offset %lld: %s",
		         len, (long long)offset, strerror(errno));
		return NULL;
	}
	if (shm_layout_check((const struct shm_arena_header *)p, len, why, whylen)) {
		munmap(p, len);
		return NULL;
	}
	/*
	 * Only the process that connected maps the queues: ssqd heals a
	 * client's records once that process has exited (util/util.h), and
	 * a forked child that kept the mapping could still write into the ring.
	 */
	if (madvise(p, len, MADV_DONTFORK)) {
		snprintf(why, whylen, "madvise(MADV_DONTFORK) of the arena: %s",
		         strerror(errno));
		munmap(p, len);
		return NULL;
	}
	return p;
}
