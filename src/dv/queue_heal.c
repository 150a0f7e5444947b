/* SPDX-License-Identifier: MIT */
/*
 * Healing a shared queue after producers died: no lease they held may stay
 * held, and no WQEBB they reserved may stay unpublished, or every producer
 * behind it would wait forever for the published head to move.
 *
 * The argument, step by step, with the labels of tests/model/ssq_queue.pml:
 *  H1. Break the leases of records marked DEAD. ssqd is the only party that
 *      marks records DEAD or reclaims them, and it does both on the thread
 *      that heals, so a record cannot be handed to a new owner (who could
 *      hold the lease under the same id) between the check and the CAS.
 *  H2. Snapshot r0 = reserve, then every record's resv_gen. Every WQEBB
 *      below r0 was handed out by a fetch-add that is already done. A live
 *      producer seen mid-reservation (odd resv_gen) may own such a range
 *      without having recorded it: wait until it has moved on. Producers
 *      that enter RESERVING later get positions >= r0.
 *  H3. Walk x from `published` to r0, in order. x is skipped if a live
 *      BUILDING record holds it (its claim read whole, see live_claim), or
 *      if the WQE starting at x is published; a slot already holding a
 *      later pass means x completed meanwhile: resume from `published`
 *      (and x below `published` always does). Anything else was reserved
 *      by a dead producer - recorded or not, the "hard case" - and is
 *      published here as a one-WQEBB NOP, once the device has freed that
 *      WQEBB. Going in order means the room a hole needs never depends on
 *      a later hole - but it may depend on an earlier one this heal has
 *      just filled (a producer can die waiting for room past the ring,
 *      behind another's hole), so the NOPs so far are submitted before
 *      waiting for room.
 *  H4. Submit like any producer.
 * Every wait and every step of the walk is bounded by the deadline: the
 * caller is ssqd's only thread, and -ETIMEDOUT (retried later) must be
 * all a queue in an unexpected state can cost it.
 */
#define _GNU_SOURCE
#include <ssq/queue.h>
#include "ctl.h"
#include "queue_clock.h"

/*
 * Is x inside a live producer's open reservation? Returns its end, 0 for
 * no, or UINT64_MAX once @deadline has passed (a record whose generation
 * keeps moving under us must not hold the daemon's thread).
 * (state, pos, len) is read as one claim under the record's resv_gen, as a
 * seqlock: a producer that closes a reservation and opens the next one
 * meanwhile must not hand us its new pos with its old len.
 */
static uint64_t live_claim(struct ssq_ctl *ctl, uint32_t self, uint64_t x,
                           uint64_t deadline)
{
	uint32_t i;

	for (i = 0; i < SSQ_MAX_PRODUCERS; i++) {
		struct ssq_ctl_producer *r = &ctl->producers[i];
		uint64_t pos;
		uint32_t gen, state, len;

		if (i == self)
			continue;
		/*
		 * A9b: pairs with R9a, R9b and R9c (ssq_reserve, ssq_publish);
		 * seq_cst, more than the acquire the seqlock needs: healing is
		 * no fast path.
		 */
		for (;;) {
			gen = __atomic_load_n(&r->resv_gen, __ATOMIC_SEQ_CST);
			state = __atomic_load_n(&r->state, __ATOMIC_SEQ_CST);
			pos = __atomic_load_n(&r->pos, __ATOMIC_SEQ_CST);
			len = __atomic_load_n(&r->len, __ATOMIC_SEQ_CST);
			if (__atomic_load_n(&r->resv_gen, __ATOMIC_SEQ_CST) == gen)
				break;
			if (dv_now_ms() > deadline)
				return UINT64_MAX;
			ssq_cpu_relax();
		}
		if (state == SSQ_PROD_BUILDING && pos <= x && x < pos + len)
			return pos + len;
	}
	return 0;
}

/*
 * A lease naming no producer record (a client wrote it) has no holder that
 * could ever let it go. ssq_ctl_reset's own value never shows here: it
 * runs on the healer's thread. C7, as below.
 */
static void break_garbage_lease(uint32_t *lease)
{
	uint32_t v = __atomic_load_n(lease, __ATOMIC_SEQ_CST);

	if (v > SSQ_MAX_PRODUCERS)
		__atomic_compare_exchange_n(lease, &v, 0, 0, __ATOMIC_SEQ_CST,
		                            __ATOMIC_SEQ_CST);
}

