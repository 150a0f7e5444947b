/* SPDX-License-Identifier: MIT */
/*
 * Memory freed while a grant's bind over it may still run (issue 28 item
 * 1): on a ConnectX ssqd's bind is a WQE on the queue's shared ring, which
 * runs only once every reservation ahead of it is published. A bind that
 * runs after its MR was deregistered names an mkey that is gone
 * (mlx5_ib_dereg_mr destroys or revokes it, drivers/infiniband/hw/mlx5/
 * mr.c) and completes MW_BIND_ERR, putting the QP - every client's queue
 * to that peer - in error; and an arena range given to a new buffer
 * meanwhile would be what the window covers. So the MR, and the buffer's
 * range, stay until the bind can no longer run.
 * In a cluster of alice and bob, bob's H opens alice/q0 and holds one
 * WQEBB reserved (a hole), then, each behind a hole of H's:
 *  A. G grants a buffer (ssqd's bind waits: -ETIMEDOUT), frees it; a new
 *     buffer must not get its range while the bind may run;
 *  B. G grants a registration (ssq_mem_reg_fd of a memfd), deregisters it;
 *  C. D, a process of its own, registers, grants and is killed;
 *  E. G (--max-client-bufs 2) grants one of two buffers and frees it: a
 *     third is refused -EDQUOT while the freed one is held;
 *  F. G grants a buffer and frees it, and H fills its hole with a WRITE
 *     that puts the queue in error: the bind is flushed, never run, and
 *     the buffer's range must still come back once H recovered;
 *  G. a client sends GRANT and FREE of a buffer back to back, 200 times:
 *     every GRANT and FREE is answered (the FREE may find the bind done
 *     and the GRANT not answered yet);
 *  H. G's GRANT behind a hole is answered by ssqd, -ETIMEDOUT after a
 *     deadline under the client's own 1000 ms (emulated: bound at once).
 * After each, H fills the hole and a signaled NOP of H's behind the bind
 * must complete IBV_WC_SUCCESS; after A the range, after E the quota,
 * comes back once the bind ran. ssqd runs with --stall-ms 1000: a running
 * client's hole is taken back only after 10 s, so H's holes last until H
 * fills them.
 * On the emulated backend the bind is done at once (no hole matters): the
 * cases run as a check of the flow; ctrl_adv_grant_free_bind_mlx5model is
 * the ConnectX backend over the model of libmlx5.
 * Before (the model): A's new buffer got the freed range at once, and H's
 * NOP completed IBV_WC_WR_FLUSH_ERR (the bind MW_BIND_ERR), as in B and C;
 * with the memory held but no longer charged, E's third buffer was given.
 */
#define _GNU_SOURCE /* memfd_create */
#include <poll.h>
#include <sys/wait.h>
#include "cap_flow.h"
#include "ctrl/client/client_pvt.h"
#include "ctrl/proto/msg.h"

#define N   2
#define ACC (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
static const char *const names[N] = { "alice", "bob" };
static struct t_cluster cl;
static struct ssq_client *ch; /* H */
static struct ssq_queue *qh;
static struct ssq_producer *hp; /* H's */

/* A 4096-byte memfd registered by @c with remote access: 0, or -errno. */
static int reg_memfd(struct ssq_client *c, struct ssq_mr *mr)
{
	int fd = memfd_create("ssq-grant-free-bind", MFD_CLOEXEC), rc;

	if (fd < 0 || ftruncate(fd, 4096))
		return -errno;
	rc = ssq_mem_reg_fd(c, fd, 0, 4096, IBV_ACCESS_LOCAL_WRITE | ACC, mr);
	close(fd); /* ssqd keeps its own reference */
	return rc;
}

/* H's hole filled, then H's signaled NOP behind the bind: it must succeed. */
static void after_hole(const char *what, uint64_t pos, uint64_t id)
{
	int rc = cap_hole_fill(hp, pos);

	CHECK(rc == 0, "%s: H fills its hole: %d (the queue started over first?)", what,
	      rc);
	rc = cap_nop_status(hp, id);
	CHECK(rc == IBV_WC_SUCCESS,
	      "%s: H's NOP behind the bind: status %d (%s): the bind ran after its "
	      "memory went, and put the queue in error",
	      what, rc, rc >= 0 ? ibv_wc_status_str((enum ibv_wc_status)rc) : "-");
	/* The next case on a queue that works. */
	if (rc != IBV_WC_SUCCESS)
		CHECK(cap_recover(ch, qh, "alice/q0") == 0, "%s: H recovers the queue",
		      what);
}

