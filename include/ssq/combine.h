/* SPDX-License-Identifier: MIT */
/*
 * ssq/combine.h - combining on a shared queue: a producer hands its
 * one-WQEBB work request over and returns, and whoever holds the combiner
 * role posts every request handed over with one reservation and one
 * doorbell (Flock, SOSP '21: combining the requests of threads that share
 * an RDMA connection; NVSHMEM's IBGDA: one reservation per warp, one
 * doorbell per batch; flat combining, Hendler et al., SPAA '10: the
 * holder's "release, then look again"). Opt-in, per call:
 * ssq_post_write_combined and the others below; ssq_post_write and
 * everything else is unchanged. No system call, no daemon, no dedicated
 * core.
 *
 * No poster waits for another to take its request (issue 29: the first
 * design did, up to 4096 pauses - about 270 us on a 2.1 GHz Xeon, where
 * PAUSE takes about 140 cycles from Skylake on (Intel's optimization
 * manual) - before taking it back, and collapsed to 0.06-0.19 Mpps from 4
 * senders on 16 cores, where single posts did 6-10).
 *
 * The protocol, state in the control block (<ssq/queue_pvt.h>); the
 * labels are those of the atomics below and of tests/model/ssq_combine.pml:
 *  - each producer has one hand-over slot in its record (struct
 *    ssq_ctl_hand): up to SSQ_HAND_REQS requests (a batch), and a word
 *    EMPTY / POSTED(seq, n) / TAKEN(pos, n) / DONE(pos, n);
 *    `comb_pending` has a bit per producer with a batch POSTED,
 *    `comb_role` names the combiner (both hints);
 *  - a poster whose batch is still POSTED appends to it (A15 read
 *    POSTED(seq, n), n below SSQ_HAND_REQS, the epoch unchanged, room in
 *    its completion ring for the whole batch and this one): it writes
 *    request n, then CASes POSTED(seq, n) -> POSTED(seq, n + 1) (R14b),
 *    sets its bit (C8) and takes the role if free (C9), as a first post
 *    does. R14b fails only if a combiner took the batch (C10): the
 *    request it wrote at n is not in what was taken, and it goes on as a
 *    first post, after settling the batch (below);
 *  - otherwise a poster first settles its last batch (below), checks its
 *    completion ring's room, and, alone (L1: the role free and no bit
 *    pending; it takes the role, C9's CAS, and still no bit is pending,
 *    L2), posts the request itself in its own name, its slot untouched,
 *    then lets the role go and looks again (C11, C12) like any combiner
 *    (ssq__combine_lone): a lone poster pays 68 instructions per WQE
 *    more than ssq_post_write (callgrind: scripts/wqe-insns.sh
 *    --post-combined against --post-single: 372 and 304; 81 before
 *    batches, where settling's look at the slot was a call deeper), where
 *    handing over to itself cost 275, and it holds the role while it posts, so that
 *    others who come meanwhile hand over to it (without the role they
 *    would find it free and nobody pending, and post alone too: combining
 *    would never start). Otherwise it writes request 0,
 *    POSTED(seq + 1, 1) (R14), sets its bit (C8), and takes the role if
 *    it is free (C9, or already its from L1): then it combines, its own
 *    batch among the others. If the role is held it returns: the holder
 *    looks at the bits again after letting the role go (C11, C12), so a
 *    batch POSTED, or appended to, while it held the role is its, or the
 *    next holder's, or its owner's (settling);
 *  - a combiner swaps the pending bits out (A14a), reads each word
 *    (A14b), reserves one WQEBB per request it read (n of each batch
 *    POSTED(seq, n), fewer if half the ring is reached; ssq_reserve's
 *    protocol: its record holds the range, so a combiner that stalls or
 *    dies is a holder like any other: ssqd's deadline, kill, heal), takes
 *    a prefix of each batch with a CAS POSTED(seq, m >= n) -> TAKEN(pos,
 *    n) (C10; repeated while its owner appends, m growing; a batch taken
 *    back or started over - another seq - leaves NOPs there), builds and
 *    publishes the n requests in order, each in its owner's name (the
 *    router completes it to its owner), stores DONE(pos, n) once all n
 *    are published (R15), rings once, lets the role go (C11) and looks at
 *    the bits again (C12), for at most SSQ_COMBINE_PASSES passes. A
 *    request it does not build (a client's scribble) is a NOP, and so is
 *    the rest of that batch, with no DONE: what was published of a batch
 *    is always a prefix;
 *  - settling (the owner, at its next combined post that cannot append,
 *    ssq_combine_flush, ssq_wait, ssq_queue_close or ssq_producer_fini:
 *    closing or retiring posts it first, polling up to 1 s for room):
 *    DONE(pos, n): n published; TAKEN(pos, n): position by position, in
 *    order, the publish word at pos + i says (our id: published; a
 *    healer's NOP: not, nor anything after it), or, once pos + i
 *    completed and was reused, our done_pos - the only wait, on a
 *    combiner between its take and its publish, which ssqd's deadline ends
 *    as it ends any reservation, and which gives up after
 *    SSQ_RESERVE_SPINS looks, as ssq_reserve's wait for room does:
 *    -EAGAIN, the batch left TAKEN, looked at again at the next settle
 *    (under --stall-ms 0 a stopped combiner is never killed: settling
 *    waited for as long as it was stopped); the published prefix is
 *    counted in `posted`, the rest of the batch (not taken, or NOPed by
 *    a healer: a suffix) is owed, and the word goes EMPTY (A15 then R16);
 *    still POSTED: the role if it is free (combine), then, if it is still
 *    POSTED (its bit may be gone: a combiner that swapped it out died
 *    before its take, or a reset zeroed the bits), or at once if the
 *    role is held, the batch taken back whole (C13', a CAS, which fails
 *    if a combiner took it meanwhile) and owed. What is owed the owner
 *    posts itself from its slot (EMPTY: no combiner reads it), in order,
 *    before anything else of its: nothing of the owner's was posted after
 *    it, since nothing is until the batch is settled. So each request is
 *    published once, in its owner's order.
 * Each owner counts its own `posted` when it settles WQEs published for
 * it (a lone post: at its publish, as ssq_publish); until then the router
 * may have counted them done (done up to SSQ_HAND_REQS ahead, which
 * ssq_ctl_check allows: at most one batch per producer is ever
 * unsettled, and its room was counted when it was appended to).
 *
 * Posting directly (ssq_post_write, ssq_post_wr, ssq_reserve) on a
 * producer with a request still handed over would pass it: call
 * ssq_combine_flush first. A producer that waits for completions by
 * spinning on ssq_poll calls ssq_combine_flush first too (ssq_wait does
 * it itself): a combiner that dies holding the role, or lets it go after
 * SSQ_COMBINE_PASSES, may leave its request for its owner to post.
 *
 * Concurrency: as <ssq/queue.h>: a producer belongs to one thread.
 */
