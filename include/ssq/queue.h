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
 * The protocol (shared/design.md; the Promela model in tests/model checks
 * it), state in struct ssq_ctl in shared memory, hot counters each on its
 * own cache line:
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
 *    ctl->signal_every WQEBBs so `completed` advances without user CQEs.
 *
 * Concurrency: a struct ssq_producer belongs to one thread. Any number of
 * producers, in any processes, may use one queue at once.
 * Errors: 0 / a count, or a negative errno; nothing sets errno.
 */
#ifndef SSQ_QUEUE_H
#define SSQ_QUEUE_H

#include <ssq/common.h>
#include <ssq/barrier.h>
#include <ssq/sq.h>
#include <ssq/cq.h>
#include <ssq/wqe.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SSQ_CACHELINE     64
#define SSQ_MAX_PRODUCERS 64u
#define SSQ_CTL_MAGIC     0x4c54435153535351ull /* "QSSQCTL" */
#define SSQ_OWNER_NONE    0xffffffffu           /* healing NOPs, forced-signal NOPs */
#define SSQ_RESERVE_SPINS 200000u               /* flow-control spins before -EAGAIN */

/* Producer record states. */
enum {
	SSQ_PROD_FREE = 0,      /* no one */
	SSQ_PROD_IDLE = 1,      /* attached, no reservation open */
	SSQ_PROD_RESERVING = 2, /* between "I am reserving" and recording (pos, len) */
	SSQ_PROD_BUILDING = 3,  /* holds [pos, pos + len), not all published */
	SSQ_PROD_DEAD = 4,      /* its process died; the daemon is healing */
};

/* Queue states (ctl->state). */
enum {
	SSQ_CTL_READY = 0,
	SSQ_CTL_ERROR = 1, /* an error CQE came: QP in ERR until recovered */
};

/* Slot flags. */
enum {
	SSQ_SLOT_USER_SIGNALED = 1, /* the owner asked for a completion */
};

/* One per WQEBB: who posted the WQE starting there. */
struct ssq_ctl_slot {
	uint64_t seq;   /* position + 1 once published (release store) */
	uint64_t wr_id; /* the owner's */
	uint16_t len;   /* WQEBBs of the WQE */
	uint16_t flags; /* SSQ_SLOT_* */
	uint32_t owner; /* producer id, or SSQ_OWNER_NONE */
	uint64_t reserved;
};

/* A completion, as ssq_poll() returns it. */
struct ssq_completion {
	uint64_t wr_id;
	int32_t status;     /* enum ibv_wc_status */
	uint8_t syndrome;   /* error CQEs: MLX5_CQE_SYNDROME_* */
	uint8_t vendor_err; /* error CQEs: vendor syndrome */
	uint8_t opcode;     /* MLX5_CQE_REQ or MLX5_CQE_REQ_ERR */
	uint8_t reserved;
	uint32_t byte_len; /* READ / atomic: bytes */
	uint32_t reserved2;
	uint64_t reserved3;
};

/* One per producer, written by the producer except where marked. */
struct ssq_ctl_producer {
	uint32_t state;    /* SSQ_PROD_*: the healer reads it */
	uint32_t resv_gen; /* +1 entering RESERVING and +1 leaving it */
	uint64_t pos;      /* the open reservation */
	uint32_t len;
	uint32_t pid;
	uint64_t posted; /* WQEs this producer published */
	uint8_t pad0[SSQ_CACHELINE - 32];
	/*
	 * Router-written (the CQ lease holder), its own line. The positions make
	 * routing idempotent: a router that dies mid-CQE leaves `completed`
	 * behind, and the next one skips what was already counted or delivered.
	 */
	uint64_t done;      /* this producer's WQEs completed, signaled or not */
	uint64_t done_pos;  /* position + 1 of the last one counted in done */
	uint64_t comp_head; /* completions written */
	uint64_t deliv_pos; /* position + 1 of the last one delivered */
	uint8_t pad1[SSQ_CACHELINE - 32];
	/* Owner-written. */
	uint64_t comp_tail; /* completions consumed */
	uint8_t pad2[SSQ_CACHELINE - 8];
};

