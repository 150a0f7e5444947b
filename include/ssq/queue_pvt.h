/* SPDX-License-Identifier: MIT */
/*
 * ssq/queue_pvt.h - internals of the shared send queue: the control block's
 * layout in shared memory and the pieces of <ssq/queue.h>'s inline calls.
 * Do not include directly: include <ssq/queue.h> (or <ssq/ssq.h>). It is
 * installed because the inline API needs it; nothing here is API, and a
 * caller that touches these fields bypasses the protocol below.
 *
 * Every shared-memory atomic of the queue carries a label, at both ends of
 * each pairing (DPDK's rte_ring_c11_pvt.h style):
 *  - Rn / An: a release and the acquires that synchronize with it; the
 *    number ties them, a letter tells sites apart (R1a and R1b pair with
 *    A1a, A1b and A1c alike);
 *  - Cn: a seq_cst access or fence, with why seq_cst beside it;
 *  - Sn / Hn: the step of tests/model/ssq_queue.pml it implements.
 * tests/model/README.md has the table from model steps to these labels.
 * The other ends of some pairs are out of line: src/dv/queue_setup.c
 * (setup, reset, claims) and src/dv/queue_heal.c (the healer).
 */
#ifndef SSQ_QUEUE_PVT_H
#define SSQ_QUEUE_PVT_H

#ifndef SSQ_QUEUE_H
#error "include <ssq/queue.h>, not <ssq/queue_pvt.h>"
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define SSQ_CACHELINE  64
#define SSQ_CTL_MAGIC  0x4c54435153535351ull /* "QSSQCTL" */
#define SSQ_OWNER_NONE 0xffffffffu           /* healing NOPs, forced-signal NOPs */
/* The lease value the owner (ssqd) holds in ssq_ctl_reset and ssq_ctl_rebuild. */
#define SSQ_LEASE_OWNER 0xffffffffu

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
	/*
	 * ssqd is starting the queue over (ssq_ctl_quiesce .. ssq_ctl_rebuild,
	 * within one pass of its loop): reservations wait (-EAGAIN), as they
	 * do for room. Only ever seen from outside ssqd's loop; ssq_ctl_check
	 * calls it a scribble.
	 */
	SSQ_CTL_RESTARTING = 2,
};

/*
 * ctl->tx_arm: how a producer asleep in ssq_wait learns that CQEs landed.
 * NONE: the device tells ssqd itself (the emulated device's events), or
 * nobody does and sleepers route at the end of each slice. WANTED: the
 * send CQ is not armed; a sleeper bumps the arena header's tx_arm_seq and
 * wakes it, and ssqd's arm thread arms the CQ (a ConnectX's completion
 * channel). SET: armed; the next CQE raises the event on which ssqd wakes
 * the sleepers, and the CQ goes back to WANTED.
 */
enum {
	SSQ_TX_ARM_NONE = 0,
	SSQ_TX_ARM_WANTED = 1,
	SSQ_TX_ARM_SET = 2,
};

/* Slot flags. */
enum {
	SSQ_SLOT_USER_SIGNALED = 1, /* the owner asked for a completion */
};

/* One per WQEBB: who posted the WQE starting there. */
struct ssq_ctl_slot {
	uint64_t seq;   /* position + 1 once published (R1a, R1b) */
	uint64_t wr_id; /* the owner's */
	uint16_t len;   /* WQEBBs of the WQE */
	uint16_t flags; /* SSQ_SLOT_* */
	uint32_t owner; /* producer id, or SSQ_OWNER_NONE */
	uint64_t reserved;
};

/*
 * A request handed over for combining (<ssq/combine.h>): one WQEBB's WQE.
 */
struct ssq_ctl_hand_req {
	uint64_t laddr;
	uint64_t raddr;
	uint64_t wr_id;
	uint64_t arg; /* FETCH_ADD's add; SEND_IMM's immediate (big-endian) */
	uint32_t lkey;
	uint32_t rkey;
	uint32_t len;
	uint8_t opcode; /* MLX5_OPCODE_{RDMA_WRITE,SEND,SEND_IMM,ATOMIC_FA} */
	uint8_t flags;  /* SSQ_WQE_* */
	/*
	 * Request 0's: the low 16 bits of the epoch its batch was POSTED in
	 * (the owner's hand_epoch). A combiner takes a batch only in that
	 * epoch: one POSTED before a restart and taken after it is judged by
	 * its owner against the old epoch, as drained, and posted again
	 * (test_adv8b_epoch_take.c). Others: 0, unread.
	 */
	uint16_t epoch;
};

