/* SPDX-License-Identifier: MIT */
/*
 * ssqd reconnects after its peer dies, in both directions, over the
 * emulated wire with 5 % loss:
 *  - listener A and connector B; A is killed: B's requests end in
 *    TRANSPORT_RETRY_EXC then flushes, B keeps answering its clients (LIST
 *    says not ready, RECOVER says why); an impostor on A's port answers
 *    B's retry with a malformed exchange (refused, the queue stays in
 *    ERROR); a new A' (fresh arena) listens on the same port, B
 *    reconnects within a bound, and both a producer that stayed attached
 *    through the outage and a new one post WRITEs + FETCH_ADDs into A':
 *    every message arrives exactly once;
 *  - B is killed: A' notices though its queue is idle (the kept TCP
 *    connection closes), a new B' connects to the still-running A', and
 *    traffic flows both ways;
 *  - a remote access error with both alive: RECOVER, asked on either host,
 *    re-links them, and both hosts' queues work again;
 *  - a third ssqd connecting while B' is healthy is refused, and both it and
 *    A' say so; A' and B' stay up;
 *  - A''s queue fails and is left so: a new peer D is taken in B''s place;
 *    when D dies, B' (retrying all along) is A''s peer again.
 */
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include "dv/ctl.h"
#include "ssq_flow.h"
#include "ctrl/daemon/peers/peers.h"

#define M 256u

