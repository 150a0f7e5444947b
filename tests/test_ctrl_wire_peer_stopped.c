/* SPDX-License-Identifier: MIT */
/*
 * A peer ssqd held off the CPU longer than the transport's retry budget
 * (local ACK timeout 67 ms x (retry_cnt 7 + 1) = 537 ms) must not fail the
 * WRITEs sent to it: on a ConnectX the responder is the NIC, whose ACKs
 * come whether or not the host's processes run, so a requester never
 * times out because the peer's ssqd was descheduled or stopped (issue 28:
 * "the emulated wire's retransmission must not give up because the peer
 * process was off the CPU"). With the emulated device the responder is a
 * thread of that ssqd: ctrl_adv_peer_stream_restart failed once in 69 runs
 * on a loaded machine with TRANSPORT_RETRY_EXC_ERR.
 *
 * alice and bob linked; a client of alice WRITEs into bob's buffer while
 * bob's ssqd is stopped (SIGSTOP) for three retry budgets, then runs again
 * (SIGCONT): every WRITE succeeds and its value is in bob's buffer. Then
 * bob's ssqd is killed: a WRITE to it still fails within seconds (the
 * socket of a dead peer is gone; it is not waited for).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/wait.h>
#include "recv_flow.h"

#define N      32
#define STOP_S 1.6 /* three times 537 ms */

/* Post WRITE @v (8 bytes, into slot @v of @dst). 0, or an ssq error. */
static int post(struct ssq_queue *q, const struct ssq_buf *src, const struct ssq_buf *dst,
                uint64_t v)
{
	struct ssq_producer *p = ssq_queue_producer(q);
	struct ibv_sge sge = { src->iova + v * 8, 8, src->lkey };
	struct ibv_send_wr wr, *bad = NULL;
	double t0 = now_s();
	int rc;

	((uint64_t *)src->addr)[v] = 0x5eed0000 + v;
	t_wr_one(&wr, &sge, IBV_WR_RDMA_WRITE, v, dst->remote_addr + v * 8, dst->rkey);
	while ((rc = ssq_post_wr(p, &wr, &bad)) == -EAGAIN && now_s() - t0 < 10)
		usleep(1000);
	return rc;
}

/* Completions of @q for up to @secs until @want came; counts by status. */
static unsigned reap_wr(struct ssq_queue *q, unsigned want, double secs, unsigned *ok,
                        int *first_bad, uint64_t *bad_id)
{
	struct ssq_completion comp[16];
	unsigned got = 0;
	double t0 = now_s();

	while (got < want && now_s() - t0 < secs) {
		int n = ssq_poll(ssq_queue_producer(q), comp, 16), i;

		for (i = 0; i < n; i++, got++) {
			if (comp[i].status == IBV_WC_SUCCESS)
				(*ok)++;
			else if (*first_bad < 0)
				*first_bad = comp[i].status, *bad_id = comp[i].wr_id;
		}
		if (n <= 0)
			usleep(200);
	}
	return got;
}

int main(void)
{
	struct t_pair pair;
	struct ssq_queue *q = NULL;
	struct ssq_buf src, dst;
	unsigned i, ok = 0, got, landed = 0;
	int bad = -1, rc;
	uint64_t bad_id = 0;
	double t0;

	t_need_ssqd();
	CHECK(t_pair_start(&pair, "wstop", RDEPTH, RMAX, NULL) == 0,
	      "alice and bob linked");
	if (!pair.c[0] || !pair.c[1] || ssq_queue_open(pair.c[0], "bob/q0", &q) ||
	    ssq_buf_alloc(pair.c[0], N * 8, &src) ||
	    ssq_buf_alloc(pair.c[1], N * 8, &dst))
		goto out;
	memset(dst.addr, 0, N * 8);

	/* One WRITE with both running: the link works. */
	rc = post(q, &src, &dst, 0);
	got = reap_wr(q, 1, 10, &ok, &bad, &bad_id);
	CHECK(!rc && got == 1 && ok == 1, "a WRITE with both running: rc %d, %u of 1 ok",
	      rc, ok);

	kill(pair.pid[1], SIGSTOP);
	t0 = now_s();
	for (i = 1; i < N; i++)
		if (post(q, &src, &dst, i))
			break;
	CHECK(i == N, "%u WRITEs posted while bob's ssqd is stopped", N - 1);
	/* Nothing can complete meanwhile: no ACK comes from a stopped ssqd. */
	got = reap_wr(q, i - 1, STOP_S - (now_s() - t0), &ok, &bad, &bad_id);
	kill(pair.pid[1], SIGCONT);
	got += reap_wr(q, i - 1 - got, 10, &ok, &bad, &bad_id);
	for (i = 0; i < N; i++)
		landed += ((volatile uint64_t *)dst.addr)[i] == 0x5eed0000 + i;
	CHECK(bad < 0,
	      "no error after bob's ssqd was stopped %.1f s: WRITE %llu completed with "
	      "status %d (%s)",
	      STOP_S, (unsigned long long)bad_id, bad,
	      bad < 0 ? "" : ibv_wc_status_str((enum ibv_wc_status)bad));
	CHECK(got == N - 1 && ok == N && landed == N,
	      "every WRITE completed and landed: %u of %u completed, %u ok, %u landed",
	      got + 1, N, ok, landed);

	/* A dead peer is still found: its socket is gone, nothing to wait for. */
	kill(pair.pid[1], SIGKILL);
	waitpid(pair.pid[1], NULL, 0);
	pair.pid[1] = -1;
	bad = -1;
	t0 = now_s();
	rc = post(q, &src, &dst, 1);
	got = rc ? 0 : reap_wr(q, 1, 10, &ok, &bad, &bad_id);
	CHECK(rc == -EIO || (got == 1 && bad >= 0 && bad != IBV_WC_SUCCESS),
	      "a WRITE to bob's killed ssqd fails: rc %d, status %d after %.2f s", rc,
	      bad, now_s() - t0);
out:
	t_pair_stop(&pair);
	return test_exit("ctrl_wire_peer_stopped");
}
