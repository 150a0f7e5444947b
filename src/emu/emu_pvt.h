/* SPDX-License-Identifier: MIT */
/*
 * emu_pvt.h - the emulated device's private objects. Not installed, not for
 * users: include <ssq/emu.h>.
 */
#ifndef SSQ_EMU_PVT_H
#define SSQ_EMU_PVT_H

#include <stdio.h>
#include <time.h>
#include <pthread.h>
#include <ssq/ssq.h>
#include "emu/emu.h"

struct emu_pd {
	struct emu_dev *dev;
	struct emu_pd *next, *prev; /* the device's list, freed at close */
	unsigned users;             /* MRs, QPs, SRQs */
};

/*
 * An entry of the key table: a memory region, or a type-2 memory window
 * (mw.c). Both are mkeys on a ConnectX, one index space and one 8-bit
 * variant each; a window's addr, fd, iova, len and access say what its
 * bind gave it, so translation treats both alike.
 */
enum emu_key_type {
	EMU_KEY_MR = 0,
	EMU_KEY_MW = 2, /* IBV_MW_TYPE_2 */
};

struct emu_mr {
	struct emu_pd *pd;
	uint8_t *addr; /* host address of iova, or its address in @fd */
	int fd;        /* -1: host memory; else a memory file (emu_reg_mr_file) */
	uint64_t iova;
	uint64_t len;
	uint32_t key;
	int access;
	uint8_t type;   /* enum emu_key_type */
	unsigned binds; /* MR: windows bound to it now (emu_dereg_mr: -EBUSY) */
	/* MW: bound (valid) or free; the QP it is bound to, the MR it covers. */
	uint8_t bound;
	struct emu_qp *qp;
	struct emu_mr *target;
};

struct emu_cq {
	struct emu_dev *dev;
	uint8_t *buf;
	__be32 *dbrec;
	uint32_t cqe_cnt;
	uint32_t cqn;
	uint32_t pi;        /* CQEs written, free-running */
	unsigned users;     /* QPs */
	int overrun;        /* sticky; read by emu_cq_error() */
	int ignore_overrun; /* emu_cq_attr's */
	/*
	 * emu_cq_set_event's handler; due: CQEs written since it was last
	 * called, event_cqes of them (the count it is called with).
	 */
	void (*event_fn)(void *arg, unsigned cqes);
	void *event_arg;
	int event_due;
	unsigned event_cqes;
	int armed;  /* emu_cq_arm: one event due at the next CQE */
	int arm_fd; /* where it goes */
};

struct emu_srq {
	struct emu_pd *pd;
	uint8_t *buf;
	__be32 *dbrec;
	uint32_t wqe_cnt;
	uint32_t stride;
	uint32_t srqn;
	uint32_t cc;    /* receives consumed, free-running */
	uint16_t head;  /* next WQE the device takes, along the free list */
	unsigned users; /* QPs */
};

struct emu_qp {
	struct emu_dev *dev;
	struct emu_pd *pd;
	struct emu_cq *send_cq, *recv_cq;
	struct emu_srq *srq;
	struct ssq_sq sq; /* the device's view: buf, buf_end, wqe_cnt, qpn */
	__be32 *dbrec;
	uint8_t *rq_buf;
	uint32_t rq_wqe_cnt, rq_stride;
	uint32_t qpn;

	enum ibv_qp_state state;
	uint32_t sq_cc;        /* WQEBBs consumed, free-running */
	uint16_t last_dbr;     /* the DBR value last seen, to catch it going back */
	uint8_t dbr_bad;       /* a doorbell error froze the SQ until RESET */
	uint32_t rq_cc;        /* receive WQEs consumed, free-running */
	uint32_t rnr_tries;    /* attempts made for the SEND at sq_cc */
	uint64_t rnr_until_ns; /* RNR NAK timer: no retry before (CLOCK_MONOTONIC) */
	uint64_t msg_off;      /* bytes of the WQE at sq_cc moved on earlier visits */
	uint8_t *bf_reg;       /* the UAR doorbell register (two halves) */
	uint32_t db_last;      /* sq_cc of the last WQE a doorbell named */
	uint8_t db_rung;       /* db_last is valid: a doorbell came since RESET */
	uint64_t db_seen;      /* process() pass that first saw pending WQEs */
	uint8_t db_pending;    /* db_seen is valid */

