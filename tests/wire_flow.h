/* SPDX-License-Identifier: MIT */
/*
 * The two hosts of test_emu_wire.c: a fork()ed child is the remote host
 * (its own emulated device, two QPs, receive buffers) that reports every
 * responder CQE, with a hash of the bytes received, through a pipe, and
 * hashes its memory on request; the parent's side (struct conn) opens it,
 * connects both QP pairs over the wire, posts, and checks what the child
 * reports.
 */
#ifndef SSQ_TEST_WIRE_FLOW_H
#define SSQ_TEST_WIRE_FLOW_H

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "helpers.h"
#include "emu/testbed_pvt.h"

enum {
	MEM_LEN = 2 << 20,
	READ_OFF = 0x100000, /* lossy phase: READ k lands at READ_OFF + k * 2048 */
	ATOM_OFF = 0x1a0000, /* lossy phase: FETCH_ADD k's old value, k * 8 */
	CNT_OFF = 0x8000,    /* the child's counter the FETCH_ADDs add to */
	LOG_OFF = 0x10000,   /* lossy phase: WRITE k lands at LOG_OFF + k * 2048 */
	RECV_OFF = 0xc0000,
	RECV_LEN = 8192,
	NRECV = 32,
	TIMEOUT = 14, /* 4.096 us * 2^14 = 67 ms, ssqd's own (qp_transition.c):
	               * a loaded machine (ASan, a parallel suite, a build) held
	               * the peer off the CPU for 8 x 33.6 ms */
	RETRY = 7,
	MIN_RNR = 14, /* 1.28 ms */
};

static const uint32_t psn_p[2] = { 0xfffff0, 0x123 }; /* parent -> child */
static const uint32_t psn_c[2] = { 0x777, 0x42 };     /* child -> parent */

enum { M_HELLO, M_CQE, M_HASH, M_EXIT };

struct msg {
	uint32_t type;
	uint32_t opcode, syndrome, wqe_counter, byte_len, seq;
	__be32 imm;
	uint64_t hash, off, len;
	uint32_t qpn[2], key[2];
	uint64_t iova[2];
	char addr[32];
};

static inline uint64_t fnv(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (n--)
		h = (h ^ *p++) * 0x100000001b3ull;
	return h;
}

static inline double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static inline int xfer(int fd, struct msg *m, int wr)
{
	size_t done = 0;

	while (done < sizeof(*m)) {
		ssize_t r = wr ? write(fd, (char *)m + done, sizeof(*m) - done)
		               : read(fd, (char *)m + done, sizeof(*m) - done);

		if (r <= 0)
			return -1;
		done += (size_t)r;
	}
	return 0;
}

static inline int host_init(struct emu_tb *tb)
{
	const struct emu_tb_opts o = { .cq_cnt = 1024, .mem_len = MEM_LEN };

	return emu_tb_host(tb, &o);
}

/*
 * The parent's requester depth (max_rd_atomic); the responders' stay at 1.
 * Set before conn_open; the child inherits it but only responds.
 */
static uint8_t req_rd_atomic = 1;

/* RESET -> RTS facing QP @dest at wire address @peer. */
static inline int connect_remote(struct emu_qp *qp, const char *peer, uint32_t dest,
                                 uint32_t rq_psn, uint32_t sq_psn, uint8_t rnr_retry)
{
	const struct emu_tb_rts_attr w = {
		.rq_psn = rq_psn,
		.sq_psn = sq_psn,
		.timeout = TIMEOUT,
		.retry_cnt = RETRY,
		.rnr_retry = rnr_retry,
		.max_rd_atomic = req_rd_atomic,
		.min_rnr_timer = MIN_RNR,
	};

	return emu_tb_wire_connect(qp, peer, dest, &w);
}

static inline void post_recv(struct emu_tb_side *s, uint32_t slot)
{
	struct ibv_sge sge = { s->iova + RECV_OFF + (uint64_t)slot * RECV_LEN, RECV_LEN,
		               s->key };

	ssq_rq_post_recv(&s->rq, &sge, 1);
	ssq_rq_ring(&s->rq);
}

