/* SPDX-License-Identifier: MIT */
/*
 * Lay out a shared queue's control block, bind producers to it, and the
 * owner's (ssqd's) calls on it: claims, deaths, error and reset. The labels
 * (Rn/An/Cn) pair with <ssq/queue_pvt.h>'s and <ssq/queue.h>'s.
 */
#define _GNU_SOURCE
#include <ssq/combine.h>
#include "ctl.h"
#include "queue_clock.h"

static int is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

size_t ssq_ctl_size(uint32_t ring)
{
	return sizeof(struct ssq_ctl) + (size_t)ring * sizeof(struct ssq_ctl_slot) +
	       (size_t)SSQ_MAX_PRODUCERS * ring * sizeof(struct ssq_completion);
}

static struct ssq_ctl_slot *slots_of(struct ssq_ctl *ctl)
{
	return (struct ssq_ctl_slot *)(ctl + 1);
}

static struct ssq_completion *comp_of(struct ssq_ctl *ctl)
{
	return (struct ssq_completion *)(slots_of(ctl) + ctl->ring);
}

int ssq_ctl_init(struct ssq_ctl *ctl, uint32_t ring, uint32_t signal_every)
{
	if (!ctl || !is_pow2(ring) || ring < 4 || ring > 65536 ||
	    !is_pow2(signal_every) || signal_every > ring / 2)
		return -EINVAL;
	memset(ctl, 0, ssq_ctl_size(ring));
	ctl->ring = ring;
	ctl->signal_every = signal_every;
	/*
	 * A producer has at most `ring` WQEs outstanding plus completions
	 * unreaped (ssq_reserve keeps the sum under this): its ring never fills.
	 */
	ctl->comp_entries = ring;
	ctl->max_producers = SSQ_MAX_PRODUCERS;
	ctl->state = SSQ_CTL_READY;
	/* R11: the layout before the magic that says it is there (A11). */
	__atomic_store_n(&ctl->magic, SSQ_CTL_MAGIC, __ATOMIC_RELEASE);
	return 0;
}

static void bind_record(struct ssq_producer *p, struct ssq_ctl *ctl, uint32_t id,
                        const struct ssq_sq *sq, const struct ssq_cq *cq)
{
	memset(p, 0, sizeof(*p));
	p->ctl = ctl;
	p->slots = slots_of(ctl);
	p->comp_all = comp_of(ctl);
	p->comp = p->comp_all + (size_t)id * ctl->comp_entries;
	p->me = &ctl->producers[id];
	p->sq = *sq;
	p->cq = *cq;
	p->id = id;
	p->slot_mask = ctl->ring - 1;
	p->signal_every = ctl->signal_every;
	p->comp_mask = ctl->comp_entries - 1;
}

static int check_args(struct ssq_producer *p, struct ssq_ctl *ctl, uint32_t id,
                      const struct ssq_sq *sq, const struct ssq_cq *cq)
{
	/* A11: pairs with R11 (ssq_ctl_init). */
	if (!p || !ctl || !sq || !cq ||
	    __atomic_load_n(&ctl->magic, __ATOMIC_ACQUIRE) != SSQ_CTL_MAGIC)
		return -EINVAL;
	/*
	 * The fast path masks and shifts by these (its own copies, taken
	 * here): exactly what ssq_ctl_init makes, or the comp rings and slots
	 * would not fit the ssq_ctl_size() bytes the block has.
	 */
	if (id >= SSQ_MAX_PRODUCERS || ctl->max_producers != SSQ_MAX_PRODUCERS ||
	    sq->wqe_cnt != ctl->ring || !is_pow2(ctl->ring) || ctl->ring > 65536 ||
	    !is_pow2(ctl->signal_every) || ctl->signal_every > ctl->ring / 2 ||
	    ctl->comp_entries != ctl->ring)
		return -EINVAL;
	/* Every submit may ring (ssq_sq_ring_db_at): the UAR register must be there. */
	if (!sq->bf_reg)
		return -EINVAL;
	return 0;
}

