/* SPDX-License-Identifier: MIT */
/*
 * Healing a shared queue after producers died: no lease they held may stay
 * held, and no WQEBB they reserved may stay unpublished, or every producer
 * behind it would wait forever for the published head to move.
 *
 * The argument, step by step (tests/model checks the same protocol):
 *  1. Snapshot r0 = reserve. Every WQEBB below r0 was handed out by a
 *     fetch-add that is already done.
 *  2. A live producer still RESERVING may own such a range without having
 *     recorded it; wait until each one seen RESERVING has moved on
 *     (resv_gen changes). Producers that enter RESERVING later get
 *     positions >= r0 and do not matter.
 *  3. Walk x from `published` to r0. x is skipped if a live BUILDING
 *     record holds it (state read first, then the slot: a producer that
 *     went IDLE in between published its slot before, R5/A5), or if the
 *     WQE starting at x is published. Anything else was reserved by a dead
 *     producer and is published here as a one-WQEBB NOP, after waiting for
 *     the device to free that WQEBB.
 *  4. Submit like any producer.
 */
#define _GNU_SOURCE
#include <time.h>
#include <ssq/queue.h>

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* Is x inside a live producer's open reservation? Returns its end, or 0. */
static uint64_t live_claim(struct ssq_ctl *ctl, uint32_t self, uint64_t x)
{
	uint32_t i;

	for (i = 0; i < ctl->max_producers; i++) {
		struct ssq_ctl_producer *r = &ctl->producers[i];

		if (i == self ||
		    __atomic_load_n(&r->state, __ATOMIC_ACQUIRE) != SSQ_PROD_BUILDING)
			continue;
		if (r->pos <= x && x < r->pos + r->len)
			return r->pos + r->len;
	}
	return 0;
}

static int wait_room(struct ssq_producer *h, uint64_t x, uint64_t deadline)
{
	while (x + 1 - __atomic_load_n(&h->ctl->completed, __ATOMIC_ACQUIRE) >
	       h->ctl->ring) {
		if (now_ms() > deadline)
			return -ETIMEDOUT;
		if (!ssq__try_route(h))
			ssq__cpu_relax();
	}
	return 0;
}

int ssq_ctl_heal(struct ssq_producer *h, unsigned timeout_ms)
{
	struct ssq_ctl *ctl = h->ctl;
	uint32_t gen[SSQ_MAX_PRODUCERS], i;
	uint64_t deadline = now_ms() + timeout_ms, r0, x, end;
	int nops = 0, waiting, rc;

	/* Leases of the dead: break them (a dead holder will never release). */
	for (i = 0; i < ctl->max_producers; i++) {
		uint32_t holder = i + 1;

		if (__atomic_load_n(&ctl->producers[i].state, __ATOMIC_ACQUIRE) !=
		    SSQ_PROD_DEAD)
			continue;
		__atomic_compare_exchange_n(&ctl->db_lease, &holder, 0, 0,
		                            __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
		holder = i + 1;
		__atomic_compare_exchange_n(&ctl->cq_lease, &holder, 0, 0,
		                            __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
	}

	r0 = __atomic_load_n(&ctl->reserve, __ATOMIC_SEQ_CST);
	for (i = 0; i < ctl->max_producers; i++)
		gen[i] = __atomic_load_n(&ctl->producers[i].resv_gen, __ATOMIC_SEQ_CST);
	do {
		waiting = 0;
		for (i = 0; i < ctl->max_producers; i++) {
			struct ssq_ctl_producer *r = &ctl->producers[i];

			if (i == h->id || !(gen[i] & 1))
				continue; /* was not mid-reservation at the snapshot */
			if (__atomic_load_n(&r->state, __ATOMIC_SEQ_CST) ==
			        SSQ_PROD_DEAD ||
			    __atomic_load_n(&r->resv_gen, __ATOMIC_SEQ_CST) != gen[i])
				continue;
			waiting = 1;
		}
		if (waiting) {
			if (now_ms() > deadline)
				return -ETIMEDOUT;
			ssq__cpu_relax();
		}
	} while (waiting);

	x = __atomic_load_n(&ctl->published, __ATOMIC_ACQUIRE);
	while (x < r0) {
		struct ssq_ctl_slot *s = ssq__slot(h, x);

		end = live_claim(ctl, h->id, x);
		if (end) {
			x = end;
			continue;
		}
		if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) == x + 1) {
			x += s->len ? s->len : 1;
			continue;
		}
		rc = wait_room(h, x, deadline);
		if (rc)
			return rc;
		ssq_prep_nop(&h->sq, (uint32_t)x, ssq_wqe_flags(h, x, 1, 0));
		s->wr_id = 0;
		s->len = 1;
		s->flags = 0;
		s->owner = SSQ_OWNER_NONE;
		__atomic_store_n(&s->seq, x + 1, __ATOMIC_RELEASE);
		nops++;
		x++;
	}
	ssq_submit(h);
	return nops;
}