static pid_t start(const char *sock, const char *mode, const char *arg, const char *log)
{
	const char *ssqd = getenv("SSQD");
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		if (fd >= 0)
			dup2(fd, 2);
		setenv("SSQ_EMU_WIRE_FAULT", "drop=0.05,seed=11", 1);
		execl(ssqd, ssqd, "--device", "emu", "--socket", sock, "--hugepages=off",
		      "--data-mib", "8", "--sq-size", "256", "--no-grants", mode, arg,
		      (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* Wait up to @limit_s for @pid; its status, or -1 (then killed). */
static int wait_exit(pid_t pid, double limit_s)
{
	double t0 = now_s();
	int status;

	while (now_s() - t0 < limit_s) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return status;
		usleep(10 * 1000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

/*
 * Whether ssqd's log at @path says @needle, waiting up to 5 s for it: a
 * daemon may act (close a socket, answer a client) a moment before it logs.
 */
static int file_has(const char *path, const char *needle)
{
	static char buf[1 << 18];
	double t0 = now_s();
	int found;

	do {
		int fd = open(path, O_RDONLY);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : 0;

		if (fd >= 0)
			close(fd);
		buf[n > 0 ? n : 0] = 0;
		found = strstr(buf, needle) != NULL;
		if (!found)
			usleep(10 * 1000);
	} while (!found && now_s() - t0 < 5);
	if (!found)
		fprintf(stderr, "--- %s (no \"%s\"):\n%s---\n", path, needle, buf);
	return found;
}

/*
 * Wait until @p's queue was brought up again since @epoch (the other host
 * did it on its own, after the link closed). Returns 1, or 0 after @limit_s.
 */
static int wait_rebrought(struct ssq_producer *p, uint32_t epoch, double limit_s)
{
	double t0 = now_s();

	while (now_s() - t0 < limit_s) {
		if (ssq_ctl_epoch(p->ctl) != epoch && !ssq_ctl_in_error(p->ctl))
			return 1;
		usleep(1000);
	}
	return 0;
}

/* One signaled WRITE of @len bytes; its completion status, or -1. */
static int write_once(struct ssq_producer *p, const struct ssq_buf *src, uint64_t raddr,
                      uint32_t rkey, uint32_t len)
{
	struct ssq_completion comp;
	uint64_t pos;
	double t0 = now_s();

	if (ssq_reserve(p, 1, &pos))
		return -1;
	ssq_prep_rdma_write(ssq_producer_sq(p), (uint32_t)pos, src->iova, src->lkey, len,
	                    raddr, rkey, ssq_wqe_flags(p, pos, 1, SSQ_WQE_SIGNALED));
	ssq_publish(p, pos, 1, 77, SSQ_WQE_SIGNALED);
	ssq_submit(p);
	while (now_s() - t0 < 10)
		if (ssq_poll(p, &comp, 1) == 1)
			return comp.status;
	return -1;
}

int main(void)
{
	char sa[108], sa2[108], sb[108], sb2[108], sc[108], sd[108], la2[108], lb[108],
	    lc[108];
	char arg[32], conn[32];
	uint16_t port = t_free_tcp_port();
	struct ssq_client *ca = NULL, *ca2 = NULL, *cb = NULL, *cb2 = NULL, *cd = NULL;
	struct ssq_queue *qb = NULL, *qb2 = NULL, *qa2 = NULL;
	struct ssq_buf dst0, dst, cnt, src, src2, srca, dstb;
	struct msg_area a;
	pid_t pa = 0, pa2 = 0, pb = 0, pb2 = 0, pd = 0, pc, kid;
	uint32_t gen0 = 0;
	int rc, status, flushed = 0, retry_exc = 0;
	uint64_t pos;
	uint32_t epoch;
	double t0, t;

	t_need_ssqd();
	snprintf(sa, sizeof(sa), "/tmp/ssq-rc-a-%d.sock", getpid());
	snprintf(sa2, sizeof(sa2), "/tmp/ssq-rc-a2-%d.sock", getpid());
	snprintf(sb, sizeof(sb), "/tmp/ssq-rc-b-%d.sock", getpid());
	snprintf(sb2, sizeof(sb2), "/tmp/ssq-rc-b2-%d.sock", getpid());
	snprintf(sc, sizeof(sc), "/tmp/ssq-rc-c-%d.sock", getpid());
	snprintf(sd, sizeof(sd), "/tmp/ssq-rc-d-%d.sock", getpid());
	snprintf(la2, sizeof(la2), "/tmp/ssq-rc-a2-%d.log", getpid());
	snprintf(lb, sizeof(lb), "/tmp/ssq-rc-b-%d.log", getpid());
	snprintf(lc, sizeof(lc), "/tmp/ssq-rc-c-%d.log", getpid());
	snprintf(arg, sizeof(arg), "%u", port);
	snprintf(conn, sizeof(conn), "127.0.0.1:%u", port);
	pa = start(sa, "--listen", arg, "/dev/null");
	pb = start(sb, "--connect", conn, lb);
	ca = ssqd_connect_pid(sa, pa);
	cb = ssqd_connect_pid(sb, pb);
	CHECK(ca && cb, "both daemons serve clients");
	if (!ca || !cb)
		goto out;
	CHECK(wait_q0_ready(cb, 1, 10) >= 0, "the daemons never connected their queue");
	CHECK(ssq_queue_open(cb, "q0", &qb) == 0, "open: %s", ssq_client_error(cb));
	if (qb) {
		gen0 = ssq_queue_peer_gen(qb);
		CHECK(gen0 >= 1, "peer_gen after the first link: %u, want >= 1", gen0);
	}
	CHECK(ssq_buf_alloc(ca, 4096, &dst0) == 0 &&
	          ssq_buf_alloc(cb, 64 * (CELL + 8), &src) == 0,
	      "buffers");
	if (!qb)
		goto out;

	/* A dies: retry exceeded, then flushes (as without reconnecting). */
	t_ssqd_kill(pa, sa);
	pa = 0;
	t0 = now_s();
	CHECK(post_to_dead_peer(ssq_queue_producer(qb), &src, dst0.remote_addr, dst0.rkey,
	                        3, &retry_exc, &flushed) == 3,
	      "three reservations after the peer died");
	CHECK(retry_exc == 1 && flushed == 2,
	      "after the peer died: %d retry-exceeded, %d flushed", retry_exc, flushed);
	printf("A killed: retry exceeded after %.2f s\n", now_s() - t0);

	/* The outage: B answers, says the queue is down and why. */
	CHECK(wait_q0_ready(cb, 0, 5) >= 0, "B lists q0 as not ready while A is gone");
	CHECK(ssq_reserve(ssq_queue_producer(qb), 1, &pos) == -EIO,
	      "-EIO while the peer is gone");
	rc = ssq_queue_recover(qb);
	/* -EHOSTDOWN: the peer is away, B and the connection to it are fine. */
	CHECK(rc == -EHOSTDOWN && strstr(ssq_client_error(cb), "reconnecting"),
	      "RECOVER while the peer is gone: %d (%s), want -EHOSTDOWN", rc,
	      ssq_client_error(cb));
	CHECK(ssq_client_alive(cb),
	      "B's connection is alive while only the peer is gone");

	/*
	 * An impostor on A's port answers B's retry with a malformed message:
	 * B refuses it and its queue stays in ERROR (nothing half-up).
	 */
	{
		char why[200];
		uint8_t msg[SSQ_PEER_MSG_LEN];
		int l = ssqd_link_listen(port, why, sizeof(why)), s = -1;
		struct pollfd p = { l, POLLIN, 0 };

		CHECK(l >= 0, "impostor listens: %s", why);
		if (l >= 0 && poll(&p, 1, 5000) == 1)
			s = accept(l, NULL, NULL);
		CHECK(s >= 0, "B knocks at the impostor");
		if (s >= 0) {
			CHECK(recv(s, msg, sizeof(msg), MSG_WAITALL) ==
			          (ssize_t)sizeof(msg),
			      "B's address");
			memcpy(msg, "XXXX", 4);
			CHECK(send(s, msg, sizeof(msg), MSG_NOSIGNAL) ==
			          (ssize_t)sizeof(msg),
			      "impostor answers");
			/* B closes once it has read and refused it. */
			CHECK(recv(s, msg, sizeof(msg), 0) == 0,
			      "B hangs up on the impostor");
			close(s);
		}
		if (l >= 0)
			close(l);
		CHECK(file_has(lb, "peer message without the SSQP magic"),
		      "B says why it refused the impostor");
		CHECK(ssq_reserve(ssq_queue_producer(qb), 1, &pos) == -EIO &&
		          wait_q0_ready(cb, 0, 0.1) >= 0,
		      "B's queue still in error after the impostor");
	}

	/* A' on the same port, a fresh arena: B comes back on its own. */
	pa2 = start(sa2, "--listen", arg, la2);
	t0 = now_s();
	ca2 = ssqd_connect_pid(sa2, pa2);
	CHECK(ca2 != NULL, "A' serves clients");
	if (!ca2)
		goto out;
	t = wait_q0_ready(cb, 1, 10);
	CHECK(t >= 0 && wait_q0_ready(ca2, 1, 5) >= 0, "B reconnected to A'");
	/* A's descriptors (dst0) are stale now: the queue says so. */
	CHECK(ssq_queue_peer_gen(qb) > gen0, "peer_gen after A' linked: %u, was %u",
	      ssq_queue_peer_gen(qb), gen0);
	printf("B reconnected %.2f s after A' started (backoff at most 2 s)\n",
	       now_s() - t0);
	CHECK(ssq_buf_alloc(ca2, 3 * M * CELL, &dst) == 0 &&
	          ssq_buf_alloc(ca2, 3 * M * 8, &cnt) == 0,
	      "buffers in A'");
	memset(dst.addr, 0, dst.len);
	memset(cnt.addr, 0, cnt.len);
	msg_area_place(&a, &dst, &cnt);
	a.per_proc = M;
	a.nlong = 3;
	a.short_len = 0;
	{
		struct ssq_queue_info info[1];

		CHECK(ssq_client_list(ca2, info, 1) == 1 &&
		          ssq_queue_peer_qpn(qb) == info[0].qpn,
		      "B's queue now names A''s QP");
	}

	/* The producer that stayed attached, and a new process. */
	kid = fork();
	if (kid == 0)
		_exit(producer_process(sb, &a, 1, M));
	t0 = now_s();
	rc = run_producer(ssq_queue_producer(qb), &a, 0, M, NULL, src.addr, src.iova,
	                  src.lkey, NULL, NULL);
	CHECK(rc == 0, "the producer attached through the outage posts again");
	waitpid(kid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "new producer exit 0x%x",
	      status);
	CHECK(check_msgs(&a, 0, M, 1) == 0 && check_msgs(&a, 1, M, 1) == 0,
	      "every message of both producers exactly once at A'");
	printf("2 x %u messages B -> A' after the reconnect in %.2f s\n", M,
	       now_s() - t0);
	CHECK(file_has(lb, "reconnected to"), "B logs the reconnect");

	/* B dies: A' notices with its queue idle, B' connects to it. */
	t_ssqd_kill(pb, sb);
	pb = 0;
	ssq_client_close(cb);
	cb = NULL;
	qb = NULL;
	t = wait_q0_ready(ca2, 0, 5);
	CHECK(t >= 0, "A' notices B is gone, its queue idle");
	printf("A' noticed B gone (idle queue, TCP closed) in %.3f s\n", t);
	pb2 = start(sb2, "--connect", conn, "/dev/null");
	t0 = now_s();
	cb2 = ssqd_connect_pid(sb2, pb2);
	CHECK(cb2 && wait_q0_ready(cb2, 1, 10) >= 0 && wait_q0_ready(ca2, 1, 5) >= 0,
	      "B' connected to A'");
	if (!cb2)
		goto out;
	printf("B' up against A' in %.2f s\n", now_s() - t0);
	CHECK(ssq_queue_open(cb2, "q0", &qb2) == 0 &&
	          ssq_buf_alloc(cb2, 64 * (CELL + 8), &src2) == 0,
	      "B' queue: %s", ssq_client_error(cb2));
	if (!qb2)
		goto out;
	CHECK(run_producer(ssq_queue_producer(qb2), &a, 2, M, NULL, src2.addr, src2.iova,
	                   src2.lkey, NULL, NULL) == 0 &&
	          check_msgs(&a, 2, M, 1) == 0,
	      "B' -> A': every message exactly once");
	/* And A''s re-brought queue sends into B''s arena. */
	CHECK(ssq_queue_open(ca2, "q0", &qa2) == 0 &&
	          ssq_buf_alloc(ca2, 256, &srca) == 0 &&
	          ssq_buf_alloc(cb2, 256, &dstb) == 0,
	      "A' queue: %s", ssq_client_error(ca2));
	if (!qa2)
		goto out;
	memset(srca.addr, 0xa5, 256);
	memset(dstb.addr, 0, 256);
	rc = write_once(ssq_queue_producer(qa2), &srca, dstb.remote_addr, dstb.rkey, 256);
	CHECK(rc == IBV_WC_SUCCESS && !memcmp(srca.addr, dstb.addr, 256),
	      "A' -> B' WRITE: status %d", rc);

	/*
	 * A remote access error with both daemons alive moves both QPs to ERR;
	 * RECOVER (asked on either host) starts the link over, and both hosts'
	 * queues work again.
	 */
	rc = write_once(ssq_queue_producer(qb2), &src2, a.dst_iova, 0xdead, 64);
	CHECK(rc == IBV_WC_REM_ACCESS_ERR || rc == IBV_WC_RETRY_EXC_ERR, /* NAK lost */
	      "B' bad rkey: status %d", rc);
	epoch = ssq_ctl_epoch(ssq_queue_producer(qa2)->ctl);
	t0 = now_s();
	rc = ssq_queue_recover(qb2);
	CHECK(rc == 0, "RECOVER on the connecting host: %d %s", rc,
	      ssq_client_error(cb2));
	printf("RECOVER on B' (re-link, both hosts) took %.3f s\n", now_s() - t0);
	memset(src2.addr, 0x5a, 64);
	memset(dst.addr, 0, 64);
	rc = write_once(ssq_queue_producer(qb2), &src2, dst.remote_addr, dst.rkey, 64);
	CHECK(rc == IBV_WC_SUCCESS && !memcmp(src2.addr, dst.addr, 64),
	      "B' -> A' after RECOVER: status %d", rc);
	CHECK(wait_rebrought(ssq_queue_producer(qa2), epoch, 5),
	      "A' brought its queue up again");
	rc = write_once(ssq_queue_producer(qa2), &srca, dstb.remote_addr, dstb.rkey, 64);
	CHECK(rc == IBV_WC_SUCCESS, "A' -> B' after B''s RECOVER: status %d", rc);
	/*
	 * 5 % of packets are dropped: when the NAK is lost the responder, in
	 * ERR since the access error, drops the retries, and the requester
	 * ends with retry exceeded instead, as on hardware.
	 */
	rc = write_once(ssq_queue_producer(qa2), &srca, dstb.iova, 0xdead, 64);
	CHECK(rc == IBV_WC_REM_ACCESS_ERR || rc == IBV_WC_RETRY_EXC_ERR,
	      "A' bad rkey: status %d", rc);
	epoch = ssq_ctl_epoch(ssq_queue_producer(qb2)->ctl);
	t0 = now_s();
	rc = ssq_queue_recover(qa2);
	CHECK(rc == 0, "RECOVER on the listening host: %d %s", rc, ssq_client_error(ca2));
	printf("RECOVER on A' (waits for B' to reconnect) took %.3f s\n", now_s() - t0);
	memset(dstb.addr, 0, 256);
	rc = write_once(ssq_queue_producer(qa2), &srca, dstb.remote_addr, dstb.rkey, 256);
	CHECK(rc == IBV_WC_SUCCESS && !memcmp(srca.addr, dstb.addr, 256),
	      "A' -> B' after RECOVER: status %d", rc);
	CHECK(wait_rebrought(ssq_queue_producer(qb2), epoch, 5),
	      "B' brought its queue up again");
	rc = write_once(ssq_queue_producer(qb2), &src2, dst.remote_addr, dst.rkey, 64);
	CHECK(rc == IBV_WC_SUCCESS, "B' -> A' after A''s RECOVER: status %d", rc);

	/* A third ssqd while B' is healthy: refused, both sides say so. */
	pc = start(sc, "--connect", conn, lc);
	status = wait_exit(pc, 15);
	CHECK(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 1,
	      "the second peer gives up: status 0x%x", status);
	CHECK(file_has(lc, "peer refused: this ssqd already has a healthy peer"),
	      "the refused ssqd says why");
	CHECK(file_has(la2, "refused a second peer"), "A' says it refused one");
	CHECK(wait_q0_ready(cb2, 1, 1) >= 0 && wait_q0_ready(ca2, 1, 1) >= 0,
	      "A' and B' still up");
	rc = write_once(ssq_queue_producer(qa2), &srca, dstb.remote_addr, dstb.rkey, 64);
	CHECK(rc == IBV_WC_SUCCESS, "A' -> B' after the refusal: status %d", rc);

	/*
	 * A''s queue fails (nobody recovers it): a new peer D is then taken in
	 * place of B', which keeps serving and retrying (refused while D is
	 * healthy); D dies, and B' is A''s peer again.
	 */
	rc = write_once(ssq_queue_producer(qa2), &srca, dstb.iova, 0xdead, 64);
	CHECK(rc == IBV_WC_REM_ACCESS_ERR || rc == IBV_WC_RETRY_EXC_ERR, /* NAK lost */
	      "A' bad rkey: status %d", rc);
	pd = start(sd, "--connect", conn, "/dev/null");
	cd = ssqd_connect_pid(sd, pd);
	CHECK(cd && wait_q0_ready(cd, 1, 10) >= 0, "D replaces B' as A''s peer");
	CHECK(file_has(la2, "its queues failed and a new peer connected"),
	      "A' says why it took D");
	CHECK(wait_q0_ready(cb2, 0, 5) >= 0, "B' lists its queue as down");
	t_ssqd_kill(pd, sd);
	pd = 0;
	t0 = now_s();
	CHECK(wait_q0_ready(cb2, 1, 10) >= 0 && wait_q0_ready(ca2, 1, 5) >= 0,
	      "B' is A''s peer again");
	printf("B' back %.2f s after D died\n", now_s() - t0);
	rc = write_once(ssq_queue_producer(qb2), &src2, dst.remote_addr, dst.rkey, 64);
	CHECK(rc == IBV_WC_SUCCESS, "B' -> A' again: status %d", rc);
out:
	ssq_client_close(ca);
	ssq_client_close(ca2);
	ssq_client_close(cb);
	ssq_client_close(cb2);
	ssq_client_close(cd);
	if (pd)
		kill(pd, SIGKILL);
	if (pa)
		kill(pa, SIGKILL);
	if (pb)
		kill(pb, SIGKILL);
	if (pa2) {
		kill(pa2, SIGTERM);
		CHECK(wait_exit(pa2, 10) == 0, "A' exits cleanly");
	}
	if (pb2) {
		kill(pb2, SIGTERM);
		CHECK(wait_exit(pb2, 10) == 0, "B' exits cleanly");
	}
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	unlink(sa);
	unlink(sa2);
	unlink(sb);
	unlink(sb2);
	unlink(sc);
	unlink(sd);
	unlink(la2);
	unlink(lb);
	unlink(lc);
	return test_exit("ctrl_reconnect");
}
