/* SPDX-License-Identifier: MIT */
/*
 * Starting a queue over in place, while its clients stay attached: after
 * ssq_ctl_check found its control block scribbled, after a fatal error, or
 * when a hold nobody lets go has to be taken away. The QP goes through
 * RESET back to RTS (the owner's part) and the block is rebuilt from the
 * owner's private copies of its bounds, in two halves around the QP's reset:
 *  - ssq_ctl_quiesce: reservations wait (-EAGAIN; RESTARTING), both leases the owner's,
 *    so that no producer rings the QP while it is reset nor routes its CQ,
 *    and each reservation open in a live record is given until the deadline
 *    to be published (a producer that runs publishes in microseconds);
 *  - ssq_ctl_rebuild: the CQEs the CQ holds are routed, every WQE still in
 *    flight completes to its owner as flushed (IBV_WC_WR_FLUSH_ERR, signaled
 *    or not, as a QP in error flushes them: src/emu/flush.c after the PRM,
 *    and the kernel's own flush, drivers/infiniband/hw/mlx5/cq.c
 *    sw_send_comp, one error completion per outstanding WQE), and the block
 *    starts over.
 * No request is dropped silently: a WQE published before the rebuild gets
 * a completion, and one whose reservation the rebuild voided fails its
 * publish (ssq_post_* return -EIO). What the rebuild cannot stop is a
 * producer stalled mid-build past the deadline writing its WQE into the
 * ring late; the stall watch kills a stopped one, and the README says what
 * is left (a trust domain's risk, not another domain's).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <ssq/queue.h>
#include "ctl.h"
#include "queue_owner.h"

/* Take @lease for the owner, waiting until @deadline for a live holder. */
static void grab_lease(uint32_t *lease, uint64_t deadline)
{
	for (;;) {
		uint32_t v = __atomic_load_n(lease, __ATOMIC_SEQ_CST);

		if (v == SSQ_LEASE_OWNER)
			return; /* ssq_ctl_quiesce took it */
		/*
		 * C10: as ssq_ctl_reset's C8, from 0 - or from a value that
		 * names no record (nobody will release it) - or from a holder
		 * that kept it past the deadline (it is working on a block we
		 * are about to start over; its late stores show up at the next
		 * check).
		 */
		if ((v == 0 || v > SSQ_MAX_PRODUCERS || dv_now_ms() > deadline) &&
		    __atomic_compare_exchange_n(lease, &v, SSQ_LEASE_OWNER, 0,
		                                __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
			return;
		ssq_cpu_relax();
	}
}

/*
 * The queue the owner's: reservations wait (-EAGAIN) from here until
 * ssq_ctl_rebuild's READY (R8b) - the flushes it delivers may reach their
 * owners first, and what they post next must not fail for it - and both
 * leases are taken, waiting for live holders until @deadline.
 */
static void take_over(struct ssq_ctl *ctl, uint64_t deadline)
{
	/* R8b: pairs with A8 (ssq_reserve). */
	__atomic_store_n(&ctl->state, SSQ_CTL_RESTARTING, __ATOMIC_RELEASE);
	grab_lease(&ctl->cq_lease, deadline);
	grab_lease(&ctl->db_lease, deadline);
}

static int building(const struct ssq_ctl_producer *r)
{
	/* A9b's load, as ssq_ctl_heal's: R9b/R9c order the record's stores. */
	uint32_t state = __atomic_load_n(&r->state, __ATOMIC_ACQUIRE);

	return state == SSQ_PROD_RESERVING || state == SSQ_PROD_BUILDING;
}

int ssq_ctl_quiesce(struct ssq_producer *owner, uint64_t live, unsigned timeout_ms)
{
	uint64_t deadline = dv_now_ms() + timeout_ms;
	struct ssq_ctl *ctl;
	uint32_t i;

	if (!owner || !owner->ctl)
		return -EINVAL;
	ctl = owner->ctl;
	take_over(ctl, deadline);
	/*
	 * Open reservations publish; their producers' submits find the
	 * doorbell lease ours and leave the doorbell to us (nothing is rung
	 * into the QP about to be reset). One waiting for room (S4b) waits
	 * for completions we no longer route: it gives up at the rebuild
	 * (R13), like one past the deadline.
	 */
	for (i = 0; i < SSQ_MAX_PRODUCERS; i++)
		while ((live >> i & 1) && building(&ctl->producers[i]) &&
		       dv_now_ms() <= deadline)
			ssq_cpu_relax();
	return 0;
}

/* The CQE at index @ci, if the device wrote it in @ci's pass (ssq_cq_peek). */
static int cq_written(const struct ssq_producer *owner, uint32_t ci)
{
	struct ssq_cq at = owner->cq;

	at.ci = ci;
	return ssq_cq_peek(&at) != NULL;
}

/*
 * @ci past the run of written CQEs it starts (at most a CQ's worth), if it
 * then looks like where the device writes next: the CQE before it written
 * in its pass, the one at it not (yet). 1 with *@end, else 0. The device
 * writes CQE n into slot n % cqe_cnt with owner bit (n / cqe_cnt) & 1
 * (<ssq/cq.h>), and the QP was just reset: nothing is being written.
 */
static int cq_next_from(const struct ssq_producer *owner, uint32_t ci, uint32_t *end)
{
	uint32_t n;

	for (n = 0; n < owner->cq.cqe_cnt && cq_written(owner, ci); n++)
		ci = (ci + 1) & 0xffffff;
	*end = ci;
	return !cq_written(owner, ci) && cq_written(owner, (ci - 1) & 0xffffff);
}

/*
 * Where the device writes next, read off the whole CQ when no index a
 * router kept fits: the slots before it hold this pass's owner bit, those
 * from it on the last pass's (or MLX5_CQE_INVALID in the CQ's first pass).
 * Only the index's low bits (slot and pass parity) say where a router
 * polls; the rest is kept from @like. Forged CQEs can mislead this; they
 * are the queue's own clients' doing.
 */
static uint32_t cq_scan(const struct ssq_producer *owner, uint32_t like)
{
	const uint8_t *buf = owner->cq.buf;
	uint32_t n = owner->cq.cqe_cnt, s, pass;
	uint8_t o0 = __atomic_load_n(&buf[63], __ATOMIC_ACQUIRE), o;

	if ((o0 >> 4) == MLX5_CQE_INVALID)
		return like & ~(2 * n - 1) & 0xffffff; /* nothing written yet */
	for (s = 1; s < n; s++) {
		o = __atomic_load_n(&buf[(size_t)s * 64 + 63], __ATOMIC_ACQUIRE);
		if ((o >> 4) == MLX5_CQE_INVALID ||
		    (o & MLX5_CQE_OWNER_MASK) != (o0 & MLX5_CQE_OWNER_MASK))
			break;
	}
	/* A whole pass written: the next CQE starts the next pass at slot 0. */
	pass = (o0 & MLX5_CQE_OWNER_MASK) ^ (s == n);
	return ((like & ~(2 * n - 1)) | (pass ? n : 0) | (s & (n - 1))) & 0xffffff;
}

/*
 * The CQEs the CQ still holds, routed from the routers' index; then the
 * index set where the device writes next. cq_ci and the consumer-index
 * record are both client memory, and with the CQ ignoring overruns (ssqd
 * creates it so) the device reads neither: an index taken from a scribbled
 * one would leave the routers waiting at a slot the device never writes.
 * So the first of cq_ci and the record that fits the CQ's contents, else
 * the CQ's contents alone (cq_scan).
 */
static void route_old_cqes(struct ssq_producer *owner)
{
	uint32_t dbci = dv_cq_dbrec_ci(owner),
	         ci = __atomic_load_n(&owner->ctl->cq_ci, __ATOMIC_RELAXED), end;

	/* The record, when the shared copy left its window. */
	if (((ci - dbci) & 0xffffff) > owner->cq.cqe_cnt)
		__atomic_store_n(&owner->ctl->cq_ci, dbci, __ATOMIC_RELAXED);
	/* We hold the CQ lease: route as any holder (bounded by the ring). */
	(void)ssq__route(owner, SSQ_LEASE_OWNER);
	/* Whatever the walk could not place (a scribbled block) is skipped. */
	if (!cq_next_from(owner, __atomic_load_n(&owner->ctl->cq_ci, __ATOMIC_RELAXED),
	                  &end) &&
	    !cq_next_from(owner, dbci, &end) && !cq_next_from(owner, ci, &end))
		end = cq_scan(owner, end);
	owner->cq.ci = end;
	ssq_cq_update_ci(&owner->cq);
	__atomic_store_n(&owner->ctl->cq_ci, owner->cq.ci, __ATOMIC_RELEASE);
}

/*
 * Every WQE from `completed` on that was published - below `published`, or
 * past it up to `reserve` with its publish word set, holes left by
 * reservations never published stepped over - completes to its live owner
 * as flushed. At most a ring of WQEBBs, whatever the block says.
 */
static void flush_in_flight(struct ssq_producer *owner, uint64_t live,
                            uint32_t flushed_n[SSQ_MAX_PRODUCERS])
{
	static const struct ssq_cqe flushed = {
		.opcode = MLX5_CQE_REQ_ERR,
		.syndrome = MLX5_CQE_SYNDROME_WR_FLUSH_ERR,
		.status = IBV_WC_WR_FLUSH_ERR,
	};
	struct ssq_ctl *ctl = owner->ctl;
	uint64_t ring = (uint64_t)owner->slot_mask + 1;
	uint64_t c = __atomic_load_n(&ctl->completed, __ATOMIC_RELAXED);
	uint64_t p = __atomic_load_n(&ctl->published, __ATOMIC_RELAXED), pos;
	uint64_t r = __atomic_load_n(&ctl->reserve, __ATOMIC_RELAXED);

	if (p < c || p - c > ring)
		p = c; /* out of its window: only the publish words count */
	if (r < p || r - c > ring)
		r = c + ring;
	for (pos = c; pos < r;) {
		struct ssq_ctl_slot *s = ssq__slot(owner, pos);
		uint32_t who = s->owner;
		uint16_t len = __atomic_load_n(&s->len, __ATOMIC_RELAXED);

		/* A1c's load, as the healer's: the slot's fields come first. */
		if (pos >= p && __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != pos + 1) {
			pos++; /* a hole, or inside one */
			continue;
		}
		if (who < SSQ_MAX_PRODUCERS && who != owner->id && (live >> who & 1) &&
		    __atomic_load_n(&ctl->producers[who].state, __ATOMIC_ACQUIRE) !=
		        SSQ_PROD_DEAD) {
			ssq__deliver(owner, who, pos, s->wr_id, &flushed, 1);
			flushed_n[who]++;
		}
		pos += len ? len : 1;
	}
}

/*
 * Of the @n WQEs flush_in_flight completed to record @r as flushed, those
 * its owner has not counted in `posted` yet: a combined batch
 * (<ssq/combine.h>) published for it and not settled. What it counted and
 * the router did not (posted - done) comes first; the rest, at most a
 * batch (the block is client-written). The owner, settling after the epoch
 * moved, counts in `posted` as many as `done` then holds beyond it, and
 * posts again only the rest: `done` set to `posted` alone, it posted the
 * flushed ones again, completing them twice
 * (test_adv8b_rebuild_taken.c).
 */
static uint64_t combined_flushed(const struct ssq_ctl_producer *r, uint32_t n)
{
	uint64_t infl = r->posted > r->done ? r->posted - r->done : 0;

	if (n <= infl)
		return 0;
	return n - infl < SSQ_HAND_REQS ? n - infl : SSQ_HAND_REQS;
}

/* ssq_ctl_rebuild's body; the block ends @final (READY, or RESTARTING held). */
static int rebuild(struct ssq_producer *owner, uint32_t epoch, uint64_t live,
                   unsigned timeout_ms, uint32_t final)
{
	struct ssq_ctl *ctl;
	uint64_t deadline = dv_now_ms() + timeout_ms;
	uint32_t i, flushed_n[SSQ_MAX_PRODUCERS] = { 0 };

	if (!owner || !owner->ctl)
		return -EINVAL;
	ctl = owner->ctl;
	take_over(ctl, deadline); /* ssq_ctl_quiesce's, if it ran: kept */
	/* The bounds the walks below use are the owner's; the header's next. */
	route_old_cqes(owner);
	flush_in_flight(owner, live, flushed_n);
	ctl->ring = owner->slot_mask + 1;
	ctl->signal_every = owner->signal_every;
	ctl->comp_entries = owner->comp_mask + 1;
	ctl->max_producers = SSQ_MAX_PRODUCERS;
	ctl->epoch = epoch;
	memset((void *)owner->slots, 0,
	       ((size_t)owner->slot_mask + 1) * sizeof(struct ssq_ctl_slot));
	for (i = 0; i < SSQ_MAX_PRODUCERS; i++) {
		struct ssq_ctl_producer *r = &ctl->producers[i];
		/* Even, and past any snapshot a healer took (see ssq_ctl_claim). */
		uint32_t gen = (r->resv_gen + 2) & ~1u;
		uint64_t head = r->comp_head, tail = r->comp_tail;

		if (i != owner->id && !(live >> i & 1)) {
			memset(r, 0, sizeof(*r));
			r->resv_gen = gen;
			continue;
		}
		/*
		 * A live owner keeps its record and its completion ring, if that
		 * is a ring's worth: the flushes above are in it, and nothing
		 * else is outstanding.
		 */
		r->resv_gen = gen;
		r->pos = 0;
		r->len = 0;
		r->done = r->posted + combined_flushed(r, flushed_n[i]);
		r->done_pos = 0;
		r->deliv_pos = 0;
		if (head - tail > (uint64_t)owner->comp_mask + 1)
			r->comp_head = tail;
		/*
		 * R13: a reservation open across the rebuild is void; pairs
		 * with A13 (ssq_reserve's wait for room gives up) and A13b
		 * (ssq_publish refuses it).
		 */
		__atomic_store_n(&r->state, SSQ_PROD_IDLE, __ATOMIC_RELEASE);
	}
	ctl->reserve = 0;
	ctl->published = 0;
	ctl->completed = 0;
	ctl->db_value = 0;
	ctl->bf_offset = 0;
	/*
	 * Combining's hints. A live record's hand-over word stays: its owner
	 * waits on it and sees the epoch move (<ssq/combine.h>).
	 */
	ctl->comb_role = 0;
	ctl->comb_pending = 0;
	__atomic_store_n(&ctl->magic, SSQ_CTL_MAGIC, __ATOMIC_RELEASE);
	/* C9 and R7, as ssq_ctl_reset hands the leases back. */
	__atomic_store_n(&ctl->db_lease, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&ctl->cq_lease, 0, __ATOMIC_RELEASE);
	/* R8c: READY (or still RESTARTING) last; pairs with A8. */
	__atomic_store_n(&ctl->state, final, __ATOMIC_RELEASE);
	return 0;
}

int ssq_ctl_rebuild(struct ssq_producer *owner, uint32_t epoch, uint64_t live,
                    unsigned timeout_ms)
{
	return rebuild(owner, epoch, live, timeout_ms, SSQ_CTL_READY);
}

int ssq_ctl_rebuild_held(struct ssq_producer *owner, uint32_t epoch, uint64_t live,
                         unsigned timeout_ms)
{
	return rebuild(owner, epoch, live, timeout_ms, SSQ_CTL_RESTARTING);
}

int ssq_ctl_release(struct ssq_ctl *ctl)
{
	uint32_t v = SSQ_CTL_RESTARTING;

	if (!ctl)
		return -EINVAL;
	/*
	 * R8d: pairs with A8, as R8c. A CAS, so that a fence's ERROR stored
	 * meanwhile stays; a block a client scribbled meanwhile is the
	 * guard's to find.
	 */
	return __atomic_compare_exchange_n(&ctl->state, &v, SSQ_CTL_READY, 0,
	                                   __ATOMIC_RELEASE, __ATOMIC_RELAXED)
	           ? 0
	           : -ESTALE;
}