int ssq_producer_init(struct ssq_producer *p, struct ssq_ctl *ctl, uint32_t id,
                      const struct ssq_sq *sq, const struct ssq_cq *cq, uint32_t pid)
{
	uint32_t free_state = SSQ_PROD_FREE;
	int rc = check_args(p, ctl, id, sq, cq);

	if (rc)
		return rc;
	/* A12 on success: pairs with R12 (a record ssq_ctl_claim freed). */
	if (!__atomic_compare_exchange_n(&ctl->producers[id].state, &free_state,
	                                 SSQ_PROD_IDLE, 0, __ATOMIC_ACQ_REL,
	                                 __ATOMIC_ACQUIRE))
		return -EBUSY;
	bind_record(p, ctl, id, sq, cq);
	p->me->pid = pid;
	return 0;
}

int ssq_producer_bind(struct ssq_producer *p, struct ssq_ctl *ctl, uint32_t id,
                      const struct ssq_sq *sq, const struct ssq_cq *cq)
{
	int rc = check_args(p, ctl, id, sq, cq);

	if (rc)
		return rc;
	/* A12: pairs with R12 (ssqd's ssq_ctl_claim marked it for us). */
	if (__atomic_load_n(&ctl->producers[id].state, __ATOMIC_ACQUIRE) != SSQ_PROD_IDLE)
		return -EINVAL;
	bind_record(p, ctl, id, sq, cq);
	return 0;
}

int ssq_producer_settle(struct ssq_producer *p, unsigned timeout_ms)
{
	uint64_t deadline = dv_now_ms() + timeout_ms;
	int rc;

	if (!p || !p->me ||
	    (!p->hand_owed && !__atomic_load_n(&p->me->hand.word, __ATOMIC_RELAXED)))
		return 0;
	/* Each flush polls for SSQ_RESERVE_SPINS before -EAGAIN. */
	while ((rc = ssq_combine_flush(p)) == -EAGAIN && dv_now_ms() < deadline)
		(void)ssq_progress(p);
	return rc;
}

int ssq_producer_fini(struct ssq_producer *p)
{
	int rc;

	if (!p || !p->me)
		return 0;
	/*
	 * A combined request still handed over (<ssq/combine.h>) was
	 * accepted: post it before retiring, or ssq_ctl_claim takes it back.
	 * No room (a slow peer): nothing retired, the caller is told and
	 * calls again; dropping it silently ran an accepted request never
	 * (test_ssq_combine_adv_fini_full.c).
	 */
	rc = ssq_producer_settle(p, SSQ_SETTLE_MS);
	if (rc == -EAGAIN)
		return rc;
	/*
	 * R10a: retired, after our last publish; the router drops what is
	 * still in flight for us (A10a), ssq_ctl_claim may reclaim the record
	 * (A10b).
	 */
	__atomic_store_n(&p->me->state, SSQ_PROD_DEAD, __ATOMIC_RELEASE);
	p->me = NULL;
	return rc;
}

int ssq_ctl_hand_out(const struct ssq_ctl *ctl, uint32_t id)
{
	uint64_t w, c, res, pos, end;
	unsigned n;

	if (!ctl || id >= SSQ_MAX_PRODUCERS)
		return 0;
	w = __atomic_load_n(&ctl->producers[id].hand.word, __ATOMIC_ACQUIRE);
	c = __atomic_load_n(&ctl->completed, __ATOMIC_ACQUIRE);
	res = __atomic_load_n(&ctl->reserve, __ATOMIC_ACQUIRE);
	if ((w & 3) != SSQ_HAND_TAKEN && (w & 3) != SSQ_HAND_DONE)
		return 0;
	/*
	 * A batch: positions [pos, pos + n), any of them inside. The count is
	 * clamped to a slot's (a client may write 16), the position is 58
	 * bits: no sum wraps, nothing is indexed. Positions at or past
	 * `reserve` were never reserved, so never reach the device: a count
	 * scribbled past it holds nothing once the queue completes what was
	 * reserved (a quiet queue never completes further).
	 */
	pos = ssq__hand_v(w);
	n = ssq__hand_n(w) < SSQ_HAND_REQS ? ssq__hand_n(w) : SSQ_HAND_REQS;
	end = pos + n < res ? pos + n : res;
	return pos < res && end > c;
}

