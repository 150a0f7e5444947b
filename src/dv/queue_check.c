/* SPDX-License-Identifier: MIT */
/*
 * The owner's (ssqd's) look at a control block every client of the queue
 * can write: is it one the protocol could have made (ssq_ctl_check), and,
 * if not, start it over from the owner's own copies of its bounds
 * (ssq_ctl_rebuild). A client that scribbles the block cannot be stopped -
 * the queue's clients are one trust domain - but it must not leave the
 * queue wedged for the others, nor crash anyone: every index the fast path
 * and the healer take is bounded by private copies (struct ssq_producer),
 * and whatever stalls the queue with in-range values shows here as a broken
 * invariant.
 *
 * Every check must hold at any instant of a correct run, with producers
 * posting and routing meanwhile, so each reads its fields in an order that
 * keeps it true under concurrent progress: counters that only grow are
 * read lower bound first (completed, then published, then reserve), and a
 * pair written by different parties is read twice around the other
 * (stable reads), skipped when it moved.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <ssq/queue.h>
#include "queue_clock.h"

#define BAD(...)                                                                         \
	do {                                                                             \
		if (why && whylen)                                                       \
			snprintf(why, whylen, __VA_ARGS__);                              \
		return -EUCLEAN;                                                         \
	} while (0)

/* The CQ consumer index the NIC was last told (24 bits, ssq_cq_update_ci). */
static uint32_t cq_dbrec_ci(const struct ssq_producer *h)
{
	return be32toh(__atomic_load_n(&h->cq.dbrec[SSQ_CQ_SET_CI], __ATOMIC_ACQUIRE)) &
	       0xffffff;
}

/*
 * A lease is 0 or a record's id + 1 (the owner's own value, in
 * ssq_ctl_reset, never shows: it runs on our thread), and that record is
 * not FREE: a producer takes a lease only after its record left FREE (the
 * lease load here comes first, so it would see that), and ssq_ctl_claim
 * breaks a retired record's leases before it frees the record.
 */
static int check_lease(const struct ssq_ctl *ctl, const uint32_t *lease, const char *name,
                       char *why, size_t whylen)
{
	uint32_t v = __atomic_load_n(lease, __ATOMIC_SEQ_CST);

	if (v > SSQ_MAX_PRODUCERS)
		BAD("%s %u names no record", name, v);
	if (v && __atomic_load_n(&ctl->producers[v - 1].state, __ATOMIC_SEQ_CST) ==
	             SSQ_PROD_FREE)
		BAD("%s %u names record %u, which is free", name, v, v - 1);
	return 0;
}

static int check_header(const struct ssq_producer *h, uint32_t epoch, char *why,
                        size_t whylen)
{
	const struct ssq_ctl *ctl = h->ctl;
	uint32_t v;

	if (__atomic_load_n(&ctl->magic, __ATOMIC_ACQUIRE) != SSQ_CTL_MAGIC)
		BAD("magic 0x%llx, not 0x%llx",
		    (unsigned long long)__atomic_load_n(&ctl->magic, __ATOMIC_RELAXED),
		    (unsigned long long)SSQ_CTL_MAGIC);
	if ((v = __atomic_load_n(&ctl->ring, __ATOMIC_RELAXED)) != h->slot_mask + 1)
		BAD("ring %u, made %u", v, h->slot_mask + 1);
	if ((v = __atomic_load_n(&ctl->signal_every, __ATOMIC_RELAXED)) !=
	    h->signal_every)
		BAD("signal_every %u, made %u", v, h->signal_every);
	if ((v = __atomic_load_n(&ctl->comp_entries, __ATOMIC_RELAXED)) !=
	    h->comp_mask + 1)
		BAD("comp_entries %u, made %u", v, h->comp_mask + 1);
	if ((v = __atomic_load_n(&ctl->max_producers, __ATOMIC_RELAXED)) !=
	    SSQ_MAX_PRODUCERS)
		BAD("max_producers %u, made %u", v, SSQ_MAX_PRODUCERS);
	if ((v = __atomic_load_n(&ctl->epoch, __ATOMIC_RELAXED)) != epoch)
		BAD("epoch %u, the owner's %u", v, epoch);
	if ((v = __atomic_load_n(&ctl->state, __ATOMIC_RELAXED)) != SSQ_CTL_READY &&
	    v != SSQ_CTL_ERROR)
		BAD("state %u", v);
	if (check_lease(ctl, &ctl->db_lease, "db_lease", why, whylen) ||
	    check_lease(ctl, &ctl->cq_lease, "cq_lease", why, whylen))
		return -EUCLEAN;
	if ((v = __atomic_load_n(&ctl->bf_offset, __ATOMIC_RELAXED)) != 0 &&
	    v != h->sq.bf_size)
		BAD("bf_offset %u, not 0 or %u", v, h->sq.bf_size);
	return 0;
}

/*
 * completed <= published <= reserve, and the windows between them: the
 * published head at most a ring ahead of `completed` (the device cannot
 * hold more), the reserve counter at most what every record passing its
 * room check at once could claim (a ring, plus half a ring each).
 */
