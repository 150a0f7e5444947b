/* SPDX-License-Identifier: MIT */
/*
 * The arena header's fixed part, put back. Every client maps the arena
 * read-write (its buffers are in it), the header included, so one client
 * can scribble the queue count, the names, the data arena's place and key
 * or the device. ssqd never reads those back (it keeps its own copy,
 * d->own); before a new client maps the arena, this rewrites them, so a
 * scribbler cannot keep later clients from connecting (shm_layout_check
 * refuses a bad header) or send them to the wrong queue by name or to the
 * wrong ring. Each published queue's layout and state come back from
 * ssqd's own records (ssqd_queue_layout_restore); the names of queues not
 * published yet from d->own.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <string.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include "ctrl/daemon/queues/queues.h"

void ssqd_hdr_restore(struct ssqd *d)
{
	uint32_t arm_seq = __atomic_load_n(&d->hdr->tx_arm_seq, __ATOMIC_RELAXED);
	unsigned i;

	memcpy(d->hdr, &d->own, offsetof(struct shm_arena_header, queues));
	/*
	 * Not a field to put back but the send-arm thread's futex word: a
	 * sleeper's bump the copy wrote over would be lost to a thread about
	 * to wait on the value before it. Moved on from what it held and
	 * woken, the thread looks again instead.
	 */
	__atomic_store_n(&d->hdr->tx_arm_seq, arm_seq + 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &d->hdr->tx_arm_seq, FUTEX_WAKE, 1, NULL, NULL, 0);
	for (i = 0; i < d->own.nqueues; i++) {
		memcpy(d->hdr->queues[i].name, d->own.queues[i].name, SSQ_NAME_MAX);
		ssqd_queue_layout_restore(d, i);
	}
}