int ssq_ctl_hand_names(const struct ssq_ctl *ctl, uint32_t id, uint32_t lkey,
                       uint32_t rkey)
{
	const struct ssq_ctl_hand *h;
	uint64_t w;
	unsigned lo = 0, n, batch, i;

	if (!ctl || id >= SSQ_MAX_PRODUCERS)
		return 0;
	h = &ctl->producers[id].hand;
	/*
	 * A14d: pairs with R14/R14b (the requests the word counts, and the
	 * batch's count, are written), and with C10/R15 (a combiner's word,
	 * after it read the owner's).
	 */
	w = __atomic_load_n(&h->word, __ATOMIC_ACQUIRE);
	n = ssq__hand_n(w);
	/* Client-written: clamped to the slot, never an index past it. */
	batch = __atomic_load_n(&h->batch, __ATOMIC_RELAXED);
	if (batch > SSQ_HAND_REQS)
		batch = SSQ_HAND_REQS;
	if ((w & 3) == SSQ_HAND_EMPTY ||
	    ((w & 3) != SSQ_HAND_POSTED &&
	     __atomic_load_n(&ctl->producers[id].state, __ATOMIC_RELAXED) ==
	         SSQ_PROD_DEAD))
		return 0; /* the dead settle nothing, and post nothing */
	if ((w & 3) == SSQ_HAND_TAKEN) {
		/*
		 * Not said published (no DONE): once its positions completed
		 * (ssq_ctl_hand_out no longer holds it), published or NOPs a
		 * heal put over a dead combiner's reservation - which its
		 * owner, when it settles, posts itself, with their keys; and
		 * what it appended past the prefix taken too.
		 */
		if (batch > n)
			n = batch;
	} else if ((w & 3) == SSQ_HAND_DONE) {
		/* The prefix published; the rest its owner posts when it settles. */
		lo = n;
		n = batch;
	}
	if (n > SSQ_HAND_REQS)
		n = SSQ_HAND_REQS;
	for (i = lo; i < n; i++) {
		uint32_t l = __atomic_load_n(&h->req[i].lkey, __ATOMIC_RELAXED);
		uint32_t r = __atomic_load_n(&h->req[i].rkey, __ATOMIC_RELAXED);

		if (l == lkey || l == rkey || r == lkey || r == rkey)
			return 1;
	}
	return 0;
}

int ssq_ctl_hand_owes(const struct ssq_ctl *ctl, uint32_t id, uint32_t lkey,
                      uint32_t rkey)
{
	const struct ssq_ctl_hand *h;
	uint32_t o;
	unsigned lo, end, i;

	if (!ctl || id >= SSQ_MAX_PRODUCERS)
		return 0;
	h = &ctl->producers[id].hand;
	/* A14e: pairs with the owner's release (ssq__hand_say_owed). */
	o = __atomic_load_n(&h->owed, __ATOMIC_ACQUIRE);
	/* Retired (ssq_producer_fini after an error): it posts nothing more. */
	if (__atomic_load_n(&ctl->producers[id].state, __ATOMIC_RELAXED) == SSQ_PROD_DEAD)
		return 0;
	/* Client-written: clamped to the slot, never an index past it. */
	lo = o & 0xff;
	end = lo + (o >> 8 & 0xff);
	if (end > SSQ_HAND_REQS)
		end = SSQ_HAND_REQS;
	for (i = lo; i < end; i++) {
		uint32_t l = __atomic_load_n(&h->req[i].lkey, __ATOMIC_RELAXED);
		uint32_t r = __atomic_load_n(&h->req[i].rkey, __ATOMIC_RELAXED);

		if (l == lkey || l == rkey || r == lkey || r == rkey)
			return 1;
	}
	return 0;
}

/*
 * May retired record @r (id @id) go to someone else as far as its
 * hand-over slot goes (<ssq/combine.h>)? A batch still POSTED is taken
 * back (the CAS fails if a combiner takes it first: then not yet). One a
 * combiner took (or published: DONE, which its owner had not counted in
 * `posted`) with a position not yet completed is not (ssq_ctl_hand_out):
 * it would complete in the new owner's name. The word is client-writable,
 * so it only decides when the record is reused: a TAKEN range outside
 * [completed, reserve), which the protocol never leaves there, counts as
 * settled.
 */