/*
 * Requests one hand-over slot holds: a batch its owner appends to while no
 * combiner took it (<ssq/combine.h>). Each unsettled request of a producer
 * may have completed before its owner counts it in `posted`: `done` runs
 * up to SSQ_HAND_REQS ahead (ssq_ctl_check).
 */
#define SSQ_HAND_REQS 8u

/*
 * A producer's hand-over slot: a batch of requests and the word that says
 * where it is. `word`: SSQ_HAND_* in its low 2 bits; above them (58 bits)
 * the owner's batch sequence (POSTED: a CAS from a stale batch fails) or
 * the position of its first request (TAKEN, DONE); in the top 4 bits the
 * batch's count less one (POSTED: requests appended; TAKEN, DONE: the
 * prefix taken). A batch of one is therefore the word of one request
 * (v << 2 | state). The word is client-writable: ssqd reads it only
 * through ssq_ctl_hand_out's bounds and C13's CAS, never as an index.
 */
struct ssq_ctl_hand {
	uint64_t word;
	struct ssq_ctl_hand_req req[SSQ_HAND_REQS];
	/*
	 * What its owner still owes (<ssq/combine.h>: requests it took back,
	 * or that a combiner did not publish, and it must post itself, the
	 * word EMPTY meanwhile): req[lo, lo + n) as n << 8 | lo, 0 for none;
	 * stored before the word goes EMPTY, and after each of them is
	 * published. Owner-written; ssqd reads it, clamped to the slot, for
	 * the keys such a request holds (ssq_ctl_hand_owes).
	 */
	uint32_t owed;
	/*
	 * The count of the batch last handed over (POSTED(seq, n): n, before
	 * the word says it), which a combiner may take a prefix of: what is
	 * left past a TAKEN or DONE prefix is its owner's to post when it
	 * settles. Owner-written, read by ssqd only (ssq_ctl_hand_names).
	 */
	uint32_t batch;
	/* The record to whole lines: the next record's first line is its own. */
	uint8_t pad[SSQ_CACHELINE - 24];
};

/* Hand-over states (the low bits of ssq_ctl_hand.word). */
enum {
	SSQ_HAND_EMPTY = 0,
	SSQ_HAND_POSTED = 1, /* owner: take a prefix of them (seq, count) */
	SSQ_HAND_TAKEN = 2,  /* a combiner holds a prefix for positions (pos, count) */
	SSQ_HAND_DONE = 3,   /* that prefix published from position pos on */
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
	/*
	 * The hand-over slot (<ssq/combine.h>): requests this producer asks
	 * whoever combines to post for it. Written by the owner, taken by a
	 * combiner (CAS on `word`), never trusted by ssqd (ssq_ctl_claim
	 * only compares a TAKEN range, clamped, with the queue's counters).
	 * Its word and first request share comp_tail's line, as when a slot
	 * held one request: a batch of one touches no more lines.
	 */
	struct ssq_ctl_hand hand;
};

