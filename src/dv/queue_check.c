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
#include "ctl.h"
#include "queue_owner.h"

#define BAD(...)                                                                         \
	do {                                                                             \
		if (why && whylen)                                                       \
			snprintf(why, whylen, __VA_ARGS__);                              \
		return -EUCLEAN;                                                         \
	} while (0)

/*
 * A lease is 0 or a record's id + 1 (the owner's own value, in
 * ssq_ctl_reset, never shows: it runs on our thread), and that record is
 * not FREE: a producer takes a lease only after its record left FREE (the
 * lease load here comes first, so it would see that), and ssq_ctl_claim,
 * on our thread, breaks any lease naming a record (a retired one's, or a
 * scribble naming a FREE one) before it hands the record out.
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
	dbci = dv_cq_dbrec_ci(h);
	ci = __atomic_load_n(&ctl->cq_ci, __ATOMIC_ACQUIRE);
	if (dbci == dv_cq_dbrec_ci(h) && ((dbci - ci) & 0xffffff) > 1 &&
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
	/*
	 * A FREE record is nobody's, so nobody is mid-reservation in it (a
	 * healer would wait on an odd generation). Read again: ssq_ctl_claim
	 * hands a FREE record out, and its new owner may reserve at once.
	 */
	if (state == SSQ_PROD_FREE && (gen & 1) &&
	    __atomic_load_n(&rec->state, __ATOMIC_SEQ_CST) == SSQ_PROD_FREE &&
	    __atomic_load_n(&rec->resv_gen, __ATOMIC_SEQ_CST) == gen)
		BAD("record %u: free, with a reservation under way (generation %u)", i,
		    gen);
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
	 * comp_entries, and done at most SSQ_HAND_REQS ahead (a batch of
	 * combined requests published for a producer that counts them when
	 * it settles, or died before: <ssq/combine.h>).
	 */
	posted = __atomic_load_n(&rec->posted, __ATOMIC_ACQUIRE);
	done = __atomic_load_n(&rec->done, __ATOMIC_ACQUIRE);
	if (__atomic_load_n(&rec->posted, __ATOMIC_ACQUIRE) == posted &&
	    (done > posted + SSQ_HAND_REQS ||
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