	/* Attributes from modify_qp. */
	uint8_t port;
	int access; /* qp_access_flags: what peers may do here */
	uint32_t dest_qpn;
	uint8_t rnr_retry, retry_cnt, min_rnr_timer, timeout;
	uint8_t max_rd_atomic, max_dest_rd_atomic;
	enum ibv_mtu mtu;
	uint32_t sq_psn, rq_psn;

	struct emu_wire_qp *wire; /* the peer is remote (wire_pvt.h); NULL: here */
	/*
	 * SENDs of at most EMU_SCAT_CQE_MAX bytes go into the responder's CQE,
	 * not its receive buffer (emu_qp_attr.disable_scatter_to_cqe unset).
	 */
	uint8_t scatter_to_cqe;
	/*
	 * Requests that arrived here with an rkey this QP may not use (no such
	 * key, another QP's window, no access, out of range): a peer's
	 * guesses, counted per responder QP (emu_qp_access_errors).
	 */
	uint64_t access_errors;
	/* umr.c: the last WQE run was a UMR; WQEs that followed one unfenced. */
	uint8_t umr_last;
	uint64_t umr_unfenced;
};

/* Async events the device keeps for emu_get_async_event. */
#define EMU_ASYNC_MAX 64

struct emu_dev {
	pthread_mutex_t lock; /* one process() call, or one object/mode call */
	enum emu_mode mode;
	struct emu_fault fault;
	uint32_t stream_poll_ns; /* the device thread's wait while streaming */
	int no_cq_events;        /* emu_dev_attr's */
	uint8_t link_layer;      /* IBV_LINK_LAYER_INFINIBAND or _ETHERNET */
	enum ibv_mtu active_mtu; /* both ports' */
	uint64_t wqe_seq;        /* WQEs executed since the fault was set */
	int fault_hit;           /* the WQE failing now is the injected one */
	unsigned rr;             /* QP slot process() starts at, for fairness */
	uint64_t pass;           /* process() calls */
	unsigned dev_errors;
	FILE *trace;

	pthread_t thread;
	int thread_running;
	int stop;         /* __atomic: the thread's stop request */
	int kick_fd;      /* eventfd that ends the thread's nap (emu_set_idle_nap) */
	long idle_nap_ns; /* __atomic: the longest nap of an idle thread */

	unsigned nqp;                          /* highest QP slot used + 1 */
	struct emu_qp *qps[SSQ_EMU_MAX_QP];    /* by QPN - base */
	struct emu_cq *cqs[SSQ_EMU_MAX_CQ];    /* by CQN */
	struct emu_srq *srqs[SSQ_EMU_MAX_SRQ]; /* by SRQN */
	struct emu_mr *mrs[SSQ_EMU_MAX_MR];    /* by key >> 8 */
	unsigned mr_next;   /* where the search for a free MR slot starts */
	struct emu_pd *pds; /* list head */
	/* eventfd, nonzero while [ev_head, ev_tail) is not empty (async.c). */
	int async_fd;
	/* Async events not yet taken (async.c): [ev_head, ev_tail), free-running. */
	struct emu_async_event events[EMU_ASYNC_MAX];
	unsigned ev_head, ev_tail;
	struct emu_wire *wire; /* the UDP wire (wire_pvt.h); NULL: none */
	/* CQs with a completion event due (cq_event.c), in the order marked. */
	struct emu_cq *due[SSQ_EMU_MAX_CQ];
	unsigned ndue;
	/*
	 * Batches of events taken and not yet fired, and callers waiting in
	 * emu_cq_set_event / emu_destroy_cq for them (no batch is taken
	 * while one waits); fired: signalled as firing drops to 0. Both
	 * atomic (cq_event.c, F1/F2): a batch ends without the lock.
	 */
	unsigned firing, fire_waiters;
	pthread_cond_t fired;
};

/* A completion event taken from the device, to be fired unlocked. */
struct emu_cq_event {
	void (*fn)(void *arg, unsigned cqes);
	void *arg;
	unsigned cqes;
};

/* cq_arm.c. Lock held: a CQE was written into @cq; raise its armed event. */
void emu_cq_arm_written(struct emu_cq *cq);

/* cq_event.c. Lock held: mark @cq's event due (one more CQE was written). */
void emu_cq_event_due(struct emu_cq *cq);
/*
 * Lock held: move the due events to @out (SSQ_EMU_MAX_CQ room); how many.
 * None while a caller waits in emu_cq_events_settle: they stay due.
 */
