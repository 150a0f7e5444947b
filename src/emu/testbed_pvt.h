/* SPDX-License-Identifier: MIT */
/*
 * testbed_pvt.h - two RC QPs on the emulated device, one per port (two
 * emulated hosts), connected and in RTS, each with its own send CQ, receive
 * CQ, receive queue (or, for side 1, an SRQ) and a registered data buffer.
 * For the emu tests and micro-benchmarks (C and C++) only; not part of
 * libssq's API.
 */
#ifndef SSQ_EMU_TESTBED_PVT_H
#define SSQ_EMU_TESTBED_PVT_H

#include <stdlib.h>
#include <sys/mman.h>
#include <ssq/ssq.h>
#include "emu/emu.h"

struct emu_tb_opts {
	uint32_t sq_cnt;   /* WQEBBs per SQ (default 256) */
	uint32_t cq_cnt;   /* CQEs per CQ (default 256) */
	uint32_t rq_cnt;   /* receive WQEs (default 64) */
	size_t mem_len;    /* bytes of each side's data buffer (default 64 KiB) */
	int access;        /* MR access (default: all) */
	int qp_access;     /* qp_access_flags (default: all remote) */
	uint8_t rnr_retry; /* default 0 */
	int srq;           /* side 1 receives through an SRQ */
	int shared;        /* every buffer MAP_SHARED: a fork()ed child may post */
	int no_scatter;    /* emu_qp_attr.disable_scatter_to_cqe on both QPs */
	const struct emu_dev_attr *dev_attr; /* NULL: ignore the env, full */
};

struct emu_tb_side {
	struct emu_qp *qp;
	uint32_t qpn;
	struct emu_cq *scq, *rcq;
	struct ssq_sq sq;
	struct ssq_cq scq_v, rcq_v;
	struct ssq_rq rq;
	struct emu_mr *mr;
	uint32_t key;
	uint64_t iova; /* of mem[0] */
	uint8_t *mem;
	void *bufs[12]; /* freed by emu_tb_fini */
	size_t lens[12];
	int shared;
	unsigned nbufs;
};

struct emu_tb {
	struct emu_dev *dev;
	struct emu_pd *pd;
	struct emu_tb_side s[2];
	struct emu_srq *srq;
	struct ssq_srq srq_v;
	void *srq_buf;
	__be32 *srq_db;
	struct emu_tb_opts o;
};

static inline void *emu_tb_alloc(struct emu_tb_side *s, size_t len)
{
	size_t size = (len + 4095) & ~(size_t)4095;
	void *p;

	if (s->shared) {
		p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		         -1, 0);
		if (p == MAP_FAILED)
			p = NULL;
	} else {
		p = aligned_alloc(4096, size);
	}
	if (p) {
		memset(p, 0, len);
		s->lens[s->nbufs] = size;
		s->bufs[s->nbufs++] = p;
	}
	return p;
}