/* The control block at the head of each queue's shared area. */
struct ssq_ctl {
	uint64_t magic;
	uint32_t ring;          /* WQEBBs in the SQ: the slot count */
	uint32_t signal_every;  /* force a CQE at least this often (WQEBBs), power of 2 */
	uint32_t comp_entries;  /* each producer's completion ring */
	uint32_t max_producers; /* records in use: SSQ_MAX_PRODUCERS */
	uint32_t state;         /* SSQ_CTL_* */
	uint32_t epoch;         /* bumped by recovery */
	uint8_t pad0[SSQ_CACHELINE - 32];
	uint64_t reserve; /* WQEBBs reserved (fetch-add) */
	uint8_t pad1[SSQ_CACHELINE - 8];
	uint64_t published; /* every WQEBB below is published */
	uint8_t pad2[SSQ_CACHELINE - 8];
	uint32_t db_lease;  /* 0, or the ringing producer's id + 1 */
	uint32_t bf_offset; /* which UAR half the next doorbell uses */
	uint64_t db_value;  /* last producer counter rung (lease holder writes) */
	uint8_t pad3[SSQ_CACHELINE - 16];
	uint64_t completed; /* every WQEBB below has completed */
	uint8_t pad4[SSQ_CACHELINE - 8];
	uint32_t cq_lease; /* 0, or the routing producer's id + 1 */
	uint32_t cq_ci;    /* the CQ's consumer index (lease holder writes) */
	uint8_t pad5[SSQ_CACHELINE - 8];
	struct ssq_ctl_producer producers[SSQ_MAX_PRODUCERS];
	/* then: struct ssq_ctl_slot slots[ring];
	 *       struct ssq_completion comp[SSQ_MAX_PRODUCERS][comp_entries]; */
};

SSQ_STATIC_ASSERT(sizeof(struct ssq_ctl_slot) == 32, "slot is 32 bytes");
SSQ_STATIC_ASSERT(sizeof(struct ssq_completion) == 32, "completion is 32 bytes");
SSQ_STATIC_ASSERT(sizeof(struct ssq_ctl_producer) == 3 * SSQ_CACHELINE, "producer lines");
SSQ_STATIC_ASSERT(offsetof(struct ssq_ctl, reserve) == 1 * SSQ_CACHELINE, "reserve line");
SSQ_STATIC_ASSERT(offsetof(struct ssq_ctl, published) == 2 * SSQ_CACHELINE,
                  "published line");
SSQ_STATIC_ASSERT(offsetof(struct ssq_ctl, db_lease) == 3 * SSQ_CACHELINE,
                  "doorbell line");
SSQ_STATIC_ASSERT(offsetof(struct ssq_ctl, completed) == 4 * SSQ_CACHELINE,
                  "completed line");
SSQ_STATIC_ASSERT(offsetof(struct ssq_ctl, cq_lease) == 5 * SSQ_CACHELINE,
                  "CQ lease line");
SSQ_STATIC_ASSERT(offsetof(struct ssq_ctl, producers) == 6 * SSQ_CACHELINE, "producers");

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
};

/* ---- setup (src/dv/queue_setup.c) ---- */

/* Bytes of shared memory a queue of @ring WQEBBs needs for its control block. */
size_t ssq_ctl_size(uint32_t ring);

/*
 * ssq_ctl_init - lay out a zeroed control block for a send queue of @ring
 * WQEBBs (a power of two), forcing a CQE every @signal_every WQEBBs (a power
 * of two <= ring / 2). Returns 0 or -EINVAL. Before any producer attaches.
 */
int ssq_ctl_init(struct ssq_ctl *ctl, uint32_t ring, uint32_t signal_every);

/*
 * ssq_producer_init - bind @p to record @id of @ctl for the queue whose send
 * queue is @sq and completion queue @cq, and mark the record IDLE with
 * @pid. Who hands out ids (ssqd, or a test's threads) makes them unique.
 * Returns 0, -EINVAL (bad id, a queue that does not match the block) or
 * -EBUSY (the record is in use).
 */
int ssq_producer_init(struct ssq_producer *p, struct ssq_ctl *ctl, uint32_t id,
                      const struct ssq_sq *sq, const struct ssq_cq *cq, uint32_t pid);