/*
 * Case @what: H reserves one WQEBB (a hole), then G grants @b (else @mr) to
 * alice/q0 behind it, H's hole at @pos. The grant's rc: 0, or -ETIMEDOUT
 * where ssqd's bind waits behind the hole.
 */
static int grant_behind_hole(const char *what, struct ssq_client *g,
                             const struct ssq_buf *b, const struct ssq_mr *mr,
                             uint64_t *pos)
{
	struct ssq_desc d;
	int rc;

	CHECK(ssq_reserve(hp, 1, pos) == 0, "%s: H reserves", what);
	rc = b ? ssq_buf_grant(g, "alice/q0", b, 0, 4096, ACC, &d)
	       : ssq_mem_grant(g, "alice/q0", mr, 0, 4096, ACC, &d);
	printf("%s: grant behind the hole: %d (%s)\n", what, rc,
	       rc ? ssq_client_error(g) : "ok");
	CHECK(rc == 0 || rc == -ETIMEDOUT, "%s: grant: %d %s", what, rc,
	      ssq_client_error(g));
	return rc;
}

/* Whether a new buffer of @x gets @b's freed range within 10 s (first fit). */
static int range_back(struct ssq_client *x, const struct ssq_buf *b)
{
	struct ssq_buf nb;
	double t0;
	int back = 0;

	for (t0 = now_s(); !back && now_s() - t0 < 10; usleep(10000)) {
		if (ssq_buf_alloc(x, 4096, &nb))
			break;
		back = nb.off == b->off;
		ssq_buf_free(x, &nb);
	}
	return back;
}

/* A GRANT of all of @b to alice/q0, as the library would send it. */
static void grant_msg(struct proto_msg_grant *gr, const struct ssq_buf *b)
{
	memset(gr, 0, sizeof(*gr));
	strcpy(gr->name, "alice/q0");
	gr->kind = SSQ_GRANT_BUF;
	gr->access = ACC;
	gr->mem = b->off;
	gr->len = 4096;
}

/* A: a buffer granted behind a hole, then freed. */
static void case_buf(struct ssq_client *g, struct ssq_client *x)
{
	struct ssq_buf b, nb;
	uint64_t pos = 0;
	int rc, pending;

	CHECK(ssq_buf_alloc(g, 4096, &b) == 0, "A: G's buffer: %s", ssq_client_error(g));
	rc = grant_behind_hole("A", g, &b, NULL, &pos);
	/* -ETIMEDOUT: ssqd's bind is still on the ring behind the hole. */
	pending = rc == -ETIMEDOUT;
	CHECK(!pending || cap_wait_reserved(hp, pos, 1), "A: the bind is on the ring");
	rc = ssq_buf_free(g, &b);
	CHECK(rc == 0, "A: free while the bind waits: %d %s", rc, ssq_client_error(g));
	/* First fit: a range given back comes first. */
	CHECK(ssq_buf_alloc(x, 4096, &nb) == 0, "A: X's buffer: %s", ssq_client_error(x));
	if (pending)
		CHECK(nb.off != b.off,
		      "A: X's new buffer got the freed range at %llu while a bind over "
		      "it may still run",
		      (unsigned long long)b.off);
	ssq_buf_free(x, &nb);
	after_hole("A", pos, 0xa1);
	/* Once the bind ran and its window went, the range comes back. */
	CHECK(range_back(x, &b), "A: the freed range came back after the bind");
}

