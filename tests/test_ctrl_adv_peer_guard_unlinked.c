/* SPDX-License-Identifier: MIT */
/*
 * A queue reset while its link is down. The link is TCP; the queue's QPs
 * do not need it, and when it drops (a network blip, a keepalive timeout,
 * an unanswered restart ask) both ends stay in RTS and
 * the peer's QP expects the PSNs after what it already took. If alice's
 * guard then restarts her QP alone - the link cannot carry the restart
 * ask - it comes back at its first PSNs, inside bob's duplicate window:
 * bob acknowledges (or drops) WRITEs it never executes. So a WRITE posted
 * after that reset must not complete with success unless it landed, must
 * not fail with RETRY_EXC either, and once the link is back WRITEs land.
 * alice reaches bob through a TCP relay in this process: the link is
 * dropped by stopping the relay (a network partition of the TCP path
 * only), and comes back when it runs again.
 */
#define _GNU_SOURCE
#include <poll.h>
#include "cluster_flow.h"

static int one(struct ssq_queue *q, const struct ssq_buf *src, const struct ssq_buf *dst,
               uint64_t off, uint64_t id, double secs)
{
	return cf_one(ssq_queue_producer(q), IBV_WR_RDMA_WRITE, src, 0, 64, dst, off, id,
	              secs, 0);
}

/*
 * A relay from 127.0.0.1:@port to @to: each connection forwarded to a new
 * one to @to, until killed (then everything closes, and nothing listens).
 */
static pid_t relay(uint16_t port, uint16_t to)
{
	pid_t pid = fork();

	if (pid == 0) {
		struct sockaddr_in sa;
		struct pollfd pfd[3];
		int l = socket(AF_INET, SOCK_STREAM, 0), one = 1, a = -1, b = -1;
		char buf[4096];

		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		memset(&sa, 0, sizeof(sa));
		sa.sin_family = AF_INET;
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		sa.sin_port = htons(port);
		if (bind(l, (struct sockaddr *)&sa, sizeof(sa)) || listen(l, 4))
			_exit(3);
		for (;;) {
			int n, i;

			pfd[0] = (struct pollfd){ l, POLLIN, 0 };
			pfd[1] = (struct pollfd){ a, POLLIN, 0 };
			pfd[2] = (struct pollfd){ b, POLLIN, 0 };
			if (poll(pfd, 3, -1) < 0)
				_exit(4);
			if (pfd[0].revents & POLLIN) {
				int c = accept(l, NULL, NULL);

				if (a >=
				    0) { /* one link at a time: the new one replaces it */
					close(a);
					close(b);
				}
				a = c;
				b = socket(AF_INET, SOCK_STREAM, 0);
				sa.sin_port = htons(to);
				if (connect(b, (struct sockaddr *)&sa, sizeof(sa))) {
					close(a);
					close(b);
					a = b = -1;
				}
				continue;
			}
			for (i = 1; i < 3; i++) {
				if (!pfd[i].revents)
					continue;
				n = (int)read(pfd[i].fd, buf, sizeof(buf));
				if (n <= 0) {
					close(a);
					close(b);
					a = b = -1;
					break;
				}
				(void)!write(i == 1 ? b : a, buf, (size_t)n);
			}
		}
	}
	return pid;
}

int main(void)
{
	struct t_pair pair;
	struct ssq_client *ca, *cb;
	struct ssq_queue *qa = NULL;
	struct ssq_buf src, dst;
	uint16_t port_b, port_r;
	uint8_t *d;
	int i, st;
	double t0;
	pid_t r;

	t_need_ssqd();
	t_pair_init(&pair, "advg", RDEPTH, RMAX);
	port_b = (uint16_t)atoi(pair.port[1]);
	port_r = free_tcp_port();
	r = relay(port_r, port_b);
	snprintf(pair.peer[0], sizeof(pair.peer[0]), "bob=127.0.0.1:%u", port_r);
	CHECK(t_pair_run(&pair) == 0, "alice and bob linked");
	ca = pair.c[0];
	cb = pair.c[1];
	if (!ca || !cb || ssq_queue_open(ca, "bob/q0", &qa) ||
	    ssq_buf_alloc(ca, 4096, &src) || ssq_buf_alloc(cb, 4096, &dst))
		goto out;
	d = dst.addr;
	/* PSNs move on: bob's QP expects the ones after these. */
	for (i = 0; i < 20; i++) {
		memset(src.addr, 0x10 + i, 64);
		st = one(qa, &src, &dst, 64 * (unsigned)i, (uint64_t)i, 5);
		CHECK(st == IBV_WC_SUCCESS && d[64 * i] == 0x10 + i,
		      "WRITE %d before: %d", i, st);
	}

	/* The link dropped (the relay gone: alice's redials refused), the QPs untouched.
	 */
	kill(r, SIGKILL);
	waitpid(r, &st, 0);
	r = -1;
	CHECK(wait_q0_ready(ca, 0, 2) >= 0, "alice lists bob/q0 down");
	/* alice's block scribbled: her guard resets the queue with the link down. */
	__atomic_fetch_add(&ssq_queue_producer(qa)->ctl->epoch, 7, __ATOMIC_SEQ_CST);
	usleep(30000);
	memset(src.addr, 0x77, 64);
	memset(d + 2048, 0, 64);
	st = one(qa, &src, &dst, 2048, 100, 0.05);
	CHECK(st != IBV_WC_SUCCESS || d[2048] == 0x77,
	      "a WRITE after the reset with the link down: success, but bob holds 0x%02x",
	      d[2048]);
	printf("the WRITE after the reset: status %d, bob holds 0x%02x\n", st, d[2048]);
	CHECK(st != IBV_WC_RETRY_EXC_ERR,
	      "a WRITE after the reset with the link down: retry exceeded (%d)", st);
	/* Once the link is back, WRITEs land. */
	r = relay(port_r, port_b);
	memset(src.addr, 0x78, 64);
	for (t0 = now_s(); now_s() - t0 < 10; usleep(10000))
		if ((st = one(qa, &src, &dst, 2048 + 64, 101, 0.05)) == IBV_WC_SUCCESS)
			break;
	CHECK(st == IBV_WC_SUCCESS && d[2048 + 64] == 0x78,
	      "after the link is back: WRITE %d, bob holds 0x%02x", st, d[2048 + 64]);
out:
	if (r > 0) {
		kill(r, SIGKILL);
		waitpid(r, &st, 0);
	}
	t_pair_stop(&pair);
	return test_exit("ctrl_adv_peer_guard_unlinked");
}