static inline int emu_tb_side_init(struct emu_tb *tb, int i)
{
	struct emu_tb_side *s = &tb->s[i];
	struct emu_cq_attr ca;
	struct emu_qp_attr qa;
	struct mlx5dv_cq dcq;
	struct mlx5dv_qp dqp;
	__be32 *dbs;
	int ret;

	memset(&ca, 0, sizeof(ca));
	memset(&qa, 0, sizeof(qa));
	dbs = (__be32 *)emu_tb_alloc(s, 64);
	s->mem = (uint8_t *)emu_tb_alloc(s, tb->o.mem_len);
	if (!dbs || !s->mem)
		return -ENOMEM;
	s->iova = 0x10000000ull * (uint64_t)(i + 1);
	ret = emu_reg_mr(tb->pd, s->mem, tb->o.mem_len, s->iova, tb->o.access, &s->mr,
	                 &s->key);
	if (ret)
		return ret;
	ca.cqe_cnt = tb->o.cq_cnt;
	ca.buf = emu_tb_alloc(s, (size_t)ca.cqe_cnt * 64);
	ca.dbrec = dbs + 2;
	if (!ca.buf)
		return -ENOMEM;
	ret = emu_create_cq(tb->dev, &ca, &s->scq, &dcq);
	if (ret || (ret = ssq_cq_init(&s->scq_v, &dcq)))
		return ret;
	ca.buf = emu_tb_alloc(s, (size_t)ca.cqe_cnt * 64);
	ca.dbrec = dbs + 4;
	if (!ca.buf)
		return -ENOMEM;
	ret = emu_create_cq(tb->dev, &ca, &s->rcq, &dcq);
	if (ret || (ret = ssq_cq_init(&s->rcq_v, &dcq)))
		return ret;
	qa.send_cq = s->scq;
	qa.recv_cq = s->rcq;
	qa.sq_wqe_cnt = tb->o.sq_cnt;
	qa.sq_buf = emu_tb_alloc(s, (size_t)qa.sq_wqe_cnt * 64);
	qa.dbrec = dbs;
	qa.uar = emu_tb_alloc(s, SSQ_EMU_UAR_SIZE);
	qa.disable_scatter_to_cqe = tb->o.no_scatter;
	if (i == 1 && tb->o.srq) {
		qa.srq = tb->srq;
	} else {
		qa.rq_wqe_cnt = tb->o.rq_cnt;
		qa.rq_stride = 64;
		qa.rq_buf = emu_tb_alloc(s, (size_t)qa.rq_wqe_cnt * qa.rq_stride);
	}
	if (!qa.sq_buf || !qa.uar)
		return -ENOMEM;
	ret = emu_create_qp(tb->pd, &qa, &s->qp, &dqp, &s->qpn);
	if (ret)
		return ret;
	ret = ssq_sq_init(&s->sq, &dqp, s->qpn, 256, 8);
	if (ret)
		return ret;
	if (!qa.srq)
		ret = ssq_rq_init(&s->rq, &dqp);
	return ret;
}

/*
 * How emu_tb_qp_rts takes a QP to RTS: the PSNs it receives and sends
 * from, the requester's ACK timeout exponent, retry and RNR retry counts
 * and read/atomic depth, the responder's RNR timer, and whether the
 * address vector carries a GRH (from GID 0, which both link layers have;
 * an Ethernet port needs one).
 */
struct emu_tb_rts_attr {
	uint32_t rq_psn, sq_psn;
	uint8_t timeout, retry_cnt, rnr_retry, max_rd_atomic;
	uint8_t min_rnr_timer;
	int grh;
};

/*
 * RESET -> INIT -> RTR -> RTS for @qp on @port with @qp_access, facing QP
 * @dest behind port @ah_port: on this device, or with @peer (a wire
 * address, emu_qp_set_remote) on another.
 */
