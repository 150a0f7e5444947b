/* SPDX-License-Identifier: MIT */
/*
 * ssq/queue.h - one mlx5 send queue shared by many producers (processes or
 * threads), with no lock a preempted or dead producer could hold.
 *
 * A post, liburing style:
 *
 *	uint64_t pos;
 *	ssq_reserve(p, 1, &pos);                    claim 1 WQEBB (fetch-add)
 *	ssq_prep_rdma_write(ssq_producer_sq(p), (uint32_t)pos, ...,
 *			    ssq_wqe_flags(p, pos, 1, SSQ_WQE_SIGNALED));
 *	ssq_publish(p, pos, 1, wr_id, SSQ_WQE_SIGNALED);   release the slot
 *	ssq_submit(p);                              doorbell (combined)
 *	... ssq_poll(p, comps, 16);                 this producer's completions
 *
 * or ssq_post_write() / ssq_post_send() for all of it in one call. A batch:
 * reserve the WQEBBs of n WQEs at once, build and publish each, submit once.
 *
 * The protocol (the design, docs/design.md; the Promela model in
 * tests/model checks it), state in a control block in shared memory (its
 * layout and the inline calls' internals are <ssq/queue_pvt.h>), hot
 * counters each on its own cache line:
 *  - reserve: fetch-add on `reserve`; the producer's record says
 *    RESERVING before the add and (pos, len), BUILDING after it, so the
 *    daemon can tell whose WQEBBs a dead producer left.
 *  - flow control: before the add, wait a bounded time for room against
 *    `completed` (polling the CQ meanwhile), else -EAGAIN; after it, a
 *    producer that lost a race for the last room waits for the device.
 *  - publish: slot metadata, then a release store of the slot's sequence
 *    word = position + 1 (absolute: no ABA across passes of the ring).
 *  - submit: try the doorbell lease, never waiting for it. Its holder
 *    alone moves `published` over the contiguous published WQEs (a plain
 *    store) and rings; after letting go it looks at the publish word at
 *    the new head, and goes round again if one appeared. A producer that
 *    finds the lease held leaves its WQEs to that look.
 *  - completions: whoever holds the CQ lease routes each CQE: every WQE
 *    from `completed` up to the CQE's wqe_counter completes; those the
 *    user signaled (and every error or flush) go to their owner's
 *    completion ring, in order. The queue forces a CQE every
 *    signal_every WQEBBs so `completed` advances without user CQEs.
 * Each atomic's memory order is labelled where it is used, both ends of
 * each pair (see <ssq/queue_pvt.h>; the table from the model's steps is in
 * tests/model/README.md).
 *
 * Concurrency: a struct ssq_producer belongs to one thread. Any number of
 * producers, in any processes, may use one queue at once. The owner's side
 * (laying out, healing, resetting a control block: ssqd's) is not here: it
 * is libssq's internals, in libssq.a for ssqd and not exported from
 * libssq.so (src/dv/ctl.h).
 * Errors: 0 / a count, or a negative errno; nothing sets errno.
 */
#ifndef SSQ_QUEUE_H
#define SSQ_QUEUE_H

#include <sched.h>
#include <ssq/common.h>
#include <ssq/barrier.h>
#include <ssq/sq.h>
#include <ssq/cq.h>
#include <ssq/wqe.h>
#include <ssq/doorbell.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SSQ_MAX_PRODUCERS 64u     /* producer records per queue */
#define SSQ_RESERVE_SPINS 200000u /* flow-control spins before -EAGAIN */
#define SSQ_YIELD_SPINS   64u     /* turns between looks: yield? */

/*
 * A completion, as ssq_poll() returns it: the fields a verbs program reads
 * from struct ibv_wc, with the same names and meanings, so code that
 * switches on ibv_wc.opcode ports unchanged. Send-side completions only
 * (receives come through ssq_recv_*, see <ssq/client.h>).
 *
 * ABI (SSQ_0.1, before 1.0): until 2026-11-28 `opcode` held the raw mlx5
 * CQE opcode (MLX5_CQE_REQ = 0, which equals IBV_WC_SEND, for every
 * success); that byte is now `mlx5_opcode`, and `opcode` is the verbs
 * opcode. The struct stays 32 bytes; the arena layout version went to 6.
 */
