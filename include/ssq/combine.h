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
 * The protocol, state in the control block (<ssq/queue_pvt.h>):
 *  - each producer has one hand-over slot in its record (struct
 *    ssq_ctl_hand): the request, and a word EMPTY / POSTED(seq) /
 *    TAKEN(pos) / DONE(pos); `comb_pending` has a bit per producer with a
 *    request POSTED, `comb_role` names the combiner (both hints);
 *  - a poster first settles its previous request (below), checks its
 *    completion ring's room, and, alone (L1: the role free and no bit
 *    pending; it takes the role, C9's CAS, and still no bit is pending,
 *    L2), posts the request itself in its own name, its slot untouched,
 *    then lets the role go and looks again (C11, C12) like any combiner
 *    (ssq__combine_lone): a lone poster pays 88 instructions per WQE
 *    more than ssq_post_write (callgrind: scripts/wqe-insns.sh
 *    --post-combined against --post-single), where handing over to
 *    itself cost 275, and it holds the role while it posts, so that
 *    others who come meanwhile hand over to it (without the role they
 *    would find it free and nobody pending, and post alone too: combining
 *    would never start). Otherwise it writes the request,
 *    POSTED (R14), sets its bit (C8), and takes the role if it is free
 *    (C9, or already its from L1): then it combines, its own request
 *    among the others. If the role is held it returns: the holder looks
 *    at the bits again after letting the role go (C11, C12), so a request
 *    POSTED while it held the role is its, or the next holder's, or its
 *    owner's (settling);
 *  - a combiner swaps the pending bits out, reserves one WQEBB per request
 *    POSTED (ssq_reserve's protocol: its record holds the range, so a
 *    combiner that stalls or dies is a holder like any other: ssqd's
 *    deadline, kill, heal), takes each request with a CAS POSTED(seq) ->
 *    TAKEN(pos) (C10; a failed CAS - the owner took it back - leaves a
 *    NOP there), builds and publishes each in its owner's name (the slot's
 *    owner: the router completes it to its owner), stores DONE (R15),
 *    rings once, lets the role go (C11) and looks at the bits again (C12),
 *    for at most SSQ_COMBINE_PASSES passes;
 *  - settling (the owner, at its next combined post, ssq_combine_flush,
 *    ssq_wait, ssq_queue_close or ssq_producer_fini: closing or retiring
 *    posts it first, polling up to 1 s for room): DONE: published;
 *    TAKEN(pos): the publish word at pos says (our id: published; a
 *    healer's NOP: not), or, once pos completed and was reused, our
 *    done_pos - the only wait, on a combiner between its take and its
 *    publish, which ssqd's deadline ends as it ends any reservation,
 *    and which gives up after SSQ_RESERVE_SPINS looks, as ssq_reserve's
 *    wait for room does: -EAGAIN, the request left TAKEN, looked at
 *    again at the next settle (under --stall-ms 0 a stopped combiner is
 *    never killed: settling waited for as long as it was stopped);
 *    still POSTED: the role if it is free
 *    (combine), then, if it is still POSTED (its bit may be gone: a
 *    combiner that swapped it out died before its take, or a reset
 *    zeroed the bits), or at once if the role is held, the request taken
 *    back (C13', a CAS, which fails if a combiner took it meanwhile) and
 *    posted by its owner itself. A request
 *    not published (a healer's NOP, a restart) is posted by its owner
 *    itself too: nothing of the owner's was posted after it, since
 *    nothing is until it is settled. So each request is published once, in
 *    its owner's order.
 * Each owner counts its own `posted` when it settles a WQE published for
 * it (a lone post: at its publish, as ssq_publish); until then the router
 * may have counted it done (done one ahead, which ssq_ctl_check allows:
 * one request per producer is ever unsettled).
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

/* A request as handed over: see struct ssq_ctl_hand. */
struct ssq_combine_req {
	uint64_t laddr, raddr, wr_id, arg;
	uint32_t lkey, rkey, len;
	uint8_t opcode, flags;
};

SSQ_INLINE uint64_t ssq__hand_word(uint64_t v, unsigned state)
{
	return v << 2 | state;
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
SSQ_INLINE int ssq__combine_build(struct ssq_producer *p, const struct ssq_ctl_hand *h,
                                  uint64_t pos, uint32_t owner, int count)
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
	if (!built) {
		ssq_prep_nop(&p->sq, pi, ssq_wqe_flags(p, pos, 1, 0));
		return ssq__publish_as(p, pos, 1, 0, 0, SSQ_OWNER_NONE, 0);
	}
	return ssq__publish_as(p, pos, 1, h->wr_id, f, owner, count) ?: 1;
}

/*
 * The combiner's passes, with the role held (C9 won): every request POSTED
 * whose bit is pending, in one reservation and one doorbell; then the role
 * goes, and comes back for bits set meanwhile, up to SSQ_COMBINE_PASSES
 * times. Returns 0, or ssq_reserve's error (the role let go, the requests
 * left POSTED with their bits).
 */
SSQ_INLINE int ssq__combine(struct ssq_producer *p)
{
	struct ssq_ctl *ctl = p->ctl;
	const unsigned max = (p->slot_mask + 1) / 2;
	uint32_t ids[SSQ_MAX_PRODUCERS], zero;
	uint64_t words[SSQ_MAX_PRODUCERS];
	unsigned pass;

	for (pass = 1;; pass++) {
		SSQ__HOOK(SSQ_HOOK_COMBINE_ROLE);
		/* A14a: pairs with R14 via C8: a bit set means its request is POSTED. */
		uint64_t bits =
		    __atomic_exchange_n(&ctl->comb_pending, 0, __ATOMIC_ACQ_REL);
		SSQ__LINE_W(SSQ_LINE_COMBINE);
		uint64_t left = 0, pos = 0;
		unsigned n = 0, k;
		int rc;

		while (bits) {
			uint32_t i = (uint32_t)__builtin_ctzll(bits);
			/* A14b: pairs with R14: the request's fields before its word. */
			uint64_t w = __atomic_load_n(&ctl->producers[i].hand.word,
			                             __ATOMIC_ACQUIRE);

			bits &= bits - 1;
			if ((w & 3) != SSQ_HAND_POSTED)
				continue; /* taken back, or a stale bit */
			if (n == max) {
				left |= 1ull << i;
				continue;
			}
			ids[n] = i;
			words[n++] = w;
		}
		if (left) {
			__atomic_fetch_or(&ctl->comb_pending, left, __ATOMIC_RELEASE);
			SSQ__LINE_W(SSQ_LINE_COMBINE);
		}
		if (n) {
			rc = ssq__reserve(p, n, 0, &pos);
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
			 * C10: take each at its position; acq_rel: the owner's
			 * fields (R14) before our reads, and TAKEN(pos) visible
			 * to its owner (A15) with the position in it. A failed
			 * CAS: the owner took it back; its position gets a NOP.
			 */
			for (k = 0; k < n; k++) {
				uint64_t want = words[k];

				SSQ__LINE_W(ids[k] == p->id ? SSQ_LINE_HAND_OWN
				                            : SSQ_LINE_HAND_OTHER);
				if (!__atomic_compare_exchange_n(
				        &ctl->producers[ids[k]].hand.word, &want,
				        ssq__hand_word(pos + k, SSQ_HAND_TAKEN), 0,
				        __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
					ids[k] = SSQ_OWNER_NONE;
			}
			SSQ__HOOK(SSQ_HOOK_COMBINE_TAKEN);
			for (k = 0; k < n; k++) {
				struct ssq_ctl_hand h;
				uint64_t taken = ssq__hand_word(pos + k, SSQ_HAND_TAKEN);

				if (ids[k] == SSQ_OWNER_NONE) {
					ssq_prep_nop(&p->sq, (uint32_t)(pos + k),
					             ssq_wqe_flags(p, pos + k, 1, 0));
					if (ssq_unlikely(ssq__publish_as(
					        p, pos + k, 1, 0, 0, SSQ_OWNER_NONE, 0)))
						break;
					continue;
				}
				/* Ours to read: its owner leaves it alone while TAKEN. */
				__builtin_memcpy(&h, &ctl->producers[ids[k]].hand,
				                 sizeof(h));
				rc = ssq__combine_build(p, &h, pos + k, ids[k], 0);
				if (k == 0)
					SSQ__HOOK(SSQ_HOOK_COMBINE_BUILT);
				if (ssq_unlikely(rc < 0))
					break; /* void: owners see the epoch move */
				if (!rc)
					continue;
				/*
				 * R15: after the publish (R1a); pairs with A15 (the
				 * owner counts it when it settles). A CAS: an owner
				 * that learned the outcome from the publish word may
				 * have moved on.
				 */
				SSQ__LINE_W(ids[k] == p->id ? SSQ_LINE_HAND_OWN
				                            : SSQ_LINE_HAND_OTHER);
				__atomic_compare_exchange_n(
				    &ctl->producers[ids[k]].hand.word, &taken,
				    ssq__hand_word(pos + k, SSQ_HAND_DONE), 0,
				    __ATOMIC_RELEASE, __ATOMIC_RELAXED);
			}
			if (ssq_likely(k == n))
				ssq_submit(p);
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
 * The request TAKEN at @pos (word @w): 1 published, 0 not (a healer's NOP
 * took its place, or the queue was started over), -1 not known yet. The
 * combiner's DONE is the common answer; the rest is for a combiner that
 * died or stopped between taking and DONE.
 */
SSQ_INLINE int ssq__hand_outcome(struct ssq_producer *p, uint64_t w, uint32_t epoch)
{
	struct ssq_ctl *ctl = p->ctl;
	struct ssq_ctl_producer *me = p->me;
	uint64_t pos = w >> 2, seq, completed, done_pos;
	uint32_t owner;

	if ((w & 3) == SSQ_HAND_DONE)
		return 1;
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
	 * pos, as ours (done_pos, R6, before R3) or as nobody's.
	 */
	completed = __atomic_load_n(&ctl->completed, __ATOMIC_ACQUIRE);
	done_pos = __atomic_load_n(&me->done_pos, __ATOMIC_ACQUIRE);
	/*
	 * The epoch last (A8: pairs with R8c/R8d: a reset or rebuild moves it
	 * before READY, before anyone publishes into the new positions): if
	 * it did not move, everything read above is of our pass. If it did,
	 * a reset drained the queue first (ours completed, and counted in
	 * `done`, or it was a NOP); a rebuild set done = posted, so the
	 * answer is "not", as for a reservation it voids.
	 */
	if (__atomic_load_n(&ctl->epoch, __ATOMIC_ACQUIRE) != epoch)
		return __atomic_load_n(&me->done, __ATOMIC_ACQUIRE) > me->posted;
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
 * Post handed-over request @h (this producer's own slot, settled: no
 * combiner reads it) itself: reserve, build, publish (counted in our
 * `posted`), submit. Returns 0, or ssq_reserve's or ssq_publish's error
 * (nothing posted), or -EINVAL (the slot no longer holds a request we
 * build: a scribble; the NOP in its place is nobody's).
 */
SSQ_INLINE int ssq__hand_post_direct(struct ssq_producer *p, const struct ssq_ctl_hand *h)
{
	uint64_t pos;
	int rc = ssq_reserve(p, 1, &pos);

	if (ssq_unlikely(rc))
		return rc;
	rc = ssq__combine_build(p, h, pos, p->id, 1);
	if (ssq_unlikely(rc <= 0))
		return rc ?: -EINVAL;
	ssq_submit(p);
	return 0;
}

/*
 * Settle this producer's last request handed over (see the protocol
 * above): on return 0 its slot is EMPTY and the request is published, by
 * a combiner or by us. Otherwise the error of posting it ourselves
 * (ssq_reserve's -EAGAIN, -EIO, -ENOTCONN): it stays ours to post
 * (hand_owed), first, at the next settle; or -EAGAIN when a combiner that
 * took it (C10) has not published it within SSQ_RESERVE_SPINS looks: it
 * stays TAKEN, in the combiner's hands, and the next settle looks again.
 * That wait is bounded as ssq_reserve's wait for room is, not by ssqd's
 * --stall-ms alone: under --stall-ms 0 ssqd never kills a stopped
 * combiner, and this wait spun for as long as it was stopped, in the
 * owner's next combined post, ssq_combine_flush and ssq_producer_fini
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
			if (ssq_likely(!p->hand_owed))
				return 0;
			rc = ssq__hand_post_direct(p, h);
			if (ssq_unlikely(rc))
				return rc;
			p->hand_owed = 0;
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
			/* C13': against a combiner's C10, the same word. */
			if (__atomic_compare_exchange_n(
			        &h->word, &w, 0, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
				p->hand_owed = 1;
			continue;
		default:
			rc = ssq__hand_outcome(p, w, p->hand_epoch);
			if (rc < 0) {
				/*
				 * The one wait: a combiner between C10 and R1a.
				 * Bounded: the combiner may be stopped, and only
				 * ssqd's deadline (when it has one) ends that.
				 */
				if (spins++ >= SSQ_RESERVE_SPINS)
					return -EAGAIN;
				if (!ssq_progress(p))
					ssq_cpu_relax();
				continue;
			}
			/*
			 * Counted before the word is EMPTY again (a late DONE CAS
			 * fails on it): a producer that dies between the two
			 * leaves its WQE either in `posted` or in a TAKEN/DONE
			 * word, so ssq_ctl_claim reuses the record only once the
			 * router counted it. Not published (a healer's NOP, a
			 * restart): ours to post, still first in our order.
			 */
			if (rc)
				p->me->posted++;
			else
				p->hand_owed = 1;
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
 *  - exactly once, in our order: our previous request is settled (its
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
 *    take their requests back when they settle, as with any combiner;
 *  - ssqd reads nothing new: the hand-over slot is not written.
 * Returns 0 (posted: it completes to @p as ssq_post_* would) or
 * ssq_reserve's or ssq_publish's error (nothing posted, nothing handed
 * over).
 */
SSQ_INLINE int ssq__combine_lone(struct ssq_producer *p, const struct ssq_combine_req *r)
{
	struct ssq_ctl *ctl = p->ctl;
	/* Local: the compiler keeps its fields in registers. */
	const struct ssq_ctl_hand h = { 0,         r->laddr, r->raddr, r->wr_id,
		                        r->arg,    r->lkey,  r->rkey,  r->len,
		                        r->opcode, r->flags, 0 };
	uint64_t pos;
	uint32_t zero = 0;
	int rc = ssq_reserve(p, 1, &pos);

	if (ssq_likely(!rc)) {
		SSQ__HOOK(SSQ_HOOK_COMBINE_LONE);
		rc = ssq__combine_build(p, &h, pos, p->id, 1);
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
 * ssq_combine_flush - settle this producer's last combined request: on 0
 * it is published (by a combiner, or by this call), and nothing of @p's
 * is left handed over. Call it before posting directly on @p, and before
 * waiting for completions by spinning on ssq_poll. Never waits for a
 * combiner to take the request; waits (polling the CQ) only for one that
 * took it to publish it, for at most SSQ_RESERVE_SPINS looks (ssqd's
 * --stall-ms, when not 0, kills a combiner stopped that long). Returns 0,
 * or as ssq_reserve (-EAGAIN: poll completions and call it again; the
 * request is still this producer's to post, and goes first; or still in
 * the hands of a combiner that took it and has not published it yet).
 */
SSQ_INLINE int ssq_combine_flush(struct ssq_producer *p)
{
	if (ssq_unlikely(__atomic_load_n(&p->gone, __ATOMIC_RELAXED)))
		return -ENOTCONN;
	return ssq__hand_settle(p);
}

/*
 * Hand @r over to whoever combines, after settling the last one. Returns
 * 0 (handed over, or published: it completes to @p as ssq_post_* would),
 * or -EAGAIN (no room in this producer's completion ring, or settling the
 * last request found none, or found it still unpublished in the hands of
 * the combiner that took it), -EIO, -ENOTCONN, -EINVAL: @r not handed
 * over.
 */
SSQ_INLINE int ssq__combine_post(struct ssq_producer *p, const struct ssq_combine_req *r)
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
	rc = ssq__hand_settle(p);
	if (ssq_unlikely(rc))
		return rc;
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
		if (!ssq_progress(p))
			ssq_cpu_relax();
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
	h->laddr = r->laddr;
	h->raddr = r->raddr;
	h->wr_id = r->wr_id;
	h->arg = r->arg;
	h->lkey = r->lkey;
	h->rkey = r->rkey;
	h->len = r->len;
	h->opcode = r->opcode;
	h->flags = r->flags;
	w = ssq__hand_word(++p->hand_seq, SSQ_HAND_POSTED);
	/* R14: the request before POSTED; pairs with A14a/A14b (a combiner). */
	__atomic_store_n(&h->word, w, __ATOMIC_RELEASE);
	SSQ__LINE_W(SSQ_LINE_HAND_OWN);
	/* C8: the bit, against C11/C12 (see ssq__combine). */
	__atomic_fetch_or(&ctl->comb_pending, 1ull << p->id, __ATOMIC_SEQ_CST);
	SSQ__LINE_W(SSQ_LINE_COMBINE);
	zero = 0;
	/*
	 * C9: against C11/C12. Held: its holder looks again after letting go.
	 * Ours already (L1 found bits pending): our C8 is before our C11.
	 */
	if (role || (__atomic_load_n(&ctl->comb_role, __ATOMIC_SEQ_CST) == 0 &&
	             (SSQ__LINE_W(SSQ_LINE_COMBINE),
	              __atomic_compare_exchange_n(&ctl->comb_role, &zero, p->id + 1, 0,
	                                          __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)))) {
		rc = ssq__combine(p);
		/* Failed with ours not taken: not handed over after all. */
		if (ssq_unlikely(rc) &&
		    __atomic_compare_exchange_n(&h->word, &w, 0, 0, __ATOMIC_RELAXED,
		                                __ATOMIC_RELAXED))
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
	struct ssq_combine_req r = { laddr,         raddr, wr_id, 0,
		                     lkey,          rkey,  len,   MLX5_OPCODE_RDMA_WRITE,
		                     (uint8_t)flags };

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
	struct ssq_combine_req r = { laddr,         raddr, wr_id, add,
		                     lkey,          rkey,  8,     MLX5_OPCODE_ATOMIC_FA,
		                     (uint8_t)flags };

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
	struct ssq_combine_req r = { laddr, 0,   wr_id,  (uint64_t)imm, lkey,
		                     0,     len, opcode, (uint8_t)flags };

	if (ssq_unlikely(!ssq_wqe_flags_valid(flags) ||
	                 (opcode != MLX5_OPCODE_SEND && opcode != MLX5_OPCODE_SEND_IMM)))
		return -EINVAL;
	return ssq__combine_post(p, &r);
}

#ifdef __cplusplus
}
#endif

#endif /* SSQ_COMBINE_H */