#ifndef SSQ_COMBINE_H
#define SSQ_COMBINE_H

#include <ssq/queue.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Passes a combiner makes, each over every request handed over since the
 * last, before it lets the role go for good: a combining post works for
 * others for a bounded time (flat combining's combiner otherwise serves
 * busy posters for ever). What is left then is the next holder's, or its
 * owner's when it settles.
 */
#define SSQ_COMBINE_PASSES 8u

/* A request as handed over: see struct ssq_ctl_hand_req. */
#define SSQ__HAND_V_MASK ((1ull << 58) - 1)

/*
 * The hand-over word (struct ssq_ctl_hand): @state, @v (a batch's seq, or
 * its first position) and @n, 1..16, the batch's count (stored less one,
 * so that a batch of one is v << 2 | state).
 */
SSQ_INLINE uint64_t ssq__hand_wordn(uint64_t v, unsigned n, unsigned state)
{
	return (uint64_t)(n - 1) << 60 | (v & SSQ__HAND_V_MASK) << 2 | state;
}

SSQ_INLINE uint64_t ssq__hand_word(uint64_t v, unsigned state)
{
	return ssq__hand_wordn(v, 1, state);
}

SSQ_INLINE uint64_t ssq__hand_v(uint64_t w)
{
	return w >> 2 & SSQ__HAND_V_MASK;
}

/* 1..16: a client may write any; readers clamp it to what they index. */
SSQ_INLINE unsigned ssq__hand_n(uint64_t w)
{
	return (unsigned)(w >> 60) + 1;
}

/* A NOP in nobody's name at @pos of our reservation: 0, or ssq_publish's -EIO (ssqd
 * started the queue over). */
SSQ_INLINE int ssq__publish_nop(struct ssq_producer *p, uint64_t pos)
{
	ssq_prep_nop(&p->sq, (uint32_t)pos, ssq_wqe_flags(p, pos, 1, 0));
	return ssq__publish_as(p, pos, 1, 0, 0, SSQ_OWNER_NONE, 0);
}

/*
 * Build request @h (a combiner's own copy: the owner's slot is
 * client-writable) at @pos of our reservation, in @owner's name, and
 * publish it, counted in our `posted` if @count (the owner posting its own
 * request itself). What a client wrote there is checked as ssq_post_*
 * would: an opcode or flags we do not build is a NOP in nobody's name (its
 * owner learns it was not published and posts it itself, where the check
 * fails). Returns 1 (published as @owner's), 0 (a NOP) or ssq_publish's
 * -EIO (ssqd started the queue over: nothing published).
 */
SSQ_INLINE int ssq__combine_build(struct ssq_producer *p,
                                  const struct ssq_ctl_hand_req *h, uint64_t pos,
                                  uint32_t owner, int count)
{
	unsigned f = h->flags;
	uint32_t pi = (uint32_t)pos;
	unsigned ce = ssq_wqe_flags(p, pos, 1, f);
	int built = ssq_wqe_flags_valid(f);

	if (built && h->opcode == MLX5_OPCODE_RDMA_WRITE)
		ssq_prep_rdma_write(&p->sq, pi, h->laddr, h->lkey, h->len, h->raddr,
		                    h->rkey, ce);
	else if (built &&
	         (h->opcode == MLX5_OPCODE_SEND || h->opcode == MLX5_OPCODE_SEND_IMM))
		ssq_prep_send(&p->sq, pi, h->opcode, h->laddr, h->lkey, h->len,
		              (__be32)h->arg, ce);
	else if (built && h->opcode == MLX5_OPCODE_ATOMIC_FA)
		ssq_prep_atomic(&p->sq, pi, MLX5_OPCODE_ATOMIC_FA, h->laddr, h->lkey,
		                h->raddr, h->rkey, h->arg, 0, ce);
	else
		built = 0;
	if (!built)
		return ssq__publish_nop(p, pos);
	return ssq__publish_as(p, pos, 1, h->wr_id, f, owner, count) ?: 1;
}

/*
 * C10: take a prefix of @cnt requests of producer @id's batch, read as
 * @w (A14b), for positions [@at, @at + @cnt). While its owner appends the
 * word moves POSTED(seq, m) -> POSTED(seq, m + 1) (R14b), and the CAS is
 * tried again on what it found: at most SSQ_HAND_REQS appends, so more
 * failures are a client scribbling the word, and the prefix is given up.
 * Returns 1 (taken), 0 (taken back, or another batch: NOPs go there).
 */
