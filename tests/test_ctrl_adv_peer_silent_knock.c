/* SPDX-License-Identifier: MIT */
/*
 * Anyone who can reach an ssqd's --listen port must not be able to stop it
 * serving. Two daemons of a cluster (alice dials, bob accepts); this
 * process is a client of bob and, meanwhile, a stranger on bob's TCP port:
 *  1. a connection that never says anything;
 *  2. one that sends its address message a byte a second;
 *  3. four silent connections at once;
 *  4. four that each send a well-formed address message of a daemon that
 *     is not in the cluster (mallory), then neither read nor close.
 * Throughout, bob's clients are answered at once (a LIST well under a
 * second) and the link to alice stays up: a WRITE alice -> bob lands. A
 * peer that really is slow is the peer's problem, not every client's.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include "recv_flow.h"
#include "ctrl/proto/peer_msg.h"
#include "shm/layout.h"

static double worst;     /* the slowest LIST of bob's client, seconds (see list_for) */
static double worst_raw; /* the same on the clock, the CPU waits left in */
static int failed;       /* LISTs that failed */
static int late;         /* LISTs timed out while bob or we waited for a CPU */
static char first_err[200];
static pid_t bob;

/* Seconds bob's serve loop and this process have waited for a CPU. */
static double run_waits(void)
{
	double b = t_proc_run_wait(bob), me = t_proc_run_wait(0);

	return b < 0 || me < 0 ? 0 : b + me;
}

/*
 * LISTs of @c for @secs; the slowest one's time goes to worst. A LIST's
 * time is counted less what bob's serve loop (the main thread, which
 * answers it) and this process spent runnable, waiting for a CPU, meanwhile:
 * on a loaded machine (a CI runner, two cores, load above 15) that alone
 * took a LIST to 1.02 s. What is left is time bob was asleep or working
 * with the LIST unanswered: a loop held by a stranger sleeps on its socket
 * (up to SSQD_PEER_EXCHANGE_MS, or REFUSE_DRAIN_MS per refusal), which no
 * scheduling delay hides. So a LIST that the library gave up on
 * (-ETIMEDOUT: no answer within its 1 s) fails the test only if bob held
 * it long on its own: the slowest such LIST is that under load.
 */
static void list_for(struct ssq_client *c, double secs, void (*tick)(double))
{
	struct ssq_queue_info info[SSQ_MAX_QUEUES];
	double t0 = now_s();

	while (now_s() - t0 < secs) {
		double w = run_waits(), t = now_s(), dt, fair;
		int n = ssq_client_list(c, info, SSQ_MAX_QUEUES);

		dt = now_s() - t;
		fair = dt - (run_waits() - w);
		if (n == -ETIMEDOUT && fair < 0.8)
			late++;
		else if (n < 1 && !failed++)
			snprintf(first_err, sizeof(first_err), "%d after %.2f s: %s", n,
			         dt, ssq_client_error(c));
		if (fair > worst)
			worst = fair;
		if (dt > worst_raw)
			worst_raw = dt;
		if (tick)
			tick(now_s() - t0);
		usleep(20000);
	}
	printf("%.0f s of LISTs: the slowest %.3f s less CPU waits, %.3f s on the clock; "
	       "%d timed out on CPU waits\n",
	       secs, worst, worst_raw, late);
}

/* 2.'s talker: a version-4 header, then zeros, one byte a second. */
static int slow_fd = -1;
static unsigned slow_sent;
static void slow_tick(double t)
{
	static const uint8_t head[8] = { 'S', 'S', 'Q', 'P', 0, 4, 0, 1 };
	uint8_t b;

	if (t < slow_sent * 1.0)
		return;
	b = slow_sent < sizeof(head) ? head[slow_sent] : 0;
	(void)!send(slow_fd, &b, 1, MSG_NOSIGNAL);
	slow_sent++;
}

/* A WRITE on @q of 8 bytes to @dst; its status, or below 0 for none. */
static int write8(struct ssq_queue *q, const struct ssq_buf *src,
                  const struct ssq_buf *dst)
{
	struct ssq_producer *p = ssq_queue_producer(q);
	struct ibv_sge sge = { src->iova, 8, src->lkey };
	struct ibv_send_wr wr, *bad = NULL;
	struct ssq_completion comp;
	double t0 = now_s();

	t_wr_one(&wr, &sge, IBV_WR_RDMA_WRITE, 7, dst->remote_addr, dst->rkey);
	if (ssq_post_wr(p, &wr, &bad))
		return -3;
	while (now_s() - t0 < 10) {
		if (ssq_poll(p, &comp, 1) == 1)
			return (int)comp.status;
		usleep(100);
	}
	return -1;
}