/*
 * A lease or the combiner role naming a FREE record (a client wrote it)
 * has no holder either: nobody would ever let it go. The doorbell lease:
 * every producer leaves its doorbell to the "holder" (ssq__lease_try),
 * so nothing published is rung again and the queue fills; the CQ lease:
 * nobody routes (ssq_progress), so no completion reaches its owner; the
 * role: combining and the lone fast path stay off for the queue
 * (test_ssq_combine_adv_scribble.c, test_ssq_heal_free_lease.c). ssqd's
 * guard (ssq_ctl_check, every SSQD_GUARD_MS) finds such a lease too, and
 * starts the whole queue over for it, flushing what is in flight; a heal
 * (after a death; or with no ssqd, the emulated testbed) frees it without
 * that. A bound producer takes each only from 0, with its own id + 1 (C2,
 * A7, C9), and a record is bound (FREE to IDLE) only by ssq_ctl_claim, on
 * this thread, which also frees any lease or role naming the record before
 * it hands it out: so a FREE record holds nothing, and the state read after
 * the value cannot become IDLE before the CAS. The CAS is on the exact
 * value read: a live producer that took the word meanwhile (it went 0,
 * then its id) keeps it. C7, as below.
 */
static void break_free_holder(struct ssq_ctl *ctl, uint32_t *word)
{
	uint32_t v = __atomic_load_n(word, __ATOMIC_SEQ_CST);

	if (v && v <= SSQ_MAX_PRODUCERS &&
	    __atomic_load_n(&ctl->producers[v - 1].state, __ATOMIC_SEQ_CST) ==
	        SSQ_PROD_FREE)
		__atomic_compare_exchange_n(word, &v, 0, 0, __ATOMIC_SEQ_CST,
		                            __ATOMIC_SEQ_CST);
}

/*
 * Wait until the WQEBB at x is free (the device completed its last pass).
 * The room may depend on NOPs this heal wrote below x and has not
 * submitted yet - a hole a dead producer left before the range of one that
 * died waiting for room past the ring (ssq_reserve's wait after its
 * fetch-add): nobody else advances `published` over them once the live
 * producers are idle, so submit them first, or the device never sees them
 * and we wait for nothing until the deadline, every time ssqd retries.
 */
static int wait_room(struct ssq_producer *h, uint64_t x, uint64_t deadline)
{
	int submitted = 0;

	/* A3c: pairs with R3 (the router): the WQEBB at x is free. */
	while (x + 1 - __atomic_load_n(&h->ctl->completed, __ATOMIC_ACQUIRE) >
	       (uint64_t)h->slot_mask + 1) {
		if (!submitted) {
			ssq_submit(h);
			submitted = 1;
		}
		if (dv_now_ms() > deadline)
			return -ETIMEDOUT;
		if (!ssq_progress(h))
			ssq_cpu_relax();
	}
	return 0;
}

