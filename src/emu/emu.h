/* SPDX-License-Identifier: MIT */
/*
 * ssq/emu.h - the emulated mlx5 device: a software ConnectX that reads the
 * WQE bytes the fast path writes, from the rings the fast path writes them
 * to, and writes the 64-byte CQEs the fast path polls. Code above it cannot
 * tell it from hardware: queues are described by the same struct mlx5dv_qp,
 * struct mlx5dv_cq and struct mlx5dv_srq that mlx5dv_init_obj() fills.
 *
 * Objects: a device with two ports (two emulated hosts; a QP may also talk to
 * itself), PDs, MRs, CQs, RC QPs (send queue + receive queue or SRQ), SRQs.
 * Every queue buffer, doorbell record and UAR page is memory the caller
 * supplies, so it may live in a shared segment other processes map; the
 * device keeps only its own counters and bookkeeping. Two parts have
 * headers of their own, included here: type-2 memory windows
 * (emu/emu_mw.h) and the wire between devices in different processes
 * (emu/emu_wire.h).
 *
 * Recipe:
 *	emu_open(&dev, NULL);
 *	emu_alloc_pd(dev, &pd);
 *	emu_reg_mr(pd, buf, len, iova, IBV_ACCESS_*, &mr, &key);
 *	emu_create_cq(dev, &cq_attr, &cq, &dv_cq);   then ssq_cq_init()
 *	emu_create_qp(pd, &qp_attr, &qp, &dv_qp, &qpn); then ssq_sq_init()
 *	emu_modify_qp(qp, &attr, mask) x 3: RESET -> INIT -> RTR -> RTS
 *	post WQEs, ring the doorbell (ssq/doorbell.h)
 *	emu_process(dev, budget) -- or emu_start(dev) for a thread
 *	ssq_cq_poll()
 *
 * What the device does per send WQE, in order, as a ConnectX does it:
 *  - starts only on a UAR doorbell: the 8 bytes written to either half
 *    of bf.reg (an 8-byte doorbell or the start of a BlueFlame copy), the
 *    first 8 bytes of a WQE's control segment. It must carry the QP's
 *    number; its WQE index says up to which WQE (that one included) the
 *    device may go. A doorbell record that moved with no doorbell after it
 *    executes nothing, as on a ConnectX (a lost doorbell hangs the SQ).
 *    Once woken, the device reads the send doorbell record
 *    (dbrec[MLX5_SND_DBR], big-endian producer counter & 0xffff) with
 *    acquire order, keeps its own 32-bit consumer counter and executes
 *    while (u16)(dbr - cc) != 0 and the WQE at cc is at or before the last
 *    doorbell's. A doorbell of another QP or naming a WQE past the DBR, a
 *    DBR that moved backwards, or more than wqe_cnt ahead of the consumer,
 *    is a device error: logged on stderr with a dump of the WQE at the
 *    consumer, counted (emu_dev_errors()), and the QP goes to ERR without
 *    flushing its SQ (its producer counter cannot be trusted) until it is
 *    reset; no CQE says so, IBV_EVENT_QP_FATAL does (emu_get_async_event).
 *  - checks the control segment: WQE index == cc & 0xffff, QPN, a known
 *    opcode, a DS count that fits the opcode and the posted WQEBBs; else an
 *    error CQE with MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR.
 *  - translates every address as an IOVA through an MR: local keys (lkey)
 *    must name an MR of the QP's PD covering the range, with
 *    IBV_ACCESS_LOCAL_WRITE where the device writes (READ and atomic
 *    results, receive buffers), else LOCAL_PROT_ERR; remote keys must name
 *    an MR of the peer's PD covering the range with the remote access the
 *    opcode needs, or a type-2 window bound to the peer's QP covering it
 *    with that access (emu_bind_mw), also granted by the peer QP's
 *    qp_access_flags, else
 *    REMOTE_ACCESS_ERR (the peer QP goes to ERR too, as the IB responder
 *    does on an access violation).
 *  - SEND / SEND_IMM / RDMA_WRITE_IMM consume the peer's next receive WQE
 *    (its RQ, or its SRQ when it has one). None posted: receiver not ready;
 *    the WQE is retried on each later emu_process() call, rnr_retry
 *    times (7: forever), then RNR_RETRY_EXC_ERR. A receive WQE too small:
 *    the responder gets a RESP_ERR CQE with LOCAL_LENGTH_ERR and goes to
 *    ERR, the requester REMOTE_INVAL_REQ_ERR.
 *  - atomics treat the 8 target bytes as a native 64-bit integer and write
 *    the old value to the requester's buffer in host order, as a ConnectX
 *    does once mlx5_core has set its requester 8-byte atomic endianness
 *    mode to host order (the only mode mlx5_ib offers atomics in).
 *  - writes CQEs: a signaled success gives MLX5_CQE_REQ with wqe_counter =
 *    the WQE index, sop_drop_qpn = the WQE's opcode << 24 | QPN (libmlx5's
 *    handle_good_req reads the opcode there), byte_cnt = bytes for READ (8
 *    for atomics, else 0); unsignaled successes give none (the next signaled
 *    CQE's wqe_counter covers them). A receive gives RESP_SEND,
 *    RESP_SEND_IMM or RESP_WR_IMM with byte_cnt = bytes, imm_inval_pkey =
 *    the ctrl segment's imm as stored, wqe_counter = the receive WQE (RQ: its
 *    counter & 0xffff; SRQ: its index in the buffer), sop_drop_qpn = the
 *    responder's QPN.
 *  - an error gives struct mlx5_err_cqe (op_own REQ_ERR << 4 or RESP_ERR << 4,
 *    syndrome, vendor_err_synd, s_wqe_opcode_qpn = opcode << 24 | QPN,
 *    wqe_counter), the QP goes to ERR, and each WQE outstanding then or
 *    posted later (and rung) gets its own WR_FLUSH_ERR error CQE, signaled
 *    or not; the
 *    receive WQEs of its RQ (not of an SRQ) are flushed the same way.
 * The CQE body is written first, then op_own with a release store, owner bit
 * = (pi / cqe_cnt) & 1. Before each CQE the device checks the room left by
 * the consumer index in dbrec[SSQ_CQ_SET_CI] (24 bits, big-endian, acquire
 * load); a full CQ is a CQ overrun: the CQ is marked in error
 * (emu_cq_error()), a line goes to stderr, IBV_EVENT_CQ_ERR is queued
 * (emu_get_async_event), the CQE is dropped and every QP using the CQ goes
 * to ERR. An overrun CQ writes nothing more.
 *
 * Modes: SSQ_EMU_FULL moves data; SSQ_EMU_SINK parses and checks every WQE
 * (keys and bounds included) and completes it without touching data, to
 * measure the host side's cost.
 *
 * Environment, read by emu_open() unless attr->ignore_env is set; a bad
 * value prints "ssq_emu: <VAR>: <why> '<value>'" on stderr and the open
 * returns -EINVAL:
 *	SSQ_EMU_MODE=full|sink
 *	SSQ_EMU_FAULT=item[,item...], items:
 *	    err_at=N         the Nth WQE the device executes (1-based, counted
 *	                     over all QPs from the open or the last
 *	                     emu_set_fault) completes in error
 *	    syndrome=S       its syndrome (decimal or 0x hex, 1..255; default
 *	                     0x13 REMOTE_ACCESS_ERR)
 *	    vendor=V         its vendor_err_synd (default 0)
 *	    delay=N          a WQE executes only on the Nth emu_process()
 *	                     call after the one that first saw its doorbell
 *	    stall=0|1        1: the device executes nothing until released
 *	SSQ_EMU_TRACE=path   append every WQE consumed and CQE written, decoded
 *	                     and in hex, to path
 *	SSQ_EMU_POLL_NS=N    stream_poll_ns (0..SSQ_EMU_STREAM_POLL_NS_MAX)
 *	SSQ_EMU_CQ_EVENTS=0  no_cq_events: no completion events, so their
 *	                     consumers poll, as with a ConnectX
 *
 * Concurrency: one mutex per device serialises emu_process() (a whole
 * call, never a single WQE) with every object and mode call, so objects may
 * be created, modified and destroyed while the device thread runs. Producers
 * and pollers never take it: they share only the rings, doorbell records and
 * CQ with the device, as with hardware.
 *
 * Errors: every call returns 0, a count, or a negative errno; none sets
 * errno.
 */