unsigned emu_cq_events_take(struct emu_dev *dev, struct emu_cq_event *out);
/* Lock not held: call the handlers of what emu_cq_events_take returned. */
void emu_cq_events_fire(struct emu_dev *dev, const struct emu_cq_event *ev, unsigned n);
/* Lock held: wait until no batch taken so far is still being fired. */
void emu_cq_events_settle(struct emu_dev *dev);

/*
 * One piece of a gather or scatter list, resolved: @len bytes at host
 * address @p (@fd < 0), or at address @p of the memory file @fd (a
 * client's /proc/PID/mem; mem_io.c).
 */
struct emu_sg {
	uint8_t *p;
	uint32_t len;
	int fd;
};

/* emu_piece_move and the list copies: which side an access failed on. */
#define EMU_FAULT_SRC (-1)
#define EMU_FAULT_DST (-2)

/*
 * The most pieces one WQE resolves to: a send WQE has at most 62 data
 * segments (63 DS less ctrl), an inline run splits in two at the ring wrap;
 * a receive WQE of EMU_MAX_RECV_STRIDE bytes has at most 64 segments.
 */
#define EMU_MAX_SG          64
#define EMU_MAX_RECV_STRIDE (EMU_MAX_SG * 16)

/* CLOCK_MONOTONIC in ns: the device's timers (RNR, wire retries, stream wait). */
static inline uint64_t emu_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* The RNR NAK timer of code @code (IB spec table 45, 10 us units; 0: 655.36 ms). */
static inline uint64_t emu_rnr_timer_ns(unsigned code)
{
	static const uint16_t ten_us[32] = { 65535, 1,     2,     3,    4,    6,    8,
		                             12,    16,    24,    32,   48,   64,   96,
		                             128,   192,   256,   384,  512,  768,  1024,
		                             1536,  2048,  3072,  4096, 6144, 8192, 12288,
		                             16384, 24576, 32768, 49152 };

	return (uint64_t)(code & 31 ? ten_us[code & 31] : 65536) * 10000;
}

/* The 16-byte segment @i units after the control segment at ring offset
 * @off; a WQE near the ring end continues at WQEBB 0, as the NIC reads it. */
static inline uint8_t *emu_wqe_seg(const struct emu_qp *qp, size_t off, unsigned i)
{
	size_t ring = (size_t)qp->sq.wqe_cnt * MLX5_SEND_WQE_BB;

	return qp->sq.buf + ((off + (size_t)i * SSQ_WQE_DS_BYTES) & (ring - 1));
}

/*
 * CMP_SWAP (@fetch_add 0) or FETCH_ADD on the 8 bytes at @target, as a
 * native 64-bit integer; returns the original value. An MR's host address
 * may be unaligned even when the IOVA is not: then it is done by copies.
 */