struct ssq_completion {
	uint64_t wr_id;      /* as published */
	int32_t status;      /* enum ibv_wc_status: ibv_wc_status_str() names it */
	uint8_t syndrome;    /* error CQEs: MLX5_CQE_SYNDROME_*, ssq_syndrome_name() */
	uint8_t vendor_err;  /* error CQEs: the vendor syndrome */
	uint8_t mlx5_opcode; /* the CQE's: MLX5_CQE_REQ, or MLX5_CQE_REQ_ERR */
	uint8_t wc_flags;    /* IBV_WC_WITH_IMM: a WRITE_IMM / SEND_IMM */
	/*
	 * Bytes: for an RDMA READ those read (the CQE's byte_cnt), 8 for an
	 * atomic, as libmlx5's handle_good_req (providers/mlx5/cq.c) reports
	 * them; 0 for a failed request. Other opcodes: what the CQE carried
	 * (verbs leaves it undefined for sends and writes).
	 */
	uint32_t byte_len;
	/*
	 * enum ibv_wc_opcode of the request as posted: IBV_WC_RDMA_WRITE,
	 * IBV_WC_RDMA_READ, IBV_WC_SEND, IBV_WC_COMP_SWAP, IBV_WC_FETCH_ADD,
	 * or SSQ_WC_NOP. Set on failed requests too (verbs leaves it undefined
	 * there; ssq knows the WQE).
	 */
	enum ibv_wc_opcode opcode;
	uint32_t qp_num; /* the queue's QP number (ssq_queue_qpn()) */
	__be32 imm_data; /* wc_flags & IBV_WC_WITH_IMM: the immediate, network order */
};

/* The opcode of a NOP WQE's completion: verbs has none, this is a driver's. */
#define SSQ_WC_NOP IBV_WC_DRIVER1

/* The control block in shared memory (laid out in <ssq/queue_pvt.h>). */
struct ssq_ctl;
struct ssq_ctl_slot;
struct ssq_ctl_producer;

/* A producer's handle: one thread's view of one shared queue. */
struct ssq_producer {
	struct ssq_ctl *ctl;
	struct ssq_ctl_slot *slots;
	struct ssq_completion *comp;     /* this producer's completion ring */
	struct ssq_completion *comp_all; /* every producer's, ring id at id * entries */
	struct ssq_ctl_producer *me;
	struct ssq_sq sq; /* geometry; sq.pi is unused */
	struct ssq_cq cq; /* geometry; the consumer index lives in ctl->cq_ci */
	uint32_t id;
	uint32_t slot_mask; /* ctl->ring - 1, kept here: every slot lookup uses it */
	uint64_t pub_next;  /* where the open reservation's next WQE must start */
	uint64_t pub_end;   /* where it ends */
	/*
	 * The control block's bounds, copied at bind time into memory no other
	 * client can write: the fast path masks, indexes and compares with
	 * these, never with the shared copies a scribbling client could
	 * change (and they are cheaper: no load from a shared line).
	 */
	uint32_t signal_every; /* ctl->signal_every */
	uint32_t comp_mask;    /* ctl->comp_entries - 1 */
	uint32_t gone;         /* ssq_producer_gone: ssqd went away */
	/*
	 * The arena header's tx_arm_seq, in this process's mapping (the
	 * client library sets it at attach; NULL: nobody to ask for an arm):
	 * ssq_wait bumps and wakes it when its queue's send CQ needs arming.
	 */
	uint32_t *arm_seq;
	/* The sequence of this producer's last batch handed over (<ssq/combine.h>). */
	uint64_t hand_seq;
	/* The epoch it was handed over in: its outcome is read against it. */
	uint32_t hand_epoch;
	/*
	 * Requests of our slot not yet settled: in the open batch (POSTED,
	 * TAKEN or DONE), or owed: req[owe_lo, owe_lo + hand_owed) of our slot
	 * (EMPTY, so no combiner reads it) are ours to post ourselves, first.
	 */
	uint32_t hand_n;
	uint32_t hand_owed;
	uint32_t owe_lo;
};

/* The control block's layout and the inline calls' internals. */
#include <ssq/queue_pvt.h>

/* ---- the hot path ---- */

/* The send queue to build WQEs in (positions are ssq_reserve's, as uint32_t). */
SSQ_INLINE struct ssq_sq *ssq_producer_sq(struct ssq_producer *p)
{
	return &p->sq;
}

/*
 * ssq_wqe_flags - the fm_ce_se to build a WQE of @len WQEBBs at @pos with:
 * @user_flags (SSQ_WQE_*), plus SSQ_WQE_SIGNALED where the queue forces a
 * CQE: on the WQE that covers a position signal_every - 1 (mod
 * signal_every), so at most signal_every WQEBBs pass without a CQE.
 * ssq_publish sets that bit in the WQE itself whatever the builder wrote
 * (a producer that builds with plain flags must not stop `completed` for
 * everyone); building with these flags shows it in the WQE from the start.
 */