#ifndef SSQ_EMU_H
#define SSQ_EMU_H

#include <ssq/common.h>
#include "emu/emu_mw.h"
#include "emu/emu_wire.h"

#ifdef __cplusplus
extern "C" {
#endif

struct emu_dev;
struct emu_pd;
struct emu_mr;
struct emu_cq;
struct emu_qp;
struct emu_srq;

enum emu_mode {
	SSQ_EMU_FULL = 0, /* data moves */
	SSQ_EMU_SINK = 1, /* WQEs checked and completed, no data touched */
};

/* Limits of one device. */
enum {
	SSQ_EMU_PORTS = 2,     /* port numbers 1 and 2 */
	SSQ_EMU_MAX_QP = 1024, /* QPNs SSQ_EMU_QPN_BASE .. + 1023 */
	SSQ_EMU_MAX_CQ = 1024,
	SSQ_EMU_MAX_SRQ = 256,
	SSQ_EMU_MAX_MR = 8192, /* key = (index << 8) | tag */
	SSQ_EMU_QPN_BASE = 0x100,
	SSQ_EMU_UAR_SIZE = 4096,   /* bytes of UAR page per QP */
	SSQ_EMU_BF_OFFSET = 0x800, /* bf.reg = uar + this, as libmlx5 */
	SSQ_EMU_BF_SIZE = 0x100,   /* each of the two BlueFlame halves */
};

/* Fault injection; all zero: none. */
struct emu_fault {
	uint64_t err_at;    /* 1-based WQE number to fail; 0: none */
	uint8_t syndrome;   /* MLX5_CQE_SYNDROME_*; 0 means 0x13 */
	uint8_t vendor_err; /* vendor_err_synd of that CQE */
	uint32_t delay;     /* process() calls a doorbell waits; 0: none */
	uint8_t stall;      /* nonzero: execute nothing */
};

/*
 * How long the device thread waits before it looks at the doorbells again
 * while WQEs stream in, by default. A ConnectX costs the host nothing for
 * looking: a doorbell is a posted MMIO write and WQEs come by DMA. This
 * device polls host memory instead, and each look at a doorbell record,
 * UAR or WQE a producer has just written takes that cache line away from
 * the producer's core, whose next doorbell must then fetch it back: one
 * round trip between cores per doorbell, each way. Waiting this long after
 * a pass that found work, when the pass before it found work too (a
 * stream, never one message after an idle spell: latency tests see no
 * wait), lets doorbells gather, and the device reads each line once per
 * gathering instead. ssq_write_bw -P 4 on 2 cores: see the README.
 */
#define SSQ_EMU_STREAM_POLL_NS_DEFAULT 500u
#define SSQ_EMU_STREAM_POLL_NS_MAX     100000u

struct emu_dev_attr {
	enum emu_mode mode;
	struct emu_fault fault;
	const char *trace_path;  /* NULL: no trace */
	int ignore_env;          /* nonzero: do not read SSQ_EMU_* */
	uint32_t stream_poll_ns; /* device thread, see above; 0: look again at once */
	int no_cq_events;        /* nonzero: emu_cq_set_event says -EOPNOTSUPP */
	/*
	 * Both ports' link layer: IBV_LINK_LAYER_INFINIBAND (0, UNSPECIFIED,
	 * means that too) or IBV_LINK_LAYER_ETHERNET (RoCE). See emu_query_port.
	 */
	uint8_t link_layer;
	/*
	 * Both ports' active MTU, IBV_MTU_256 .. IBV_MTU_4096; 0: the link
	 * layer's usual one (InfiniBand 4096; Ethernet 1024, what a
	 * 1500-byte netdev MTU gives: iboe_get_mtu, include/rdma/ib_addr.h).
	 */
	enum ibv_mtu active_mtu;
};

/*
 * emu_open - create a device. @attr may be NULL (full mode, no fault,
 * no trace, stream_poll_ns SSQ_EMU_STREAM_POLL_NS_DEFAULT); the SSQ_EMU_*
 * environment variables then override it unless attr->ignore_env.
 * Returns 0 and *@devp, or -EINVAL (NULL @devp, a bad environment value:
 * message on stderr), -ENOMEM, or the negative errno of fopen(trace).
 */
int emu_open(struct emu_dev **devp, const struct emu_dev_attr *attr);

/*
 * emu_close - stop the device thread if running, free the device and
 * every object still in it, PDs included (caller buffers are not touched):
 * no handle of the device may be used afterwards. NULL is a no-op.
 */
void emu_close(struct emu_dev *dev);

/*
 * emu_parse_fault - parse an SSQ_EMU_FAULT string into @f (zeroed
 * first). Returns 0, or -EINVAL naming the bad item on stderr.
 */
int emu_parse_fault(const char *s, struct emu_fault *f);

/* Change the mode. Returns 0 or -EINVAL (unknown mode). Any thread. */
int emu_set_mode(struct emu_dev *dev, enum emu_mode mode);

/*
 * Replace the fault settings and restart the err_at count. @f NULL clears
 * them. Returns 0 or -EINVAL (NULL @dev). Any thread.
 */
int emu_set_fault(struct emu_dev *dev, const struct emu_fault *f);

/* Stall (@on nonzero) or release the device. Returns 0. Any thread. */
int emu_stall(struct emu_dev *dev, int on);

/* Device errors (bad doorbells) logged since the open; 0 for NULL. */
unsigned emu_dev_errors(struct emu_dev *dev);

/*
 * Asynchronous events, as a ConnectX raises them where no CQE can report
 * an error (read on hardware with ibv_get_async_event):
 *   IBV_EVENT_CQ_ERR        a CQ overran (@cqn); it writes nothing more
 *   IBV_EVENT_QP_FATAL      a device error froze a QP's SQ without a CQE
 *                           (a doorbell ahead of the doorbell record, ...)
 *   IBV_EVENT_QP_ACCESS_ERR a responder QP went to ERR on an access
 *                           violation no receive CQE reports
 *   IBV_EVENT_QP_REQ_ERR    the same for an invalid request
 */
struct emu_async_event {
	enum ibv_event_type type;
	uint32_t qpn; /* QP events */
	uint32_t cqn; /* CQ events */
};

/*
 * emu_get_async_event - the oldest event not yet taken, without waiting.
 * Returns 0 and @ev, -EAGAIN when none is pending, -EINVAL for NULL. Any
 * thread.
 */
int emu_get_async_event(struct emu_dev *dev, struct emu_async_event *ev);

/*
 * emu_async_fd - a descriptor that polls readable (POLLIN) while an event
 * waits for emu_get_async_event, as a verbs context's async_fd does: for
 * a poll() set, never to be read or closed by the caller.
 */
int emu_async_fd(struct emu_dev *dev);

/* ---- device limits and queue sizes ---- */

/*
 * What the emulated ConnectX reports: the limits mlx5_ib hands libmlx5 at
 * alloc_ucontext (drivers/infiniband/hw/mlx5/main.c) and those
 * ibv_query_device gives (mlx5_ib_query_device).
 */
struct emu_dev_caps {
	uint32_t max_sq_desc_sz; /* max_wqe_sz_sq: bytes of one send WQE */
	uint32_t max_rq_desc_sz; /* max_wqe_sz_rq: bytes of one receive WQE */
	uint32_t max_send_wqebb; /* 1 << log_max_qp_sz: WQEBBs of one SQ */
	uint32_t max_recv_wr;    /* 1 << log_max_qp_sz */
	uint32_t max_qp_wr;      /* ibv_device_attr.max_qp_wr */
	uint32_t max_send_sge;   /* (min(max_sq_desc_sz, 512) - 32) / 16 */
	uint32_t max_recv_sge;   /* max_rq_desc_sz / 16 */
	uint32_t max_cqe;        /* ibv_device_attr.max_cqe: (1 << log_max_cq_sz) - 1 */
};

/* Fill @caps. The same for every emulated device. */
void emu_query_caps(struct emu_dev_caps *caps);

/* What a caller asks of an RC QP, as in struct ibv_qp_init_attr_ex. */
struct emu_qp_cap {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
	uint64_t send_ops_flags; /* IBV_QP_EX_WITH_*, with has_send_ops */
	/*
	 * 0: no IBV_QP_INIT_ATTR_SEND_OPS_FLAGS (ibv_create_qp): libmlx5 then
	 * sizes for every RC op, BIND_MW and LOCAL_INV included.
	 */
	int has_send_ops;
};

/* The queues libmlx5 makes of a struct emu_qp_cap, and what it reports back. */
struct emu_qp_size {
	uint32_t sq_wqe_cnt;      /* WQEBBs (mlx5dv_qp.sq.wqe_cnt); 0: no SQ */
	uint32_t sq_wqe_size;     /* bytes one WR may take, a multiple of 64 */
	uint32_t max_send_wr;     /* cap.max_send_wr back: ring bytes / sq_wqe_size */
	uint32_t max_inline_data; /* cap.max_inline_data back */
	uint32_t rq_wqe_cnt;      /* mlx5dv_qp.rq.wqe_cnt; 0: no RQ */
	uint32_t rq_stride;       /* mlx5dv_qp.rq.stride */
	uint32_t max_recv_wr;     /* cap.max_recv_wr back */
	uint32_t max_recv_sge;    /* cap.max_recv_sge back */
};

/*
 * emu_qp_size - size an RC QP's queues for @cap exactly as libmlx5 of
 * rdma-core 44 does on a ConnectX with this device's caps
 * (providers/mlx5/verbs.c: sq_overhead, mlx5_calc_send_wqe,
 * mlx5_calc_sq_size, mlx5_calc_rq_size): the WQE is the largest overhead
 * of the ops named plus the larger of the gather list and the inline
 * segment, rounded to 64 bytes; the SQ is max_send_wr such WQEs rounded up
 * to a power of two; max_inline_data grows to fill the WQE.
 * Returns 0, -EINVAL (over a device limit: SGEs, WQE bytes, WQEBBs,
 * receive WRs; or a NULL argument), -EOPNOTSUPP (an op an RC QP lacks).
 */
int emu_qp_size(const struct emu_qp_cap *cap, struct emu_qp_size *out);

/* ---- device, port and GID attributes ---- */

/*
 * The limits a ConnectX-6 reports through ibv_query_device (an
 * `ibv_devinfo -vv` of one, vendor_part_id 4123, fw 20.37.1700, is quoted in
 * openucx/ucx issue #9908): max_qp_rd_atom 16 (responder depth,
 * 1 << log_max_ra_req_qp) and max_qp_init_rd_atom 16 (initiator depth,
 * 1 << log_max_ra_res_qp), as mlx5_ib_query_device
 * (drivers/infiniband/hw/mlx5/main.c) derives them; emu_modify_qp refuses
 * more, as mlx5_ib_modify_qp does.
 */
enum {
	SSQ_EMU_MAX_QP_RD_ATOM = 16,
	SSQ_EMU_MAX_QP_INIT_RD_ATOM = 16,
	SSQ_EMU_GID_TBL_LEN = 8, /* that ConnectX-6's gid_tbl_len */
};

/*
 * emu_query_device - what ibv_query_device reports, ConnectX-6 values
 * (above) where the device models them (max_qp_wr, max_sge, max_cqe,
 * max_qp_rd_atom, max_qp_init_rd_atom, atomic_cap, phys_port_cnt, ...).
 * Returns 0 or -EINVAL (NULL argument).
 */
int emu_query_device(struct emu_dev *dev, struct ibv_device_attr *attr);

/*
 * emu_query_port - what ibv_query_port reports for port @port (1 or 2):
 * state ACTIVE, link_layer as opened, max_mtu 4096, active_mtu as opened,
 * gid_tbl_len SSQ_EMU_GID_TBL_LEN; lid the port number on InfiniBand (each
 * port is a host of its own), 0 on Ethernet, which has no LIDs.
 * Returns 0 or -EINVAL (NULL argument, no such port).
 */
int emu_query_port(struct emu_dev *dev, uint8_t port, struct ibv_port_attr *attr);

/*
 * emu_query_gid - GID table entry @index of port @port, as ibv_query_gid_ex
 * reads it (gid, gid_index, port_num, gid_type, ndev_ifindex 0).
 * InfiniBand: entry 0, type IBV_GID_TYPE_IB, fe80::<port GUID>.
 * Ethernet, as mlx5 fills it for a netdev with one IPv4 address (the
 * default link-local GIDs first, then one entry per type per address):
 *   0 RoCE v1 fe80::<port>, 1 RoCE v2 fe80::<port>,
 *   2 RoCE v1 ::ffff:10.0.0.<port>, 3 RoCE v2 ::ffff:10.0.0.<port>.
 * The other entries below SSQ_EMU_GID_TBL_LEN are empty.
 * Returns 0, -EINVAL (NULL argument, no such port, @index past the table),
 * -ENODATA (an empty entry: ibv_query_gid_ex's ENODATA).
 */
int emu_query_gid(struct emu_dev *dev, uint8_t port, unsigned index,
                  struct ibv_gid_entry *entry);

/* ---- protection domains and memory regions ---- */

/* Returns 0 and *@pdp, -EINVAL or -ENOMEM. */
int emu_alloc_pd(struct emu_dev *dev, struct emu_pd **pdp);

/* Returns 0, or -EBUSY while MRs, QPs or SRQs still use @pd. */
int emu_dealloc_pd(struct emu_pd *pd);

/*
 * emu_reg_mr - register @len bytes at host address @addr (in the
 * process running the device) as IOVAs @iova .. @iova + @len - 1 with
 * IBV_ACCESS_* @access. The one key it returns in *@key serves as lkey and
 * rkey (as on mlx5).
 * Returns 0, or -EINVAL (NULL argument, zero length, IOVA range wrapping,
 * access bits other than LOCAL_WRITE / REMOTE_WRITE / REMOTE_READ /
 * REMOTE_ATOMIC, or REMOTE_WRITE / REMOTE_ATOMIC without LOCAL_WRITE, as the
 * kernel refuses), -ENOMEM when the MR table is full.
 */
int emu_reg_mr(struct emu_pd *pd, void *addr, size_t len, uint64_t iova, int access,
               struct emu_mr **mrp, uint32_t *key);

/*
 * emu_reg_mr_file - emu_reg_mr for memory the device reaches through the
 * memory file @fd at offsets @addr .. @addr + @len - 1: a client's
 * /proc/PID/mem, opened by that client and passed to the device's process,
 * so the device reads and writes the client's own memory (the emulated
 * counterpart of pinning a process's pages). The caller keeps @fd open
 * until emu_dereg_mr. An access the file refuses (the process exited or
 * unmapped the range) fails the WQE with a protection error.
 * Returns 0, or -EINVAL and -ENOMEM as emu_reg_mr.
 */
int emu_reg_mr_file(struct emu_pd *pd, int fd, uint64_t addr, size_t len, uint64_t iova,
                    int access, struct emu_mr **mrp, uint32_t *key);

/*
 * Returns 0, -EINVAL, or -EBUSY while a memory window is bound to @mr
 * (ibv_dereg_mr(3): "fails if any memory window is still bound to this
 * MR"). The key is invalid from now on.
 */
int emu_dereg_mr(struct emu_mr *mr);

/* ---- completion queues ---- */

struct emu_cq_attr {
	void *buf;        /* cqe_cnt * 64 bytes, 64-byte aligned */
	uint32_t cqe_cnt; /* a power of two, 2 .. 2^22 */
	__be32 *dbrec;    /* 2 words: consumer index, arm */
	/*
	 * Nonzero: the CQ never goes to error for want of room, and every
	 * CQE is written to the next slot whatever the consumer index says
	 * (the CQ context's oi bit: mlx5_ib_create_cq, drivers/infiniband/
	 * hw/mlx5/cq.c, sets it for IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN, which
	 * libibverbs' ibv_cmd_create_cq_ex passes for
	 * IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN). The consumer index is not read.
	 */
	int ignore_overrun;
};

/*
 * emu_create_cq - make a CQ of the caller's buffer. Like libmlx5 it
 * fills every CQE with op_own = MLX5_CQE_INVALID << 4 and zeroes the
 * doorbell record, so a fresh CQ reads as empty. Fills @dv (buf, dbrec,
 * cqe_cnt, cqe_size 64, cqn; cq_uar NULL).
 * Returns 0, -EINVAL (NULL argument, misaligned buffer, bad count), -ENOMEM.
 */
int emu_create_cq(struct emu_dev *dev, const struct emu_cq_attr *attr,
                  struct emu_cq **cqp, struct mlx5dv_cq *dv);

/*
 * emu_resize_cq - move @cq to the buffer @buf of @cqe_cnt CQEs (64-byte
 * aligned, a power of two, 2 .. 2^22, at least the CQEs not yet consumed
 * plus one), as a ConnectX does for MODIFY_CQ with a new buffer
 * (mlx5_ib_resize_cq, drivers/infiniband/hw/mlx5/cq.c): the device writes
 * one CQE of opcode MLX5_CQE_RESIZE_CQ at its producer index in the old
 * buffer, then goes on writing at the next index, in the new buffer. So
 * a consumer that had taken every CQE finds the next one at the new
 * buffer's slot (old pi + 1) & (cqe_cnt - 1), never at 0 for a fresh CQ;
 * libmlx5 copies the old CQEs over and steps its consumer index past the
 * resize CQE (mlx5_cq_resize_copy_cqes, providers/mlx5/cq.c). Like
 * emu_create_cq it fills @buf with MLX5_CQE_INVALID CQEs first
 * (mlx5_alloc_cq_buf); the doorbell record stays. @dv gets the new buf
 * and cqe_cnt. Returns 0, -EINVAL (NULL argument, bad buffer or count,
 * too small), -EOVERFLOW (the CQ overran: it writes nothing more).
 */
int emu_resize_cq(struct emu_cq *cq, void *buf, uint32_t cqe_cnt, struct mlx5dv_cq *dv);

/*
 * Returns 0, or -EBUSY while a QP uses @cq. Like emu_cq_set_event, it waits
 * for a call of @cq's handler already under way.
 */
int emu_destroy_cq(struct emu_cq *cq);

/*
 * emu_cq_set_event - the device calls @fn(@arg, @cqes) after a pass that
 * wrote CQEs into @cq (at least one call per pass that wrote any, from the
 * thread that ran the pass: the device thread, or the caller of
 * emu_process), once the device's lock is dropped, @cqes being how many
 * it wrote into @cq since the last call: a consumer whose CQ other
 * writers can reach (memory clients map) takes no more than that on the
 * device's thread; @fn NULL: no more calls. The handler may take locks and make system
 * calls, and may poll
 * @cq; it must not call back into the device. This stands for a ConnectX's
 * completion event (an EQE raised for a CQ armed by ibv_req_notify_cq,
 * read from a completion channel), without the arming: a host thread that
 * emulates the NIC can do the consumer's first step itself, so the
 * consumer needs no thread of its own polling for it (ssqd's receive
 * pool). Once it returns, the old handler is neither running nor called
 * again, so its owner may free its argument: it waits for the calls
 * already under way, and must therefore not be called from a handler or
 * while holding a lock a handler takes. Returns 0, -EINVAL for NULL @cq,
 * or -EOPNOTSUPP on a device opened with no_cq_events (the consumer must
 * poll, as on a ConnectX).
 */
int emu_cq_set_event(struct emu_cq *cq, void (*fn)(void *arg, unsigned cqes), void *arg);

/*
 * emu_cq_arm - arm @cq, whose consumer has taken CQEs below index @ci
 * (24 bits, as the arm doorbell carries it), for one completion event: 1
 * is added to eventfd @fd once a CQE at or past @ci is written, at once if
 * one is there already. The event disarms the CQ; arm it again for the
 * next. What ibv_req_notify_cq(cq, 0) and the completion channel's fd do
 * on a ConnectX (libmlx5's mlx5_arm_cq writes the same index), with the
 * channel's fd standing for @fd. Any thread. Returns 0 or -EINVAL (NULL
 * @cq, negative @fd).
 */
int emu_cq_arm(struct emu_cq *cq, uint32_t ci, int fd);

/*
 * emu_cq_arm_pending - 1 while @cq is armed and its event not raised yet,
 * 0 once it was (or it was never armed), -EINVAL for NULL @cq. What a
 * ConnectX's completion channel tells with each event (ibv_get_cq_event
 * names the CQ): which of the CQs armed on one eventfd raised what it
 * counts.
 */
int emu_cq_arm_pending(struct emu_cq *cq);

/*
 * emu_cq_error - 0 while @cq is sound, -EOVERFLOW once it overran
 * (the device found no room for a CQE; sticky until the CQ is destroyed),
 * -EINVAL for NULL. Any thread, lock-free.
 */
int emu_cq_error(struct emu_cq *cq);

/* ---- shared receive queues ---- */

struct emu_srq_attr {
	void *buf;        /* wqe_cnt * stride bytes */
	uint32_t wqe_cnt; /* a power of two, 2 .. 65536 */
	uint32_t stride;  /* a power of two, 32 .. 1024: next seg + data x n */
	__be32 *dbrec;    /* one word: the receive counter */
};

/*
 * emu_create_srq - make an SRQ of the caller's buffer, linking every
 * WQE into the free list (i -> i + 1) and zeroing the doorbell record.
 * Fills @dv (buf, dbrec, stride, head 0, tail wqe_cnt - 1, srqn).
 * Returns 0, -EINVAL, -ENOMEM.
 */
int emu_create_srq(struct emu_pd *pd, const struct emu_srq_attr *attr,
                   struct emu_srq **srqp, struct mlx5dv_srq *dv);

/* Returns 0, or -EBUSY while a QP uses @srq. */
int emu_destroy_srq(struct emu_srq *srq);

/* ---- queue pairs ---- */

struct emu_qp_attr {
	struct emu_cq *send_cq;
	struct emu_cq *recv_cq;
	struct emu_srq *srq; /* NULL: the QP has its own RQ */
	void *sq_buf;        /* sq_wqe_cnt * 64 bytes */
	uint32_t sq_wqe_cnt; /* WQEBBs, a power of two, 1 .. max_send_wqebb */
	void *rq_buf;        /* rq_wqe_cnt * rq_stride; NULL with an SRQ */
	uint32_t rq_wqe_cnt; /* a power of two, 1 .. max_recv_wr; 0 with SRQ */
	uint32_t rq_stride;  /* a power of two, 16 .. 1024 */
	__be32 *dbrec;       /* 2 words: [MLX5_RCV_DBR], [MLX5_SND_DBR] */
	void *uar;           /* SSQ_EMU_UAR_SIZE bytes: the doorbell register */
	/*
	 * Optional: the caps the queues were sized for (emu_qp_size). Given,
	 * sq_wqe_cnt, rq_wqe_cnt and rq_stride must be what they give, as
	 * libmlx5 would have made them.
	 */
	const struct emu_qp_cap *cap;
	/*
	 * 0 (the default, as libmlx5 creates every QP unless told otherwise:
	 * providers/mlx5/verbs.c create_qp sets MLX5_QP_FLAG_SCATTER_CQE,
	 * and the kernel makes an RC QP's responder scatter to 64-byte CQEs,
	 * MLX5_RES_SCAT_DATA32_CQE): a SEND or SEND_IMM of at most 32 bytes
	 * lands in the first 32 bytes of its receive CQE, op_own flagged
	 * MLX5_INLINE_SCATTER_32, and nothing is written to the receive
	 * buffer - a poller that does not copy it out (libmlx5's
	 * mlx5_copy_to_recv_wqe does) reads stale bytes there. 1: every
	 * payload goes to the receive buffer, as mlx5dv_create_qp with
	 * MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE makes it.
	 */
	int disable_scatter_to_cqe;
};

/*
 * emu_create_qp - make an RC QP in RESET. Zeroes the doorbell record.
 * Fills @dv as mlx5dv_init_obj does: dbrec, sq {buf, wqe_cnt, stride 64},
 * rq {buf, wqe_cnt, stride}, bf {reg = uar + SSQ_EMU_BF_OFFSET, size
 * SSQ_EMU_BF_SIZE}, uar_mmap_offset 0; *@qpn gets the QP number (24 bits).
 * Zeroes both BlueFlame halves (the device takes a doorbell by swapping
 * it with 0, so each write is seen; a RESET clears them again).
 * Returns 0, -EINVAL (NULL or mis-sized argument, an SQ or RQ over the
 * device's max_send_wqebb / max_recv_wr, queues other than @attr->cap
 * gives, no UAR, CQ of another device, SRQ of another PD), -EOPNOTSUPP
 * (@attr->cap names an op an RC QP lacks), -ENOMEM (no QP number left).
 */
int emu_create_qp(struct emu_pd *pd, const struct emu_qp_attr *attr, struct emu_qp **qpp,
                  struct mlx5dv_qp *dv, uint32_t *qpn);

/* Returns 0 or -EINVAL. A peer QP sending to it later gets retry errors. */
int emu_destroy_qp(struct emu_qp *qp);

/*
 * emu_modify_qp - move @qp as ibv_modify_qp would, with the kernel's RC
 * rules (drivers/infiniband/core/verbs.c, qp_state_table):
 *   RESET -> INIT  needs PKEY_INDEX | PORT | ACCESS_FLAGS
 *   INIT  -> INIT  may have PKEY_INDEX | PORT | ACCESS_FLAGS
 *   INIT  -> RTR   needs AV | PATH_MTU | DEST_QPN | RQ_PSN |
 *                  MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER,
 *                  may have ALT_PATH | ACCESS_FLAGS | PKEY_INDEX
 *   RTR   -> RTS   needs TIMEOUT | RETRY_CNT | RNR_RETRY | SQ_PSN |
 *                  MAX_QP_RD_ATOMIC, may have CUR_STATE | ALT_PATH |
 *                  ACCESS_FLAGS | MIN_RNR_TIMER | PATH_MIG_STATE
 *   RTS   -> RTS   may have CUR_STATE | ACCESS_FLAGS | ALT_PATH |
 *                  PATH_MIG_STATE | MIN_RNR_TIMER
 *   any   -> RESET: IBV_QP_STATE only
 *   INIT, RTR, RTS, ERR -> ERR: IBV_QP_STATE only (not RESET -> ERR: the
 *                  kernel's table has no such entry and refuses it)
 * IBV_QP_STATE always may be (and, to change state, must be) in the mask;
 * without it the target is the current state. CUR_STATE must name the
 * current state. SQD and SQE are not emulated.
 * Values checked: port_num (and ah_attr.port_num) 1..SSQ_EMU_PORTS,
 * pkey_index 0, access flags within LOCAL_WRITE | REMOTE_WRITE |
 * REMOTE_READ | REMOTE_ATOMIC, path_mtu IBV_MTU_256..4096 and not above the
 * port's active_mtu, dest_qp_num 24 bits, min_rnr_timer and timeout < 32,
 * retry_cnt and rnr_retry < 8, max_rd_atomic <= SSQ_EMU_MAX_QP_INIT_RD_ATOM,
 * max_dest_rd_atomic <= SSQ_EMU_MAX_QP_RD_ATOM (mlx5_ib_modify_qp). The
 * address vector (IBV_QP_AV) as mlx5_set_path checks it: on an Ethernet
 * port it must carry a GRH (ah_attr.is_global), whose sgid_index must be
 * below the port's gid_tbl_len (-EINVAL) and name a filled entry
 * (-ENODATA, as the core's rdma_get_gid_attr answers for an empty one).
 * To RESET the device zeroes the QP's doorbell record, counters and UAR
 * halves (the producer starts again at 0, as after libmlx5's reset); in
 * ERR it flushes what doorbells covered.
 * Returns 0, -EINVAL or -ENODATA (nothing changed then).
 */
int emu_modify_qp(struct emu_qp *qp, const struct ibv_qp_attr *attr, int attr_mask);

/* The QP's state (IBV_QPS_*), as the device sees it now. @qp not NULL. */
enum ibv_qp_state emu_qp_state(struct emu_qp *qp);

/* ---- execution ---- */

/*
 * emu_process - run the device once: visit every QP (round-robin,
 * starting one QP further each call so a busy QP cannot starve the rest),
 * executing the WQEs of QPs in RTS and flushing those of QPs in ERR, up to
 * @budget WQEs in all, and write their CQEs. Each call is also one "pass"
 * for the RNR retry count and the delay fault: a SEND that finds no
 * receive WQE is retried on the next call, not within this one.
 * Returns how many WQEs it consumed (0: nothing to do, stalled, or waiting
 * on RNR / delay), -EINVAL for a NULL @dev, -EBUSY while the device thread
 * runs. Any thread; calls are serialised by the device lock.
 */
int emu_process(struct emu_dev *dev, unsigned budget);

/*
 * emu_start - run emu_process() in a device thread that polls,
 * pausing (cpu relax, then sleeps of 50 us growing to 10 ms, see
 * emu_set_idle_nap) while idle. Returns 0, -EBUSY if
 * running, or the negative errno of pthread_create.
 */
int emu_start(struct emu_dev *dev);

/*
 * emu_stop - stop and join the device thread. Returns 0, or -EINVAL
 * when none runs. One caller at a time (it joins the thread).
 */
int emu_stop(struct emu_dev *dev);

/*
 * emu_set_idle_nap - let the device thread's naps grow to @max_ns (10 ms
 * .. 1 s) once it has been idle about a second, instead of 10 ms; 0 puts
 * back the 10 ms. For a host that knows no doorbell will come meanwhile
 * (ssqd while no client has a queue attached): a doorbell rung anyway
 * waits up to @max_ns. While the wire has deadlines of its own (a packet
 * held back, a request not yet acknowledged) the naps stay 10 ms at most,
 * and a packet from the wire ends a nap at once. Shortening the naps
 * ends the one under way at once and the thread polls as after fresh
 * work, so call it before a doorbell may come. Any thread, the device
 * thread running or not. Returns 0, -EINVAL (NULL @dev, @max_ns out of
 * range), or the negative errno of the eventfd write that wakes the
 * thread.
 */
int emu_set_idle_nap(struct emu_dev *dev, long max_ns);

#ifdef __cplusplus
}
#endif

#endif /* SSQ_EMU_H */