/* B: a registration granted behind a hole, then deregistered. */
static void case_mr(struct ssq_client *g)
{
	struct ssq_mr mr;
	uint64_t pos = 0;
	int rc;

	rc = reg_memfd(g, &mr);
	CHECK(rc == 0, "B: G registers a memfd: %d %s", rc, ssq_client_error(g));
	if (rc)
		return;
	rc = grant_behind_hole("B", g, NULL, &mr, &pos);
	CHECK(rc == 0 || cap_wait_reserved(hp, pos, 1), "B: the bind is on the ring");
	rc = ssq_mem_dereg(g, &mr);
	CHECK(rc == 0, "B: dereg while the bind waits: %d %s", rc, ssq_client_error(g));
	after_hole("B", pos, 0xb1);
}

/*
 * E: a held buffer still counts against its client's --max-client-bufs
 * (2 here): else freeing behind a hole of its own would let a client hold
 * more of the arena than its quota.
 */
static void case_quota(struct ssq_client *g)
{
	struct ssq_buf b1, b2, b3;
	uint64_t pos = 0;
	int rc, pending;
	double t0;

	CHECK(ssq_buf_alloc(g, 4096, &b1) == 0 && ssq_buf_alloc(g, 4096, &b2) == 0,
	      "E: G's two buffers: %s", ssq_client_error(g));
	rc = grant_behind_hole("E", g, &b1, NULL, &pos);
	pending = rc == -ETIMEDOUT;
	CHECK(ssq_buf_free(g, &b1) == 0, "E: free: %s", ssq_client_error(g));
	rc = ssq_buf_alloc(g, 4096, &b3);
	if (pending)
		CHECK(rc == -EDQUOT,
		      "E: a third buffer while the freed one is held: %d (%s), not "
		      "-EDQUOT",
		      rc, rc ? ssq_client_error(g) : "allocated");
	if (rc == 0)
		ssq_buf_free(g, &b3);
	after_hole("E", pos, 0xe1);
	/* Released once the bind ran: the quota has room again. */
	for (t0 = now_s();
	     (rc = ssq_buf_alloc(g, 4096, &b3)) == -EDQUOT && now_s() - t0 < 10;)
		usleep(10000);
	CHECK(rc == 0, "E: a buffer after the bind ran: %d %s", rc, ssq_client_error(g));
	if (rc == 0)
		ssq_buf_free(g, &b3);
	ssq_buf_free(g, &b2);
}

/*
 * F: the queue goes to error at the hole (H fills it with a WRITE whose
 * lkey names nothing: LOC_PROT_ERR), so the bind behind it is flushed,
 * never run: the held buffer must still go back, once H recovers.
 */
static void case_error(struct ssq_client *g, struct ssq_client *x)
{
	struct ssq_completion comp;
	struct ssq_buf b;
	uint64_t pos = 0;
	int rc, st = -1;
	double t0;

	CHECK(ssq_buf_alloc(g, 4096, &b) == 0, "F: G's buffer: %s", ssq_client_error(g));
	grant_behind_hole("F", g, &b, NULL, &pos);
	CHECK(ssq_buf_free(g, &b) == 0, "F: free: %s", ssq_client_error(g));
	ssq_prep_rdma_write(ssq_producer_sq(hp), (uint32_t)pos, b.iova, 0, 8, b.iova, 0,
	                    ssq_wqe_flags(hp, pos, 1, SSQ_WQE_SIGNALED));
	CHECK(ssq_publish(hp, pos, 1, 0xf0, SSQ_WQE_SIGNALED) == 0, "F: H publishes");
	ssq_submit(hp);
	for (t0 = now_s(); st < 0 && now_s() - t0 < 20;)
		if (ssq_poll(hp, &comp, 1) == 1 && comp.wr_id == 0xf0)
			st = (int)comp.status;
		else
			usleep(100);
	CHECK(st > 0, "F: H's bad WRITE completed in error: %d", st);
	CHECK(cap_recover(ch, qh, "alice/q0") == 0, "F: H recovers the queue");
	CHECK(range_back(x, &b),
	      "F: the freed range came back after the bind was flushed");
	rc = cap_nop_status(hp, 0xf1);
	CHECK(rc == IBV_WC_SUCCESS, "F: H's NOP after the recovery: %d", rc);
}

/*
 * G: a client speaking the protocol itself sends GRANT and FREE of one
 * buffer back to back (the library waits for each answer; a client need
 * not). The FREE may find the bind done but the GRANT not answered yet:
 * both must be answered - a GRANT left unanswered holds every later call
 * of a library client (replies are read in order). @rounds times.
 */
