/* SPDX-License-Identifier: MIT */
/*
 * RECOVER of a queue to another host must not stop its ssqd serving
 * everyone else while the peer takes its time. alice dials bob; a client
 * of each puts their queue in error (a WRITE with a bad rkey) and asks
 * RECOVER while the other daemon is stopped (SIGSTOP: its TCP still
 * accepts, nothing answers):
 *  1. alice's RECOVER (she dials: connected, then no exchange);
 *  2. bob's RECOVER (he waits for alice to dial back).
 * Meanwhile another client of the recovering daemon LISTs every 20 ms:
 * each answered well under a second. Once the other runs again, a RECOVER
 * brings the queue back and a WRITE lands.
 *  0. First, with both running: two clients of alice RECOVER the queue at
 *     once; the second joins the first (0 or -EINVAL, nothing to recover
 *     once it is back), rather than finding the link down (-ENOTCONN).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include "recv_flow.h"
#include "shm/layout.h"

static int write8(struct ssq_queue *q, const struct ssq_buf *src, uint64_t raddr,
                  uint32_t rkey)
{
	struct ssq_producer *p = ssq_queue_producer(q);
	struct ibv_sge sge = { src->iova, 8, src->lkey };
	struct ibv_send_wr wr, *bad = NULL;
	struct ssq_completion comp;
	double t0 = now_s();
	int rc;

	t_wr_one(&wr, &sge, IBV_WR_RDMA_WRITE, 9, raddr, rkey);
	while ((rc = ssq_post_wr(p, &wr, &bad)) == -EAGAIN && now_s() - t0 < 5)
		usleep(1000);
	if (rc)
		return -1000 + rc;
	while (now_s() - t0 < 10) {
		if (ssq_poll(p, &comp, 1) == 1)
			return (int)comp.status;
		usleep(100);
	}
	return -1;
}

/*
 * A child: a client of @sock LISTing for @secs; writes "worst failed" to
 * @fd: the slowest LIST in ms and how many failed.
 */
static pid_t lister(const char *sock, double secs, int fd)
{
	pid_t pid = fork();

	if (pid == 0) {
		struct ssq_queue_info info[SSQ_MAX_QUEUES];
		struct ssq_client *c = NULL;
		double t0, worst = 0;
		int failed = 0;
		char out[64];

		if (ssq_client_connect(sock, &c))
			_exit(3);
		(void)!write(fd, "R", 1); /* connected: go */
		for (t0 = now_s(); now_s() - t0 < secs; usleep(20000)) {
			double t = now_s();

			if (ssq_client_list(c, info, SSQ_MAX_QUEUES) < 1)
				failed++;
			if (now_s() - t > worst)
				worst = now_s() - t;
		}
		snprintf(out, sizeof(out), "%d %d\n", (int)(worst * 1000), failed);
		(void)!write(fd, out, strlen(out));
		ssq_client_close(c);
		_exit(0);
	}
	return pid;
}

struct side {
	const char *name;
	const char *sock;
	pid_t pid;
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_buf buf;
};

/* @s's queue in error, @other stopped, @s RECOVERs while a client of @s LISTs. */
static void recover_hung(struct side *s, struct side *other)
{
	int fds[2], worst_ms = -1, failed = -1, rc, st;
	char res[64] = "";
	double t0, took;
	pid_t child;

	rc = write8(s->q, &s->buf, other->buf.remote_addr, 0xdead);
	CHECK(rc == IBV_WC_REM_ACCESS_ERR || rc == IBV_WC_RETRY_EXC_ERR,
	      "%s: bad rkey: status %d", s->name, rc);
	usleep(100000);
	if (pipe(fds))
		return;
	child = lister(s->sock, 4.0, fds[1]);
	(void)!read(fds[0], res, 1);
	kill(other->pid, SIGSTOP);
	t0 = now_s();
	rc = ssq_queue_recover(s->q);
	took = now_s() - t0;
	waitpid(child, &st, 0);
	close(fds[1]);
	(void)!read(fds[0], res, sizeof(res) - 1);
	close(fds[0]);
	sscanf(res, "%d %d", &worst_ms, &failed);
	CHECK(rc != 0, "%s: RECOVER with %s stopped fails: %d after %.2f s (%s)", s->name,
	      other->name, rc, took, ssq_client_error(s->c));
	CHECK(worst_ms >= 0 && worst_ms < 800 && failed == 0,
	      "%s RECOVERs while %s is stopped: another client's slowest LIST %d ms, "
	      "%d failed",
	      s->name, other->name, worst_ms, failed);
	kill(other->pid, SIGCONT);
	for (t0 = now_s(); now_s() - t0 < 10; usleep(100000))
		if (!(rc = ssq_queue_recover(s->q)) || rc == -EINVAL)
			break;
	CHECK(rc == 0 || rc == -EINVAL, "%s: RECOVER once %s runs: %d (%s)", s->name,
	      other->name, rc, ssq_client_error(s->c));
	*(uint64_t *)s->buf.addr = 0xbeef;
	*(uint64_t *)other->buf.addr = 0;
	rc = write8(s->q, &s->buf, other->buf.remote_addr, other->buf.rkey);
	CHECK(rc == IBV_WC_SUCCESS && *(uint64_t *)other->buf.addr == 0xbeef,
	      "%s -> %s after RECOVER: status %d, landed 0x%llx", s->name, other->name,
	      rc, (unsigned long long)*(uint64_t *)other->buf.addr);
}