/* Fill the hello message with this host's address, QPNs, keys, IOVAs. */
static inline void hello(struct emu_tb *tb, struct msg *m, const char *addr)
{
	int i;

	memset(m, 0, sizeof(*m));
	m->type = M_HELLO;
	snprintf(m->addr, sizeof(m->addr), "%s", addr);
	for (i = 0; i < 2; i++) {
		m->qpn[i] = tb->s[i].qpn;
		m->key[i] = tb->s[i].key;
		m->iova[i] = tb->s[i].iova;
	}
}

/*
 * The remote host: QP 0 with NRECV receive buffers reposted as they
 * complete, QP 1 with none (every SEND to it is RNR NAKed). @fault: its
 * SSQ_EMU_WIRE_FAULT. @thread: the device thread drives its device (its
 * emu_process() calls then return -EBUSY), else this loop does.
 * Exits 0 on M_EXIT, 2 on a setup or pipe failure.
 */
static inline int child(int cmd, int rep, const char *fault, int thread)
{
	struct emu_tb tb;
	struct msg m, peer;
	char addr[64];
	uint32_t posted = 0;
	unsigned idle = 0;
	int i;

	if (fault)
		setenv("SSQ_EMU_WIRE_FAULT", fault, 1);
	if (host_init(&tb) || emu_wire_open(tb.dev, NULL, addr, sizeof(addr)))
		return 2;
	hello(&tb, &m, addr);
	if (xfer(rep, &m, 1) || xfer(cmd, &peer, 0))
		return 2;
	for (i = 0; i < 2; i++)
		if (connect_remote(tb.s[i].qp, peer.addr, peer.qpn[i], psn_p[i], psn_c[i],
		                   7))
			return 2;
	for (; posted < NRECV; posted++)
		post_recv(&tb.s[0], posted % NRECV);
	if (thread && emu_start(tb.dev))
		return 2;
	for (;;) {
		struct pollfd pfd = { cmd, POLLIN, 0 };
		struct ssq_cqe c;
		int busy = emu_process(tb.dev, 1024) > 0;

		while (ssq_cq_poll(&tb.s[0].rcq_v, &c, 1) == 1) {
			const uint8_t *buf = tb.s[0].mem + RECV_OFF +
			                     (size_t)(c.wqe_counter % NRECV) * RECV_LEN;

			memset(&m, 0, sizeof(m));
			m.type = M_CQE;
			m.opcode = c.opcode;
			m.syndrome = c.syndrome;
			m.wqe_counter = c.wqe_counter;
			m.byte_len = c.byte_len;
			m.imm = c.imm;
			if (c.opcode == MLX5_CQE_RESP_SEND ||
			    c.opcode == MLX5_CQE_RESP_SEND_IMM) {
				m.hash = fnv(buf, c.byte_len);
				if (c.byte_len >= 4)
					memcpy(&m.seq, buf, 4);
			}
			if (xfer(rep, &m, 1))
				return 2;
			if (c.status == IBV_WC_SUCCESS)
				post_recv(&tb.s[0], posted++ % NRECV);
			busy = 1;
		}
		while (ssq_cq_poll(&tb.s[1].rcq_v, &c, 1) == 1) {
			memset(&m, 0, sizeof(m));
			m.type = M_CQE;
			m.opcode = c.opcode;
			m.syndrome = 0xff; /* QP 1 never completes a receive */
			if (xfer(rep, &m, 1))
				return 2;
		}
		if (poll(&pfd, 1, 0) == 1) {
			if (xfer(cmd, &m, 0))
				return 2;
			if (m.type == M_EXIT)
				break;
			m.hash = fnv(tb.s[0].mem + m.off, m.len);
			if (xfer(rep, &m, 1))
				return 2;
			busy = 1;
		}
		if (busy) {
			idle = 0;
		} else if (++idle > 256) {
			struct timespec ts = { 0, 20000 };

			nanosleep(&ts, NULL);
		}
	}
	emu_tb_fini(&tb);
	return 0;
}