/*
 * ssq_producer_bind - as ssq_producer_init for a record someone else (ssqd)
 * already marked IDLE for this process. Returns 0 or -EINVAL.
 */
int ssq_producer_bind(struct ssq_producer *p, struct ssq_ctl *ctl, uint32_t id,
                      const struct ssq_sq *sq, const struct ssq_cq *cq);

/*
 * ssq_producer_fini - stop using the record: its completions still in
 * flight are dropped, and the record is free again once they are counted
 * (ssq_ctl_reclaim). Call with no open reservation.
 */
void ssq_producer_fini(struct ssq_producer *p);

/*
 * ssq_ctl_claim - find a FREE record (reclaiming retired ones whose WQEs
 * have all completed), mark it IDLE for @pid and return its id, or -EUSERS.
 * For the one party that hands out ids (ssqd).
 */
int ssq_ctl_claim(struct ssq_ctl *ctl, uint32_t pid, uint32_t skip_id);

/*
 * ssq_ctl_heal - the daemon's repair after deaths. Producers whose process
 * died must already be marked SSQ_PROD_DEAD. Breaks the doorbell and CQ
 * leases they held; waits (up to @timeout_ms) for live producers caught
 * between their fetch-add and recording it; then publishes, as one-WQEBB
 * NOPs, every WQEBB below the reserve counter that is neither published
 * nor held by a live producer - exactly what the dead reserved and never
 * published, including a range taken by a fetch-add they did not live to
 * record - and submits. @h is the healer's own producer handle.
 * Returns the NOPs written, or -ETIMEDOUT (call again later; nothing is
 * half-done: positions are filled one at a time, each published).
 */
int ssq_ctl_heal(struct ssq_producer *h, unsigned timeout_ms);

/* ---- internals the inline path uses ---- */

SSQ_INLINE struct ssq_ctl_slot *ssq__slot(const struct ssq_producer *p, uint64_t pos)
{
	return &p->slots[pos & p->slot_mask];
}

/*
 * Test builds define SSQ_FAULT_HOOKS and ssq_fault_hook() to die at chosen
 * points of the protocol; everyone else compiles the calls away.
 */
enum { SSQ_HOOK_AFTER_ADD = 1, SSQ_HOOK_AFTER_RECORD = 2, SSQ_HOOK_BEFORE_PUBLISH = 3 };
#ifdef SSQ_FAULT_HOOKS
void ssq_fault_hook(int where);
#define SSQ__HOOK(where) ssq_fault_hook(where)
#else
#define SSQ__HOOK(where) ((void)0)
#endif

/* Deliver the completion of the WQE at @pos to its owner (CQ lease held). */
SSQ_INLINE void ssq__deliver(struct ssq_producer *p, uint32_t owner, uint64_t pos,
                             uint64_t wr_id, const struct ssq_cqe *cqe, int failed)
{
	struct ssq_ctl_producer *o = &p->ctl->producers[owner];
	struct ssq_completion *ring = p->comp_all + (size_t)owner * p->ctl->comp_entries;
	uint64_t head = o->comp_head;
	struct ssq_completion *c = &ring[head & (p->ctl->comp_entries - 1)];

	if (pos + 1 <= o->deliv_pos)
		return; /* a router before us delivered it, then died */

	c->wr_id = wr_id;
	c->status = failed ? (int32_t)cqe->status : IBV_WC_SUCCESS;
	c->syndrome = failed ? cqe->syndrome : 0;
	c->vendor_err = failed ? cqe->vendor_err : 0;
	c->opcode = failed ? MLX5_CQE_REQ_ERR : MLX5_CQE_REQ;
	c->byte_len = failed ? 0 : cqe->byte_len;
	o->deliv_pos = pos + 1;
	/* R1: entry before head; pairs with the owner's acquire of comp_head (A1). */
	__atomic_store_n(&o->comp_head, head + 1, __ATOMIC_RELEASE);
}

