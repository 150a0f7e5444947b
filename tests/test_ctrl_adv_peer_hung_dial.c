/* SPDX-License-Identifier: MIT */
/*
 * A peer daemon that hangs (SIGSTOP, a swapped-out or wedged host) must
 * cost only its own queues. Its kernel still completes TCP handshakes into
 * the listen backlog, so the daemon that dials it connects and then waits
 * for an exchange that does not come. Here alice dials bob (a real ssqd)
 * and carol, who is only a listening socket this process never accepts
 * from: what a stopped ssqd looks like from the wire. For 8 s:
 *  - alice's clients are answered at once (a LIST well under a second);
 *  - alice -> bob carries WRITEs that land, none failing.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include "cluster_flow.h"

/* A WRITE on @q of 8 bytes to @dst; its status, or below 0 for none. */
static int write8(struct ssq_queue *q, const struct ssq_buf *src,
                  const struct ssq_buf *dst, uint64_t id)
{
	return cf_one(ssq_queue_producer(q), IBV_WR_RDMA_WRITE, src, 0, 8, dst, 0, id, 0,
	              0);
}

/* A TCP socket listening on 127.0.0.1: carol, who never answers. */
static int hung_listener(uint16_t *port)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) || listen(s, 16) ||
	    getsockname(s, (struct sockaddr *)&sa, &len))
		return -1;
	*port = ntohs(sa.sin_port);
	return s;
}

int main(void)
{
	char sa[108], sb[108], pa[16], pb[16], a_bob[64], a_carol[64], b_alice[64];
	const char *a_args[] = { "--eager", "--name", "alice",    "--peer", a_bob,
		                 "--peer",  a_carol,  "--listen", pa,       NULL };
	const char *b_args[] = { "--eager", "--name",   "bob", "--peer",
		                 b_alice,   "--listen", pb,    NULL };
	struct ssq_queue_info info[SSQ_MAX_QUEUES];
	struct ssq_client *ca = NULL, *cb = NULL;
	struct ssq_queue *qa = NULL;
	struct ssq_buf ba, bb;
	uint16_t port_a = free_tcp_port(), port_b = free_tcp_port(), port_c = 0;
	int carol = hung_listener(&port_c), i, st, failed = 0, bad_writes = 0, writes = 0;
	char first_err[200] = "", first_bad[120] = "";
	double worst = 0, t0;
	pid_t la, lb;

	t_need_ssqd();
	snprintf(sa, sizeof(sa), "/tmp/ssq-advh-a-%d.sock", getpid());
	snprintf(sb, sizeof(sb), "/tmp/ssq-advh-b-%d.sock", getpid());
	snprintf(pa, sizeof(pa), "%u", port_a);
	snprintf(pb, sizeof(pb), "%u", port_b);
	snprintf(a_bob, sizeof(a_bob), "bob=127.0.0.1:%u", port_b);
	snprintf(a_carol, sizeof(a_carol), "carol=127.0.0.1:%u", port_c);
	snprintf(b_alice, sizeof(b_alice), "alice=127.0.0.1:%u", port_a);
	CHECK(carol >= 0, "carol's socket listens");
	lb = rssqd_start(sb, NULL, b_args);
	cb = ssqd_connect_pid(sb, lb);
	la = rssqd_start(sa, NULL, a_args);
	ca = cb ? ssqd_connect_pid(sa, la) : NULL;
	CHECK(ca && cb, "both daemons serve");
	if (!ca || !cb)
		goto out;
	/* alice dials both at once; bob answers. */
	for (t0 = now_s(); now_s() - t0 < 20; usleep(10000))
		if (!ssq_queue_open(ca, "bob/q0", &qa))
			break;
	CHECK(qa != NULL, "alice's queue to bob opens: %s", ssq_client_error(ca));
	if (!qa || ssq_buf_alloc(ca, 4096, &ba) || ssq_buf_alloc(cb, 4096, &bb))
		goto out;

	for (t0 = now_s(), i = 0; now_s() - t0 < 8; i++) {
		double t = now_s(), dt;
		int n = ssq_client_list(ca, info, SSQ_MAX_QUEUES);

		dt = now_s() - t;
		if (dt > worst)
			worst = dt;
		if (n < 1 && !failed++)
			snprintf(first_err, sizeof(first_err), "%d after %.2f s: %s", n,
			         dt, ssq_client_error(ca));
		*(uint64_t *)ba.addr = 0xa000u + (unsigned)i;
		st = write8(qa, &ba, &bb, (uint64_t)i);
		writes++;
		if (st != IBV_WC_SUCCESS || *(uint64_t *)bb.addr != 0xa000u + (unsigned)i)
			if (!bad_writes++)
				snprintf(first_bad, sizeof(first_bad),
				         "WRITE %d: status %d, landed 0x%llx", i, st,
				         (unsigned long long)*(uint64_t *)bb.addr);
		usleep(20000);
	}
	CHECK(worst < 0.8 && !failed,
	      "carol hung: alice's slowest LIST %.2f s, %d failed (%s)", worst, failed,
	      first_err);
	CHECK(!bad_writes, "carol hung: %d of %d WRITEs alice -> bob failed (%s)",
	      bad_writes, writes, first_bad);
out:
	ssq_client_close(ca);
	ssq_client_close(cb);
	t_ssqd_stop(la, &st, NULL);
	t_ssqd_stop(lb, &st, NULL);
	close(carol);
	unlink(sa);
	unlink(sb);
	return test_exit("ctrl_adv_peer_hung_dial");
}