static inline int emu_tb_qp_rts(struct emu_qp *qp, uint8_t port, uint8_t ah_port,
                                int qp_access, const char *peer, uint32_t dest,
                                const struct emu_tb_rts_attr *w)
{
	struct ibv_qp_attr a;
	int ret;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = port;
	a.qp_access_flags = qp_access;
	ret = emu_modify_qp(
	    qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (!ret && peer)
		ret = emu_qp_set_remote(qp, peer);
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest;
	a.rq_psn = w->rq_psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = w->min_rnr_timer;
	a.ah_attr.port_num = ah_port;
	if (w->grh) {
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.hop_limit = 64;
	}
	ret = emu_modify_qp(qp, &a,
	                    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
	                        IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
	                        IBV_QP_MIN_RNR_TIMER);
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = w->timeout;
	a.retry_cnt = w->retry_cnt;
	a.rnr_retry = w->rnr_retry;
	a.sq_psn = w->sq_psn;
	a.max_rd_atomic = w->max_rd_atomic;
	return emu_modify_qp(qp, &a,
	                     IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
	                         IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
	                         IBV_QP_MAX_QP_RD_ATOMIC);
}

/* @w as rc_pingpong sets a QP up: PSNs 0, timeout 14, retry 7, with a GRH. */
static inline void emu_tb_rts_pingpong(struct emu_tb_rts_attr *w)
{
	memset(w, 0, sizeof(*w));
	w->timeout = 14;
	w->retry_cnt = 7;
	w->max_rd_atomic = 1;
	w->min_rnr_timer = 12;
	w->grh = 1;
}

/* Move @qp to RTS facing @dest on @port's other port, as rc_pingpong does. */
static inline int emu_tb_connect_qp(struct emu_qp *qp, uint8_t port, uint32_t dest,
                                    int qp_access, uint8_t rnr_retry)
{
	struct emu_tb_rts_attr w;

	emu_tb_rts_pingpong(&w);
	w.rnr_retry = rnr_retry;
	return emu_tb_qp_rts(qp, port, port == 1 ? 2 : 1, qp_access, NULL, dest, &w);
}

static inline int emu_tb_connect(struct emu_tb *tb)
{
	int ret = emu_tb_connect_qp(tb->s[0].qp, 1, tb->s[1].qpn, tb->o.qp_access,
	                            tb->o.rnr_retry);

	return ret ? ret
	           : emu_tb_connect_qp(tb->s[1].qp, 2, tb->s[0].qpn, tb->o.qp_access,
	                               tb->o.rnr_retry);
}

static inline void emu_tb_fini(struct emu_tb *tb)
{
	int i;
	unsigned k;

	emu_close(tb->dev);
	for (i = 0; i < 2; i++) {
		for (k = 0; k < tb->s[i].nbufs; k++) {
			if (tb->s[i].shared)
				munmap(tb->s[i].bufs[k], tb->s[i].lens[k]);
			else
				free(tb->s[i].bufs[k]);
		}
	}
	memset(tb, 0, sizeof(*tb));
}

/*
 * A device and its PD for testbed @tb, from @opts (NULL: all defaults; a
 * field left 0 takes its default), no side built yet: emu_tb_side_init
 * builds each. Returns 0, or a negative errno (@tb torn down).
 */
static inline int emu_tb_open(struct emu_tb *tb, const struct emu_tb_opts *opts)
{
	struct emu_dev_attr da;
	int ret;

	memset(&da, 0, sizeof(da));
	da.ignore_env = 1;
	memset(tb, 0, sizeof(*tb));
	if (opts)
		tb->o = *opts;
	if (!tb->o.sq_cnt)
		tb->o.sq_cnt = 256;
	if (!tb->o.cq_cnt)
		tb->o.cq_cnt = 256;
	if (!tb->o.rq_cnt)
		tb->o.rq_cnt = 64;
	if (!tb->o.mem_len)
		tb->o.mem_len = 65536;
	if (!tb->o.access)
		tb->o.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		               IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	if (!tb->o.qp_access)
		tb->o.qp_access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		                  IBV_ACCESS_REMOTE_ATOMIC;
	tb->s[0].shared = tb->s[1].shared = tb->o.shared;
	ret = emu_open(&tb->dev, tb->o.dev_attr ? tb->o.dev_attr : &da);
	if (ret)
		return ret;
	ret = emu_alloc_pd(tb->dev, &tb->pd);
	if (ret)
		emu_tb_fini(tb);
	return ret;
}

/*
 * Open a device and build both sides (an SRQ first if @opts asks), not yet
 * connected: emu_tb_init connects them to each other, the wire tests each
 * to another device's. Returns 0, or a negative errno (@tb torn down).
 */
static inline int emu_tb_host(struct emu_tb *tb, const struct emu_tb_opts *opts)
{
	int ret = emu_tb_open(tb, opts);

	if (ret)
		return ret;
	if (tb->o.srq) {
		struct emu_srq_attr sa;
		struct mlx5dv_srq dsrq;

		memset(&sa, 0, sizeof(sa));
		tb->srq_buf = emu_tb_alloc(&tb->s[0], 64 * 64);
		tb->srq_db = (__be32 *)emu_tb_alloc(&tb->s[0], 64);
		ret = -ENOMEM;
		if (!tb->srq_buf || !tb->srq_db)
			goto fail;
		sa.buf = tb->srq_buf;
		sa.wqe_cnt = 64;
		sa.stride = 64;
		sa.dbrec = tb->srq_db;
		ret = emu_create_srq(tb->pd, &sa, &tb->srq, &dsrq);
		if (ret || (ret = ssq_srq_init(&tb->srq_v, &dsrq, 64)))
			goto fail;
	}
	ret = emu_tb_side_init(tb, 0);
	if (!ret)
		ret = emu_tb_side_init(tb, 1);
	if (!ret)
		return 0;
fail:
	emu_tb_fini(tb);
	return ret;
}

/* Open a device and build both sides, connected and in RTS. */
static inline int emu_tb_init(struct emu_tb *tb, const struct emu_tb_opts *opts)
{
	int ret = emu_tb_host(tb, opts);

	if (!ret && (ret = emu_tb_connect(tb)))
		emu_tb_fini(tb);
	return ret;
}

/* @qp to RTS facing QP @dest of another device at wire address @peer. */
static inline int emu_tb_wire_connect(struct emu_qp *qp, const char *peer, uint32_t dest,
                                      const struct emu_tb_rts_attr *w)
{
	return emu_tb_qp_rts(qp, 1, 1,
	                     IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
	                         IBV_ACCESS_REMOTE_ATOMIC,
	                     peer, dest, w);
}

/* emu_tb_wire_connect as rc_pingpong sets a QP up (emu_tb_rts_pingpong). */
static inline int emu_tb_wire_qp(struct emu_qp *qp, const char *peer, uint32_t dest)
{
	struct emu_tb_rts_attr w;

	emu_tb_rts_pingpong(&w);
	return emu_tb_wire_connect(qp, peer, dest, &w);
}

/*
 * Two emulated hosts in this process joined by the wire (UDP on loopback):
 * @h[0] and @h[1] each a device with one side (s[0]), those two QPs
 * connected to each other over the wire and in RTS. Both devices are run
 * by emu_process() on each. Returns 0, or a negative errno (@h torn down).
 */
static inline int emu_tb_wire_init(struct emu_tb h[2])
{
	struct emu_tb_opts o;
	char addr[2][64];
	int ret = 0, i;

	memset(&o, 0, sizeof(o));
	o.sq_cnt = 64;
	o.cq_cnt = 64;
	o.rq_cnt = 16;
	memset(h, 0, 2 * sizeof(*h));
	for (i = 0; i < 2 && !ret; i++) {
		ret = emu_tb_open(&h[i], &o);
		if (!ret)
			ret = emu_tb_side_init(&h[i], 0);
		if (!ret)
			ret = emu_wire_open(h[i].dev, "127.0.0.1:0", addr[i],
			                    sizeof(addr[i]));
	}
	if (!ret)
		ret = emu_tb_wire_qp(h[0].s[0].qp, addr[1], h[1].s[0].qpn);
	if (!ret)
		ret = emu_tb_wire_qp(h[1].s[0].qp, addr[0], h[0].s[0].qpn);
	if (ret) {
		for (i = 0; i < 2; i++)
			if (h[i].dev)
				emu_tb_fini(&h[i]);
	}
	return ret;
}

/* Ring side @i's send doorbell up to its sq.pi (DBR + 8-byte doorbell). */
static inline void emu_tb_ring(struct emu_tb *tb, int i, uint32_t last_pi)
{
	struct emu_tb_side *s = &tb->s[i];

	ssq_sq_ring_db(&s->sq, s->sq.pi,
	               (const struct mlx5_wqe_ctrl_seg *)ssq_sq_wqebb(&s->sq, last_pi));
}

/* Poll up to @max CQEs from @cq, running the device between tries. */
static inline int emu_tb_poll(struct emu_tb *tb, struct ssq_cq *cq, struct ssq_cqe *out,
                              int max)
{
	int n = 0, tries;

	for (tries = 0; tries < 64 && n < max; tries++) {
		n += ssq_cq_poll(cq, out + n, max - n);
		if (n < max)
			emu_process(tb->dev, 1024);
	}
	return n;
}

#endif /* SSQ_EMU_TESTBED_PVT_H */