/*
 * Count @n WQEs of @owner, the last at @last, as done: done_pos keeps it
 * idempotent (a run re-routed after a router died counts only its WQEs past
 * what was counted). The run's WQEs are in position order, so those not yet
 * counted are its last ones: all of them, or none when the run ends at or
 * before done_pos. A run that straddles done_pos cannot happen: done_pos is
 * only moved to the end of a run, and a re-route starts at a CQE boundary,
 * which a run never crosses.
 */
SSQ_INLINE void ssq__count_done(struct ssq_ctl *ctl, uint32_t owner, uint64_t last,
                                uint64_t n)
{
	struct ssq_ctl_producer *o = &ctl->producers[owner];

	if (n && last + 1 > o->done_pos) {
		o->done_pos = last + 1;
		__atomic_store_n(&o->done, o->done + n, __ATOMIC_RELEASE);
	}
}

/*
 * Route what the CQ holds: called with the CQ lease. A CQE with wqe_counter
 * w completes every WQE from `completed` through the one whose index is w.
 * Unsignaled WQEs only count towards their owner's `done`, one store per
 * run of the same owner; signaled (or failed) ones are delivered.
 * Returns the CQEs consumed.
 */
SSQ_INLINE int ssq__route(struct ssq_producer *p)
{
	struct ssq_ctl *ctl = p->ctl;
	struct ssq_cqe cqe;
	struct mlx5_cqe64 *raw;
	uint64_t c = __atomic_load_n(&ctl->completed, __ATOMIC_RELAXED);
	uint64_t end = __atomic_load_n(&ctl->published, __ATOMIC_ACQUIRE);
	uint64_t run_last = 0, run_n;
	uint32_t run_owner;
	int n = 0;

	p->cq.ci = __atomic_load_n(&ctl->cq_ci, __ATOMIC_ACQUIRE);
	while ((raw = ssq_cq_peek(&p->cq)) != NULL) {
		int failed;

		ssq_cqe_decode(raw, &cqe);
		failed = cqe.status != IBV_WC_SUCCESS;
		end = __atomic_load_n(&ctl->published, __ATOMIC_ACQUIRE);
		run_owner = SSQ_OWNER_NONE;
		run_n = 0;
		while (c < end) {
			struct ssq_ctl_slot *s = ssq__slot(p, c);
			int target = (uint16_t)c == cqe.wqe_counter;
			uint32_t owner = s->owner;

			if (owner != SSQ_OWNER_NONE && owner < ctl->max_producers) {
				/*
				 * A dead owner's completions go nowhere. Delivered
				 * before done is counted: the owner's flow control
				 * must not see room its completion ring lacks.
				 */
				if (((s->flags & SSQ_SLOT_USER_SIGNALED) ||
				     (target && failed)) &&
				    __atomic_load_n(&ctl->producers[owner].state,
				                    __ATOMIC_ACQUIRE) != SSQ_PROD_DEAD)
					ssq__deliver(p, owner, c, s->wr_id, &cqe,
					             target && failed);
				if (owner != run_owner) {
					if (run_owner != SSQ_OWNER_NONE)
						ssq__count_done(ctl, run_owner, run_last,
						                run_n);
					run_owner = owner;
					run_n = 0;
				}
				run_last = c;
				run_n++;
			}
			c += s->len ? s->len : 1;
			if (target)
				break;
		}
		if (run_owner != SSQ_OWNER_NONE)
			ssq__count_done(ctl, run_owner, run_last, run_n);
		if (failed)
			__atomic_store_n(&ctl->state, SSQ_CTL_ERROR, __ATOMIC_RELEASE);
		p->cq.ci++;
		n++;
		/*
		 * R2: the WQEBBs below c may be overwritten once `completed` says
		 * so; every slot read above comes first (release). Stored per CQE,
		 * with cq_ci, so a router that dies here loses at most this CQE's
		 * bookkeeping, which the next one redoes idempotently.
		 */
		__atomic_store_n(&ctl->completed, c, __ATOMIC_RELEASE);
		__atomic_store_n(&ctl->cq_ci, p->cq.ci, __ATOMIC_RELEASE);
	}
	if (n)
		ssq_cq_update_ci(&p->cq);
	return n;
}

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

	/* A2: the lease's acquire pairs with the previous holder's release (R3). */
	if (!__atomic_compare_exchange_n(&p->ctl->cq_lease, &zero, p->id + 1, 0,
	                                 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return 0;
	n = ssq__route(p);
	/* R3: cq_ci, comp_head and completed before the next holder reads them. */
	__atomic_store_n(&p->ctl->cq_lease, 0, __ATOMIC_RELEASE);
	return n;
}

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
 */
SSQ_INLINE unsigned ssq_wqe_flags(const struct ssq_producer *p, uint64_t pos,
                                  unsigned len, unsigned user_flags)
{
	uint64_t n = p->ctl->signal_every;

	/* (pos + len) / n != pos / n without a divide: n is a power of two. */
	if (((pos + len) ^ pos) >= n)
		user_flags |= SSQ_WQE_SIGNALED;
	return user_flags;
}

/*
 * ssq_reserve - claim @wqebbs WQEBBs (1..ring/2) for WQEs this producer will
 * build at *@pos onwards. Waits a bounded time (SSQ_RESERVE_SPINS, polling
 * the CQ) for room.
 * Returns 0, -EAGAIN (no room: poll completions and retry; nothing was
 * reserved), -EIO (the queue is in error: see ssq_queue_recover), -EINVAL
 * (@wqebbs 0 or too many, or an open reservation). After 0 the caller must
 * publish every WQEBB it reserved (WQEs or NOPs).
 */
SSQ_INLINE int ssq_reserve(struct ssq_producer *p, unsigned wqebbs, uint64_t *pos)
{
	struct ssq_ctl *ctl = p->ctl;
	struct ssq_ctl_producer *me = p->me;
	uint64_t at;
	unsigned spins;

	if (ssq_unlikely(!wqebbs || wqebbs > ctl->ring / 2 || me->state != SSQ_PROD_IDLE))
		return -EINVAL;
	/* Room for our WQEBBs, and for their completions in our ring. */
	for (spins = 0;; spins++) {
		uint64_t r = __atomic_load_n(&ctl->reserve, __ATOMIC_RELAXED);
		uint64_t c = __atomic_load_n(&ctl->completed, __ATOMIC_ACQUIRE);
		uint64_t mine =
		    me->posted - __atomic_load_n(&me->done, __ATOMIC_ACQUIRE) +
		    (__atomic_load_n(&me->comp_head, __ATOMIC_ACQUIRE) - me->comp_tail);

		if (ssq_unlikely(__atomic_load_n(&ctl->state, __ATOMIC_ACQUIRE) !=
		                 SSQ_CTL_READY))
			return -EIO;
		if (r + wqebbs - c <= ctl->ring && mine + wqebbs <= ctl->comp_entries)
			break;
		if (spins >= SSQ_RESERVE_SPINS)
			return -EAGAIN;
		if (!ssq_progress(p))
			ssq_cpu_relax();
	}
	/*
	 * Say "reserving" before the add, and record the result after it, so
	 * that a healer that finds us dead in between knows an unrecorded range
	 * may be ours. Message passing, no store-load race, so release stores
	 * (plain movs on x86; the model's S2-S4):
	 *  - the healer snapshots `reserve` (acquire) and then reads our state:
	 *    a snapshot that includes our add reads from it (or a later add,
	 *    which continues its release sequence), so it synchronizes with it
	 *    and sees RESERVING, stored before the add;
	 *  - the record is a seqlock (resv_gen odd while it changes): every
	 *    store after the odd generation is a release, so a healer whose
	 *    acquire load sees any of them sees the odd generation on its
	 *    re-read, and retries.
	 */
	__atomic_store_n(&me->resv_gen, me->resv_gen + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&me->state, SSQ_PROD_RESERVING, __ATOMIC_RELEASE);
	at = __atomic_fetch_add(&ctl->reserve, wqebbs, __ATOMIC_SEQ_CST);
	SSQ__HOOK(SSQ_HOOK_AFTER_ADD);
	__atomic_store_n(&me->pos, at, __ATOMIC_RELEASE);
	__atomic_store_n(&me->len, wqebbs, __ATOMIC_RELEASE);
	__atomic_store_n(&me->state, SSQ_PROD_BUILDING, __ATOMIC_RELEASE);
	__atomic_store_n(&me->resv_gen, me->resv_gen + 1, __ATOMIC_RELEASE);
	SSQ__HOOK(SSQ_HOOK_AFTER_RECORD);
	/*
	 * Producers that passed the room check together may have claimed past
	 * the ring: wait until the device has completed what our WQEBBs still
	 * hold. The reservation cannot be undone, and everyone before us
	 * publishes (or is healed), so this ends.
	 */
	while (ssq_unlikely(at + wqebbs -
	                        __atomic_load_n(&ctl->completed, __ATOMIC_ACQUIRE) >
	                    ctl->ring)) {
		if (!ssq_progress(p))
			ssq_cpu_relax();
	}
	p->pub_next = at;
	*pos = at;
	return 0;
}

/*
 * S6b fence, on the path where the doorbell lease was held: orders this
 * producer's publish stores (S5, release) before its re-read of the lease
 * (S6c). The holder H releases the lease with a seq_cst store (S7d) and
 * then reads the publish word at its new head (S7e, seq_cst). If our S6c
 * read sees the lease still held, that read comes before H's release in
 * the lease's modification order, so our fence precedes H's release, and
 * so H's S7e load, in the single total order (C11 fence rules): H's look
 * sees our WQE, and H goes round again for it. In C11 a failed CAS is only
 * a load, hence the fence; on x86 the failed lock cmpxchg already drained
 * the store buffer, and the fence (mfence) costs little after it. It is
 * off the uncontended path entirely: one locked instruction per side of
 * the lease there. x86: mfence; arm64: dmb ish.
 */
#if defined(__SANITIZE_THREAD__)
#define SSQ__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SSQ__TSAN 1
#endif
#endif
#ifdef SSQ__TSAN
/*
 * ThreadSanitizer does not support fences (gcc: -Wtsan): under it every
 * publish store and scan load is seq_cst instead, the fence-free way to the
 * same order.
 */
#define SSQ__PUBLISH_ORDER __ATOMIC_SEQ_CST
#define SSQ__SCAN_ORDER    __ATOMIC_SEQ_CST
SSQ_INLINE void ssq__publish_scan_fence(void)
{
}
#else
#define SSQ__PUBLISH_ORDER __ATOMIC_RELEASE
#define SSQ__SCAN_ORDER    __ATOMIC_ACQUIRE
SSQ_INLINE void ssq__publish_scan_fence(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}
#endif

/*
 * ssq_publish - hand the WQE of @len WQEBBs built at @pos to the queue. The
 * WQE's completion, if @user_flags has SSQ_WQE_SIGNALED (or it fails), comes
 * back through ssq_poll() with @wr_id. WQEs of a reservation are published
 * in order; publishing its last WQEBB closes the reservation.
 * Returns 0, or -EINVAL (publishing nothing) when @pos is not where the
 * reservation's next WQE starts or @len runs past its end: a healer must be
 * able to trust that everything before an open reservation's next WQE is
 * published.
 */
SSQ_INLINE int ssq_publish(struct ssq_producer *p, uint64_t pos, unsigned len,
                           uint64_t wr_id, unsigned user_flags)
{
	struct ssq_ctl_slot *s = ssq__slot(p, pos);
	struct ssq_ctl_producer *me = p->me;

	if (ssq_unlikely(me->state != SSQ_PROD_BUILDING || pos != p->pub_next || !len ||
	                 pos + len > me->pos + me->len))
		return -EINVAL;
	s->wr_id = wr_id;
	/* Relaxed atomic: a slow scanner of the last pass may still read it. */
	__atomic_store_n(&s->len, (uint16_t)len, __ATOMIC_RELAXED);
	s->flags = (user_flags & SSQ_WQE_SIGNALED) ? SSQ_SLOT_USER_SIGNALED : 0;
	s->owner = p->id;
	p->pub_next = pos + len;
	SSQ__HOOK(SSQ_HOOK_BEFORE_PUBLISH);
	/*
	 * S5 (tests/model): WQE bytes and slot metadata before the sequence
	 * word (release, pairs with the lease holder's scan, A4). That the
	 * holder scans late enough to see it is ssq_submit's argument: our
	 * lease CAS, or the S6b fence when the lease is held.
	 */
	__atomic_store_n(&s->seq, pos + 1, SSQ__PUBLISH_ORDER);
	/*
	 * Counted after publishing: a producer that dies before the store
	 * leaves posted == done (the healer's NOP is nobody's), so its record
	 * can be reclaimed; one that dies after it leaves done == posted + 1.
	 */
	me->posted++;
	if (pos + len == me->pos + me->len)
		/* R5, after the seq store: a healer that sees IDLE sees the seq (A5). */
		__atomic_store_n(&me->state, SSQ_PROD_IDLE, __ATOMIC_RELEASE);
	return 0;
}

/*
 * S7b: the end of the run of contiguous published WQEs from @h (the lease
 * holder's scan). A4: a matching seq means the WQE and its metadata are
 * visible (acquire, pairs with S5). A length read after its seq belongs to
 * this pass: the slot is reused only after `completed`, hence `published`,
 * passed it, and only the lease holder - we - moves `published`. A length
 * of 0 (a slot cleared by recovery under a late publisher) is stepped over
 * as one WQEBB, as the router and the healer do.
 */
SSQ_INLINE uint64_t ssq__scan(struct ssq_producer *p, uint64_t h)
{
	for (;;) {
		struct ssq_ctl_slot *s = ssq__slot(p, h);
		uint16_t len;

		if (__atomic_load_n(&s->seq, SSQ__SCAN_ORDER) != h + 1)
			return h;
		len = __atomic_load_n(&s->len, __ATOMIC_RELAXED);
		h += len ? len : 1;
	}
}

/*
 * S6: take the doorbell lease, or make sure its holder will see our WQEs.
 * S6a: one CAS; S6b/S6c when it fails: fence, then re-read the lease - free
 * again: try again; held: return 0, its holder's S7e look covers us (see
 * ssq__publish_scan_fence). Never waits for a holder. Returns 1 holding it.
 */
SSQ_INLINE int ssq__lease_try(struct ssq_producer *p)
{
	struct ssq_ctl *ctl = p->ctl;

	for (;;) {
		uint32_t zero = 0;

		if (__atomic_compare_exchange_n(&ctl->db_lease, &zero, p->id + 1, 0,
		                                __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			return 1;
		ssq__publish_scan_fence();
		if (__atomic_load_n(&ctl->db_lease, __ATOMIC_SEQ_CST) != 0)
			return 0;
	}
}

/* The control segment of the WQE that ends at @end (searched back, <= 16 WQEBBs). */
SSQ_INLINE const struct mlx5_wqe_ctrl_seg *ssq__last_ctrl(struct ssq_producer *p,
                                                          uint64_t end)
{
	uint64_t j;

	for (j = end - 1; j + 16 >= end && j + 1 > 0; j--) {
		struct ssq_ctl_slot *s = ssq__slot(p, j);

		if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) == j + 1 &&
		    j + __atomic_load_n(&s->len, __ATOMIC_RELAXED) == end)
			return (const struct mlx5_wqe_ctrl_seg *)ssq_sq_wqebb(
			    &p->sq, (uint32_t)j);
	}
	return (const struct mlx5_wqe_ctrl_seg *)ssq_sq_wqebb(&p->sq,
	                                                      (uint32_t)(end - 1));
}

/* DBR + 8-byte doorbell for everything below @v (doorbell lease held). */
SSQ_INLINE void ssq__ring(struct ssq_producer *p, uint64_t v)
{
	struct ssq_ctl *ctl = p->ctl;
	const struct mlx5_wqe_ctrl_seg *last = ssq__last_ctrl(p, v);
	uint64_t first8;

	ssq_udma_to_device_barrier(); /* the WQEs before the DBR */
	__atomic_store_n(p->sq.dbrec, htobe32((uint32_t)v & 0xffff), __ATOMIC_RELEASE);
	memcpy(&first8, last, sizeof(first8));
	ssq_mmio_wc_start(); /* the DBR before the UAR write */
	if (p->sq.bf_reg)
		__atomic_store_n((volatile uint64_t *)(p->sq.bf_reg + ctl->bf_offset),
		                 first8, __ATOMIC_RELAXED);
	ssq_mmio_flush_writes(); /* out now, not merged with the next holder's */
	ctl->bf_offset ^= p->sq.bf_size;
	__atomic_store_n(&ctl->db_value, v, __ATOMIC_RELEASE); /* the "bell": rung */
}

/*
 * ssq_submit - make every published WQE reach the device: move the
 * published head and ring the doorbell, or leave both to the producer
 * doing it now. Never waits for another producer.
 *
 * Only the doorbell lease holder writes `published` (a plain release
 * store: readers are the router and the healer, with acquire loads) and
 * the DBR, each with a value it scanned under the lease, so both only
 * grow and the DBR never passes what is published. Why no WQE is left
 * unrung (the model's "lost doorbell" case): a producer P that published
 * and then found the lease held returned only after its S6b fence and an
 * S6c read that still saw the lease held; the holder H releases with a
 * seq_cst store (S7d) and then loads the publish word at its new head
 * (S7e, seq_cst). P's fence precedes H's release in the single total
 * order, so H's S7e load sees P's publish (or a later pass): if P's WQE is
 * at the head, H goes round again, scans it and rings it; if it is behind
 * an unpublished WQE, that WQE's producer submits after publishing it,
 * and its scan (S7b, under the lease) passes over P's, by the same
 * argument one lease later. A holder that dies holding the lease is
 * ssqd's to heal: ssq_ctl_heal breaks the lease and submits.
 * Locked instructions: the lease CAS and its release xchg (x86) when the
 * lease is free, one CAS and a fence when it is held.
 */
SSQ_INLINE void ssq_submit(struct ssq_producer *p)
{
	struct ssq_ctl *ctl = p->ctl;

	while (ssq__lease_try(p)) {
		/* S7b: only holders write it, and the last one released it (A2). */
		uint64_t h = __atomic_load_n(&ctl->published, __ATOMIC_RELAXED);
		uint64_t v = ssq__scan(p, h);

		/* S7c */
		if (v > h)
			__atomic_store_n(&ctl->published, v, __ATOMIC_RELEASE);
		if (v > ctl->db_value)
			ssq__ring(p, v);
		/* S7d: seq_cst (x86: xchg), see above. */
		__atomic_store_n(&ctl->db_lease, 0, __ATOMIC_SEQ_CST);
		/* S7e: anything published at the head since our scan? */
		if (__atomic_load_n(&ssq__slot(p, v)->seq, __ATOMIC_SEQ_CST) != v + 1)
			return;
	}
}

/*
 * ssq_poll - up to @max of this producer's completions, in its posting
 * order. Routes the CQ first if this producer's ring is empty and no one
 * else is routing. Returns how many (0: none yet).
 */
SSQ_INLINE int ssq_poll(struct ssq_producer *p, struct ssq_completion *out, int max)
{
	struct ssq_ctl_producer *me = p->me;
	uint64_t tail = me->comp_tail;
	/* A1: pairs with the router's release of comp_head (R1). */
	uint64_t head = __atomic_load_n(&me->comp_head, __ATOMIC_ACQUIRE);
	int n = 0;

	if (head == tail) {
		ssq_progress(p);
		head = __atomic_load_n(&me->comp_head, __ATOMIC_ACQUIRE);
	}
	while (tail != head && n < max)
		out[n++] = p->comp[tail++ & (p->ctl->comp_entries - 1)];
	__atomic_store_n(&me->comp_tail, tail, __ATOMIC_RELEASE);
	return n;
}

/*
 * The one-call posts' last half, after building their one-WQEBB WQE at
 * @pos: publish it and submit.
 */
SSQ_INLINE void ssq__post_one_done(struct ssq_producer *p, uint64_t pos, uint64_t wr_id,
                                   unsigned flags)
{
	(void)ssq_publish(p, pos, 1, wr_id, flags); /* cannot fail: pos is ours */
	ssq_submit(p);
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
	ssq__post_one_done(p, pos, wr_id, flags);
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
	ssq__post_one_done(p, pos, wr_id, flags);
	return 0;
}

#ifdef __cplusplus
}
#endif

#endif /* SSQ_QUEUE_H */