struct conn {
	struct emu_tb tb;
	pid_t pid;
	int cmd, rep;
	struct msg peer; /* the child's hello */
};

/* Fork the remote host and connect both QP pairs. */
static inline int conn_open(struct conn *c, const char *child_fault, int child_thread)
{
	int to_child[2], to_parent[2];
	char addr[64];
	struct msg m;
	int i;

	memset(c, 0, sizeof(*c));
	if (pipe(to_child) || pipe(to_parent))
		return -1;
	c->pid = fork();
	if (c->pid < 0)
		return -1;
	if (c->pid == 0) {
		close(to_child[1]);
		close(to_parent[0]);
		_exit(child(to_child[0], to_parent[1], child_fault, child_thread));
	}
	close(to_child[0]);
	close(to_parent[1]);
	c->cmd = to_child[1];
	c->rep = to_parent[0];
	if (host_init(&c->tb) ||
	    emu_wire_open(c->tb.dev, "127.0.0.1:0", addr, sizeof(addr)))
		return -1;
	if (xfer(c->rep, &c->peer, 0) || c->peer.type != M_HELLO)
		return -1;
	hello(&c->tb, &m, addr);
	if (xfer(c->cmd, &m, 1))
		return -1;
	for (i = 0; i < 2; i++)
		if (connect_remote(c->tb.s[i].qp, c->peer.addr, c->peer.qpn[i], psn_c[i],
		                   psn_p[i], i == 0 ? 7 : 2))
			return -1;
	return 0;
}

/* Stop the child (M_EXIT, or SIGKILL when @kill_it) and reap it. Returns
 * the child's exit status, or -1. */
static inline int conn_close(struct conn *c, int kill_it)
{
	struct msg m;
	int st = 0, ret = -1;

	memset(&m, 0, sizeof(m));
	m.type = M_EXIT;
	if (c->pid > 0) {
		if (kill_it || xfer(c->cmd, &m, 1))
			kill(c->pid, SIGKILL);
		if (waitpid(c->pid, &st, 0) == c->pid && WIFEXITED(st))
			ret = WEXITSTATUS(st);
		c->pid = 0;
	}
	close(c->cmd);
	close(c->rep);
	return ret;
}

/* Poll one CQE from @cq, running the device, for up to @secs. */
static inline int wait_cqe(struct conn *c, struct ssq_cq *cq, struct ssq_cqe *e,
                           double secs)
{
	double end = now_s() + secs;

	do {
		if (ssq_cq_poll(cq, e, 1) == 1)
			return 1;
		emu_process(c->tb.dev, 1024);
	} while (now_s() < end);
	return 0;
}

/* The child's next report, running the parent's device meanwhile. */
static inline int wait_report(struct conn *c, struct msg *m, double secs)
{
	double end = now_s() + secs;

	do {
		struct pollfd pfd = { c->rep, POLLIN, 0 };

		if (poll(&pfd, 1, 0) == 1)
			return xfer(c->rep, m, 0) == 0;
		emu_process(c->tb.dev, 1024);
	} while (now_s() < end);
	return 0;
}

/* The child's hash of its memory [@off, @off + @len). */
static inline uint64_t remote_hash(struct conn *c, uint64_t off, uint64_t len)
{
	struct msg m;

	memset(&m, 0, sizeof(m));
	m.type = M_HASH;
	m.off = off;
	m.len = len;
	if (xfer(c->cmd, &m, 1) || !wait_report(c, &m, 5) || m.type != M_HASH)
		return 0;
	return m.hash;
}

