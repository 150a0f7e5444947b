/* SPDX-License-Identifier: MIT */
/*
 * Shared pieces of the receive-pool tests: the messages producers send,
 * how the receiving side's log is read and checked, and how producers are
 * paced so the reader never falls out of the pool's window.
 *
 * Each producer p sends a stream of messages s = 0, 1, 2, ... that reach
 * the receiver's log; message s is, by s % 3:
 *   0  SEND      of rmsg_len(p, s) bytes, its first 8 the tag (p, s);
 *   1  SEND_IMM  of rmsg_len(p, s) bytes, immediate rmsg_imm(p, s);
 *   2  RDMA_WRITE_IMM of rmsg_len(p, s) bytes to cell (p, s) of the
 *      receiver's WRITE_IMM area, immediate rmsg_imm(p, s).
 * Every byte after the tag is rmsg_byte(p, s, j). The reader takes the log
 * in order and checks each record is the next message of its producer,
 * with the right kind, length, immediate and bytes: every message exactly
 * once, in each producer's order.
 */
#ifndef SSQ_TEST_RECV_FLOW_H
#define SSQ_TEST_RECV_FLOW_H

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include "ssq_flow.h"
#include "lib/tlib.h"

#define RMAX   256u /* largest message; the ssqds run with --recv-size RMAX */
#define RPMAX  8u   /* producers at most */
#define RDEPTH 64u  /* their --recv-depth */

static inline uint32_t rmsg_len(uint32_t p, uint32_t s)
{
	return 8 + (s * 37u + p * 11u) % (RMAX - 7); /* 8 .. RMAX */
}

static inline uint8_t rmsg_byte(uint32_t p, uint32_t s, uint32_t j)
{
	return (uint8_t)(p * 131u + s * 31u + j * 7u + 1u);
}

static inline __be32 rmsg_imm(uint32_t p, uint32_t s)
{
	return htobe32(p << 24 | (s & 0xffffff));
}

/* Message (p, s)'s bytes, rmsg_len(p, s) of them, at @buf. */
static inline void rmsg_fill(uint8_t *buf, uint32_t p, uint32_t s)
{
	uint64_t tag = msg_tag(p, s);
	uint32_t j, len = rmsg_len(p, s);

	memcpy(buf, &tag, 8);
	for (j = 8; j < len; j++)
		buf[j] = rmsg_byte(p, s, j);
}

/* The first byte of @buf that is not message (p, s)'s, or -1. */
static inline int rmsg_diff(const uint8_t *buf, uint32_t p, uint32_t s)
{
	uint64_t tag = msg_tag(p, s);
	uint32_t j, len = rmsg_len(p, s);

	if (memcmp(buf, &tag, 8))
		return 0;
	for (j = 8; j < len; j++)
		if (buf[j] != rmsg_byte(p, s, j))
			return (int)j;
	return -1;
}

/* The CQE opcode message s arrives with. */
static inline uint8_t rmsg_opcode(uint32_t s)
{
	static const uint8_t op[3] = { MLX5_CQE_RESP_SEND, MLX5_CQE_RESP_SEND_IMM,
		                       MLX5_CQE_RESP_WR_IMM };

	return op[s % 3];
}

/* The send opcode of message s. */
static inline uint8_t rmsg_send_opcode(uint32_t s)
{
	static const uint8_t op[3] = { MLX5_OPCODE_SEND, MLX5_OPCODE_SEND_IMM,
		                       MLX5_OPCODE_RDMA_WRITE_IMM };

	return op[s % 3];
}

/*
 * Pacing, in memory shared by the test's processes (rpace_new before the
 * forks): a producer takes numbers for its next @n messages from `sent`
 * and posts them only once the reader has read all but @window of the
 * messages numbered below: then at most @window messages are ever arrived
 * and unread, and with @window <= the pool's depth none leaves the window
 * before it is read. Producers pass in number order, so none waits on one
 * that waits.
 */
struct rpace {
	uint64_t sent;
	uint8_t pad0[56];
	uint64_t read;
	uint8_t pad1[56];
};