int main(void)
{
	struct t_pair pair;
	struct ssq_client *ca = NULL, *cb = NULL;
	struct ssq_queue *qa = NULL;
	struct ssq_buf ba, bb;
	uint16_t port_b;
	int s[4], i, st;

	t_need_ssqd();
	/* alice's peer is bob and the reverse; alice sorts first: she dials. */
	CHECK(t_pair_start(&pair, "advk", RDEPTH, RMAX, NULL) == 0,
	      "alice and bob linked");
	ca = pair.c[0];
	cb = pair.c[1];
	bob = pair.pid[1];
	port_b = (uint16_t)atoi(pair.port[1]); /* knocks go to bob's peer port */
	if (!ca || !cb || ssq_queue_open(ca, "bob/q0", &qa) ||
	    ssq_buf_alloc(ca, 4096, &ba) || ssq_buf_alloc(cb, 4096, &bb))
		goto out;

	/* 1. Silent. */
	s[0] = t_tcp_connect(-1, port_b);
	worst = worst_raw = 0;
	failed = late = 0;
	list_for(cb, 3.0, NULL);
	CHECK(worst < 0.8 && !failed,
	      "a silent stranger on bob's port: slowest LIST %.2f s (%.2f s on the "
	      "clock), %d failed (%s)",
	      worst, worst_raw, failed, first_err);
	close(s[0]);

	/* 2. A byte a second. */
	slow_fd = t_tcp_connect(-1, port_b);
	worst = worst_raw = 0;
	failed = late = 0;
	list_for(cb, 8.0, slow_tick);
	CHECK(worst < 0.8 && !failed,
	      "a stranger sending a byte a second: slowest LIST %.2f s (%.2f s on the "
	      "clock), %d failed (%s)",
	      worst, worst_raw, failed, first_err);
	close(slow_fd);

	/* 3. Four at once. */
	for (i = 0; i < 4; i++)
		s[i] = t_tcp_connect(-1, port_b);
	worst = worst_raw = 0;
	failed = late = 0;
	list_for(cb, 3.0, NULL);
	CHECK(worst < 0.8 && !failed,
	      "four silent strangers: slowest LIST %.2f s (%.2f s on the clock), %d "
	      "failed (%s)",
	      worst, worst_raw, failed, first_err);
	for (i = 0; i < 4; i++)
		close(s[i]);

	/* 4. Strangers with a name, refused, that keep the connection open. */
	for (i = 0; i < 4; i++) {
		struct proto_peer_addr m;
		uint8_t msg[SSQ_PEER_MSG_LEN];

		memset(&m, 0, sizeof(m));
		m.count = 1;
		m.lid = 1;
		m.qpn = 0x100;
		m.psn = 1;
		m.data_rkey = 1;
		m.link_layer = IBV_LINK_LAYER_INFINIBAND;
		m.mtu = IBV_MTU_4096;
		m.rd_atom = 16;
		snprintf(m.name, sizeof(m.name), "mallory");
		proto_peer_encode(&m, msg);
		s[i] = t_tcp_connect(-1, port_b);
		(void)!send(s[i], msg, sizeof(msg), MSG_NOSIGNAL);
	}
	worst = worst_raw = 0;
	failed = late = 0;
	list_for(cb, 3.0, NULL);
	CHECK(worst < 0.8 && !failed,
	      "four named strangers held open: slowest LIST %.2f s (%.2f s on the "
	      "clock), %d failed (%s)",
	      worst, worst_raw, failed, first_err);
	for (i = 0; i < 4; i++)
		close(s[i]);

	*(uint64_t *)ba.addr = 0x5eed;
	st = write8(qa, &ba, &bb);
	CHECK(st == IBV_WC_SUCCESS && *(uint64_t *)bb.addr == 0x5eed,
	      "alice -> bob still carries a WRITE: status %d, landed 0x%llx", st,
	      (unsigned long long)*(uint64_t *)bb.addr);
out:
	t_pair_stop(&pair);
	return test_exit("ctrl_adv_peer_silent_knock");
}