static int check_counters(const struct ssq_producer *h, uint64_t *reserve_out, char *why,
                          size_t whylen)
{
	const struct ssq_ctl *ctl = h->ctl;
	uint64_t ring = (uint64_t)h->slot_mask + 1, c, d, p, r;
	uint32_t ci, dbci;
	int stable = 0, tries;

	/*
	 * A3d, A2c, then reserve: each at least as new as the one before, so
	 * the order checks hold under progress. The windows need `completed`
	 * unchanged around the others (else published may have moved a ring
	 * on since the `completed` we hold): a few tries, then only the order.
	 */
	for (tries = 0; tries < 8 && !stable; tries++) {
		c = __atomic_load_n(&ctl->completed, __ATOMIC_ACQUIRE);
		d = __atomic_load_n(&ctl->db_value, __ATOMIC_RELAXED);
		p = __atomic_load_n(&ctl->published, __ATOMIC_ACQUIRE);
		r = __atomic_load_n(&ctl->reserve, __ATOMIC_SEQ_CST);
		stable = __atomic_load_n(&ctl->completed, __ATOMIC_ACQUIRE) == c;
	}

	if (c > p)
		BAD("completed %llu past published %llu", (unsigned long long)c,
		    (unsigned long long)p);
	if (p > r)
		BAD("published %llu past reserve %llu", (unsigned long long)p,
		    (unsigned long long)r);
	if (d > p)
		BAD("doorbell value %llu past published %llu", (unsigned long long)d,
		    (unsigned long long)p);
	if (stable && p - c > ring)
		BAD("published %llu more than a ring (%llu) past completed %llu",
		    (unsigned long long)p, (unsigned long long)ring,
		    (unsigned long long)c);
	if (stable && r - c > ring + SSQ_MAX_PRODUCERS * (ring / 2))
		BAD("reserve %llu too far past completed %llu", (unsigned long long)r,
		    (unsigned long long)c);
	/*
	 * cq_ci: a router tells the NIC (the CQ doorbell record) each CQE's
	 * slot before it stores cq_ci, so the record is ahead by one while a
	 * router is between the two stores (or died there); and never behind
	 * by more than a CQ. Read around the record: a router may be mid-run.
	 */
	dbci = cq_dbrec_ci(h);
	ci = __atomic_load_n(&ctl->cq_ci, __ATOMIC_ACQUIRE);
	if (dbci == cq_dbrec_ci(h) && ((dbci - ci) & 0xffffff) > 1 &&
	    ((ci - dbci) & 0xffffff) > h->cq.cqe_cnt)
		BAD("cq_ci %u more than a CQ (%u) past the CQ doorbell record's %u", ci,
		    h->cq.cqe_cnt, dbci);
	*reserve_out = r;
	return 0;
}

static int check_record(const struct ssq_producer *h, uint32_t i, char *why,
                        size_t whylen)
{
	const struct ssq_ctl_producer *rec = &h->ctl->producers[i];
	uint64_t ring = (uint64_t)h->slot_mask + 1, pos, head, tail, posted, done;
	uint32_t gen, state, len;

	/* The claim, as ssq_ctl_heal reads it (A9b: a seqlock on resv_gen). */
	gen = __atomic_load_n(&rec->resv_gen, __ATOMIC_SEQ_CST);
	state = __atomic_load_n(&rec->state, __ATOMIC_SEQ_CST);
	pos = __atomic_load_n(&rec->pos, __ATOMIC_SEQ_CST);
	len = __atomic_load_n(&rec->len, __ATOMIC_SEQ_CST);
	if (state > SSQ_PROD_DEAD)
		BAD("record %u: state %u", i, state);
	if (!(gen & 1) && __atomic_load_n(&rec->resv_gen, __ATOMIC_SEQ_CST) == gen &&
	    state == SSQ_PROD_BUILDING) {
		/* reserve after the claim: the claim came from an add below it. */
		uint64_t r = __atomic_load_n(&h->ctl->reserve, __ATOMIC_SEQ_CST);

		if (!len || len > ring / 2 || pos + len < pos || pos + len > r)
			BAD("record %u: reservation [%llu, +%u) not inside reserve %llu",
			    i, (unsigned long long)pos, len, (unsigned long long)r);
	}
	/*
	 * Its completion ring holds at most comp_entries (ssq_reserve's flow
	 * control): head (router) around tail (owner).
	 */
	head = __atomic_load_n(&rec->comp_head, __ATOMIC_ACQUIRE);
	tail = __atomic_load_n(&rec->comp_tail, __ATOMIC_ACQUIRE);
	if (__atomic_load_n(&rec->comp_head, __ATOMIC_ACQUIRE) == head &&
	    head - tail > (uint64_t)h->comp_mask + 1)
		BAD("record %u: completion ring head %llu, tail %llu", i,
		    (unsigned long long)head, (unsigned long long)tail);
	/*
	 * WQEs in flight (posted by the owner, done by the router): at most
	 * comp_entries, and done at most one ahead (a producer that died
	 * between its publish and counting it).
	 */
	posted = __atomic_load_n(&rec->posted, __ATOMIC_ACQUIRE);
	done = __atomic_load_n(&rec->done, __ATOMIC_ACQUIRE);
	if (__atomic_load_n(&rec->posted, __ATOMIC_ACQUIRE) == posted &&
	    (done > posted + 1 ||
	     (done <= posted && posted - done > (uint64_t)h->comp_mask + 1)))
		BAD("record %u: posted %llu, done %llu", i, (unsigned long long)posted,
		    (unsigned long long)done);
	return 0;
}