/* The control block at the head of each queue's shared area. */
struct ssq_ctl {
	uint64_t magic;
	uint32_t ring;          /* WQEBBs in the SQ: the slot count */
	uint32_t signal_every;  /* force a CQE at least this often (WQEBBs), power of 2 */
	uint32_t comp_entries;  /* each producer's completion ring */
	uint32_t max_producers; /* records in use: SSQ_MAX_PRODUCERS */
	uint32_t state;         /* SSQ_CTL_* */
	uint32_t epoch;         /* bumped by ssq_ctl_reset */
	/*
	 * ssq_wait's: producers asleep, the futex word routers bump and wake
	 * them on, and a beat each sleeper moves once a slice, so that ssqd
	 * stops waking a count whose sleeper died (killed asleep, it never
	 * takes it back). Any value is harmless (a wake too many, or a sleep
	 * to the end of its slice): nothing indexes with them.
	 */
	uint32_t waiters;
	uint32_t wake_seq;
	uint32_t wait_beat;
	/*
	 * SSQ_TX_ARM_*, ssqd's word on who announces this queue's CQEs to
	 * sleepers: the device itself (NONE), or an arm of the send CQ that
	 * a sleeper asks for when it finds none (WANTED; SET while armed).
	 * ssqd acts on its own copy: a scribbled value costs the queue's
	 * sleepers their early wake-up (they route at the end of each slice)
	 * or ssqd's arm thread a look, nothing more.
	 */
	uint32_t tx_arm;
	uint8_t pad0[SSQ_CACHELINE - 48];
	uint64_t reserve; /* WQEBBs reserved (fetch-add) */
	uint8_t pad1[SSQ_CACHELINE - 8];
	/*
	 * Combining (<ssq/combine.h>), on a line of its own: a bit per
	 * producer with a request POSTED (a hint: a combiner looks at the
	 * request itself), and the combiner role, 0 or the holder's id + 1 (a
	 * hint too: two combiners at once would be slower, not wrong;
	 * ssq_ctl_heal breaks a dead holder's). Not on the reserve line: there
	 * a combined post's four writes (its bit, the role, the combiner's
	 * swap and release; docs/measurements.md) took the line from every
	 * lone lock-free post's fetch-add.
	 */
	uint64_t comb_pending;
	uint32_t comb_role;
	uint8_t pad1b[SSQ_CACHELINE - 12];
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
SSQ_STATIC_ASSERT(sizeof(enum ibv_wc_opcode) == 4, "ibv_wc_opcode is an int");
SSQ_STATIC_ASSERT(offsetof(struct ssq_completion, opcode) == 20, "completion opcode");
SSQ_STATIC_ASSERT(sizeof(struct ssq_ctl_hand_req) == 48, "hand-over request");
SSQ_STATIC_ASSERT(sizeof(struct ssq_ctl_hand) == 7 * SSQ_CACHELINE - 8, "hand-over slot");
SSQ_STATIC_ASSERT(offsetof(struct ssq_ctl_producer, hand) == 2 * SSQ_CACHELINE + 8,
                  "hand-over word and first request on comp_tail's line");
SSQ_STATIC_ASSERT(sizeof(struct ssq_ctl_producer) == 9 * SSQ_CACHELINE, "producer lines");
SSQ_STATIC_ASSERT(SSQ_HAND_REQS <= 16,
                  "a batch's count less one fits the word's top 4 bits");
SSQ_STATIC_ASSERT(SSQ_MAX_PRODUCERS <= 64, "comb_pending has a bit per producer");
SSQ_STATIC_ASSERT(offsetof(struct ssq_ctl, reserve) == 1 * SSQ_CACHELINE, "reserve line");
SSQ_STATIC_ASSERT(offsetof(struct ssq_ctl, comb_pending) == 2 * SSQ_CACHELINE,
                  "combining line");
SSQ_STATIC_ASSERT(offsetof(struct ssq_ctl, published) == 3 * SSQ_CACHELINE,
                  "published line");
SSQ_STATIC_ASSERT(offsetof(struct ssq_ctl, db_lease) == 4 * SSQ_CACHELINE,
                  "doorbell line");
SSQ_STATIC_ASSERT(offsetof(struct ssq_ctl, completed) == 5 * SSQ_CACHELINE,
                  "completed line");
SSQ_STATIC_ASSERT(offsetof(struct ssq_ctl, cq_lease) == 6 * SSQ_CACHELINE,
                  "CQ lease line");
SSQ_STATIC_ASSERT(offsetof(struct ssq_ctl, producers) == 7 * SSQ_CACHELINE, "producers");

/*
 * Test builds define SSQ_FAULT_HOOKS and ssq_fault_hook() to die (or stop)
 * at chosen points of the protocol; everyone else compiles the
 * calls away.
 */
enum {
	SSQ_HOOK_AFTER_ADD = 1,
	SSQ_HOOK_AFTER_RECORD = 2,
	SSQ_HOOK_BEFORE_PUBLISH = 3,
	SSQ_HOOK_DB_LEASE = 4,      /* holding the doorbell lease (ssq_submit) */
	SSQ_HOOK_CQ_LEASE = 5,      /* holding the CQ lease (ssq_progress) */
	SSQ_HOOK_COMBINE_TAKEN = 6, /* a combiner holding others' requests, unpublished */
	SSQ_HOOK_COMBINE_BUILT = 7, /* a combiner mid-batch: some published, not all */
	SSQ_HOOK_COMBINE_ROLE = 8,  /* the combiner role taken, nothing else yet */
	SSQ_HOOK_CQ_ROUTE = 9,      /* routing, about to deliver (ssq__route) */
	SSQ_HOOK_OUTCOME_SEQ = 10,  /* settling a TAKEN request: its publish word read */
	SSQ_HOOK_COMBINE_LONE = 11, /* the lone fast path: the role and one WQEBB held */
};
/*
 * Benchmark builds (cmake -DSSQ_BENCH_LINE_COUNTS=ON: ssq_micro_lines)
 * count, per thread, the writes to each line of the control block more
 * than one producer writes: stores and locked read-modify-writes, failed
 * CASes too (each takes the line exclusive, as a store does). Issue 29:
 * which line bounces, how often per WQE. Everyone else compiles them away.
 */
enum {
	SSQ_LINE_RESERVE,    /* reserve */
	SSQ_LINE_COMBINE,    /* comb_pending, comb_role */
	SSQ_LINE_PUBLISHED,  /* published */
	SSQ_LINE_DOORBELL,   /* db_lease, bf_offset, db_value */
	SSQ_LINE_COMPLETED,  /* completed */
	SSQ_LINE_CQ_LEASE,   /* cq_lease, cq_ci */
	SSQ_LINE_SLOT,       /* a slot's line (two slots a line) */
	SSQ_LINE_ROUTED,     /* a producer's router-written line (done, comp_head) */
	SSQ_LINE_HAND_OWN,   /* our hand-over slot, which combiners read and CAS */
	SSQ_LINE_HAND_OTHER, /* another producer's hand-over slot (a combiner's CAS) */
	SSQ_LINE_COUNT
};
#ifdef SSQ_LINE_COUNTS
extern __thread uint64_t ssq_line_writes[SSQ_LINE_COUNT];
#define SSQ__LINE_W(line) ((void)ssq_line_writes[line]++)
#else
#define SSQ__LINE_W(line) ((void)0)
#endif

#ifdef SSQ_FAULT_HOOKS
void ssq_fault_hook(int where);
#define SSQ__HOOK(where) ssq_fault_hook(where)
#else
#define SSQ__HOOK(where) ((void)0)
#endif

SSQ_INLINE struct ssq_ctl_slot *ssq__slot(const struct ssq_producer *p, uint64_t pos)
{
	return &p->slots[pos & p->slot_mask];
}

/*
 * The queue's forced signal, in the WQE of @len WQEBBs at @pos itself: the
 * control segment's CE bits (fm_ce_se, MLX5_WQE_CTRL_CQ_UPDATE = CE 2, "CQE
 * always", as rdma-core's _mlx5_post_send in providers/mlx5/qp.c and the
 * kernel's finish_wqe in drivers/infiniband/hw/mlx5/wr.c set them for a
 * signaled WR) on the WQE that crosses a multiple of signal_every, as
 * ssq_wqe_flags computes. Without it a producer that built with plain
 * flags leaves `completed` behind for good once it has posted a ring's
 * worth, and every producer gets -EAGAIN. Before the publish word (R1a),
 * so the device, which reads the WQE only after the doorbell that follows
 * the scan (A1a), sees it.
 */
SSQ_INLINE void ssq__force_signal(const struct ssq_producer *p, uint64_t pos,
                                  unsigned len)
{
	if (((pos + len) ^ pos) >= p->signal_every) {
		struct mlx5_wqe_ctrl_seg *ctrl =
		    (struct mlx5_wqe_ctrl_seg *)ssq_sq_wqebb(&p->sq, (uint32_t)pos);

		ctrl->fm_ce_se |= MLX5_WQE_CTRL_CQ_UPDATE;
	}
}

/* ---- routing completions (the CQ lease held: ssq_progress) ---- */

/*
 * The verbs opcode of a requester completion from the WQE's mlx5 opcode
 * (the control segment's low byte), as libmlx5's handle_good_req
 * (providers/mlx5/cq.c, rdma-core v44) maps the CQE's copy of it
 * (sop_drop_qpn >> 24): *_IMM also set IBV_WC_WITH_IMM, atomics are 8
 * bytes. The WQE is read rather than the CQE because one CQE completes
 * every WQE up to its wqe_counter, and only the last one's opcode is in it.
 */
SSQ_INLINE enum ibv_wc_opcode ssq__wc_opcode(uint8_t op, uint8_t *wc_flags)
{
	switch (op) {
	case MLX5_OPCODE_RDMA_WRITE_IMM:
		*wc_flags = IBV_WC_WITH_IMM;
		return IBV_WC_RDMA_WRITE;
	case MLX5_OPCODE_RDMA_WRITE:
		return IBV_WC_RDMA_WRITE;
	case MLX5_OPCODE_SEND_IMM:
		*wc_flags = IBV_WC_WITH_IMM;
		return IBV_WC_SEND;
	case MLX5_OPCODE_SEND:
	case MLX5_OPCODE_SEND_INVAL:
		return IBV_WC_SEND;
	case MLX5_OPCODE_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case MLX5_OPCODE_ATOMIC_CS:
		return IBV_WC_COMP_SWAP;
	case MLX5_OPCODE_ATOMIC_FA:
		return IBV_WC_FETCH_ADD;
	default:
		return SSQ_WC_NOP;
	}
}

/*
 * Deliver the completion of the WQE at @pos to its owner. The WQE is still
 * in the ring: its WQEBBs go back to producers only with the `completed`
 * store (R3) after the walk that calls this.
 */
SSQ_INLINE void ssq__deliver(struct ssq_producer *p, uint32_t owner, uint64_t pos,
                             uint64_t wr_id, const struct ssq_cqe *cqe, int failed)
{
	struct ssq_ctl_producer *o = &p->ctl->producers[owner];
	/* @owner < SSQ_MAX_PRODUCERS (the caller checked); the ring size is ours. */
	struct ssq_completion *ring = p->comp_all + (size_t)owner * (p->comp_mask + 1);
	uint64_t head = o->comp_head;
	struct ssq_completion *c = &ring[head & p->comp_mask];
	const struct mlx5_wqe_ctrl_seg *ctrl =
	    (const struct mlx5_wqe_ctrl_seg *)ssq_sq_wqebb(&p->sq, (uint32_t)pos);

	if (pos + 1 <= o->deliv_pos)
		return; /* a router before us delivered it, then died */

	c->wr_id = wr_id;
	c->status = failed ? (int32_t)cqe->status : IBV_WC_SUCCESS;
	c->syndrome = failed ? cqe->syndrome : 0;
	c->vendor_err = failed ? cqe->vendor_err : 0;
	c->mlx5_opcode = failed ? MLX5_CQE_REQ_ERR : MLX5_CQE_REQ;
	c->wc_flags = 0;
	c->opcode =
	    ssq__wc_opcode((uint8_t)be32toh(ctrl->opmod_idx_opcode), &c->wc_flags);
	c->byte_len = failed ? 0
	              : c->opcode == IBV_WC_COMP_SWAP || c->opcode == IBV_WC_FETCH_ADD
	                  ? 8
	                  : cqe->byte_len;
	c->qp_num = p->sq.qpn;
	c->imm_data = c->wc_flags ? ctrl->imm : 0;
	o->deliv_pos = pos + 1;
	SSQ__LINE_W(SSQ_LINE_ROUTED);
	/*
	 * R5: the entry before the head that exposes it; pairs with A5a
	 * (ssq_poll reads the entry) and A5b (ssq_reserve counts the ring's
	 * fill towards its room).
	 */
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
		SSQ__LINE_W(SSQ_LINE_ROUTED);
		/*
		 * R6: pairs with A6a (the owner's flow control: its completion
		 * ring was filled first, R5) and A6b (ssq_ctl_claim: a retired
		 * record is reusable once everything it published is counted).
		 */
		__atomic_store_n(&o->done, o->done + n, __ATOMIC_RELEASE);
	}
}