SSQ_INLINE unsigned ssq_wqe_flags(const struct ssq_producer *p, uint64_t pos,
                                  unsigned len, unsigned user_flags)
{
	/* (pos + len) / n != pos / n without a divide: n is a power of two. */
	if (((pos + len) ^ pos) >= p->signal_every)
		user_flags |= SSQ_WQE_SIGNALED;
	return user_flags;
}

/*
 * ssq__wake_waiters - wake every producer asleep in ssq_wait on @ctl.
 * ABI, not API: the inline ssq_progress (and what calls it) is compiled
 * into applications and calls it, so libssq.so exports it at SSQ_0.1 and
 * keeps its name, argument and meaning there (ssq__wake_waiters(3)). It is
 * the only out-of-line call the inline hot path makes; an application has
 * no reason to call it itself.
 */
void ssq__wake_waiters(struct ssq_ctl *ctl);

/*
 * ssq_progress - route the queue's completions if no one else is: take the
 * CQ lease (never waiting for it), hand every CQE's WQEs to their owners'
 * completion rings, count the rest as done, advance `completed`, let go.
 * ssq_reserve and ssq_poll call it as they need; call it to make progress
 * for others too (ssqd does, as the router of last resort).
 * Returns the CQEs routed: 0 when there were none, or when another producer
 * holds the lease (it routes for everyone). Any thread with its own @p.
 */