static inline uint64_t emu_atomic_apply(uint8_t *target, int fetch_add, uint64_t arg,
                                        uint64_t cmp)
{
	uint64_t old, want;

	if ((uintptr_t)target & 7) {
		memcpy(&old, target, 8);
		want = fetch_add ? old + arg : old == cmp ? arg : old;
		memcpy(target, &want, 8);
	} else if (fetch_add) {
		old = __atomic_fetch_add((uint64_t *)target, arg, __ATOMIC_SEQ_CST);
	} else {
		old = cmp;
		__atomic_compare_exchange_n((uint64_t *)target, &old, arg, 0,
		                            __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	}
	return old;
}

/*
 * Who calls whom, file by file, leaves first: a file calls only files
 * listed above it, so no two files call each other, directly or round a
 * circle, and each can be read knowing only those above it:
 *	trace.c  fault.c  mem_io.c  wire_io.c  wire_qp.c  qp_size.c  async.c
 *	wire_peer.c  port.c  (leaves)
 *	translate.c     mem_io
 *	qp_state.c      wire_qp, async, port
 *	cqe_writer.c    qp_state, trace, async
 *	recv_queue.c    trace
 *	sq_doorbell.c   qp_state, trace
 *	execute.c       translate, recv_queue, sq_doorbell, cqe_writer, qp_state, trace
 *	flush.c         sq_doorbell, cqe_writer, trace
 *	wire_req.c      translate, sq_doorbell, cqe_writer, qp_state, trace, wire_io,
 *	                wire_peer
 *	wire_resp.c     translate, recv_queue, cqe_writer, qp_state, wire_io
 *	wire_rx.c       translate, wire_req, wire_resp
 *	wire.c          wire_qp
 *	engine.c        execute, flush, wire_req, wire_rx, wire_io, wire
 *	device.c        engine, fault, wire, wire_qp, qp_size
 */

/* ---- mem_io.c: bytes to and from one resolved piece ---- */
/* @n bytes at @off into @piece from @src / out of it to @dst: 0 or -EFAULT. */
int emu_piece_write(const struct emu_sg *piece, uint64_t off, const void *src,
                    uint32_t n);
int emu_piece_read(const struct emu_sg *piece, uint64_t off, void *dst, uint32_t n);
/* @n bytes from @src + @soff to @dst + @doff: 0, EMU_FAULT_SRC or EMU_FAULT_DST. */
int emu_piece_move(const struct emu_sg *dst, uint64_t doff, const struct emu_sg *src,
                   uint64_t soff, uint32_t n);
/* emu_atomic_apply on the 8 bytes of @target: 0 and *@old, or -EFAULT. */
int emu_piece_atomic(const struct emu_sg *target, int fetch_add, uint64_t arg,
                     uint64_t cmp, uint64_t *old);

/* ---- translate.c: keys, addresses and QPNs to host objects ---- */
/* The QP numbered @qpn on @dev, or NULL. */
struct emu_qp *emu_qp_by_qpn(struct emu_dev *dev, uint32_t qpn);
/*
 * Resolve the gather or scatter segments [@first, @ds) of the send WQE at
 * ring offset @off into @sg. Inline data is taken from the ring itself (in
 * at most two pieces, split by the wrap). @write: the device writes there
 * (READ and atomic results) and needs IBV_ACCESS_LOCAL_WRITE.
 * Returns the piece count, or -syndrome.
 */
int emu_sq_sg(const struct emu_qp *qp, size_t off, unsigned first, unsigned ds, int write,
              struct emu_sg *sg, uint64_t *total);
/*
 * Resolve the scatter list of a receive WQE (RQ: data x n; SRQ: after the
 * next segment) under the responder @qp's PD. A data segment with
 * MLX5_INVALID_LKEY ends the list early. Returns the piece count or
 * -syndrome (LOCAL_PROT_ERR) for the responder.
 */
int emu_rq_sg(const struct emu_qp *qp, const uint8_t *wqe, unsigned nseg,
              struct emu_sg *sg, uint64_t *cap);
/*
 * The range [@raddr, +@len) under @rkey at the responder @qp with @need
 * access, as one piece in *@out. Returns 0, or -1 (no such key, not this
 * PD, access or range wrong).
 */
int emu_remote_sg(struct emu_qp *qp, uint64_t raddr, uint32_t rkey, uint64_t len,
                  int need, struct emu_sg *out);
/* keys.c: give @m a free key slot and a fresh key (lock held); -ENOMEM. */
int emu_key_slot(struct emu_dev *dev, struct emu_mr *m);
/* keys.c: a key variant drawn at random, never 0 (device lock held or not). */
uint8_t emu_key_variant(void);
/* mw.c: free every window bound to @qp, as its destruction does (lock held). */
void emu_mw_qp_gone(struct emu_qp *qp);
/* mw.c: emu_bind_mw's checks and effect, lock held; its returns. */
int emu_mw_bind_locked(struct emu_qp *qp, struct emu_mr *mw, struct emu_mr *mr,
                       uint64_t iova, uint64_t len, int access, uint32_t rkey);
/* mw.c: @mw back to free, if bound (lock held). */
void emu_mw_unbind(struct emu_mr *mw);
/*
 * umr.c: run the UMR WQE (a type-2 window's bind or LOCAL_INV, the bytes
 * of <ssq/wqe_mw.h>) of @ds DS whose control segment is @ctrl, at ring
 * offset @off of @qp's SQ (lock held). Returns 0 or a requester syndrome.
 */
int emu_umr_exec(struct emu_qp *qp, const struct mlx5_wqe_ctrl_seg *ctrl, size_t off,
                 unsigned ds);
/*
 * umr.c: note the fence of a WQE of @qp with @fm_ce_se about to run: one
 * right after a UMR without MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE (or
 * MLX5_WQE_CTRL_FENCE) counts in umr_unfenced (lock held).
 */
void emu_umr_fence_note(struct emu_qp *qp, uint8_t fm_ce_se);
/*
 * Copy @total bytes from the pieces of @src to those of @dst. Returns 0,
 * or EMU_FAULT_SRC / EMU_FAULT_DST: that side's memory could not be reached
 * (its process is gone, or unmapped it), the copy stopped there.
 */
int emu_sg_copy(const struct emu_sg *dst, const struct emu_sg *src, uint64_t total);
/* The same for the @len bytes that start @off bytes into both lists. */
int emu_sg_copy_at(const struct emu_sg *dst, const struct emu_sg *src, uint64_t off,
                   uint64_t len);
/*
 * Copy @len bytes into (scatter: a received packet's payload) or out of
 * (gather: a packet being built) the scatter/gather list @sg, starting @off
 * bytes into it. The caller has checked that [off, off + len) lies within
 * the list. Returns 0, or -EFAULT when a piece's memory cannot be reached.
 */
int emu_sg_scatter(const struct emu_sg *sg, uint64_t off, const uint8_t *src,
                   uint32_t len);
int emu_sg_gather(uint8_t *dst, const struct emu_sg *sg, uint64_t off, uint32_t len);

/* ---- async.c ---- */
/* Queue an async event (@qpn / @cqn: its object, else 0). Lock held. */
void emu_async_post(struct emu_dev *dev, enum ibv_event_type type, uint32_t qpn,
                    uint32_t cqn);

/* ---- qp_state.c ---- */
/* Move to ERR (flushing starts on the next process()); lock held. */
void emu_qp_to_err(struct emu_qp *qp);
/*
 * Move to ERR for an error no CQE reports, and say so with the async event
 * @type (IBV_EVENT_QP_FATAL, _QP_REQ_ERR, _QP_ACCESS_ERR). Lock held.
 */
void emu_qp_to_err_event(struct emu_qp *qp, enum ibv_event_type type);

/* ---- cqe_writer.c ---- */
/*
 * Write one successful requester CQE (MLX5_CQE_REQ) for the WQE of opcode
 * @wqe_opcode (MLX5_OPCODE_*) at @wqe_counter; @byte_cnt: bytes read
 * (RDMA_READ), 8 (atomics), else 0. Returns 0, or -EOVERFLOW when @cq
 * overran (the CQE is dropped and the CQ's QPs moved to ERR).
 */
int emu_cqe_req(struct emu_cq *cq, uint8_t wqe_opcode, uint32_t qpn, uint16_t wqe_counter,
                uint32_t byte_cnt);
/* Write one successful responder CQE (MLX5_CQE_RESP_*). Returns as emu_cqe_req(). */
int emu_cqe_resp(struct emu_cq *cq, uint8_t opcode, uint32_t qpn, uint16_t wqe_counter,
                 uint32_t byte_cnt, __be32 imm);
/*
 * The responder's CQE of a SEND / SEND_IMM of @byte_cnt <= EMU_SCAT_CQE_MAX
 * bytes on a QP with scatter-to-CQE on (emu_qp.scatter_to_cqe): the
 * payload @data in the CQE's first 32 bytes, op_own flagged
 * MLX5_INLINE_SCATTER_32, nothing in the receive buffer - what a ConnectX
 * does with cs_res = MLX5_RES_SCAT_DATA32_CQE (drivers/infiniband/hw/mlx5/
 * qp.c configure_responder_scat_cqe). -EINVAL for a longer payload.
 */
#define EMU_SCAT_CQE_MAX 32u
int emu_cqe_resp_scat(struct emu_cq *cq, uint8_t opcode, uint32_t qpn,
                      uint16_t wqe_counter, uint32_t byte_cnt, __be32 imm,
                      const uint8_t *data);
/* Write one error CQE (REQ_ERR or RESP_ERR). Returns as emu_cqe_req(). */
int emu_cqe_err(struct emu_cq *cq, uint8_t opcode, uint8_t syndrome, uint8_t vendor,
                uint8_t wqe_opcode, uint32_t qpn, uint16_t wqe_counter);

/* ---- recv_queue.c ---- */
/* No receive WQE is posted to @qp's RQ or SRQ. */
int emu_rq_empty(const struct emu_qp *qp);
/*
 * Take the next receive WQE of @qp's RQ, or of its SRQ (from the free
 * list): its address (past the SRQ next segment), its data segment count
 * (at most EMU_MAX_SG) and the wqe_counter its CQE carries. Returns 0, or
 * 1 when none is posted (receiver not ready).
 */
int emu_rq_take(struct emu_qp *qp, const uint8_t **wqe, unsigned *nseg, uint16_t *idx);
/*
 * Put back the receive WQE @idx just taken: the message never reached the
 * responder (its requester could not read its own memory), so the WQE
 * stays for the next one, as on a NIC that never sent the message.
 */
void emu_rq_untake(struct emu_qp *qp, uint16_t idx);

/* ---- sq_doorbell.c ---- */
/*
 * Take @qp's UAR doorbells and, once one has come, read the DBR; check
 * both. Returns 0 and in *@dbr the DBR (or the consumer index when no
 * doorbell covers the WQE there: nothing to do), or -1 after a device error
 * (QP to ERR, SQ frozen until RESET). The caller executes WQEs while
 * emu_sq_rung() and below *@dbr. Lock held.
 */
int emu_sq_doorbell(struct emu_qp *qp, uint16_t *dbr);

/*
 * The WQE at the consumer was covered by a UAR doorbell: the device may
 * execute (or flush) it. Lock held.
 */
static inline int emu_sq_rung(const struct emu_qp *qp)
{
	return qp->db_rung && (int32_t)(qp->db_last - qp->sq_cc) >= 0;
}

/* ---- execute.c ---- */
/*
 * Bytes of one RDMA WRITE or READ the in-device requester moves per visit
 * to its QP (execute.c): a longer message goes on at the QP's next turn,
 * after every other QP's, so a bystander waits for a few of these, not
 * for another's whole message.
 */
#define EMU_SEG_BYTES (64u * 1024u)
/* Run the SQ of a QP in RTS whose peer is on this device, for up to @budget
 * WQEs (a segment of a longer message counts as one); returns how many. */
unsigned emu_sq_run(struct emu_qp *qp, unsigned budget);

/* ---- flush.c ---- */
/* Flush one QP in ERR: its SQ WQEs and its RQ's receive WQEs. */
unsigned emu_qp_flush(struct emu_qp *qp, unsigned budget);

/* ---- fault.c ---- */
/* Read SSQ_EMU_* into @attr. Returns 0 or -EINVAL with a message. */
int emu_env_apply(struct emu_dev_attr *attr);

/* ---- the wire's calls from the rest of the device; lock held ---- */
/* wire_rx.c: receive and dispatch the datagrams waiting; returns packets
 * handled. A no-op without a wire. */
unsigned emu_wire_rx(struct emu_dev *dev, unsigned budget);
/* wire_io.c: send due held packets and pending ACKs. A no-op without a wire. */
void emu_wire_tx(struct emu_dev *dev);
/* wire_qp.c: QP @qp moved from @cur to @next (modify_qp or to ERR). */
void emu_wire_qp_state(struct emu_qp *qp, enum ibv_qp_state cur, enum ibv_qp_state next);
/* wire_qp.c: free @qp's wire state, if any. */
void emu_wire_qp_free(struct emu_qp *qp);
/* wire.c: close the socket and free every QP's wire state. */
void emu_wire_close(struct emu_dev *dev);
/* wire.c: the wire's UDP socket, or -1 without a wire. */
int emu_wire_fd(const struct emu_dev *dev);
/*
 * wire.c: 1 while the wire has a deadline of its own: a packet held back
 * (delay fault) or a request not yet acknowledged (its ACK and RNR timers).
 */
int emu_wire_waiting(const struct emu_dev *dev);
/* wire_req.c: run the SQ of a QP in RTS whose peer is remote (qp->wire). */
unsigned emu_wire_sq_run(struct emu_qp *qp, unsigned budget);

/* ---- trace.c ---- */
void emu_trace_wqe(struct emu_qp *qp, uint32_t pi, const char *what);
void emu_trace_cqe(struct emu_cq *cq, const struct mlx5_cqe64 *cqe);
void emu_trace_recv(struct emu_qp *qp, const void *wqe, uint32_t len, uint32_t idx);
/* A device error: a line and a dump of the WQE at the consumer, on stderr
 * and in the trace. */
void emu_dev_error(struct emu_qp *qp, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif /* SSQ_EMU_PVT_H */