/* 0.: a second client of @s RECOVERs along with @s's own. */
static void recover_twice(struct side *s, struct side *other)
{
	int go[2], res[2], rc, rc2 = -999, st;
	char c;
	pid_t kid;

	if (pipe(go) || pipe(res))
		return;
	kid = fork();
	if (kid == 0) {
		struct ssq_client *c2 = NULL;
		struct ssq_queue *q2 = NULL;
		char qn[40];
		int r = -998;

		snprintf(qn, sizeof(qn), "%s/q0", other->name);
		if (!ssq_client_connect(s->sock, &c2) && !ssq_queue_open(c2, qn, &q2)) {
			(void)!write(res[1], "R", 1);
			if (read(go[0], &c, 1) == 1)
				r = ssq_queue_recover(q2);
		}
		(void)!write(res[1], &r, sizeof(r));
		_exit(0);
	}
	if (read(res[0], &c, 1) != 1)
		return;
	rc = write8(s->q, &s->buf, other->buf.remote_addr, 0xdead);
	CHECK(rc == IBV_WC_REM_ACCESS_ERR || rc == IBV_WC_RETRY_EXC_ERR,
	      "%s: bad rkey: status %d", s->name, rc);
	usleep(100000);
	(void)!write(go[1], "G", 1);
	rc = ssq_queue_recover(s->q);
	(void)!read(res[0], &rc2, sizeof(rc2));
	waitpid(kid, &st, 0);
	CHECK((rc == 0 || rc == -EINVAL) && (rc2 == 0 || rc2 == -EINVAL) && (!rc || !rc2),
	      "two RECOVERs of %s's queue at once: %d and %d (%s)", s->name, rc, rc2,
	      ssq_client_error(s->c));
	close(go[0]);
	close(go[1]);
	close(res[0]);
	close(res[1]);
}

int main(void)
{
	struct side a = { .name = "alice" }, b = { .name = "bob" };
	struct t_pair pair;

	t_need_ssqd();
	CHECK(t_pair_start(&pair, "advr", RDEPTH, RMAX, NULL) == 0,
	      "alice and bob linked");
	a.sock = pair.sock[0];
	b.sock = pair.sock[1];
	a.pid = pair.pid[0];
	b.pid = pair.pid[1];
	a.c = pair.c[0];
	b.c = pair.c[1];
	if (!a.c || !b.c || ssq_queue_open(a.c, "bob/q0", &a.q) ||
	    ssq_queue_open(b.c, "alice/q0", &b.q) || ssq_buf_alloc(a.c, 4096, &a.buf) ||
	    ssq_buf_alloc(b.c, 4096, &b.buf))
		goto out;
	recover_twice(&a, &b); /* 0. */
	recover_hung(&a, &b);  /* 1. the dialer recovers */
	recover_hung(&b, &a);  /* 2. the one that accepts */
out:
	kill(a.pid, SIGCONT);
	kill(b.pid, SIGCONT);
	t_pair_stop(&pair);
	return test_exit("ctrl_adv_peer_recover_hung");
}
