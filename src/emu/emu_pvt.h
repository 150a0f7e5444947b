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

struct emu_mr {
	struct emu_pd *pd;
	uint8_t *addr; /* host address of iova */
	uint64_t iova;
	uint64_t len;
	uint32_t key;
	int access;
};

struct emu_cq {
	struct emu_dev *dev;
	uint8_t *buf;
	__be32 *dbrec;
	uint32_t cqe_cnt;
	uint32_t cqn;
	uint32_t pi;    /* CQEs written, free-running */
	unsigned users; /* QPs */
	int overrun;    /* sticky; read by emu_cq_error() */
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
	uint8_t *bf_reg;       /* the UAR doorbell register; NULL: none */
	uint64_t bf_seen[2];   /* the last 8 bytes seen in each BlueFlame half */
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
};

struct emu_dev {
	pthread_mutex_t lock; /* one process() call, or one object/mode call */
	enum emu_mode mode;
	struct emu_fault fault;
	uint32_t stream_poll_ns; /* the device thread's wait while streaming */
	uint64_t wqe_seq;        /* WQEs executed since the fault was set */
	int fault_hit;           /* the WQE failing now is the injected one */
	unsigned rr;             /* QP slot process() starts at, for fairness */
	uint64_t pass;           /* process() calls */
	unsigned dev_errors;
	FILE *trace;

	pthread_t thread;
	int thread_running;
	int stop; /* __atomic: the thread's stop request */

	unsigned nqp;                          /* highest QP slot used + 1 */
	struct emu_qp *qps[SSQ_EMU_MAX_QP];    /* by QPN - base */
	struct emu_cq *cqs[SSQ_EMU_MAX_CQ];    /* by CQN */
	struct emu_srq *srqs[SSQ_EMU_MAX_SRQ]; /* by SRQN */
	struct emu_mr *mrs[SSQ_EMU_MAX_MR];    /* by key >> 8 */
	uint8_t mr_tag;
	struct emu_pd *pds;    /* list head */
	struct emu_wire *wire; /* the UDP wire (wire_pvt.h); NULL: none */
};

/* A gather or scatter list resolved to host memory. */
struct emu_sg {
	uint8_t *p;
	uint32_t len;
};

/*
 * The most pieces one WQE resolves to: a send WQE has at most 62 data
 * segments (63 DS less ctrl), an inline run splits in two at the ring wrap;
 * a receive WQE of EMU_MAX_RECV_STRIDE bytes has at most 64 segments.
 */
#define EMU_MAX_SG          64
#define EMU_MAX_RECV_STRIDE (EMU_MAX_SG * 16)

/* ---- device.c ---- */
struct emu_qp *emu_qp_by_qpn(struct emu_dev *dev, uint32_t qpn);

/* MR lookup by key index; NULL unless @key names a live MR of @pd. */
static inline struct emu_mr *emu_mr_get(struct emu_dev *dev, const struct emu_pd *pd,
                                        uint32_t key)
{
	struct emu_mr *mr;

	if (ssq_unlikely((key >> 8) >= SSQ_EMU_MAX_MR))
		return NULL;
	mr = dev->mrs[key >> 8];
	if (ssq_unlikely(!mr || mr->key != key || mr->pd != pd))
		return NULL;
	return mr;
}

/* Host pointer of [@iova, @iova + @len) inside @mr, or NULL. */
/* CLOCK_MONOTONIC in ns: the device's timers (RNR, wire retries, stream wait). */
static inline uint64_t emu_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static inline uint8_t *emu_mr_ptr(const struct emu_mr *mr, uint64_t iova, uint64_t len)
{
	if (ssq_unlikely(iova < mr->iova || len > mr->len ||
	                 iova - mr->iova > mr->len - len))
		return NULL;
	return mr->addr + (iova - mr->iova);
}

/* ---- qp_state.c ---- */
/* Move to ERR (flushing starts on the next process()); lock held. */
void emu_qp_to_err(struct emu_qp *qp);

/* ---- cqe_writer.c ---- */
/*
 * Write one successful CQE. Returns 0, or -EOVERFLOW when @cq overran (the
 * CQE is dropped and the CQ's QPs moved to ERR).
 */
int emu_cqe_ok(struct emu_cq *cq, uint8_t opcode, uint32_t qpn, uint16_t wqe_counter,
               uint32_t byte_cnt, __be32 imm);
/* Write one error CQE (REQ_ERR or RESP_ERR). Returns as emu_cqe_ok(). */
int emu_cqe_err(struct emu_cq *cq, uint8_t opcode, uint8_t syndrome, uint8_t vendor,
                uint8_t wqe_opcode, uint32_t qpn, uint16_t wqe_counter);

/* ---- execute.c ---- */
/* Run one QP's send queue for up to @budget WQEs; returns how many. */
unsigned emu_sq_run(struct emu_qp *qp, unsigned budget);

/* The next receive WQE of @qp's RQ or SRQ (execute.c): 0, or 1 if none. */
int emu_rq_take(struct emu_qp *qp, const uint8_t **wqe, unsigned *nseg, uint16_t *idx);
/* Flush one QP in ERR: its SQ WQEs and its RQ's receive WQEs. */
unsigned emu_qp_flush(struct emu_qp *qp, unsigned budget);

/* ---- fault.c ---- */
/* Read SSQ_EMU_* into @attr. Returns 0 or -EINVAL with a message. */
int emu_env_apply(struct emu_dev_attr *attr);

/* ---- wire.c: hooks, each a no-op without a wire; lock held ---- */
/* Receive and dispatch the datagrams waiting; returns packets handled. */
unsigned emu_wire_rx(struct emu_dev *dev, unsigned budget);
/* Send due held packets and pending ACKs. */
void emu_wire_tx(struct emu_dev *dev);
/* QP @qp moved from @cur to @next (modify_qp or to ERR). */
void emu_wire_qp_state(struct emu_qp *qp, enum ibv_qp_state cur, enum ibv_qp_state next);
void emu_wire_qp_free(struct emu_qp *qp);
void emu_wire_close(struct emu_dev *dev);
/* The wire's UDP socket, or -1 without a wire (lock held). */
int emu_wire_fd(const struct emu_dev *dev);
/* The SQ of a QP with a remote peer (wire_req.c). */
unsigned emu_wire_sq_run(struct emu_qp *qp, uint16_t dbr, unsigned budget);

/* ---- trace.c ---- */
void emu_trace_wqe(struct emu_qp *qp, uint32_t pi, const char *what);
void emu_trace_cqe(struct emu_cq *cq, const struct mlx5_cqe64 *cqe);
void emu_trace_recv(struct emu_qp *qp, const void *wqe, uint32_t len, uint32_t idx);
/* A device error: a line and a dump of the WQE at the consumer, on stderr
 * and in the trace. */
void emu_dev_error(struct emu_qp *qp, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif /* SSQ_EMU_PVT_H */