static int pipelined_round(struct ssq_client *g, unsigned round)
{
	struct proto_msg_grant gr;
	struct proto_msg_free fr;
	struct proto_msg m;
	struct ssq_buf b;
	uint32_t s1, s2;
	int rc = 0, i, grant = 1, freed = 1;
	char why[160];

	double t0 = now_s();

	/* Those a FREE found still binding are held, and charged (2 at most). */
	while ((rc = ssq_buf_alloc(g, 4096, &b)) == -EDQUOT && now_s() - t0 < 10)
		usleep(1000);
	if (rc) {
		printf("G round %u: alloc %d %s\n", round, rc, ssq_client_error(g));
		return -1;
	}
	grant_msg(&gr, &b);
	fr.off = b.off;
	s1 = ++g->seq;
	s2 = ++g->seq;
	if (proto_msg_send(g->sock, SSQ_MSG_GRANT, s1, &gr, sizeof(gr), NULL, 0) ||
	    proto_msg_send(g->sock, SSQ_MSG_FREE, s2, &fr, sizeof(fr), NULL, 0))
		return -1;
	for (i = 0; i < 2 && !rc; i++) {
		rc = proto_msg_recv(g->sock, &m, NULL, 0, NULL, 3000, why, sizeof(why));
		if (rc)
			break;
		if (m.hdr.seq == s1)
			grant = m.hdr.type == SSQ_MSG_ERROR ? m.u.error.err : 0;
		else if (m.hdr.seq == s2)
			freed = m.hdr.type == SSQ_MSG_ERROR ? m.u.error.err : 0;
	}
	g->answered = g->seq;
	if (rc || grant > 0 || freed)
		printf("G round %u: GRANT %s %d, FREE %s %d (%s)\n", round,
		       grant > 0 ? "unanswered" : "answered", grant,
		       freed > 0 ? "unanswered" : "answered", freed, rc ? why : "-");
	return rc || grant > 0 || freed ? -1 : 0;
}

static void case_pipelined(struct ssq_client *g, unsigned rounds)
{
	unsigned r;
	int rc;

	for (r = 0; r < rounds; r++)
		if (pipelined_round(g, r))
			break;
	CHECK(r == rounds, "G: GRANT and FREE back to back: round %u of %u not answered",
	      r, rounds);
	rc = cap_nop_status(hp, 0x61);
	CHECK(rc == IBV_WC_SUCCESS, "G: H's NOP after: %d", rc);
}

/*
 * H: ssqd answers a GRANT whose bind waits behind a hole itself, before
 * the client's own wait (1000 ms, client_call.c) ends: else a bind done
 * after the client gave up would be answered with a key nobody takes.
 * Asked on the socket (the library would give up first on a busy
 * machine), the answer read for up to 10 s: its deadline, in its words.
 */
static void case_deadline(struct ssq_client *g)
{
	struct proto_msg_grant gr;
	struct proto_msg m;
	struct ssq_buf b;
	uint64_t pos = 0;
	unsigned ms = 0;
	const char *at;
	char why[160];
	uint32_t s1;
	int rc;

	rc = ssq_buf_alloc(g, 4096, &b);
	CHECK(rc == 0, "H: G's buffer: %s", ssq_client_error(g));
	if (rc)
		return; /* no buffer to grant: nothing below means anything */
	rc = ssq_reserve(hp, 1, &pos);
	CHECK(rc == 0, "H: H reserves");
	if (rc) {
		ssq_buf_free(g, &b);
		return;
	}
	grant_msg(&gr, &b);
	s1 = ++g->seq;
	rc = proto_msg_send(g->sock, SSQ_MSG_GRANT, s1, &gr, sizeof(gr), NULL, 0);
	if (!rc)
		rc = proto_msg_recv(g->sock, &m, NULL, 0, NULL, 10000, why, sizeof(why));
	g->answered = g->seq;
	CHECK(rc == 0 && m.hdr.seq == s1, "H: GRANT answered: %d", rc);
	if (rc == 0 && m.hdr.type == SSQ_MSG_ERROR) {
		at = strstr(m.u.error.msg, "did not complete in ");
		if (at)
			ms = (unsigned)atoi(at + strlen("did not complete in "));
		printf("H: %d %s\n", m.u.error.err, m.u.error.msg);
		CHECK(m.u.error.err == -ETIMEDOUT && ms && ms < 1000,
		      "H: ssqd's answer: %d \"%s\": not its own deadline under the "
		      "client's 1000 ms",
		      m.u.error.err, m.u.error.msg);
	}
	after_hole("H", pos, 0x81);
	ssq_buf_free(g, &b);
}