static int hand_settled(struct ssq_ctl *ctl, uint32_t id)
{
	struct ssq_ctl_producer *r = &ctl->producers[id];
	uint64_t w = __atomic_load_n(&r->hand.word, __ATOMIC_ACQUIRE);

	if ((w & 3) == SSQ_HAND_POSTED)
		/* C13: against a combiner's C10, the same word. */
		return __atomic_compare_exchange_n(&r->hand.word, &w, 0, 0,
		                                   __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	return !ssq_ctl_hand_out(ctl, id);
}

/*
 * A lease or the combiner role naming record @holder - 1, which is about
 * to be handed out, goes first (C7, as ssq_ctl_heal's H1 and
 * break_free_holder): one its last owner died holding, or one a client
 * wrote naming the FREE record. Left, its new owner would "hold" what it
 * never took - its doorbells left to itself, nothing routed - and ssqd's
 * stall watch would blame it for the hold (test_ssq_claim_free_lease.c).
 * No bound producer holds @holder (a producer takes each only from 0 with
 * its own bound record's id, and this record is DEAD or FREE, bound again
 * only below, on this thread); the CAS is on the exact value, so a live
 * holder that took the word meanwhile keeps it. So no lease ever names a
 * record in use but its holder's (what ssq_ctl_check relies on).
 */
static void free_words(struct ssq_ctl *ctl, uint32_t holder)
{
	uint32_t *words[3] = { &ctl->db_lease, &ctl->cq_lease, &ctl->comb_role };
	unsigned k;

	for (k = 0; k < 3; k++) {
		uint32_t v = holder;

		__atomic_compare_exchange_n(words[k], &v, 0, 0, __ATOMIC_SEQ_CST,
		                            __ATOMIC_SEQ_CST);
	}
}

int ssq_ctl_claim(struct ssq_ctl *ctl, uint32_t pid, uint32_t skip_id)
{
	uint32_t i;

	for (i = 0; i < SSQ_MAX_PRODUCERS; i++) {
		struct ssq_ctl_producer *r = &ctl->producers[i];
		/* A10b: pairs with R10a/R10b (DEAD): the record's last posted. */
		uint32_t st = __atomic_load_n(&r->state, __ATOMIC_ACQUIRE);

		if (i == skip_id)
			continue;
		/*
		 * A retired record is reusable once the router has counted every
		 * WQE it published: nothing routed later can name it (A6b: pairs
		 * with R6, the router's count).
		 */
		if (st == SSQ_PROD_DEAD &&
		    __atomic_load_n(&r->done, __ATOMIC_ACQUIRE) >= r->posted &&
		    hand_settled(ctl, i)) {
			/*
			 * Keep resv_gen growing (a healer may hold an old snapshot),
			 * and even: a producer that died mid-reservation left it odd,
			 * and odd means "mid-reservation" to ssq_ctl_heal.
			 */
			uint32_t gen = (r->resv_gen + 1) & ~1u;

			memset(r, 0, sizeof(*r));
			r->resv_gen = gen;
			st = SSQ_PROD_FREE;
		}
		if (st != SSQ_PROD_FREE)
			continue;
		free_words(ctl, i + 1);
		r->pid = pid;
		/* R12: the cleared record before IDLE; pairs with A12. */
		__atomic_store_n(&r->state, SSQ_PROD_IDLE, __ATOMIC_RELEASE);
		return (int)i;
	}
	return -EUSERS;
}

/*
 * A request the dead left handed over (<ssq/combine.h>) and nobody took
 * is taken back, never posted: ssqd returns the dead's buffers (and their
 * keys) once the queue completes what was reserved by then (the grave's
 * fence, read after this), and a combiner that took it first reserved
 * before its take (C10), so below that fence. Taken later, it would run
 * with the keys gone: a LOCAL_PROT_ERR CQE and the queue in error for
 * everyone (ssq_combine_kill, a victim killed with its last request
 * handed over). Only the word is used: no index or count from it.
 */
static void hand_take_back(struct ssq_ctl_producer *r)
{
	/* A14c: pairs with R14; relaxed would do, the CAS decides. */
	uint64_t w = __atomic_load_n(&r->hand.word, __ATOMIC_ACQUIRE);
	unsigned tries;

	/*
	 * C13: against a combiner's C10, the same word. A new seq each try
	 * is a client scribbling (the owner is dead): a few tries, then its.
	 */
	for (tries = 0; tries < 8 && (w & 3) == SSQ_HAND_POSTED; tries++)
		if (__atomic_compare_exchange_n(&r->hand.word, &w, 0, 0, __ATOMIC_SEQ_CST,
		                                __ATOMIC_SEQ_CST))
			break;
}

int ssq_ctl_mark_dead(struct ssq_ctl *ctl, uint32_t id)
{
	if (!ctl || id >= SSQ_MAX_PRODUCERS)
		return -EINVAL;
	/*
	 * R10b: pairs with A10a (the router drops its completions), A10b
	 * (ssq_ctl_claim) and A10c (ssq_ctl_heal's H1). seq_cst as the
	 * healer's loads of the records; the caller heals on this thread.
	 */
	__atomic_store_n(&ctl->producers[id].state, SSQ_PROD_DEAD, __ATOMIC_SEQ_CST);
	hand_take_back(&ctl->producers[id]);
	/* What it owed the dead never posts: its keys are held no more. */
	__atomic_store_n(&ctl->producers[id].hand.owed, 0, __ATOMIC_RELAXED);
	return 0;
}

void ssq_ctl_set_error(struct ssq_ctl *ctl)
{
	/* R8b: pairs with A8 (ssq_reserve returns -EIO) and A8b. */
	__atomic_store_n(&ctl->state, SSQ_CTL_ERROR, __ATOMIC_RELEASE);
}

void ssq_producer_gone(struct ssq_producer *p)
{
	/* Relaxed: a flag each call of this producer's re-reads; nothing rides on it. */
	__atomic_store_n(&p->gone, 1, __ATOMIC_RELAXED);
}

int ssq_ctl_in_error(const struct ssq_ctl *ctl)
{
	/* A8b: pairs with R8a (an error CQE), R8b and R8c. */
	return __atomic_load_n(&ctl->state, __ATOMIC_ACQUIRE) == SSQ_CTL_ERROR;
}

uint64_t ssq_ctl_reserved(const struct ssq_ctl *ctl)
{
	/* Relaxed: a count to compare ssq_ctl_completed() with later. */
	return __atomic_load_n(&ctl->reserve, __ATOMIC_RELAXED);
}

uint64_t ssq_ctl_completed(const struct ssq_ctl *ctl)
{
	/* A3d: pairs with R3 (the router). */
	return __atomic_load_n(&ctl->completed, __ATOMIC_ACQUIRE);
}

uint32_t ssq_ctl_epoch(const struct ssq_ctl *ctl)
{
	/* Relaxed: a count; ssq_ctl_in_error (A8b) is what orders. */
	return __atomic_load_n(&ctl->epoch, __ATOMIC_RELAXED);
}

int ssq_ctl_drained(const struct ssq_ctl *ctl)
{
	/*
	 * `reserve` before and after the records (seq_cst, as C1): a
	 * reservation that starts between the two loads changes it, and one
	 * that was under way at the first shows in its record (A9c: pairs with
	 * R9a-R9c).
	 */
	uint64_t r = __atomic_load_n(&ctl->reserve, __ATOMIC_SEQ_CST);
	uint32_t i;

	for (i = 0; i < SSQ_MAX_PRODUCERS; i++) {
		uint32_t st = __atomic_load_n(&ctl->producers[i].state, __ATOMIC_SEQ_CST);

		if (st == SSQ_PROD_RESERVING || st == SSQ_PROD_BUILDING)
			return 0;
	}
	/* A3d: pairs with R3. */
	return __atomic_load_n(&ctl->completed, __ATOMIC_SEQ_CST) == r &&
	       __atomic_load_n(&ctl->reserve, __ATOMIC_SEQ_CST) == r;
}

/*
 * Take @lease (0 -> SSQ_LEASE_OWNER) before @deadline (ms), or return -EBUSY.
 * Already the owner's: a rebuild that quiesced and could not restart the QP.
 */
static int take_lease(uint32_t *lease, uint64_t deadline)
{
	for (;;) {
		uint32_t zero = 0;

		if (__atomic_load_n(lease, __ATOMIC_SEQ_CST) == SSQ_LEASE_OWNER)
			return 0;

		/*
		 * C8: acquires the last holder's release - R7 for the CQ lease,
		 * C5 for the doorbell lease - so its counters are final before
		 * we overwrite them; seq_cst as C2.
		 */
		if (__atomic_compare_exchange_n(lease, &zero, SSQ_LEASE_OWNER, 0,
		                                __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
			return 0;
		if (dv_now_ms() > deadline)
			return -EBUSY;
		ssq_cpu_relax();
	}
}

/*
 * The reset runs with both leases held, so no router (it would store an old
 * `completed` over our 0) and no doorbell holder (an old `published` or
 * `db_value`: the next doorbell would then never be rung) is half-way
 * through. Producers cannot reserve (the queue is in error), so nobody
 * publishes meanwhile.
 */
int ssq_ctl_reset(struct ssq_producer *owner, unsigned timeout_ms)
{
	uint64_t deadline = dv_now_ms() + timeout_ms;
	struct ssq_ctl *ctl = owner ? owner->ctl : NULL;
	uint32_t i;
	int rc;

	if (!ctl || __atomic_load_n(&ctl->magic, __ATOMIC_ACQUIRE) != SSQ_CTL_MAGIC ||
	    !ssq_ctl_in_error(ctl))
		return -EINVAL;
	rc = take_lease(&ctl->cq_lease, deadline);
	if (rc)
		return rc;
	rc = take_lease(&ctl->db_lease, deadline);
	if (rc)
		goto out_cq;
	if (!ssq_ctl_drained(ctl)) {
		rc = -EBUSY;
		goto out_db;
	}
	/*
	 * Positions restart at 0, as the QP's WQE counter did: a publish word
	 * left from before could match a new position, and a record's
	 * done_pos / deliv_pos would make the router skip new WQEs as counted.
	 */
	/* The slot count is the owner's copy: ctl->ring is client-writable. */
	memset((void *)owner->slots, 0,
	       ((size_t)owner->slot_mask + 1) * sizeof(struct ssq_ctl_slot));
	for (i = 0; i < SSQ_MAX_PRODUCERS; i++) {
		struct ssq_ctl_producer *r = &ctl->producers[i];

		__atomic_store_n(&r->pos, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&r->len, 0, __ATOMIC_RELAXED);
		r->done_pos = 0;
		r->deliv_pos = 0;
	}
	__atomic_store_n(&ctl->reserve, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&ctl->published, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&ctl->completed, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&ctl->db_value, 0, __ATOMIC_RELAXED);
	ctl->bf_offset = 0;
	/* Combining's hints: a dead combiner's role, stale bits. */
	__atomic_store_n(&ctl->comb_role, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&ctl->comb_pending, 0, __ATOMIC_RELAXED);
	__atomic_fetch_add(&ctl->epoch, 1, __ATOMIC_RELAXED);
	rc = 0;
out_db:
	/* C9: hands the doorbell lease on as C5 does (to C2). */
	__atomic_store_n(&ctl->db_lease, 0, __ATOMIC_SEQ_CST);
out_cq:
	/* R7 (as ssq_progress's): the restarted counters for the next router. */
	__atomic_store_n(&ctl->cq_lease, 0, __ATOMIC_RELEASE);
	if (!rc)
		/*
		 * R8c: READY last, after everything above; pairs with A8: a
		 * producer that may reserve again sees the counters at 0.
		 */
		__atomic_store_n(&ctl->state, SSQ_CTL_READY, __ATOMIC_RELEASE);
	return rc;
}