int ssq_ctl_check(const struct ssq_producer *h, uint32_t epoch, char *why, size_t whylen)
{
	uint64_t r;
	uint32_t i;
	int rc;

	if (!h || !h->ctl)
		return -EINVAL;
	rc = check_header(h, epoch, why, whylen);
	if (!rc)
		rc = check_counters(h, &r, why, whylen);
	for (i = 0; !rc && i < SSQ_MAX_PRODUCERS; i++)
		rc = check_record(h, i, why, whylen);
	return rc;
}

/* Take @lease for the rebuild, waiting until @deadline for a live holder. */
static void grab_lease(uint32_t *lease, uint64_t deadline)
{
	for (;;) {
		uint32_t v = __atomic_load_n(lease, __ATOMIC_SEQ_CST);

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

/* The CQEs the CQ still holds are the old queue's: skip them. */
static void skip_old_cqes(struct ssq_producer *h)
{
	uint32_t dbci = cq_dbrec_ci(h),
	         ci = __atomic_load_n(&h->ctl->cq_ci, __ATOMIC_RELAXED);
	uint32_t n;

	/* The NIC's record is the truth when the shared copy left its window. */
	if (((ci - dbci) & 0xffffff) > h->cq.cqe_cnt)
		ci = dbci;
	h->cq.ci = ci;
	for (n = 0; n < h->cq.cqe_cnt && ssq_cq_peek(&h->cq); n++)
		h->cq.ci++;
	ssq_cq_update_ci(&h->cq);
	__atomic_store_n(&h->ctl->cq_ci, h->cq.ci, __ATOMIC_RELEASE);
}

int ssq_ctl_rebuild(struct ssq_producer *h, uint32_t epoch, uint64_t live,
                    unsigned timeout_ms)
{
	struct ssq_ctl *ctl;
	uint64_t deadline = dv_now_ms() + timeout_ms;
	uint32_t i;

	if (!h || !h->ctl)
		return -EINVAL;
	ctl = h->ctl;
	/* R8b: reservations fail (-EIO) from here until READY below. */
	__atomic_store_n(&ctl->state, SSQ_CTL_ERROR, __ATOMIC_RELEASE);
	grab_lease(&ctl->cq_lease, deadline);
	grab_lease(&ctl->db_lease, deadline);
	ctl->ring = h->slot_mask + 1;
	ctl->signal_every = h->signal_every;
	ctl->comp_entries = h->comp_mask + 1;
	ctl->max_producers = SSQ_MAX_PRODUCERS;
	ctl->epoch = epoch;
	memset((void *)h->slots, 0,
	       ((size_t)h->slot_mask + 1) * sizeof(struct ssq_ctl_slot));
	for (i = 0; i < SSQ_MAX_PRODUCERS; i++) {
		struct ssq_ctl_producer *r = &ctl->producers[i];
		/* Even, and past any snapshot a healer took (see ssq_ctl_claim). */
		uint32_t gen = (r->resv_gen + 2) & ~1u;
		uint64_t head = r->comp_head, tail = r->comp_tail;

		if (i != h->id && !(live >> i & 1)) {
			memset(r, 0, sizeof(*r));
			r->resv_gen = gen;
			continue;
		}
		/*
		 * A live owner keeps its record and what its completion ring
		 * holds, if that is a ring's worth; what it had in flight is
		 * gone with the QP's reset, so none of it is outstanding.
		 */
		r->resv_gen = gen;
		r->pos = 0;
		r->len = 0;
		r->done = r->posted;
		r->done_pos = 0;
		r->deliv_pos = 0;
		if (head - tail > (uint64_t)h->comp_mask + 1)
			r->comp_head = tail;
		/*
		 * R13: a reservation open across the rebuild is void; pairs
		 * with A13 (ssq_reserve's wait for room gives up).
		 */
		__atomic_store_n(&r->state, SSQ_PROD_IDLE, __ATOMIC_RELEASE);
	}
	ctl->reserve = 0;
	ctl->published = 0;
	ctl->completed = 0;
	ctl->db_value = 0;
	ctl->bf_offset = 0;
	skip_old_cqes(h);
	__atomic_store_n(&ctl->magic, SSQ_CTL_MAGIC, __ATOMIC_RELEASE);
	/* C9 and R7, as ssq_ctl_reset hands the leases back. */
	__atomic_store_n(&ctl->db_lease, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&ctl->cq_lease, 0, __ATOMIC_RELEASE);
	/* R8c: READY last; pairs with A8. */
	__atomic_store_n(&ctl->state, SSQ_CTL_READY, __ATOMIC_RELEASE);
	return 0;
}
