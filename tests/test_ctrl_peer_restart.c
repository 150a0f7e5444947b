/* SPDX-License-Identifier: MIT */
/*
 * A queue reset between two hosts restarts both QPs (peers/restart.c). ssqd
 * resets a queue in place when its control block is scribbled (the guard)
 * or a stalled hold is taken back; on a queue linked to another host's
 * ssqd, restarting only the local QP at its first PSNs left the peer's QP
 * expecting later ones: the next WRITE failed RETRY_EXC_ERR after ~0.5 s
 * and the queue stayed in error until a client called ssq_queue_recover
 * (found by an adversary: one store into the shared block was enough). Two ssqd on the
 * emulated wire; this process is a client of both (A listens, B dials):
 *  1. one store into B's q0 block (its epoch): B asks A, both QPs start
 *     over; WRITEs and a READ in both directions then succeed and land;
 *  2. A's ssqd stopped (SIGSTOP) while B's block is scribbled again: B's
 *     ask goes unanswered, B drops the link, and once A runs again the
 *     link is re-brought and q0 carries WRITEs both ways, no client call.
 */
#define _GNU_SOURCE
#include "cluster_flow.h"

/* One signaled @op of 64 bytes; its status, or below 0 for no completion. */
static int one(struct ssq_producer *p, enum ibv_wr_opcode op, const struct ssq_buf *l,
               const struct ssq_buf *r, uint64_t off, uint64_t wr_id, double secs)
{
	/* -EAGAIN while the queue restarts, -EIO while it waits for the link. */
	return cf_one(p, op, l, 0, 64, r, off, wr_id, secs, 1);
}

struct side {
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_buf buf; /* 4 KiB: the other side WRITEs here; src at 2048 */
};

/* A WRITE @from -> @to of @pattern at @slot, and a READ of it back. */
static void write_read(struct side *from, struct side *to, uint8_t pattern, unsigned slot,
                       const char *when, double secs)
{
	struct ssq_producer *p = ssq_queue_producer(from->q);
	struct ssq_buf src = from->buf;
	uint8_t *dst = (uint8_t *)to->buf.addr + 64 * slot;
	int st;

	src.addr = (uint8_t *)src.addr + 2048;
	src.iova += 2048;
	memset(src.addr, pattern, 64);
	st = one(p, IBV_WR_RDMA_WRITE, &src, &to->buf, 64 * slot, slot, secs);
	CHECK(st == IBV_WC_SUCCESS, "%s: WRITE of 0x%02x: status %d", when, pattern, st);
	CHECK(dst[0] == pattern && dst[63] == pattern,
	      "%s: WRITE of 0x%02x completed %d but the target holds 0x%02x", when,
	      pattern, st, dst[0]);
	memset(src.addr, 0, 64);
	st = one(p, IBV_WR_RDMA_READ, &src, &to->buf, 64 * slot, 1000 + slot, secs);
	CHECK(st == IBV_WC_SUCCESS && ((uint8_t *)src.addr)[0] == pattern,
	      "%s: READ back: status %d, byte 0x%02x", when, st,
	      ((uint8_t *)src.addr)[0]);
}

/* A store ssq_ctl_check finds (the epoch is ssqd's), so B resets q0. */
static void scribble(struct ssq_producer *p)
{
	__atomic_fetch_add(&p->ctl->epoch, 7, __ATOMIC_SEQ_CST);
}

int main(void)
{
	uint16_t port = free_tcp_port();
	char sa[108], sb[108], arg[32], carg[32];
	const char *la_args[] = { "--listen", arg, NULL };
	const char *cb_args[] = { "--connect", carg, NULL };
	struct side a = { 0 }, b = { 0 };
	struct ssq_producer *pb;
	int i, status;
	pid_t la, lb;

	t_need_ssqd();
	snprintf(sa, sizeof(sa), "/tmp/ssq-prst-l-%d.sock", getpid());
	snprintf(sb, sizeof(sb), "/tmp/ssq-prst-c-%d.sock", getpid());
	snprintf(arg, sizeof(arg), "%u", port);
	snprintf(carg, sizeof(carg), "127.0.0.1:%u", port);
	la = rssqd_start(sa, NULL, la_args);
	lb = rssqd_start(sb, NULL, cb_args);
	a.c = ssqd_connect_pid(sa, la);
	b.c = a.c ? ssqd_connect_pid(sb, lb) : NULL;
	CHECK(a.c && b.c && wait_q0_ready(b.c, 1, 10) >= 0 &&
	          wait_q0_ready(a.c, 1, 10) >= 0,
	      "both daemons up and linked");
	if (!a.c || !b.c || ssq_queue_open(a.c, "q0", &a.q) ||
	    ssq_queue_open(b.c, "q0", &b.q) || ssq_buf_alloc(a.c, 4096, &a.buf) ||
	    ssq_buf_alloc(b.c, 4096, &b.buf))
		goto out;
	memset(a.buf.addr, 0, 4096);
	memset(b.buf.addr, 0, 4096);
	pb = ssq_queue_producer(b.q);
	for (i = 0; i < 10; i++)
		write_read(&b, &a, 0x11, (unsigned)i, "before", 5.0);
	write_read(&a, &b, 0x12, 0, "A to B before", 5.0);

	/* 1. B's block scribbled: B's guard resets q0, with A's QP. */
	scribble(pb);
	usleep(100000); /* the guard looks every 10 ms */
	for (i = 0; i < 5; i++)
		write_read(&b, &a, 0x22, (unsigned)i, "B to A after B's reset", 5.0);
	write_read(&a, &b, 0x23, 1, "A to B after B's reset", 5.0);
	CHECK(ssq_queue_recover(b.q) == -EINVAL, "after the restart q0 is not in error");

	/* 2. The same with A stopped: B's ask is not answered. */
	kill(la, SIGSTOP);
	scribble(pb);
	sleep(4); /* past the ask's 3 s deadline: B drops the link */
	kill(la, SIGCONT);
	for (i = 0; i < 3; i++)
		write_read(&b, &a, 0x33, (unsigned)i, "B to A after the unanswered ask",
		           20.0);
	write_read(&a, &b, 0x34, 2, "A to B after the unanswered ask", 20.0);
out:
	ssq_client_close(a.c);
	ssq_client_close(b.c);
	kill(la, SIGCONT);
	t_ssqd_stop(la, &status, sa);
	t_ssqd_stop(lb, &status, sb);
	return test_exit("ctrl_peer_restart");
}
