/* SPDX-License-Identifier: MIT */
/*
 * Both ends of a two-host queue reset at once, again and again: a client
 * of each daemon scribbles its own control block (the epoch) while one
 * daemon is stopped for 50 ms, so both guards ask the other for a restart
 * together (the dialer's ask wins, the other yields and answers). After every round the
 * queue must be READY on both, and a WRITE each way must complete with
 * success and be there: no success for data that never landed, and no
 * round that leaves a side in error.
 */
#define _GNU_SOURCE
#include "cluster_flow.h"

#define ROUNDS 10

/*
 * One WRITE of 64 bytes; its status. A WRITE still in flight when a daemon
 * restarts the queue completes flushed, which is no loss: the daemon that
 * was stopped may find its scribbled block well after the test posted
 * (under load, 1.2 s after it ran again). So a flushed one is posted
 * again (counted in *@flushed), for up to 30 s: what each round must show
 * is a WRITE that succeeds once both ends are back, and none that
 * succeeds without landing.
 */
static int one(struct ssq_producer *p, const struct ssq_buf *l, const struct ssq_buf *r,
               uint64_t off, uint64_t wr_id, int *flushed)
{
	double t0 = now_s();
	int st;

	while ((st = cf_one(p, IBV_WR_RDMA_WRITE, l, 0, 64, r, off, wr_id, 5, 1)) ==
	           IBV_WC_WR_FLUSH_ERR &&
	       now_s() - t0 < 30) {
		(*flushed)++;
		usleep(10000);
	}
	return st;
}

struct side {
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_buf buf;
};

int main(void)
{
	struct t_pair pair;
	struct side a = { 0 }, b = { 0 };
	int i, bad = 0, notready = 0, flushed = 0;
	char first[200] = "";
	pid_t la, lb;

	t_need_ssqd();
	CHECK(t_pair_start(&pair, "advb", RDEPTH, RMAX, NULL) == 0,
	      "alice and bob linked");
	a.c = pair.c[0];
	b.c = pair.c[1];
	la = pair.pid[0];
	lb = pair.pid[1];
	if (!a.c || !b.c || ssq_queue_open(a.c, "bob/q0", &a.q) ||
	    ssq_queue_open(b.c, "alice/q0", &b.q) || ssq_buf_alloc(a.c, 4096, &a.buf) ||
	    ssq_buf_alloc(b.c, 4096, &b.buf))
		goto out;
	for (i = 0; i < ROUNDS; i++) {
		struct ssq_producer *pa_ = ssq_queue_producer(a.q),
		                    *pb_ = ssq_queue_producer(b.q);
		uint8_t *da = (uint8_t *)b.buf.addr + 64 * (i % 16),
		        *db = (uint8_t *)a.buf.addr + 64 * (i % 16);
		struct ssq_buf srca = a.buf, srcb = b.buf;
		int s1, s2;

		usleep(1100000); /* past the guard's pacing: each round restarts */
		/*
		 * One daemon stopped while both blocks are scribbled: the
		 * other asks, and the stopped one, run again, finds its own
		 * block first and asks too before it reads the ask.
		 */
		kill(i % 2 ? lb : la, SIGSTOP);
		__atomic_fetch_add(&pa_->ctl->epoch, 7, __ATOMIC_SEQ_CST);
		__atomic_fetch_add(&pb_->ctl->epoch, 7, __ATOMIC_SEQ_CST);
		usleep(50000);
		kill(i % 2 ? lb : la, SIGCONT);
		usleep(20000 + (i % 5) * 7000);
		srca.addr = (uint8_t *)srca.addr + 2048;
		srca.iova += 2048;
		srcb.addr = (uint8_t *)srcb.addr + 2048;
		srcb.iova += 2048;
		memset(srca.addr, 0x40 + i, 64);
		memset(srcb.addr, 0x80 + i, 64);
		memset(da, 0, 64);
		memset(db, 0, 64);
		s1 = one(pa_, &srca, &b.buf, 64 * (i % 16), 100 + i, &flushed);
		s2 = one(pb_, &srcb, &a.buf, 64 * (i % 16), 200 + i, &flushed);
		if (s1 != IBV_WC_SUCCESS || s2 != IBV_WC_SUCCESS ||
		    da[0] != (uint8_t)(0x40 + i) || da[63] != (uint8_t)(0x40 + i) ||
		    db[0] != (uint8_t)(0x80 + i) || db[63] != (uint8_t)(0x80 + i)) {
			if (!bad++)
				snprintf(
				    first, sizeof(first),
				    "round %d: alice->bob %d (landed 0x%02x), bob->alice "
				    "%d (landed 0x%02x)",
				    i, s1, da[0], s2, db[0]);
		}
		if (wait_q0_ready(a.c, 1, 30) < 0 || wait_q0_ready(b.c, 1, 30) < 0)
			notready++;
	}
	CHECK(!bad, "%d of %d rounds of both-sides restarts lost a WRITE (%s)", bad,
	      ROUNDS, first);
	CHECK(!notready, "%d rounds left a side not READY", notready);
	printf("%d rounds, %d WRITEs flushed by a restart and posted again\n", ROUNDS,
	       flushed);
out:
	t_pair_stop(&pair);
	return test_exit("ctrl_adv_peer_both_restart");
}