/*
 * ssq__cq_lease_held - is the CQ lease still @lease, the value its router
 * took it with (its id + 1; SSQ_LEASE_OWNER for ssqd's own routing in
 * ssq_ctl_rebuild)? A router may be descheduled for any time while it
 * holds the lease, and ssqd's stall watch then takes the lease back and
 * starts the queue over without killing it (C10, grab_lease in
 * src/dv/queue_rebuild.c: a holder past the deadline). What the router
 * read before - `completed`, the CQ index, slots, an owner's comp_head -
 * is then the old epoch's, and stored into the new one it replays or
 * misroutes completions and rewinds the counters. So each group of stores
 * that publishes routing comes after this look, and a router that finds
 * the lease gone stops at once and stores nothing more, not even the
 * lease's release (it may be another router's by then).
 * A14: acquire, pairs with C10 (the owner's CAS to SSQ_LEASE_OWNER) and R7
 * (a release after the rebuild): a router that sees either sees the
 * lease is not its own any more; and no store of the group that follows
 * can be made before this load. Left to the domain: a router descheduled
 * for 10 x --stall-ms between this look and the few stores after it
 * (docs/design.md, "Stalls").
 */
SSQ_INLINE int ssq__cq_lease_held(const struct ssq_ctl *ctl, uint32_t lease)
{
	return __atomic_load_n(&ctl->cq_lease, __ATOMIC_ACQUIRE) == lease;
}