int ssq_ctl_heal(struct ssq_producer *h, unsigned timeout_ms)
{
	struct ssq_ctl *ctl = h->ctl;
	uint32_t gen[SSQ_MAX_PRODUCERS], i, state;
	uint64_t deadline = dv_now_ms() + timeout_ms, r0, x, end, seq;
	int nops = 0, waiting, rc;

	/*
	 * H1. A10c: pairs with R10a/R10b (DEAD). C7: each CAS frees a lease
	 * only while the dead still holds it (a live holder's id differs);
	 * seq_cst like the doorbell lease's C2 and C5. What the dead stored
	 * needs no pairing: a dead process has no store in flight by the time
	 * ssqd learns of its death.
	 */
	for (i = 0; i < SSQ_MAX_PRODUCERS; i++) {
		uint32_t holder = i + 1;

		if (__atomic_load_n(&ctl->producers[i].state, __ATOMIC_SEQ_CST) !=
		    SSQ_PROD_DEAD)
			continue;
		__atomic_compare_exchange_n(&ctl->db_lease, &holder, 0, 0,
		                            __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		holder = i + 1;
		__atomic_compare_exchange_n(&ctl->cq_lease, &holder, 0, 0,
		                            __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		/*
		 * The combiner role (<ssq/combine.h>): a hint nobody waits on
		 * (posters hand over and return; each settles its own request
		 * later, taking it back if still POSTED), freed so that
		 * combining goes on; what the dead combiner reserved is healed
		 * below like any reservation, and its takers see the NOPs.
		 */
		holder = i + 1;
		__atomic_compare_exchange_n(&ctl->comb_role, &holder, 0, 0,
		                            __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	}
	break_garbage_lease(&ctl->db_lease);
	break_garbage_lease(&ctl->cq_lease);
	break_garbage_lease(&ctl->comb_role);
	break_free_holder(ctl, &ctl->db_lease);
	break_free_holder(ctl, &ctl->cq_lease);
	break_free_holder(ctl, &ctl->comb_role);

	/*
	 * H2: r0 first, then the claims (A9a: pairs with R9a/R9b). The load of
	 * r0 pairs with C1's release half: a range below r0 has its odd
	 * resv_gen (R9a, stored before the add) visible to the loads below.
	 */
	r0 = __atomic_load_n(&ctl->reserve, __ATOMIC_SEQ_CST);
	for (i = 0; i < SSQ_MAX_PRODUCERS; i++)
		gen[i] = __atomic_load_n(&ctl->producers[i].resv_gen, __ATOMIC_SEQ_CST);
	do {
		waiting = 0;
		for (i = 0; i < SSQ_MAX_PRODUCERS; i++) {
			struct ssq_ctl_producer *r = &ctl->producers[i];

			if (i == h->id || !(gen[i] & 1))
				continue; /* was not mid-reservation at the snapshot */
			/* FREE: nobody's; an odd generation there is garbage. */
			state = __atomic_load_n(&r->state, __ATOMIC_SEQ_CST);
			if (state == SSQ_PROD_DEAD || state == SSQ_PROD_FREE ||
			    __atomic_load_n(&r->resv_gen, __ATOMIC_SEQ_CST) != gen[i])
				continue;
			waiting = 1;
		}
		if (waiting) {
			/*
			 * Ring what is published first: H1 may have freed the
			 * lease of a holder that left it unrung, and without
			 * this nothing rings it until someone posts again
			 * (test_adv6_heal_lease_unrung.c).
			 */
			if (dv_now_ms() > deadline) {
				ssq_submit(h);
				return -ETIMEDOUT;
			}
			ssq_cpu_relax();
		}
	} while (waiting);

	/*
	 * H3. A2c (here and below): pairs with R2 (ssq_submit): everything
	 * below `published` is published. A1c (the publish words): pairs with
	 * R1a (ssq_publish) and R1b (our own NOPs).
	 */
	x = __atomic_load_n(&ctl->published, __ATOMIC_SEQ_CST);
	while (x < r0) {
		struct ssq_ctl_slot *s = ssq__slot(h, x);
		uint64_t p;

		/*
		 * Every step is bounded by the deadline: a walk that cannot move
		 * (a slot whose sequence word is ahead of a `published` that
		 * stays below it, which flow control rules out but a reset
		 * queue or a torn-down producer can leave) must hand the thread
		 * back to ssqd, not spin in it.
		 */
		if (dv_now_ms() > deadline)
			goto timeout;
		/* Below `published` everything is published: nothing to heal. */
		p = __atomic_load_n(&ctl->published, __ATOMIC_SEQ_CST);
		if (x < p) {
			x = p;
			continue;
		}
		end = live_claim(ctl, h->id, x, deadline);
		if (end == UINT64_MAX)
			goto timeout;
		if (end) {
			x = end;
			continue;
		}
		seq = __atomic_load_n(&s->seq, __ATOMIC_SEQ_CST);
		if (seq == x + 1) {
			uint16_t len = __atomic_load_n(&s->len, __ATOMIC_SEQ_CST);

			/*
			 * The length is a separate word: if the slot's WQE completed
			 * and the slot was reused between the two loads, len may be
			 * the next pass's - its producer stores the length before
			 * the sequence word, so a re-read of the sequence word alone
			 * can miss it. Reuse needs `completed`, hence `published`,
			 * past x: if either moved, go round, which resumes from
			 * `published` (the model packs both in one word instead).
			 */
			if (__atomic_load_n(&s->seq, __ATOMIC_SEQ_CST) != seq ||
			    __atomic_load_n(&ctl->published, __ATOMIC_SEQ_CST) > x)
				continue;
			x += len ? len : 1;
			continue;
		}
		if (seq > x + 1) {
			/* A later pass: x completed meanwhile, so `published`
			 * passed it; the loop's top resumes there. */
			ssq_cpu_relax();
			continue;
		}
		rc = wait_room(h, x, deadline);
		if (rc)
			goto timeout;
		ssq_prep_nop(&h->sq, (uint32_t)x, ssq_wqe_flags(h, x, 1, 0));
		s->wr_id = 0;
		__atomic_store_n(&s->len, 1, __ATOMIC_RELAXED);
		s->flags = 0;
		s->owner = SSQ_OWNER_NONE;
		/* R1b: published like a producer's R1a (S5); seq_cst is more
		 * than the ssq_submit below needs, and healing is no fast path. */
		__atomic_store_n(&s->seq, x + 1, __ATOMIC_SEQ_CST);
		nops++;
		x++;
	}
	/* H4 */
	ssq_submit(h);
	return nops;
timeout:
	/* The NOPs written so far are published: let the device have them. */
	ssq_submit(h);
	return -ETIMEDOUT;
}