/* D: registers a memfd, and grants it when told to, saying so. */
static void d_child(int go, int said)
{
	struct ssq_client *c = t_cluster_connect(&cl, 1);
	struct ssq_desc d;
	struct ssq_mr mr;
	char x = 0;

	if (!c || reg_memfd(c, &mr))
		_exit(2);
	if (write(said, &x, 1) != 1 || read(go, &x, 1) != 1)
		_exit(2);
	x = (char)ssq_mem_grant(c, "alice/q0", &mr, 0, 4096, ACC, &d);
	if (write(said, &x, 1) != 1)
		_exit(2);
	pause(); /* killed */
	_exit(0);
}

/* C: D dies with its registration's bind on the ring. */
static void case_dead(struct ssq_client *k)
{
	int go[2], said[2], st, n;
	struct ssq_peer_info pi[N];
	uint64_t pos = 0;
	pid_t pid;
	char x;

	if (pipe(go) || pipe(said)) {
		CHECK(0, "C: pipes");
		return;
	}
	pid = fork();
	if (pid == 0) {
		close(go[1]);
		close(said[0]);
		d_child(go[0], said[1]);
	}
	close(go[0]);
	close(said[1]);
	CHECK(pid > 0 && read(said[0], &x, 1) == 1, "C: D registered its memory");
	CHECK(ssq_reserve(hp, 1, &pos) == 0, "C: H reserves");
	x = 0;
	CHECK(write(go[1], &x, 1) == 1, "C: D told to grant");
	/* The bind on the ring behind the hole, or (emulated) the grant done. */
	for (n = 0; n < 10000; n++) {
		struct pollfd pf = { said[0], POLLIN, 0 };

		if (ssq_ctl_reserved(hp->ctl) > pos + 1 || poll(&pf, 1, 1) == 1)
			break;
	}
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	/* ssqd saw the hangup before K asked: it handled the death by its answer. */
	n = ssq_client_peers(k, pi, N);
	CHECK(n >= 1, "C: K's LIST after D died: %d %s", n, ssq_client_error(k));
	after_hole("C", pos, 0xc1);
	close(go[1]);
	close(said[0]);
}

int main(void)
{
	struct ssq_client *cg = NULL, *cx = NULL;
	int rc;

	t_need_ssqd();
	t_rssqd_grants = 1; /* ssqd's default: no --no-grants */
	cf_cluster_files(&cl, "grant-free-bind", N, names, 0);
	CHECK(t_cluster_start_all(
	          &cl, T_ARGS("--stall-ms", "1000", "--max-client-bufs", "2")) == 0,
	      "alice and bob started");
	ch = t_cluster_connect(&cl, 1);
	cg = t_cluster_connect(&cl, 1);
	cx = t_cluster_connect(&cl, 1);
	if (!ch || !cg || !cx) {
		CHECK(0, "bob's clients");
		goto out;
	}
	rc = ssq_queue_open(ch, "alice/q0", &qh);
	CHECK(rc == 0, "H opens alice/q0: %d %s", rc, ssq_client_error(ch));
	if (rc)
		goto out;
	hp = ssq_queue_producer(qh);
	case_buf(cg, cx);
	case_mr(cg);
	case_dead(cx);
	case_quota(cg);
	case_error(cg, cx);
	case_pipelined(cg, 200);
	case_deadline(cg);
out:
	if (ch)
		ssq_client_close(ch);
	if (cg)
		ssq_client_close(cg);
	if (cx)
		ssq_client_close(cx);
	t_cluster_stop(&cl);
	return test_exit("ctrl_adv_grant_free_bind");
}