static inline struct rpace *rpace_new(void)
{
	void *p = mmap(NULL, sizeof(struct rpace), PROT_READ | PROT_WRITE,
	               MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : (struct rpace *)p;
}

/* Returns 0, or -1 after 60 s without the reader moving. */
static inline int rpace_wait(struct rpace *pc, uint32_t n, uint32_t window)
{
	uint64_t end = __atomic_add_fetch(&pc->sent, n, __ATOMIC_SEQ_CST);
	double t0 = now_s();

	while (end > __atomic_load_n(&pc->read, __ATOMIC_ACQUIRE) + window) {
		if (now_s() - t0 > 60)
			return -1;
		usleep(50);
	}
	return 0;
}

/*
 * A batch's completion came (wr_id = its number): check what it brought
 * back. Returns 0, or -1 after printing why.
 */
typedef int (*rbatch_check)(const void *arg, uint32_t p, uint32_t batch);

/*
 * Take producer @p's completions: each must be the next batch's (*@got),
 * successful, and pass @check (if not NULL). Returns how many, or -1
 * after printing the wrong one.
 */
static inline int rreap(struct ssq_producer *prod, uint32_t p, uint32_t *got,
                        rbatch_check check, const void *arg)
{
	struct ssq_completion comp[16];
	int n = ssq_poll(prod, comp, 16), k;

	for (k = 0; k < n; k++, (*got)++) {
		if (comp[k].status != IBV_WC_SUCCESS || comp[k].wr_id != *got) {
			fprintf(stderr,
			        "producer %u: completion %u: status %d (%s) wr_id %llu\n",
			        p, *got, comp[k].status,
			        ibv_wc_status_str((enum ibv_wc_status)comp[k].status),
			        (unsigned long long)comp[k].wr_id);
			return -1;
		}
		if (check && check(arg, p, *got))
			return -1;
	}
	return n;
}

/*
 * Take the rest of producer @p's @n batch completions (up to 60 s from
 * @t0), then make sure no more come. Returns 0, or 1 after printing why.
 */
static inline int rdrain(struct ssq_producer *prod, uint32_t p, uint32_t *got, uint32_t n,
                         rbatch_check check, const void *arg, double t0)
{
	while (*got < n) {
		if (rreap(prod, p, got, check, arg) < 0)
			return 1;
		if (now_s() - t0 > 60) {
			fprintf(stderr, "producer %u: %u of %u completions\n", p, *got,
			        n);
			return 1;
		}
	}
	usleep(1000);
	if (rreap(prod, p, got, check, arg) != 0) {
		fprintf(stderr, "producer %u: completions nobody asked for\n", p);
		return 1;
	}
	return 0;
}

/* The reader's state: what comes next from each producer. */
struct rlog {
	struct ssq_queue *q; /* the receiving side's queue */
	uint32_t nprod;
	uint32_t next[RPMAX];
	const uint8_t *imm_area; /* where WRITE_IMMs land, as the reader sees it */
	uint32_t per_prod;       /* cells of RMAX bytes per producer in it */
	uint64_t k;              /* the next log number */
	unsigned bad;
};

/*
 * Read and check log record r->k. Returns 1 (checked: r->k moved on), 0
 * (not arrived yet), -1 (wrong: printed, r->bad counted).
 */
static inline int rlog_take(struct rlog *r, struct rpace *pc)
{
	struct ssq_recv_msg m;
	uint8_t buf[RMAX + 64];
	uint32_t p, s;
	int rc = ssq_recv_copy(r->q, r->k, buf, sizeof(buf), &m), at;

	if (rc == -EAGAIN)
		return 0;
	if (rc) {
		fprintf(stderr, "log %llu: ssq_recv_copy %d\n", (unsigned long long)r->k,
		        rc);
		goto bad;
	}
	if (m.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "log %llu: status %u (%s) syndrome 0x%x\n",
		        (unsigned long long)r->k, m.status,
		        ibv_wc_status_str((enum ibv_wc_status)m.status), m.syndrome);
		goto bad;
	}
	if (m.opcode == MLX5_CQE_RESP_SEND) {
		uint64_t tag;

		memcpy(&tag, buf, 8);
		p = (uint32_t)(tag >> 32) & 0xffffff;
		s = (uint32_t)tag;
	} else {
		p = be32toh(m.imm) >> 24;
		s = be32toh(m.imm) & 0xffffff;
	}
	if (p >= r->nprod || s != r->next[p] || m.opcode != rmsg_opcode(s) ||
	    m.byte_len != rmsg_len(p, s) ||
	    (m.opcode != MLX5_CQE_RESP_SEND && m.imm != rmsg_imm(p, s))) {
		fprintf(stderr,
		        "log %llu: opcode %u, %u bytes, imm 0x%x: producer %u message "
		        "%u; expected message %u of it\n",
		        (unsigned long long)r->k, m.opcode, m.byte_len, be32toh(m.imm), p,
		        s, p < r->nprod ? r->next[p] : 0);
		goto bad;
	}
	if (m.opcode == MLX5_CQE_RESP_WR_IMM) {
		/* The data landed at its raddr before the receive completed. */
		if (m.data) {
			fprintf(stderr, "log %llu: WRITE_IMM with a payload pointer\n",
			        (unsigned long long)r->k);
			goto bad;
		}
		at = rmsg_diff(r->imm_area + ((size_t)p * r->per_prod + s) * RMAX, p, s);
	} else {
		at = rmsg_diff(buf, p, s);
	}
	if (at >= 0) {
		fprintf(stderr, "log %llu: producer %u message %u: byte %d differs\n",
		        (unsigned long long)r->k, p, s, at);
		goto bad;
	}
	r->next[p]++;
	r->k++;
	if (pc)
		__atomic_store_n(&pc->read, r->k, __ATOMIC_RELEASE);
	return 1;
bad:
	r->bad++;
	return -1;
}

/*
 * A TCP port on 127.0.0.1 for a --listen, nobody's but this test's. Below
 * the kernel's ephemeral range (ip_local_port_range): a port the kernel
 * picked would go back to its pool, where any other test's outgoing
 * connection (a dial) may take it before ssqd binds it. Tests run side by
 * side and a free port stays unbound until this test's ssqd starts (and
 * again while it restarts): each port handed out is held (tcp_port_hold)
 * until the test ends, and skipped by every other test's free_tcp_port.
 * From a random start per process, then on up, so one test's ports
 * differ. Returns 0 if none could be had.
 */
static inline uint16_t free_tcp_port(void)
{
	return t_free_tcp_port();
}

/*
 * Start ssqd (the binary in $SSQD) on the emulated device at @sock with a
 * receive pool of RDEPTH buffers of RMAX bytes and @args (NULL-terminated,
 * up to 8) after the usual ones; SSQ_EMU_WIRE_FAULT set to @wire_fault
 * unless NULL. Returns its pid.
 */
static inline pid_t rssqd_start(const char *sock, const char *wire_fault,
                                const char *const *args)
{
	return t_rssqd_start(sock, RDEPTH, RMAX, wire_fault, args, NULL, 0);
}

#endif