static inline void fill(uint8_t *p, size_t n, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

static inline void check_req(const struct ssq_cqe *e, uint16_t idx, uint32_t qpn,
                             const char *what)
{
	CHECK(e->opcode == MLX5_CQE_REQ && e->status == IBV_WC_SUCCESS,
	      "%s: opcode %u syndrome 0x%x", what, e->opcode, e->syndrome);
	CHECK(e->wqe_counter == idx, "%s: wqe_counter %u, want %u", what, e->wqe_counter,
	      idx);
	CHECK(e->qpn == qpn, "%s: qpn 0x%x", what, e->qpn);
}

static inline void check_resp(struct conn *c, uint8_t op, uint16_t idx, uint32_t len,
                              __be32 imm, const uint8_t *data, const char *what)
{
	struct msg m;

	CHECK(wait_report(c, &m, 5) && m.type == M_CQE, "%s: responder CQE", what);
	CHECK(m.opcode == op, "%s: opcode %u, want %u (syndrome 0x%x)", what, m.opcode,
	      op, m.syndrome);
	CHECK(m.wqe_counter == idx, "%s: wqe_counter %u, want %u", what, m.wqe_counter,
	      idx);
	CHECK(m.byte_len == len, "%s: byte_len %u, want %u", what, m.byte_len, len);
	CHECK(m.imm == imm, "%s: imm 0x%x", what, be32toh(m.imm));
	if (data)
		CHECK(m.hash == fnv(data, len), "%s: received bytes differ", what);
}

/* Post one 1-SGE WQE on side @q: WRITE, WRITE_IMM, READ, SEND, SEND_IMM. */
static inline uint16_t post(struct conn *c, int q, uint8_t opcode, uint32_t loff,
                            uint32_t len, uint64_t roff, __be32 imm, unsigned flags)
{
	struct emu_tb_side *s = &c->tb.s[q];
	uint32_t pi = s->sq.pi;
	uint64_t raddr = c->peer.iova[0] + roff;
	int n;

	if (opcode == MLX5_OPCODE_RDMA_WRITE)
		n = ssq_prep_rdma_write(&s->sq, pi, s->iova + loff, s->key, len, raddr,
		                        c->peer.key[0], flags);
	else if (opcode == MLX5_OPCODE_RDMA_READ)
		n = ssq_prep_rdma_read(&s->sq, pi, s->iova + loff, s->key, len, raddr,
		                       c->peer.key[0], flags);
	else if (opcode == MLX5_OPCODE_RDMA_WRITE_IMM)
		n = ssq_prep_rdma_write_imm(&s->sq, pi, s->iova + loff, s->key, len,
		                            raddr, c->peer.key[0], imm, flags);
	else
		n = ssq_prep_send(&s->sq, pi, opcode, s->iova + loff, s->key, len, imm,
		                  flags);
	CHECK(n == 1, "prep opcode 0x%x: %d", opcode, n);
	s->sq.pi += (uint32_t)n;
	emu_tb_ring(&c->tb, q, pi);
	return (uint16_t)pi;
}

/* ATOMIC_CS / ATOMIC_FA on side 0 to the child's @roff; old value at @loff. */
static inline uint16_t post_atomic(struct conn *c, uint8_t opcode, uint32_t loff,
                                   uint64_t roff, uint64_t compare_add, uint64_t swap)
{
	struct emu_tb_side *s = &c->tb.s[0];
	uint32_t pi = s->sq.pi;
	int n = ssq_prep_atomic(&s->sq, pi, opcode, s->iova + loff, s->key,
	                        c->peer.iova[0] + roff, c->peer.key[0], compare_add, swap,
	                        SSQ_WQE_SIGNALED);

	CHECK(n == 1, "prep atomic 0x%x: %d", opcode, n);
	s->sq.pi += (uint32_t)n;
	emu_tb_ring(&c->tb, 0, pi);
	return (uint16_t)pi;
}

/* An atomic's fetched value: in host order, as mlx5 requesters write it. */
static inline uint64_t u64_at(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

#endif /* SSQ_TEST_WIRE_FLOW_H */