SSQ_INLINE int ssq__combine_take(struct ssq_producer *p, uint32_t id, uint64_t w,
                                 uint64_t at, unsigned cnt)
{
	uint64_t *word = &p->ctl->producers[id].hand.word, cur = w;
	unsigned tries;

	for (tries = 0; tries <= SSQ_HAND_REQS; tries++) {
		if ((cur & 3) != SSQ_HAND_POSTED || ssq__hand_v(cur) != ssq__hand_v(w) ||
		    ssq__hand_n(cur) < cnt)
			return 0;
		SSQ__LINE_W(id == p->id ? SSQ_LINE_HAND_OWN : SSQ_LINE_HAND_OTHER);
		/*
		 * C10: acq_rel: the owner's requests (R14, R14b) before our
		 * reads, and TAKEN(at, cnt) visible to its owner (A15) with the
		 * positions in it. On failure acquire: the next try's word.
		 */
		if (__atomic_compare_exchange_n(word, &cur,
		                                ssq__hand_wordn(at, cnt, SSQ_HAND_TAKEN),
		                                0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return 1;
	}
	return 0;
}

/*
 * The combiner's passes, with the role held (C9 won): every batch POSTED
 * whose bit is pending - a prefix of each, as many requests as its word
 * said when we read it - in one reservation and one doorbell; then the
 * role goes, and comes back for bits set meanwhile, up to
 * SSQ_COMBINE_PASSES times. Returns 0, or ssq_reserve's error (the role
 * let go, the batches left POSTED with their bits).
 */
SSQ_INLINE int ssq__combine(struct ssq_producer *p)
{
	struct ssq_ctl *ctl = p->ctl;
	const unsigned max = (p->slot_mask + 1) / 2;
	uint32_t ids[SSQ_MAX_PRODUCERS], zero;
	uint64_t words[SSQ_MAX_PRODUCERS];
	uint8_t cnt[SSQ_MAX_PRODUCERS];
	unsigned pass;

	for (pass = 1;; pass++) {
		SSQ__HOOK(SSQ_HOOK_COMBINE_ROLE);
		/* A14a: pairs with R14/R14b via C8: a bit set means a batch POSTED. */
		uint64_t bits =
		    __atomic_exchange_n(&ctl->comb_pending, 0, __ATOMIC_ACQ_REL);
		SSQ__LINE_W(SSQ_LINE_COMBINE);
		uint64_t left = 0, pos = 0, at;
		unsigned n = 0, total = 0, k, i;
		uint32_t e;
		int same;
		int rc;

		while (bits) {
			uint32_t id = (uint32_t)__builtin_ctzll(bits);
			/* A14b: pairs with R14/R14b: the requests before the word. */
			uint64_t w = __atomic_load_n(&ctl->producers[id].hand.word,
			                             __ATOMIC_ACQUIRE);
			unsigned c = ssq__hand_n(w);

			bits &= bits - 1;
			if ((w & 3) != SSQ_HAND_POSTED)
				continue; /* taken back, or a stale bit */
			/* A count past the slot is a scribble: never index past it. */
			if (c > SSQ_HAND_REQS)
				c = SSQ_HAND_REQS;
			if (total + c > max) {
				if (total >= max) {
					left |= 1ull << id;
					continue;
				}
				c = max - total; /* a prefix: the rest is its owner's */
			}
			ids[n] = id;
			words[n] = w;
			cnt[n++] = (uint8_t)c;
			total += c;
		}
		if (left) {
			__atomic_fetch_or(&ctl->comb_pending, left, __ATOMIC_RELEASE);
			SSQ__LINE_W(SSQ_LINE_COMBINE);
		}
		if (n) {
			/* The epoch before our reservation: see the takes below. */
			e = __atomic_load_n(&ctl->epoch, __ATOMIC_ACQUIRE);
			rc = ssq__reserve(p, total, 0, &pos);
			if (ssq_unlikely(rc)) {
				uint64_t back = 0;

				for (k = 0; k < n; k++)
					back |= 1ull << ids[k];
				__atomic_fetch_or(&ctl->comb_pending, back,
				                  __ATOMIC_RELEASE);
				/* C11: as below. */
				__atomic_store_n(&ctl->comb_role, 0, __ATOMIC_SEQ_CST);
				SSQ__LINE_W(SSQ_LINE_COMBINE);
				return rc;
			}
			/*
			 * Only batches POSTED in the epoch we reserved in (each
			 * one's request 0 says which): an owner reads a TAKEN
			 * batch's outcome against the epoch it POSTED it in, and
			 * once that moved it takes the queue as drained since, so
			 * a take after a restart (its C8 late, or a combiner's
			 * bits put back after its failed reserve, either after
			 * the reset's zeroing) would have it posted twice
			 * (test_adv8b_epoch_take.c). Not taken: NOPs, and its
			 * owner takes it back when it settles. The epoch read
			 * before and after the reservation: equal, the
			 * reservation is of that epoch (a reset waits for it to
			 * drain; a rebuild after this voids it, and its owners,
			 * their epoch moved, post the batches again, which we can
			 * no longer publish); not, we take nothing.
			 */
			same = __atomic_load_n(&ctl->epoch, __ATOMIC_ACQUIRE) == e;
			for (k = 0, at = pos; k < n; at += cnt[k], k++)
				if (!same ||
				    ctl->producers[ids[k]].hand.req[0].epoch !=
				        (uint16_t)e ||
				    !ssq__combine_take(p, ids[k], words[k], at, cnt[k]))
					ids[k] = SSQ_OWNER_NONE;
			SSQ__HOOK(SSQ_HOOK_COMBINE_TAKEN);
			/*
			 * Publish in order, each batch's requests in its order: a
			 * combiner killed or stopped and healed leaves each batch
			 * a published prefix and a NOPed suffix, which its owner
			 * posts again, in order (settling).
			 */
			for (k = 0, at = pos; k < n; at += cnt[k], k++) {
				uint64_t taken =
				    ssq__hand_wordn(at, cnt[k], SSQ_HAND_TAKEN);
				uint32_t owner = ids[k];

				for (i = 0; i < cnt[k]; i++) {
					struct ssq_ctl_hand_req h;

					if (owner == SSQ_OWNER_NONE) {
						if (ssq_unlikely(
						        ssq__publish_nop(p, at + i)))
							goto voided;
						continue;
					}
					/* Ours to read: its owner leaves a prefix TAKEN
					 * alone. */
					__builtin_memcpy(
					    &h, &ctl->producers[owner].hand.req[i],
					    sizeof(h));
					rc = ssq__combine_build(p, &h, at + i, owner, 0);
					if (k == 0 && i == 0)
						SSQ__HOOK(SSQ_HOOK_COMBINE_BUILT);
					if (ssq_unlikely(rc < 0))
						goto voided; /* owners see the epoch move
						              */
					if (ssq_unlikely(!rc))
						owner =
						    SSQ_OWNER_NONE; /* NOPs to its end */
				}
				if (owner == SSQ_OWNER_NONE)
					continue;
				/*
				 * R15: after the last publish (R1a); pairs with A15
				 * (the owner counts them when it settles). A CAS: an
				 * owner that learned the outcome from the publish
				 * words may have moved on.
				 */
				SSQ__LINE_W(owner == p->id ? SSQ_LINE_HAND_OWN
				                           : SSQ_LINE_HAND_OTHER);
				__atomic_compare_exchange_n(
				    &ctl->producers[owner].hand.word, &taken,
				    ssq__hand_wordn(at, cnt[k], SSQ_HAND_DONE), 0,
				    __ATOMIC_RELEASE, __ATOMIC_RELAXED);
			}
			ssq_submit(p);
		voided:;
		}
		/*
		 * C11: let the role go, then C12: look at the bits. seq_cst
		 * both, against the poster's C8 (set its bit) then C9 (look at
		 * the role): one of us sees the other's store, so no request
		 * is left on a role nobody holds (the model's lost doorbell,
		 * one level up). After the last pass, or a holder's death, what
		 * is left is its owner's to settle.
		 */
		__atomic_store_n(&ctl->comb_role, 0, __ATOMIC_SEQ_CST);
		SSQ__LINE_W(SSQ_LINE_COMBINE);
		if (pass >= SSQ_COMBINE_PASSES ||
		    !__atomic_load_n(&ctl->comb_pending, __ATOMIC_SEQ_CST))
			return 0;
		zero = 0;
		SSQ__LINE_W(SSQ_LINE_COMBINE);
		if (!__atomic_compare_exchange_n(&ctl->comb_role, &zero, p->id + 1, 0,
		                                 __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
			return 0;
	}
}

/*
 * Request @i of the batch TAKEN at @pos - @i (so at @pos): 1 published
 * for us, 0 not (a healer's NOP took its place, or the queue was started
 * over), -1 not known yet. For a combiner that died or stopped between
 * taking and DONE.
 */
SSQ_INLINE int ssq__hand_outcome_at(struct ssq_producer *p, uint64_t pos, unsigned i,
                                    uint32_t epoch)
{
	struct ssq_ctl *ctl = p->ctl;
	struct ssq_ctl_producer *me = p->me;
	uint64_t seq, completed, done_pos;
	uint32_t owner;

	/* A1d: pairs with R1a/R1b: the slot's owner before its publish word. */
	seq = __atomic_load_n(&ssq__slot(p, pos)->seq, __ATOMIC_ACQUIRE);
	SSQ__HOOK(SSQ_HOOK_OUTCOME_SEQ);
	/*
	 * The owner may already be that of the WQE a ring later: once pos
	 * completed, its slot is free, and a producer that reserved pos + ring
	 * (having read `completed` past pos, A3a) writes its owner before its
	 * publish word. So the owner says "not ours" only if `completed`,
	 * read after it, has not passed pos (A1e: pairs with R1c, the
	 * publisher's release of the owner it stored after reading
	 * `completed`; acquire: the loads in this order); past it, done_pos
	 * answers. Taking a foreign owner for "not published" made the owner
	 * post its request a second time: executed
	 * twice, and its record left with done == posted + 1 for good, which
	 * ssq_reserve's room check then never passed (docs/measurements.md,
	 * "A hang seen once"; test_ssq_combine_settle.c).
	 */
	owner = __atomic_load_n(&ssq__slot(p, pos)->owner, __ATOMIC_ACQUIRE); /* A1e */
	/*
	 * A3e: pairs with R3: past `completed` the router counted the WQE at
	 * pos, as ours (done_pos, R6, before R3) or as nobody's. done_pos
	 * past pos means pos was ours: what follows a NOP of the batch is
	 * NOPs too, and nothing else of ours is published until we settle.
	 */
	completed = __atomic_load_n(&ctl->completed, __ATOMIC_ACQUIRE);
	done_pos = __atomic_load_n(&me->done_pos, __ATOMIC_ACQUIRE);
	/*
	 * The epoch last (A8: pairs with R8c/R8d: a reset or rebuild moves it
	 * before READY, before anyone publishes into the new positions): if
	 * it did not move, everything read above is of our pass. If it did,
	 * a reset drained the queue first (the batch's published prefix
	 * completed, and counted in `done`, the rest NOPs); a rebuild
	 * completed the published prefix to us as flushed and set `done` to
	 * `posted` plus that prefix (combined_flushed, queue_rebuild.c:
	 * `done` = `posted` alone had us post it again, completing it twice,
	 * test_adv8b_rebuild_taken.c); the rest is void, not published.
	 */
	if (__atomic_load_n(&ctl->epoch, __ATOMIC_ACQUIRE) != epoch)
		return __atomic_load_n(&me->done, __ATOMIC_ACQUIRE) > me->posted + i;
	/* Ours at pos: nobody else publishes in our name until we settle. */
	if (seq == pos + 1 && owner == p->id)
		return 1;
	if (completed > pos)
		return done_pos > pos;
	/* Published at pos, not reusable when we read its owner: a NOP. */
	if (seq == pos + 1)
		return 0;
	return -1;
}

/*
 * The batch a combiner took (word @w, TAKEN or DONE): how many of it, from
 * its first, were published for us (a combiner publishes in order, and
 * what a healer NOPs after its death is a suffix), or -1 if not known yet.
 * The count is clamped to our own (the word is client-writable): never
 * more counted in `posted` than we handed over.
 */
SSQ_INLINE int ssq__hand_outcome(struct ssq_producer *p, uint64_t w, uint32_t epoch)
{
	unsigned n = ssq__hand_n(w), i;
	int rc;

	if (n > p->hand_n)
		n = p->hand_n;
	if ((w & 3) == SSQ_HAND_DONE)
		return (int)n;
	for (i = 0; i < n; i++) {
		rc = ssq__hand_outcome_at(p, ssq__hand_v(w) + i, i, epoch);
		if (rc < 0)
			return -1;
		if (!rc)
			break;
	}
	return (int)i;
}

/*
 * How many of the @k requests of our batch published for us go into our
 * `posted` as we settle: all of them, unless the queue was started over
 * since we handed them over. A reset drained it first, and the router
 * counted them in `done`; a rebuild completed them to us as flushed and set
 * `done` to `posted`, counting them nowhere. So then only what `done` holds
 * beyond `posted`: counted as a rebuild left them, `posted` ran @k ahead of
 * `done` for good - the completion ring's room short by @k, and, retired,
 * the record never claimed again (test_adv8b_rebuild_done.c). Not posted
 * again either way: they completed to us.
 */
SSQ_INLINE unsigned ssq__hand_counted(struct ssq_producer *p, unsigned k)
{
	struct ssq_ctl_producer *me = p->me;
	int64_t ahead;

	if (ssq_likely(__atomic_load_n(&p->ctl->epoch, __ATOMIC_ACQUIRE) ==
	               p->hand_epoch))
		return k;
	ahead = (int64_t)(__atomic_load_n(&me->done, __ATOMIC_ACQUIRE) - me->posted);
	return ahead <= 0 ? 0 : ahead < (int64_t)k ? (unsigned)ahead : k;
}

/*
 * Say in our slot what we owe (ssq_ctl_hand.owed): ssqd keeps the keys
 * those requests name (ssq_mem_dereg, a buffer's free say -EBUSY) until
 * they are published, where its search of the ring finds them. Release:
 * before the word goes EMPTY (pairs with ssqd's acquire of the word, then
 * of this), and after each publish (ssqd reads this, then the ring).
 */
SSQ_INLINE void ssq__hand_say_owed(struct ssq_producer *p)
{
	__atomic_store_n(&p->me->hand.owed,
	                 p->hand_owed ? p->hand_owed << 8 | p->owe_lo : 0,
	                 __ATOMIC_RELEASE);
}

/*
 * Post what we owe (req[owe_lo, owe_lo + hand_owed) of our slot, EMPTY:
 * no combiner reads it) ourselves, in order: one reservation and one
 * doorbell per half ring. Each published request leaves the debt as it
 * goes, so an error leaves the rest owed, first. Returns 0, ssq_reserve's
 * or ssq_publish's error, or -EINVAL (a request we do not build: a
 * scribble of our slot; the NOPs in its place and after it are nobody's,
 * and it stays owed).
 */
SSQ_INLINE int ssq__hand_post_direct(struct ssq_producer *p)
{
	struct ssq_ctl_hand *h = &p->me->hand;
	const unsigned max = (p->slot_mask + 1) / 2;

	while (p->hand_owed) {
		unsigned n = p->hand_owed < max ? p->hand_owed : max, i;
		uint64_t pos;
		int rc = ssq_reserve(p, n, &pos);

		if (ssq_unlikely(rc))
			return rc;
		for (i = 0; i < n; i++) {
			struct ssq_ctl_hand_req r = h->req[p->owe_lo];

			rc = ssq__combine_build(p, &r, pos + i, p->id, 1);
			if (ssq_unlikely(rc < 0))
				return rc; /* started over: the rest is void */
			if (ssq_unlikely(!rc)) {
				/* Not ours to build: the reservation filled with NOPs. */
				while (++i < n)
					if (ssq__publish_nop(p, pos + i))
						return -EIO;
				ssq_submit(p);
				return -EINVAL;
			}
			p->owe_lo++;
			p->hand_owed--;
			ssq__hand_say_owed(p);
		}
		ssq_submit(p);
	}
	return 0;
}

/*
 * Settle this producer's last batch handed over (see the protocol above):
 * on return 0 its slot is EMPTY and every request of it is published, by a
 * combiner or by us. Otherwise the error of posting ourselves what we owe
 * (ssq_reserve's -EAGAIN, -EIO, -ENOTCONN): it stays ours to post, first,
 * at the next settle; or -EAGAIN when a combiner that took it (C10) has
 * not published it within SSQ_RESERVE_SPINS looks: it stays TAKEN, in the
 * combiner's hands, and the next settle looks again. That wait is bounded
 * as ssq_reserve's wait for room is, not by ssqd's --stall-ms alone: under
 * --stall-ms 0 ssqd never kills a stopped combiner, and this wait spun for
 * as long as it was stopped, in the owner's next combined post,
 * ssq_combine_flush and ssq_producer_fini
 * (test_ssq_combine_adv_taken_stop.c).
 */
SSQ_INLINE int ssq__hand_settle(struct ssq_producer *p)
{
	struct ssq_ctl *ctl = p->ctl;
	struct ssq_ctl_hand *h = &p->me->hand;
	unsigned spins = 0;
	uint32_t zero;
	int rc;

	for (;;) {
		/* A15: pairs with C10 (TAKEN) and R15 (DONE). */
		uint64_t w = __atomic_load_n(&h->word, __ATOMIC_ACQUIRE);

		switch (w & 3) {
		case SSQ_HAND_EMPTY:
			if (ssq_unlikely(p->hand_owed)) {
				rc = ssq__hand_post_direct(p);
				if (ssq_unlikely(rc))
					return rc;
			}
			p->hand_n = 0;
			return 0;
		case SSQ_HAND_POSTED:
			/*
			 * Nobody took it. The role if it is free (C9: as in
			 * ssq__combine_post): combine, ours among the rest. Then,
			 * or at once if the role is held, take it back if it is
			 * still POSTED and post it ourselves: never wait for the
			 * holder, which may be preempted or dead, and never go
			 * round on our own combine, which takes only what has its
			 * bit: a combiner that swapped ours out (A14a) and died
			 * before its take (C10), or ssq_ctl_reset / rebuild
			 * zeroing comb_pending, leaves it POSTED with no bit, and
			 * going round on a free role spun for ever
			 * (test_ssq_combine_adv_bitless.c). The take-back is C13',
			 * which needs no bit: it either wins, or a combiner's C10
			 * did and the word says where.
			 */
			zero = 0;
			if (__atomic_load_n(&ctl->comb_role, __ATOMIC_SEQ_CST) == 0 &&
			    (SSQ__LINE_W(SSQ_LINE_COMBINE),
			     __atomic_compare_exchange_n(&ctl->comb_role, &zero,
			                                 p->id + 1, 0, __ATOMIC_SEQ_CST,
			                                 __ATOMIC_RELAXED)))
				(void)ssq__combine(p);
			SSQ__LINE_W(SSQ_LINE_HAND_OWN);
			/*
			 * Owed, said before the take-back (release: ssqd that
			 * reads EMPTY reads it); if a combiner's C10 wins, the
			 * outcome below says it again.
			 */
			p->owe_lo = 0;
			p->hand_owed = p->hand_n;
			ssq__hand_say_owed(p);
			p->hand_owed = 0;
			/* C13': against a combiner's C10, the same word. */
			if (__atomic_compare_exchange_n(
			        &h->word, &w, 0, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
				p->hand_owed = p->hand_n;
			continue;
		default:
			rc = ssq__hand_outcome(p, w, p->hand_epoch);
			if (rc < 0) {
				/*
				 * The one wait: a combiner between C10 and R1a.
				 * Bounded: the combiner may be stopped, and only
				 * ssqd's deadline (when it has one) ends that.
				 */
				if (spins >= SSQ_RESERVE_SPINS)
					return -EAGAIN;
				ssq__wait_turn(p, spins++);
				continue;
			}
			/*
			 * Counted before the word is EMPTY again (a late DONE CAS
			 * fails on it): a producer that dies between the two
			 * leaves its WQEs either in `posted` or in a TAKEN/DONE
			 * word, so ssq_ctl_claim reuses the record only once the
			 * router counted them. The rest (not taken, or a
			 * healer's NOPs): ours to post, still first in our order.
			 */
			p->me->posted += ssq__hand_counted(p, (unsigned)rc);
			p->owe_lo = (uint32_t)rc;
			p->hand_owed = p->hand_n - (uint32_t)rc;
			ssq__hand_say_owed(p);
			__atomic_store_n(&h->word, 0, __ATOMIC_RELEASE);
			SSQ__LINE_W(SSQ_LINE_HAND_OWN);
			continue;
		}
	}
}

/*
 * The lone fast path (ssq__combine_post, L1 won): the role is ours (C9)
 * and no bit was pending after we took it (L2), so there is nobody to
 * combine for: post @r ourselves, as ssq__hand_post_direct posts a slot,
 * but from @r, the hand-over slot untouched (EMPTY) and our bit clear;
 * then let the role go and look again (C11, C12), as any combiner does.
 * Why every guarantee holds:
 *  - exactly once, in our order: our previous batch is settled (its
 *    slot EMPTY, nothing owed) before L1, so nothing of ours is
 *    unpublished ahead of @r, and @r is in no slot for a combiner to take
 *    or for us to settle: published here (counted in our `posted` at its
 *    publish, as ssq_publish counts a direct post) or not at all (an
 *    error: not handed over, as the contract says);
 *  - others' requests POSTED while we hold the role: their owner's C8
 *    then C9 against our C11 then C12, all seq_cst, as for any combiner:
 *    an owner whose C9 saw the role held read it before our C11, so our
 *    C12 sees its bit and we combine (or the next holder does, or its
 *    owner when it settles);
 *  - killed or stopped here, we hold the role and at most one WQEBB, our
 *    own, reserved by ssq_reserve's protocol: a holder like any other
 *    (ssqd's --stall-ms deadline and kill, ssq_ctl_heal's NOP over the
 *    unpublished WQEBB and its C7 CAS freeing a dead holder's role),
 *    which needs nothing new: the NOP is nobody's, and a dead poster's
 *    request is nobody's to post; ssq_ctl_mark_dead finds our slot EMPTY.
 *    Stopped with the role alone (before the reservation or after the
 *    publish), we hold nothing anyone waits on: posters hand over and
 *    take their batches back when they settle, as with any combiner;
 *  - ssqd reads nothing new: the hand-over slot is not written.
 * Returns 0 (posted: it completes to @p as ssq_post_* would) or
 * ssq_reserve's or ssq_publish's error (nothing posted, nothing handed
 * over).
 */
SSQ_INLINE int ssq__combine_lone(struct ssq_producer *p, const struct ssq_ctl_hand_req *r)
{
	struct ssq_ctl *ctl = p->ctl;
	uint64_t pos;
	uint32_t zero = 0;
	int rc = ssq_reserve(p, 1, &pos);

	if (ssq_likely(!rc)) {
		SSQ__HOOK(SSQ_HOOK_COMBINE_LONE);
		rc = ssq__combine_build(p, r, pos, p->id, 1);
		if (ssq_likely(rc > 0)) {
			ssq_submit(p);
			rc = 0;
		} else if (!rc) {
			rc = -EINVAL; /* not built: the callers check first */
		}
	}
	/*
	 * C11 then C12, as in ssq__combine, on success and error alike: a
	 * request POSTED while we held the role is ours to combine, or the
	 * next holder's. ssq__combine's own errors leave what it did not
	 * post POSTED with its bits, for the next holder or the owners.
	 */
	__atomic_store_n(&ctl->comb_role, 0, __ATOMIC_SEQ_CST);
	SSQ__LINE_W(SSQ_LINE_COMBINE);
	if (ssq_unlikely(__atomic_load_n(&ctl->comb_pending, __ATOMIC_SEQ_CST)) &&
	    (SSQ__LINE_W(SSQ_LINE_COMBINE),
	     __atomic_compare_exchange_n(&ctl->comb_role, &zero, p->id + 1, 0,
	                                 __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)))
		(void)ssq__combine(p);
	return rc;
}

/*
 * ssq_combine_flush - settle this producer's last combined requests: on 0
 * they are published (by a combiner, or by this call), and nothing of
 * @p's is left handed over. Call it before posting directly on @p, and
 * before waiting for completions by spinning on ssq_poll. Never waits for
 * a combiner to take them; waits (polling the CQ) only for one that took
 * them to publish them, for at most SSQ_RESERVE_SPINS looks (ssqd's
 * --stall-ms, when not 0, kills a combiner stopped that long). Returns 0,
 * or as ssq_reserve (-EAGAIN: poll completions and call it again; what is
 * left is still this producer's to post, and goes first; or still in the
 * hands of a combiner that took it and has not published it yet).
 */
SSQ_INLINE int ssq_combine_flush(struct ssq_producer *p)
{
	if (ssq_unlikely(__atomic_load_n(&p->gone, __ATOMIC_RELAXED)))
		return -ENOTCONN;
	return ssq__hand_settle(p);
}

/*
 * C8 then C9 (a batch of ours just POSTED or appended to): our bit, then
 * the role if it is free (or already ours, @role: L1 found bits pending),
 * and combine with it. Returns ssq__combine's, or 0 (the role held: its
 * holder looks at the bits again after letting go, C11/C12).
 */
SSQ_INLINE int ssq__combine_kick(struct ssq_producer *p, int role)
{
	struct ssq_ctl *ctl = p->ctl;
	uint32_t zero = 0;

	/* C8: the bit, against C11/C12 (see ssq__combine). */
	__atomic_fetch_or(&ctl->comb_pending, 1ull << p->id, __ATOMIC_SEQ_CST);
	SSQ__LINE_W(SSQ_LINE_COMBINE);
	/* C9: against C11/C12. Ours already (L1): our C8 is before our C11. */
	if (role || (__atomic_load_n(&ctl->comb_role, __ATOMIC_SEQ_CST) == 0 &&
	             (SSQ__LINE_W(SSQ_LINE_COMBINE),
	              __atomic_compare_exchange_n(&ctl->comb_role, &zero, p->id + 1, 0,
	                                          __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))))
		return ssq__combine(p);
	return 0;
}

/*
 * Append @r to our batch, read POSTED as @w (A15), if nobody took it: 1
 * (appended: request hand_n, then R14b, C8, C9), or 0 (not: a full slot,
 * a word not as we left it, the epoch moved since the batch began, no
 * room in our completion ring for the batch and @r, or R14b lost to a
 * combiner's C10; then @r is posted as a first request after settling,
 * and what we wrote at hand_n is nobody's: outside every prefix taken).
 */
SSQ_INLINE int ssq__hand_append(struct ssq_producer *p, uint64_t w,
                                const struct ssq_ctl_hand_req *r)
{
	struct ssq_ctl_producer *me = p->me;
	unsigned n = p->hand_n;
	int64_t mine;

	/*
	 * A8 (pairs with R8c/R8d): a batch is read against the epoch it began
	 * in (ssq__hand_outcome); one that a reset or rebuild passed gets
	 * nothing more, so its outcome is read against one epoch.
	 */
	if (n >= SSQ_HAND_REQS || ssq__hand_n(w) != n || p->hand_owed ||
	    __atomic_load_n(&p->ctl->epoch, __ATOMIC_ACQUIRE) != p->hand_epoch)
		return 0;
	/*
	 * Room in our completion ring, as ssq_reserve counts it (A5b, A6a),
	 * the batch's n counted as posted: the router may have counted some
	 * of them done already (signed: `done` up to n ahead of `posted`).
	 */
	mine = (int64_t)(me->posted + n - __atomic_load_n(&me->done, __ATOMIC_ACQUIRE) +
	                 (__atomic_load_n(&me->comp_head, __ATOMIC_ACQUIRE) -
	                  me->comp_tail));
	if (mine + 1 > (int64_t)p->comp_mask + 1)
		return 0;
	me->hand.req[n] = *r;
	/* Before R14b, released by it (ssqd: what a prefix taken leaves). */
	__atomic_store_n(&me->hand.batch, n + 1, __ATOMIC_RELAXED);
	SSQ__LINE_W(SSQ_LINE_HAND_OWN);
	/*
	 * R14b: request n before POSTED(seq, n + 1); pairs with A14b and C10
	 * (a combiner). Fails only on a combiner's C10 (TAKEN: a prefix of at
	 * most n, never request n) or a client's scribble.
	 */
	if (!__atomic_compare_exchange_n(
	        &me->hand.word, &w,
	        ssq__hand_wordn(ssq__hand_v(w), n + 1, SSQ_HAND_POSTED), 0,
	        __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		return 0;
	p->hand_n = n + 1;
	/* A combiner may have swapped our bit out before R14b: set it again. */
	(void)ssq__combine_kick(p, 0);
	return 1;
}

/*
 * Hand @r over to whoever combines: appended to our batch if it is still
 * POSTED, else after settling the last one. Returns 0 (handed over, or
 * published: it completes to @p as ssq_post_* would), or -EAGAIN (no room
 * in this producer's completion ring, or settling the last batch found
 * none, or found it still unpublished in the hands of the combiner that
 * took it), -EIO, -ENOTCONN, -EINVAL: @r not handed over.
 */
SSQ_INLINE int ssq__combine_post(struct ssq_producer *p, const struct ssq_ctl_hand_req *r)
{
	struct ssq_ctl *ctl = p->ctl;
	struct ssq_ctl_producer *me = p->me;
	struct ssq_ctl_hand *h = &me->hand;
	uint64_t w;
	uint32_t zero;
	unsigned spins;
	int rc, role = 0;

	if (ssq_unlikely(__atomic_load_n(&p->gone, __ATOMIC_RELAXED)))
		return -ENOTCONN;
	if (ssq_unlikely(me->state != SSQ_PROD_IDLE))
		return -EINVAL;
	/* A15: pairs with C10 (TAKEN), R15 (DONE), as in settling. */
	w = __atomic_load_n(&h->word, __ATOMIC_ACQUIRE);
	if (ssq_unlikely(w || p->hand_owed)) {
		if ((w & 3) == SSQ_HAND_POSTED && ssq__hand_append(p, w, r))
			return 0;
		rc = ssq__hand_settle(p);
		if (ssq_unlikely(rc))
			return rc;
	}
	/*
	 * Room in our completion ring, as ssq_reserve counts it (A5b, A6a):
	 * exact, as nothing of ours is unsettled now.
	 */
	for (spins = 0;; spins++) {
		uint64_t mine =
		    me->posted - __atomic_load_n(&me->done, __ATOMIC_ACQUIRE) +
		    (__atomic_load_n(&me->comp_head, __ATOMIC_ACQUIRE) - me->comp_tail);

		if (mine + 1 <= (uint64_t)p->comp_mask + 1)
			break;
		if (spins >= SSQ_RESERVE_SPINS)
			return -EAGAIN;
		ssq__wait_turn(p, spins);
	}
	/*
	 * L1: the lone fast path. Role free and no bit pending (relaxed
	 * loads: hints, the CAS decides; a stale bit only sends us the slow
	 * way): take the role with C9's CAS and, if still no bit is pending
	 * (L2: seq_cst, after the CAS; a hint too, since C12 catches what it
	 * misses), post @r ourselves (ssq__combine_lone). With bits pending,
	 * the role is ours anyway: hand over and combine, ours among them.
	 * Held by another: hand over as below. After settling (nothing of
	 * ours unpublished ahead of @r) and after the room check (a poster
	 * waiting for its own completion ring does not hold the role that
	 * others' requests wait on).
	 */
	if (__atomic_load_n(&ctl->comb_role, __ATOMIC_RELAXED) == 0 &&
	    __atomic_load_n(&ctl->comb_pending, __ATOMIC_RELAXED) == 0) {
		zero = 0;
		SSQ__LINE_W(SSQ_LINE_COMBINE);
		if (__atomic_compare_exchange_n(&ctl->comb_role, &zero, p->id + 1, 0,
		                                __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
			if (ssq_likely(
			        !__atomic_load_n(&ctl->comb_pending, __ATOMIC_SEQ_CST)))
				return ssq__combine_lone(p, r);
			role = 1;
		}
	}
	/* The epoch its outcome is read against (ssq__hand_outcome). */
	p->hand_epoch = __atomic_load_n(&ctl->epoch, __ATOMIC_ACQUIRE);
	h->req[0] = *r;
	h->req[0].epoch = (uint16_t)p->hand_epoch; /* before R14: a combiner checks it */
	/* Before R14, released by it (ssqd: what a prefix taken leaves). */
	__atomic_store_n(&h->batch, 1, __ATOMIC_RELAXED);
	p->hand_n = 1;
	w = ssq__hand_word(++p->hand_seq, SSQ_HAND_POSTED);
	/* R14: request 0 before POSTED(seq, 1); pairs with A14a/A14b (a combiner). */
	__atomic_store_n(&h->word, w, __ATOMIC_RELEASE);
	SSQ__LINE_W(SSQ_LINE_HAND_OWN);
	rc = ssq__combine_kick(p, role);
	/* Failed with ours not taken (C13'): not handed over after all. */
	if (ssq_unlikely(rc) &&
	    __atomic_compare_exchange_n(&h->word, &w, 0, 0, __ATOMIC_RELAXED,
	                                __ATOMIC_RELAXED)) {
		p->hand_n = 0;
		return rc;
	}
	return 0;
}

/*
 * ssq_post_write_combined - ssq_post_write through whoever combines: the
 * same WRITE, completing to @p with @wr_id if signaled, in @p's order. It
 * returns once the WRITE is handed over (or posted); it is posted by
 * whoever holds the combiner role, else by @p's next combined post,
 * ssq_combine_flush, ssq_wait or ssq_queue_close. Returns as ssq_post_write (on an error,
 * this WRITE was not handed over; -EAGAIN also when @p's last request,
 * which goes first, found no room, or is still unpublished in the hands
 * of the combiner that took it).
 */
SSQ_INLINE int ssq_post_write_combined(struct ssq_producer *p, uint64_t laddr,
                                       uint32_t lkey, uint32_t len, uint64_t raddr,
                                       uint32_t rkey, uint64_t wr_id, unsigned flags)
{
	struct ssq_ctl_hand_req r = {
		laddr,          raddr, wr_id, 0, lkey, rkey, len, MLX5_OPCODE_RDMA_WRITE,
		(uint8_t)flags, 0
	};

	if (ssq_unlikely(!ssq_wqe_flags_valid(flags)))
		return -EINVAL;
	return ssq__combine_post(p, &r);
}

/*
 * ssq_post_fetch_add_combined - an 8-byte FETCH_ADD of @add at @raddr
 * (@rkey), the old value to @laddr (@lkey), through whoever combines.
 * Returns as ssq_post_write_combined.
 */
SSQ_INLINE int ssq_post_fetch_add_combined(struct ssq_producer *p, uint64_t laddr,
                                           uint32_t lkey, uint64_t raddr, uint32_t rkey,
                                           uint64_t add, uint64_t wr_id, unsigned flags)
{
	struct ssq_ctl_hand_req r = { laddr,          raddr, wr_id, add,
		                      lkey,           rkey,  8,     MLX5_OPCODE_ATOMIC_FA,
		                      (uint8_t)flags, 0 };

	if (ssq_unlikely(!ssq_wqe_flags_valid(flags)))
		return -EINVAL;
	return ssq__combine_post(p, &r);
}

/*
 * ssq_post_send_combined - ssq_post_send through whoever combines.
 * Returns as ssq_post_write_combined.
 */
SSQ_INLINE int ssq_post_send_combined(struct ssq_producer *p, uint8_t opcode,
                                      uint64_t laddr, uint32_t lkey, uint32_t len,
                                      __be32 imm, uint64_t wr_id, unsigned flags)
{
	struct ssq_ctl_hand_req r = { laddr, 0,   wr_id,  (uint64_t)imm,  lkey,
		                      0,     len, opcode, (uint8_t)flags, 0 };

	if (ssq_unlikely(!ssq_wqe_flags_valid(flags) ||
	                 (opcode != MLX5_OPCODE_SEND && opcode != MLX5_OPCODE_SEND_IMM)))
		return -EINVAL;
	return ssq__combine_post(p, &r);
}

#ifdef __cplusplus
}
#endif

#endif /* SSQ_COMBINE_H */