SSQ_INLINE int ssq_progress(struct ssq_producer *p)
{
	uint32_t zero = 0;
	int n;

	/*
	 * Look before taking: producers waiting for room call this in a loop,
	 * and a lease taken and given back with nothing to route wrote the
	 * lease's line twice a call (SSQ_BENCH_LINE_COUNTS counted 60 to 290
	 * writes of it per WQE in BM_reserve_publish_devthread). A held lease
	 * (its holder routes for everyone) or no CQE at the shared consumer
	 * index is seen by loads, which leave the lines shared. Only hints:
	 * the CAS below takes the lease (A7) and ssq__route looks again under
	 * it; a CQE that lands after this look is routed by the next call, as
	 * one that lands after a router's last look is. The cq_ci load is A4
	 * as in ssq__route (pairs with R4).
	 */
	if (__atomic_load_n(&p->ctl->cq_lease, __ATOMIC_RELAXED))
		return 0;
	p->cq.ci = __atomic_load_n(&p->ctl->cq_ci, __ATOMIC_ACQUIRE);
	if (!ssq_cq_peek(&p->cq))
		return 0;
	SSQ__LINE_W(SSQ_LINE_CQ_LEASE);
	/*
	 * A7: pairs with R7 (and ssq_ctl_reset's release of the lease): the
	 * last router's cq_ci, completed, comp_head and done are visible.
	 */
	if (!__atomic_compare_exchange_n(&p->ctl->cq_lease, &zero, p->id + 1, 0,
	                                 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return 0;
	SSQ__HOOK(SSQ_HOOK_CQ_LEASE);
	n = ssq__route(p, p->id + 1);
	if (ssq_unlikely(n < 0))
		return 0; /* taken back by a restart: no longer ours to release */
	/* R7: pairs with A7, the next router. */
	__atomic_store_n(&p->ctl->cq_lease, 0, __ATOMIC_RELEASE);
	SSQ__LINE_W(SSQ_LINE_CQ_LEASE);
	/*
	 * Producers asleep in ssq_wait: wake them (a system call, so after the
	 * lease: none is made while holding anything). Relaxed: a wake missed
	 * here costs a sleeper the rest of its slice, no more.
	 */
	if (ssq_unlikely(n > 0 && __atomic_load_n(&p->ctl->waiters, __ATOMIC_RELAXED)))
		ssq__wake_waiters(p->ctl);
	return n;
}

/*
 * ssq__wait_turn - one turn (the @spins-th) of a producer's bounded wait:
 * for room (ssq_reserve), for a combiner between its take and its publish
 * (<ssq/combine.h>). Routes for everyone if there is anything to route;
 * else relaxes the core, and every SSQ_YIELD_SPINS-th turn, if the queue's
 * publication is held up by a WQE reserved and not yet published, gives
 * the core up (sched_yield(2)).
 * Why: publication is in order, so the ring does not drain past a WQE
 * whose producer is between its reservation and its publish. With more
 * posters than cores that producer may be preempted, and a waiter that
 * spins out its slice keeps it off the core for a whole slice: four
 * posters on two cores did 1/30 of one poster's rate (docs/measurements.md,
 * "Posters preempted mid-post"). Only then: a wait for the device (every
 * WQE published, the ring full) does not yield, so posters on a busy
 * machine do not hand their core to other work while the NIC drains.
 * Relaxed loads, hints: a wrong guess costs one yield or 64 more turns.
 * Out of line (SSQ_COLD): a post that does not wait runs none of this.
 */
SSQ_COLD void ssq__wait_turn(struct ssq_producer *p, unsigned spins)
{
	uint64_t head;

	if (ssq_progress(p))
		return;
	if (spins % SSQ_YIELD_SPINS == SSQ_YIELD_SPINS - 1) {
		head = __atomic_load_n(&p->ctl->published, __ATOMIC_RELAXED);
		if (head != __atomic_load_n(&p->ctl->reserve, __ATOMIC_RELAXED) &&
		    __atomic_load_n(&ssq__slot(p, head)->seq, __ATOMIC_RELAXED) !=
		        head + 1) {
			(void)sched_yield();
			return;
		}
	}
	ssq_cpu_relax();
}

/*
 * ssq_wait - wait, asleep, until this producer has at least @min
 * completions to take with ssq_poll(), or @timeout_ns passes. It routes
 * the CQ itself when no one else does, and otherwise sleeps on a futex in
 * the queue's shared block (not private: any process of the queue wakes
 * it) that whoever routes wakes - and, on the emulated device, ssqd as
 * the device writes each CQE, so a lone sleeper need not wait out its
 * slice; a wake it misses costs it at most one slice of
 * SSQ_WAIT_SLICE_NS. Any thread with its own @p.
 * Returns the completions ready (>= @min, 1..comp_entries), -ETIMEDOUT
 * (fewer than @min by then), -ENOTCONN (ssqd is gone) or -EINVAL (@min 0
 * or more than the completion ring holds).
 */
#define SSQ_WAIT_SLICE_NS 1000000ull
int ssq_wait(struct ssq_producer *p, unsigned min, uint64_t timeout_ns);

/*
 * ssq_reserve - claim @wqebbs WQEBBs (1..ring/2) for WQEs this producer will
 * build at *@pos onwards. Waits a bounded time (SSQ_RESERVE_SPINS, polling
 * the CQ) for room.
 * Returns 0, -EAGAIN (no room, or ssqd is starting the queue over: poll
 * completions and retry; nothing was reserved), -EIO (the queue is in
 * error: see ssq_queue_recover),
 * -ENOTCONN (ssqd is gone: see ssq_producer_gone), -EINVAL
 * (@wqebbs 0 or too many, or an open reservation). After 0 the caller must
 * publish every WQEBB it reserved (WQEs or NOPs), each within ssqd's
 * --stall-ms of the last: ssqd kills a process whose reservation does not
 * move for that long (it holds up everyone behind it).
 */
SSQ_INLINE int ssq__reserve(struct ssq_producer *p, unsigned wqebbs, unsigned comp_wqebbs,
                            uint64_t *pos);
SSQ_INLINE int ssq_reserve(struct ssq_producer *p, unsigned wqebbs, uint64_t *pos)
{
	return ssq__reserve(p, wqebbs, wqebbs, pos);
}

/*
 * ssq_reserve's body: @comp_wqebbs of the WQEBBs are this producer's, to
 * count against its completion ring's room. A combiner (<ssq/combine.h>)
 * reserves for others, each of whom checked its own ring's room.
 */
SSQ_INLINE int ssq__reserve(struct ssq_producer *p, unsigned wqebbs, unsigned comp_wqebbs,
                            uint64_t *pos)
{
	struct ssq_ctl *ctl = p->ctl;
	struct ssq_ctl_producer *me = p->me;
	uint64_t ring =
	    (uint64_t)p->slot_mask + 1; /* our copy: see struct ssq_producer */
	uint64_t at;
	uint32_t reserving = SSQ_PROD_RESERVING;
	unsigned spins;

	if (ssq_unlikely(!wqebbs || wqebbs > ring / 2 || me->state != SSQ_PROD_IDLE ||
	                 __atomic_load_n(&p->gone, __ATOMIC_RELAXED)))
		return __atomic_load_n(&p->gone, __ATOMIC_RELAXED) ? -ENOTCONN : -EINVAL;
	/* Room for our WQEBBs, and for their completions in our ring. */
	for (spins = 0;; spins++) {
		/* S1a: a hint; a stale value passes more often, and S4b waits. */
		uint64_t r = __atomic_load_n(&ctl->reserve, __ATOMIC_RELAXED);
		/* A3a (S1b): pairs with R3: the WQEBBs below it are free. */
		uint64_t c = __atomic_load_n(&ctl->completed, __ATOMIC_ACQUIRE);
		/* A6a, A5b: pair with R6 and R5 (the router's counts). */
		uint64_t mine =
		    me->posted - __atomic_load_n(&me->done, __ATOMIC_ACQUIRE) +
		    (__atomic_load_n(&me->comp_head, __ATOMIC_ACQUIRE) - me->comp_tail);

		/*
		 * A8: pairs with R8a (an error CQE), R8b (ssq_ctl_set_error,
		 * ssq_ctl_quiesce's RESTARTING) and R8c (ssq_ctl_reset's READY,
		 * after the counters it restarted; R8d, ssq_ctl_release's). A restart is
		 * a wait, like a full ring: its flushes may reach the owner before its
		 * READY.
		 */
		uint32_t state = __atomic_load_n(&ctl->state, __ATOMIC_ACQUIRE);

		if (ssq_unlikely(state != SSQ_CTL_READY))
			return state == SSQ_CTL_RESTARTING ? -EAGAIN : -EIO;
		/*
		 * Signed: a combiner (comp_wqebbs 0) whose own handed-over WQEs
		 * completed before it settled them counts done up to
		 * SSQ_HAND_REQS ahead of posted (<ssq/combine.h>), so `mine`
		 * is negative then; unsigned, it
		 * never found room, and its next passes left the others'
		 * requests POSTED after SSQ_RESERVE_SPINS. Everyone else
		 * reserves with nothing of theirs unsettled: `mine` is exact.
		 */
		if (r + wqebbs - c <= ring &&
		    (int64_t)(mine + comp_wqebbs) <= (int64_t)p->comp_mask + 1)
			break;
		if (spins >= SSQ_RESERVE_SPINS)
			return -EAGAIN;
		ssq__wait_turn(p, spins);
	}
	/*
	 * Say "reserving" before the add, and record the result after it, so
	 * that a healer that finds us dead in between knows an unrecorded range
	 * may be ours. Message passing, no store-load race, so release stores
	 * (plain movs on x86):
	 *  - R9a (S2): a healer's snapshot of `reserve` that includes our add
	 *    reads from C1 (or from a later add, which continues its release
	 *    sequence), so it synchronizes with it, and its next loads (A9a)
	 *    see RESERVING, stored before the add;
	 *  - R9b (S4): the record is a seqlock (resv_gen odd while it
	 *    changes): every store after the odd generation is a release, so a
	 *    healer whose acquire load (A9a, A9b) sees any of them sees the odd
	 *    generation on its re-read, and retries.
	 */
	__atomic_store_n(&me->resv_gen, me->resv_gen + 1, __ATOMIC_RELEASE); /* R9a */
	__atomic_store_n(&me->state, SSQ_PROD_RESERVING, __ATOMIC_RELEASE);  /* R9a */
	/*
	 * C1 (S3): the positions are ours from here, and cannot be given back.
	 * Its release half is what the healer's snapshot of `reserve` (H2)
	 * pairs with (R9a above); seq_cst as the model assumes, and no dearer
	 * on x86, where any fetch-add is a lock xadd.
	 */
	at = __atomic_fetch_add(&ctl->reserve, wqebbs, __ATOMIC_SEQ_CST);
	SSQ__LINE_W(SSQ_LINE_RESERVE);
	SSQ__HOOK(SSQ_HOOK_AFTER_ADD);
	__atomic_store_n(&me->pos, at, __ATOMIC_RELEASE);     /* R9b */
	__atomic_store_n(&me->len, wqebbs, __ATOMIC_RELEASE); /* R9b */
	/*
	 * R9b, and A13c: pairs with R13. BUILDING only from our RESERVING: if
	 * ssqd started the queue over since our add (ssq_ctl_rebuild: the
	 * record IDLE, `reserve` back to 0), our position is void and may be
	 * handed out again; writing BUILDING over the IDLE would build into
	 * it. One locked instruction on a line that is ours.
	 */
	if (ssq_unlikely(
	        !__atomic_compare_exchange_n(&me->state, &reserving, SSQ_PROD_BUILDING, 0,
	                                     __ATOMIC_RELEASE, __ATOMIC_RELAXED)))
		return -EIO;
	__atomic_store_n(&me->resv_gen, me->resv_gen + 1, __ATOMIC_RELEASE); /* R9b */
	SSQ__HOOK(SSQ_HOOK_AFTER_RECORD);
	/*
	 * S4b: producers that passed the room check together may have claimed
	 * past the ring: wait until the device has completed what our WQEBBs
	 * still hold (A3b: pairs with R3). The reservation cannot be undone,
	 * and everyone before us publishes (or is healed), so this ends -
	 * unless the control block was scribbled: then ssqd rebuilds it
	 * (ssq_ctl_rebuild), which takes our reservation away (the record
	 * IDLE), and we give up with -EIO rather than wait for a `completed`
	 * that restarted at 0.
	 */
	while (ssq_unlikely(
	    at + wqebbs - __atomic_load_n(&ctl->completed, __ATOMIC_ACQUIRE) > ring)) {
		/* A13: pairs with R13 (ssq_ctl_rebuild's IDLE). */
		if (__atomic_load_n(&me->state, __ATOMIC_ACQUIRE) != SSQ_PROD_BUILDING)
			return -EIO;
		ssq__wait_turn(p, spins++);
	}
	p->pub_next = at;
	p->pub_end = at + wqebbs;
	*pos = at;
	return 0;
}

/*
 * ssq_publish - hand the WQE of @len WQEBBs built at @pos to the queue. The
 * WQE's completion, if @user_flags has SSQ_WQE_SIGNALED (or it fails), comes
 * back through ssq_poll() with @wr_id. WQEs of a reservation are published
 * in order; publishing its last WQEBB closes the reservation.
 * Returns 0, or -EINVAL (publishing nothing) when @pos is not where the
 * reservation's next WQE starts or @len runs past its end: a healer must be
 * able to trust that everything before an open reservation's next WQE is
 * published; -EIO (publishing nothing) when ssqd started the queue over
 * since the reservation (ssq_ctl_rebuild voids it; don't submit).
 */
SSQ_INLINE int ssq__publish_as(struct ssq_producer *p, uint64_t pos, unsigned len,
                               uint64_t wr_id, unsigned user_flags, uint32_t owner,
                               int count);
SSQ_INLINE int ssq_publish(struct ssq_producer *p, uint64_t pos, unsigned len,
                           uint64_t wr_id, unsigned user_flags)
{
	return ssq__publish_as(p, pos, len, wr_id, user_flags, p->id, 1);
}

/*
 * ssq_publish's body: the slot names @owner (whose completion it is), and
 * @count says whether the WQE counts in this producer's `posted`. A
 * combiner publishes others' WQEs (and its own handed-over one) with
 * count 0: each owner counts its own when it learns it was published.
 */
SSQ_INLINE int ssq__publish_as(struct ssq_producer *p, uint64_t pos, unsigned len,
                               uint64_t wr_id, unsigned user_flags, uint32_t owner,
                               int count)
{
	struct ssq_ctl_slot *s = ssq__slot(p, pos);
	struct ssq_ctl_producer *me = p->me;

	if (ssq_unlikely(pos != p->pub_next || !len || pos + len > p->pub_end))
		return -EINVAL;
	/*
	 * A13b: pairs with R13: ssq_ctl_rebuild voided the reservation (the
	 * queue was started over under us; relaxed: only the value matters).
	 */
	if (ssq_unlikely(__atomic_load_n(&me->state, __ATOMIC_RELAXED) !=
	                 SSQ_PROD_BUILDING))
		return -EIO;
	ssq__force_signal(p, pos, len);
	s->wr_id = wr_id;
	/* Relaxed atomic: a slow scanner of the last pass may still read it. */
	__atomic_store_n(&s->len, (uint16_t)len, __ATOMIC_RELAXED);
	s->flags = (user_flags & SSQ_WQE_SIGNALED) ? SSQ_SLOT_USER_SIGNALED : 0;
	/*
	 * R1c: pairs with A1e (ssq__hand_outcome's owner load). We reserved
	 * pos only once `completed` had passed pos - ring (A3a, the room
	 * check): a producer settling pos - ring that reads this owner then
	 * reads `completed` past its own position. A plain mov on x86-64.
	 */
	__atomic_store_n(&s->owner, owner, __ATOMIC_RELEASE);
	SSQ__LINE_W(SSQ_LINE_SLOT);
	p->pub_next = pos + len;
	SSQ__HOOK(SSQ_HOOK_BEFORE_PUBLISH);
	/*
	 * The WQE's bytes before its publish word, for the device. The CPU
	 * that rings the doorbell may be another producer's, and its own
	 * barrier before the doorbell record would order our stores for the
	 * NIC only through barrier cumulativity, which aarch64's "dmb oshst"
	 * across CPUs is not relied on for (rdma-core's rule: the writer of
	 * the WQE issues udma_to_device_barrier). A compiler barrier on x86-64.
	 */
	ssq_udma_to_device_barrier();
	/*
	 * R1a (S5): the WQE bytes and slot metadata before the publish word;
	 * pairs with A1a (the lease holder's scan), A1b (ssq__last_ctrl) and
	 * A1c (ssq_ctl_heal). That the holder scans late enough to see it is
	 * ssq_submit's argument: our lease CAS (C2), or C3 when it is held.
	 */
	__atomic_store_n(&s->seq, pos + 1, SSQ__PUBLISH_ORDER);
	/*
	 * Counted after publishing: a producer that dies before the store
	 * leaves posted == done (the healer's NOP is nobody's), so its record
	 * can be reclaimed; one that dies after it leaves done == posted + 1.
	 */
	if (count)
		me->posted++;
	if (pos + len == p->pub_end)
		/*
		 * R9c (S5b), after R1a: a healer or ssq_ctl_drained that reads
		 * IDLE (A9b, A9c) sees the publish word.
		 */
		__atomic_store_n(&me->state, SSQ_PROD_IDLE, __ATOMIC_RELEASE);
	return 0;
}

/*
 * ssq_submit - make every published WQE reach the device: move the
 * published head and ring the doorbell, or leave both to the producer
 * doing it now. Never waits for another producer.
 *
 * Only the doorbell lease holder writes `published` (R2) and the DBR, each
 * with a value it scanned under the lease, so both only grow and the DBR
 * never passes what is published. Why no WQE is left unrung (the model's
 * "lost doorbell" case): a producer P that published (R1a) and then found
 * the lease held returned only after its C3 fence and a C4 read that still
 * saw the lease held; the holder H releases with a seq_cst store (C5) and
 * then loads the publish word at its new head (C6, seq_cst). P's fence
 * precedes H's C5 in the single total order, so H's C6 load sees P's
 * publish (or a later pass): if P's WQE is at the head, H goes round
 * again, scans it and rings it; if it is behind an unpublished WQE, that
 * WQE's producer submits after publishing it, and its scan (A1a, under the
 * lease) passes over P's, by the same argument one lease later. A holder
 * that dies holding the lease is ssqd's to heal: ssq_ctl_heal breaks the
 * lease and submits.
 * Locked instructions: the lease CAS and its release xchg (x86) when the
 * lease is free, one CAS and a fence when it is held.
 * Returns 0, or -ENOTCONN once ssqd is gone (ssq_producer_gone): nothing
 * published since reaches the device.
 */
SSQ_INLINE int ssq_submit(struct ssq_producer *p)
{
	struct ssq_ctl *ctl = p->ctl;

	/* Relaxed: a hint; what is rung after ssqd went away goes nowhere. */
	if (ssq_unlikely(__atomic_load_n(&p->gone, __ATOMIC_RELAXED)))
		return -ENOTCONN;

	while (ssq__lease_try(p)) {
		/*
		 * S7b: relaxed, as only lease holders write it and C2 acquired
		 * the last one's C5.
		 */
		uint64_t h = __atomic_load_n(&ctl->published, __ATOMIC_RELAXED);
		uint64_t v = ssq__scan(p, h);

		SSQ__HOOK(SSQ_HOOK_DB_LEASE);
		/*
		 * R2 (S7c (1)): the slots below v, whose publish words the scan
		 * acquired (A1a), before `published` says so; pairs with A2a and
		 * A2b (the router) and A2c (ssq_ctl_heal).
		 */
		if (v > h) {
			__atomic_store_n(&ctl->published, v, __ATOMIC_RELEASE);
			SSQ__LINE_W(SSQ_LINE_PUBLISHED);
		}
		/* S7c (2), (3): db_value is the model's `bell`. */
		if (v > ctl->db_value)
			ssq__ring(p, v);
		/*
		 * C5 (S7d): releases the lease to the next holder's C2 and, as
		 * seq_cst (x86: xchg, not mov), orders the release before C6:
		 * with a plain release store the load below may pass it and a
		 * doorbell is lost (the model's TSO_PLAIN_RELEASE).
		 */
		__atomic_store_n(&ctl->db_lease, 0, __ATOMIC_SEQ_CST);
		SSQ__LINE_W(SSQ_LINE_DOORBELL);
		/*
		 * C6 (S7e): anything published at the head since our scan? The
		 * load C3/C4 pair with (see ssq__publish_scan_fence).
		 */
		if (__atomic_load_n(&ssq__slot(p, v)->seq, __ATOMIC_SEQ_CST) != v + 1)
			return 0;
	}
	return 0;
}

/*
 * ssq_poll - up to @max of this producer's completions, in its posting
 * order. Routes the CQ first if this producer's ring is empty and no one
 * else is routing. Returns how many (0: none yet), or -ENOTCONN when there
 * are none and ssqd is gone (ssq_producer_gone).
 */
SSQ_INLINE int ssq_poll(struct ssq_producer *p, struct ssq_completion *out, int max)
{
	struct ssq_ctl_producer *me = p->me;
	uint64_t tail = me->comp_tail;
	/* A5a: pairs with R5: the entries below the head are written. */
	uint64_t head = __atomic_load_n(&me->comp_head, __ATOMIC_ACQUIRE);
	int n = 0;

	if (head == tail) {
		ssq_progress(p);
		head = __atomic_load_n(&me->comp_head, __ATOMIC_ACQUIRE); /* A5a */
		/* Nothing left to take from a queue whose ssqd is gone. */
		if (ssq_unlikely(head == tail) &&
		    __atomic_load_n(&p->gone, __ATOMIC_RELAXED))
			return -ENOTCONN;
	}
	while (tail != head && n < max)
		out[n++] = p->comp[tail++ & p->comp_mask];
	/*
	 * Relaxed: only this producer reads it (ssq_reserve). The router
	 * overwrites an entry we read only after we reserve again and publish
	 * (R1a), which orders our reads first.
	 */
	__atomic_store_n(&me->comp_tail, tail, __ATOMIC_RELAXED);
	return n;
}

/*
 * ssq_post_write - one RDMA WRITE of @len bytes from @laddr (@lkey) to @raddr
 * (@rkey): reserve, build, publish, submit. @flags: SSQ_WQE_SIGNALED for a
 * completion with @wr_id (plus fence / solicited bits).
 * Returns 0 or ssq_reserve's errors (-EAGAIN, -EIO), -EINVAL for bad flags
 * (nothing reserved then).
 */
SSQ_INLINE int ssq_post_write(struct ssq_producer *p, uint64_t laddr, uint32_t lkey,
                              uint32_t len, uint64_t raddr, uint32_t rkey, uint64_t wr_id,
                              unsigned flags)
{
	uint64_t pos;
	int rc;

	if (ssq_unlikely(!ssq_wqe_flags_valid(flags)))
		return -EINVAL;
	rc = ssq_reserve(p, 1, &pos);
	if (ssq_unlikely(rc))
		return rc;
	ssq_prep_rdma_write(&p->sq, (uint32_t)pos, laddr, lkey, len, raddr, rkey,
	                    ssq_wqe_flags(p, pos, 1, flags));
	/* Fails only when ssqd rebuilt the queue since the reservation. */
	rc = ssq_publish(p, pos, 1, wr_id, flags);
	if (ssq_unlikely(rc))
		return rc;
	ssq_submit(p);
	return 0;
}

/* As ssq_post_write, for a SEND (MLX5_OPCODE_SEND or _SEND_IMM with @imm). */
SSQ_INLINE int ssq_post_send(struct ssq_producer *p, uint8_t opcode, uint64_t laddr,
                             uint32_t lkey, uint32_t len, __be32 imm, uint64_t wr_id,
                             unsigned flags)
{
	uint64_t pos;
	int rc;

	if (ssq_unlikely(!ssq_wqe_flags_valid(flags) ||
	                 (opcode != MLX5_OPCODE_SEND && opcode != MLX5_OPCODE_SEND_IMM)))
		return -EINVAL;
	rc = ssq_reserve(p, 1, &pos);
	if (ssq_unlikely(rc))
		return rc;
	ssq_prep_send(&p->sq, (uint32_t)pos, opcode, laddr, lkey, len, imm,
	              ssq_wqe_flags(p, pos, 1, flags));
	/* Fails only when ssqd rebuilt the queue since the reservation. */
	rc = ssq_publish(p, pos, 1, wr_id, flags);
	if (ssq_unlikely(rc))
		return rc;
	ssq_submit(p);
	return 0;
}

#ifdef __cplusplus
}
#endif

#endif /* SSQ_QUEUE_H */