/*
 * Route what the CQ holds: called with the CQ lease, taken as @lease. A
 * CQE with wqe_counter w completes every WQE from `completed` through the
 * one whose index is w. Unsignaled WQEs only count towards their owner's
 * `done`, one store per run of the same owner; signaled (or failed) ones
 * are delivered. Returns the CQEs consumed, or -ESTALE when the lease was
 * taken from us meanwhile (ssq__cq_lease_held): the caller must not
 * release it.
 */
SSQ_INLINE int ssq__route(struct ssq_producer *p, uint32_t lease)
{
	struct ssq_ctl *ctl = p->ctl;
	struct ssq_cqe cqe;
	struct mlx5_cqe64 *raw;
	/*
	 * Relaxed: only CQ lease holders store it (R3), and A7 made the last
	 * one's store visible. After a router died holding the lease (broken
	 * by ssq_ctl_heal, never released) the value may be stale: that only
	 * walks WQEs again that done_pos and deliv_pos then skip.
	 */
	uint64_t c = __atomic_load_n(&ctl->completed, __ATOMIC_RELAXED);
	/* A2a: pairs with R2 (ssq_submit): the slots below it are published. */
	uint64_t end = __atomic_load_n(&ctl->published, __ATOMIC_ACQUIRE);
	uint64_t run_last = 0, run_n;
	uint32_t run_owner;
	int n = 0;

	/* A4: pairs with R4, directly: a dead router released no lease. */
	p->cq.ci = __atomic_load_n(&ctl->cq_ci, __ATOMIC_ACQUIRE);
	while ((raw = ssq_cq_peek(&p->cq)) != NULL) {
		int failed;

		ssq_cqe_decode(raw, &cqe);
		failed = cqe.status != IBV_WC_SUCCESS;
		/*
		 * A2b: pairs with R2. Every slot below `published` was
		 * published (R1a/R1b), and the holder that moved it over them
		 * acquired their publish words (A1a) before its R2: their
		 * owner, flags, wr_id and len are visible here.
		 */
		end = __atomic_load_n(&ctl->published, __ATOMIC_ACQUIRE);
		/*
		 * No more than a ring from `completed`, whatever a client wrote
		 * in `published`: the walk holds the CQ lease and must end.
		 */
		if (ssq_unlikely(end - c > (uint64_t)p->slot_mask + 1))
			end = c + p->slot_mask + 1;
		run_owner = SSQ_OWNER_NONE;
		run_n = 0;
		while (c < end) {
			struct ssq_ctl_slot *s = ssq__slot(p, c);
			int target = (uint16_t)c == cqe.wqe_counter;
			uint32_t owner = s->owner;

			/*
			 * One compare for both: SSQ_OWNER_NONE is out of range,
			 * and so is whatever else a client wrote there.
			 */
			if (owner < SSQ_MAX_PRODUCERS) {
				/*
				 * A dead owner's completions go nowhere (A10a:
				 * pairs with R10a/R10b, DEAD; its record may be
				 * reclaimed for another process). Delivered
				 * before done is counted: the owner's flow
				 * control must not see room its completion ring
				 * lacks.
				 */
				if (((s->flags & SSQ_SLOT_USER_SIGNALED) ||
				     (target && failed)) &&
				    __atomic_load_n(&ctl->producers[owner].state,
				                    __ATOMIC_ACQUIRE) != SSQ_PROD_DEAD) {
					SSQ__HOOK(SSQ_HOOK_CQ_ROUTE);
					if (ssq_unlikely(!ssq__cq_lease_held(ctl, lease)))
						return -ESTALE;
					ssq__deliver(p, owner, c, s->wr_id, &cqe,
					             target && failed);
				}
				if (owner != run_owner) {
					if (run_owner != SSQ_OWNER_NONE) {
						if (ssq_unlikely(
						        !ssq__cq_lease_held(ctl, lease)))
							return -ESTALE;
						ssq__count_done(ctl, run_owner, run_last,
						                run_n);
					}
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
		/* The CQE's stores: done, ERROR, the CI record, R3 and R4. */
		if (ssq_unlikely(!ssq__cq_lease_held(ctl, lease)))
			return -ESTALE;
		if (run_owner != SSQ_OWNER_NONE)
			ssq__count_done(ctl, run_owner, run_last, run_n);
		if (failed)
			/* R8a: pairs with A8 (ssq_reserve: -EIO from now on). */
			__atomic_store_n(&ctl->state, SSQ_CTL_ERROR, __ATOMIC_RELEASE);
		p->cq.ci++;
		n++;
		/*
		 * The CQE's slot goes back to the NIC (consumer-index record)
		 * before its WQEBBs go back to the producers (R3): a WR posted
		 * into them completes into a CQ the NIC already counts as having
		 * room, so the send CQ - a CQE per WQEBB of the ring at most
		 * (shm_scq_cqes) - never overruns.
		 */
		ssq_cq_update_ci(&p->cq);
		/*
		 * R3: the WQEBBs below c may be overwritten once `completed` says
		 * so, and every slot read above comes first; pairs with A3a and
		 * A3b (ssq_reserve's room), A3c (ssq_ctl_heal's room) and A3d
		 * (ssq_ctl_drained). Stored per CQE, with cq_ci (R4: pairs with
		 * A4, the next router), so a router that dies here loses at most
		 * this CQE's bookkeeping, which the next one redoes idempotently.
		 */
		__atomic_store_n(&ctl->completed, c, __ATOMIC_RELEASE);
		__atomic_store_n(&ctl->cq_ci, p->cq.ci, __ATOMIC_RELEASE);
		SSQ__LINE_W(SSQ_LINE_COMPLETED);
		SSQ__LINE_W(SSQ_LINE_CQ_LEASE);
	}
	/* Before the caller's release of the lease (R7): still ours? */
	if (ssq_unlikely(!ssq__cq_lease_held(ctl, lease)))
		return -ESTALE;
	return n;
}

/* ---- publish and submit (the model's S5-S7) ---- */

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
 * publish store (R1a) and scan load (A1a) is seq_cst instead of C3, the
 * fence-free way to the same order.
 */
#define SSQ__PUBLISH_ORDER __ATOMIC_SEQ_CST
#define SSQ__SCAN_ORDER    __ATOMIC_SEQ_CST
SSQ_INLINE void ssq__publish_scan_fence(void)
{
}
SSQ_INLINE void ssq__count_then_look_fence(void)
{
}
#else
#define SSQ__PUBLISH_ORDER __ATOMIC_RELEASE
#define SSQ__SCAN_ORDER    __ATOMIC_ACQUIRE
/*
 * C3 (model S6b), on the path where the doorbell lease was held: orders
 * this producer's publish stores (R1a, release) before its re-read of the
 * lease (C4). The holder H releases the lease with a seq_cst store (C5)
 * and then reads the publish word at its new head (C6, seq_cst). If our C4
 * read sees the lease still held, that read comes before H's C5 in the
 * lease's modification order, so our fence precedes C5, and so H's C6, in
 * the single total order (C11 fence rules): C6 sees our WQE, and H goes
 * round again for it. In C11 a failed CAS (C2) is only a load, hence the
 * fence; on x86 the failed lock cmpxchg already drained the store buffer,
 * and the fence (mfence) costs little after it. It is off the uncontended
 * path entirely: one locked instruction per side of the lease there.
 * x86: mfence; arm64: dmb ish.
 */
SSQ_INLINE void ssq__publish_scan_fence(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/*
 * R6 (ssq_wait and the wait fd's thread, against W6 in ssqd's
 * ssqd_queue_send_event): orders a sleeper's count of itself in `waiters` (a
 * seq_cst add) before its last look at the CQ (acquire loads of a CQE's
 * owner byte), as the device's side orders its CQE before its load of
 * `waiters` with a fence of its own: one of the two sees the other, so a
 * CQE written after the look is announced. Slow path only (before a
 * sleep). x86: mfence; arm64: dmb ish.
 */
SSQ_INLINE void ssq__count_then_look_fence(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}
#endif

/*
 * A producer about to sleep on @ctl's wake_seq (ssq_wait, a wait fd's
 * thread), before its last look at the CQ: its sign of life first
 * (wait_beat: ssqd wakes only counts whose beat moves; the count's seq_cst
 * add releases it, so whoever sees the count sees the beat moved), then
 * its count, then R6. The caller takes the count back after its sleep.
 */
SSQ_INLINE void ssq__sleeper_in(struct ssq_ctl *ctl)
{
	__atomic_fetch_add(&ctl->wait_beat, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&ctl->waiters, 1, __ATOMIC_SEQ_CST);
	ssq__count_then_look_fence(); /* R6 */
}

/*
 * The model's S7b: the end of the run of contiguous published WQEs from @h
 * (the lease holder's scan). A length read after its seq belongs to this
 * pass: the slot is reused only after `completed`, hence `published`,
 * passed it, and only the lease holder - we - moves `published`. A length
 * of 0 (a slot cleared by ssq_ctl_reset under a late publisher) is stepped
 * over as one WQEBB, as the router and the healer do.
 */
SSQ_INLINE uint64_t ssq__scan(struct ssq_producer *p, uint64_t h)
{
	for (;;) {
		struct ssq_ctl_slot *s = ssq__slot(p, h);
		uint16_t len;

		/*
		 * A1a: pairs with R1a (ssq_publish) and R1b (ssq_ctl_heal's
		 * NOPs): a matching seq means the WQE and its slot metadata are
		 * visible, for the DBR (the device) and for R2 (the router).
		 */
		if (__atomic_load_n(&s->seq, SSQ__SCAN_ORDER) != h + 1)
			return h;
		len = __atomic_load_n(&s->len, __ATOMIC_RELAXED); /* after A1a */
		h += len ? len : 1;
	}
}

/*
 * The model's S6: take the doorbell lease, or make sure its holder will
 * see our WQEs. C2 one CAS; C3 and C4 when it fails: fence, then re-read
 * the lease - free again: try again; held: return 0, its holder's C6 look
 * covers us (see ssq__publish_scan_fence). Never waits for a holder.
 * Returns 1 holding it.
 */
SSQ_INLINE int ssq__lease_try(struct ssq_producer *p)
{
	struct ssq_ctl *ctl = p->ctl;

	for (;;) {
		uint32_t zero = 0;

		SSQ__LINE_W(SSQ_LINE_DOORBELL);
		/*
		 * C2 (S6a): acquires what the last holder released with C5
		 * (its `published`, `db_value`, `bf_offset`, the DBR). seq_cst,
		 * failure too: on x86 a lock cmpxchg either way, which drains
		 * our publish stores before the load (TSO argument, the model's
		 * -DTSO); C11 needs C3 for that on failure.
		 */
		if (__atomic_compare_exchange_n(&ctl->db_lease, &zero, p->id + 1, 0,
		                                __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			return 1;
		ssq__publish_scan_fence(); /* C3 (S6b) */
		/* C4 (S6c): the lease load the Dekker argument pairs with C5/C6. */
		if (__atomic_load_n(&ctl->db_lease, __ATOMIC_SEQ_CST) != 0)
			return 0;
	}
}

/*
 * Does @c look like the control segment of a WQE of ours that starts at @j:
 * this QP's number and @j as its WQE index? The device takes both from the
 * doorbell (emu/sq_doorbell.c; on a UAR page several QPs share, the QPN
 * picks the SQ), and the slots and the ring are client-writable.
 */
SSQ_INLINE int ssq__ctrl_is(const struct ssq_producer *p,
                            const struct mlx5_wqe_ctrl_seg *c, uint64_t j)
{
	return (c->qpn_ds & htobe32(0xffffff00)) == p->sq.qpn_ds_be &&
	       ((be32toh(c->opmod_idx_opcode) >> 8) & 0xffff) == (j & 0xffff);
}

/*
 * The doorbell's 8 bytes for the WQEs below @end: the control segment of
 * the WQE that ends there (searched back, <= 16 WQEBBs, a length of 0
 * stepped as 1 like the scan), when it checks out; else bytes of our own
 * in @spare, naming this QP and the last WQEBB, so that whatever a client
 * wrote into the slots or the ring, the doorbell never names another QP.
 */
SSQ_INLINE const struct mlx5_wqe_ctrl_seg *
ssq__last_ctrl(struct ssq_producer *p, uint64_t end, struct mlx5_wqe_ctrl_seg *spare)
{
	uint64_t j;

	for (j = end - 1; j + 16 >= end && j + 1 > 0; j--) {
		struct ssq_ctl_slot *s = ssq__slot(p, j);
		uint16_t len;

		/* A1b: pairs with R1a/R1b: the WQE's control segment is written. */
		if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != j + 1)
			continue;
		len = __atomic_load_n(&s->len, __ATOMIC_RELAXED);
		if (j + (len ? len : 1) == end) {
			/*
			 * One 8-byte load: the bytes checked are the bytes rung,
			 * whatever a client writes into the ring meanwhile.
			 */
			uint64_t w = __atomic_load_n(
			    (const uint64_t *)ssq_sq_wqebb(&p->sq, (uint32_t)j),
			    __ATOMIC_RELAXED);

			__builtin_memcpy(spare, &w, sizeof(w));
			if (ssq_likely(ssq__ctrl_is(p, spare, j)))
				return spare;
			break;
		}
	}
	spare->opmod_idx_opcode =
	    htobe32((uint32_t)(((end - 1) & 0xffff) << 8) | MLX5_OPCODE_NOP);
	spare->qpn_ds = p->sq.qpn_ds_be | htobe32(1);
	return spare;
}

/*
 * The model's S7c (2) and (3): the doorbell for everything below @v, with
 * the doorbell lease held. The one doorbell sequence of <ssq/doorbell.h>
 * (DBR, barrier, 8-byte UAR write, flush; never BlueFlame: see there), at
 * the UAR half kept here in shared memory, as each producer has its own
 * copy of the struct ssq_sq. The flush is inside the lease, so the next
 * holder's doorbell cannot overtake ours.
 */
SSQ_INLINE void ssq__ring(struct ssq_producer *p, uint64_t v)
{
	struct ssq_ctl *ctl = p->ctl;
	struct mlx5_wqe_ctrl_seg spare;
	/*
	 * 0 or bf_size (a power of two), whatever a client wrote: the UAR
	 * store must stay inside our register.
	 */
	uint32_t half = ctl->bf_offset & p->sq.bf_size;

	ssq_sq_ring_db_at(&p->sq, (uint32_t)v, ssq__last_ctrl(p, v, &spare), half);
	ctl->bf_offset = half ^ p->sq.bf_size;
	SSQ__LINE_W(SSQ_LINE_DOORBELL);
	/*
	 * The model's `bell`. Relaxed: only lease holders read or write it,
	 * and the lease (C5 -> C2) orders them.
	 */
	__atomic_store_n(&ctl->db_value, v, __ATOMIC_RELAXED);
}

#ifdef __cplusplus
}
#endif

#endif /* SSQ_QUEUE_PVT_H */
