/* SPDX-License-Identifier: MIT */
/*
 * Adversary, q0's shared memory at large: every client maps the arena
 * read-write, and ssqd (its routers, its healer, the emulated device it
 * runs) reads all of it. Client A, with seeded random bytes, round after
 * round: posts garbage WQEs (right index and QPN, any DS count, opcode and
 * segments: lkeys, lengths, inline runs), fills q0's whole SQ ring with
 * garbage, forges CQEs in q0's send CQ, moves the send doorbell record and
 * rings the UAR with it, writes 256 random bytes anywhere in q0's part of
 * the arena (its CQs, rings and doorbell records, its hidden loopback
 * peer's, its control block), scribbles q0's receive log; after each round
 * it recovers q0 if it is in error. Then: ssqd is still running (built
 * with ASan and UBSan, any out-of-bounds access or undefined behaviour
 * aborts it), a new client B's WRITE through q1, which nobody touched,
 * lands, and so does one through q0, recovering it as needed (before, a
 * reset after forged CQEs could leave q0's routers at a CQ slot the device
 * never writes, for good). SSQ_SCRIBBLE_SEED and SSQ_SCRIBBLE_ROUNDS
 * explore further.
 */
#define _GNU_SOURCE
#include "cluster_flow.h"

#define ROUNDS 120

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void fill(void *p, size_t len)
{
	uint8_t *b = p;
	size_t i;

	for (i = 0; i < len; i++)
		b[i] = (uint8_t)rnd();
}

/* A garbage WQE of 1..4 WQEBBs that names its index and our QPN. */
static void garbage_wqe(struct ssq_producer *p, const struct ssq_buf *buf)
{
	static const uint8_t ops[] = { MLX5_OPCODE_NOP,
		                       MLX5_OPCODE_SEND,
		                       MLX5_OPCODE_SEND_IMM,
		                       MLX5_OPCODE_RDMA_WRITE,
		                       MLX5_OPCODE_RDMA_WRITE_IMM,
		                       MLX5_OPCODE_RDMA_READ,
		                       MLX5_OPCODE_ATOMIC_CS,
		                       MLX5_OPCODE_ATOMIC_FA,
		                       0x1f,
		                       0xff };
	const struct ssq_sq *sq = ssq_producer_sq(p);
	unsigned n = 1 + (unsigned)(rnd() % 4), i, ds;
	struct mlx5_wqe_ctrl_seg *c;
	uint64_t pos;

	if (ssq_reserve(p, n, &pos))
		return;
	for (i = 0; i < n; i++) {
		uint8_t *w = ssq_sq_wqebb(sq, (uint32_t)(pos + i));

		fill(w, MLX5_SEND_WQE_BB);
		/* Now and then, data segments that look almost right. */
		if (rnd() & 1) {
			struct mlx5_wqe_data_seg *d =
			    (struct mlx5_wqe_data_seg *)(w + 32);

			d->lkey = htobe32(rnd() & 1 ? buf->lkey : (uint32_t)rnd());
			d->addr = htobe64(buf->iova + (rnd() % 8192) - 4096);
			d->byte_count = htobe32(rnd() & 1 ? (uint32_t)(rnd() % 8192)
			                                  : (uint32_t)rnd());
		}
	}
	c = ssq_sq_wqebb(sq, (uint32_t)pos);
	ds = (unsigned)(rnd() % 64);
	c->opmod_idx_opcode =
	    htobe32((uint32_t)((pos & 0xffff) << 8) | ops[rnd() % sizeof(ops)]);
	c->qpn_ds = htobe32(sq->qpn << 8 | ds);
	c->fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE;
	ssq_publish(p, pos, n, rnd(), SSQ_WQE_SIGNALED);
	ssq_submit(p);
}

/*
 * Signaled WRITEs through @q, one in flight, recovering the queue while it
 * is in error or a WRITE failed, until one completes successfully: 0
 * (IBV_WC_SUCCESS) within 10 s, else -1.
 */
static int write_recovering(struct ssq_queue *q, const struct ssq_buf *src,
                            const struct ssq_buf *dst)
{
	struct ssq_producer *p = ssq_queue_producer(q);
	double t0 = now_s(), posted = 0;
	uint64_t id = 1000;

	while (now_s() - t0 < 10) {
		struct ssq_completion comp[8];
		int n, k, rc = 0;

		if (now_s() - posted > 1) {
			rc = ssq_post_write(p, src->iova, src->lkey, 64, dst->remote_addr,
			                    dst->rkey, ++id, SSQ_WQE_SIGNALED);
			if (rc == 0)
				posted = now_s();
		}
		n = ssq_poll(p, comp, 8);
		for (k = 0; k < n; k++) {
			if (comp[k].status == IBV_WC_SUCCESS)
				return 0;
			rc = -EIO;
		}
		if (rc == -EIO) {
			(void)ssq_queue_recover(q);
			posted = 0;
		}
		if (n <= 0)
			usleep(1000);
	}
	return -1;
}

int main(void)
{
	const char *args[] = { "--queues", "2", NULL };
	struct ssq_client *a = NULL, *b = NULL;
	struct ssq_queue *qa = NULL, *qb0 = NULL, *qb1 = NULL;
	struct shm_arena_header *h;
	struct ssq_buf abuf, src, dst;
	struct ssq_completion comp[16];
	char sock[108], logp[128];
	int st, rc, r, rounds = ROUNDS;
	pid_t pid;

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	snprintf(sock, sizeof(sock), "/tmp/ssq-adv-shm-scribble-%d.sock", getpid());
	snprintf(logp, sizeof(logp), "/tmp/ssq-adv-shm-scribble-%d.log", getpid());
	pid = cf_start(sock, logp, 0, NULL, args);
	a = ssqd_connect_pid(sock, pid);
	if (!a || ssq_queue_open(a, "q0", &qa) || ssq_buf_alloc(a, 8192, &abuf)) {
		fprintf(stderr, "ssqd did not start: %s\n",
		        a ? ssq_client_error(a) : "-");
		kill(pid, SIGKILL);
		return 1;
	}
	h = (struct shm_arena_header *)((uint8_t *)abuf.addr - abuf.off);
	if (getenv("SSQ_SCRIBBLE_SEED"))
		rng = strtoull(getenv("SSQ_SCRIBBLE_SEED"), NULL, 0) | 1;
	if (getenv("SSQ_SCRIBBLE_ROUNDS"))
		rounds = atoi(getenv("SSQ_SCRIBBLE_ROUNDS"));

	for (r = 0; r < rounds && waitpid(pid, &st, WNOHANG) == 0; r++) {
		struct ssq_producer *p = ssq_queue_producer(qa);
		const struct ssq_sq *sq = ssq_queue_sq(qa);
		const struct ssq_cq *cq = ssq_queue_cq(qa);
		const struct shm_queue_layout *l = &h->queues[0];
		double t0;

		switch (r % 7) {
		case 0:
		case 1:
			garbage_wqe(p, &abuf);
			break;
		case 2: /* the whole ring, then a WQE to make the device look */
			fill(sq->buf, (size_t)sq->wqe_cnt * MLX5_SEND_WQE_BB);
			garbage_wqe(p, &abuf);
			break;
		case 3: { /* forged CQEs, owner bit of this pass or the next */
			unsigned k;

			for (k = 0; k < 8; k++) {
				struct mlx5_cqe64 *e =
				    (struct mlx5_cqe64 *)(cq->buf +
				                          (size_t)(rnd() % cq->cqe_cnt) *
				                              64);

				fill(e, 64);
			}
			break;
		}
		case 4: { /* the send doorbell record, and a UAR ring with it */
			struct mlx5_wqe_ctrl_seg c;
			uint64_t v;

			__atomic_store_n(&sq->dbrec[MLX5_SND_DBR],
			                 htobe32((uint32_t)rnd()), __ATOMIC_RELEASE);
			c.opmod_idx_opcode = htobe32((uint32_t)rnd());
			c.qpn_ds = htobe32(sq->qpn << 8 | (uint32_t)(rnd() & 0x3f));
			memcpy(&v, &c, sizeof(v));
			__atomic_store_n((uint64_t *)sq->bf_reg, v, __ATOMIC_RELEASE);
			break;
		}
		case 5: { /* anywhere in q0's part: its and its hidden peer's rings */
			uint64_t lo = l->cq_off, hi = h->queues[1].cq_off;

			fill((uint8_t *)h + lo + rnd() % (hi - lo - 256), 256);
			break;
		}
		default: /* the receive log */
			if (l->recv_log_off)
				fill((uint8_t *)h + l->recv_log_off,
				     (size_t)shm_recv_log_size(l->recv_slots));
			break;
		}
		/* Let the device and ssqd at it, then take q0 back. */
		for (t0 = now_s(); now_s() - t0 < 0.02;)
			if (ssq_poll(p, comp, 16) <= 0)
				usleep(1000);
		if (ssq_reserve(p, 1, &(uint64_t){ 0 }) == -EIO || cf_ready(a, "q0") != 1)
			(void)ssq_queue_recover(qa);
	}
	CHECK(waitpid(pid, &st, WNOHANG) == 0,
	      "ssqd is still running after %d rounds (status 0x%x)", r, st);
	if (test_failures)
		goto out;

	b = ssqd_connect_pid(sock, pid);
	rc = !b || ssq_queue_open(b, "q1", &qb1) || ssq_queue_open(b, "q0", &qb0) ||
	     ssq_buf_alloc(b, 64, &src) || ssq_buf_alloc(b, 64, &dst);
	CHECK(rc == 0, "client B: %s", b ? ssq_client_error(b) : "no connection");
	if (rc)
		goto out;
	rc = cf_one(ssq_queue_producer(qb1), IBV_WR_RDMA_WRITE, &src, 0, 64, &dst, 0, 1,
	            5, 0);
	CHECK(rc == IBV_WC_SUCCESS, "B's WRITE through q1: %d", rc);
	/* What A left in flight may still fail q0 (then flush): recover, retry. */
	rc = write_recovering(qb0, &src, &dst);
	CHECK(rc == IBV_WC_SUCCESS, "B's WRITE through q0, recovering it as needed: %d",
	      rc);
	CHECK(waitpid(pid, &st, WNOHANG) == 0, "ssqd is still running (status 0x%x)", st);
out:
	if (test_failures)
		fprintf(stderr, "ssqd's log: %s\n", logp);
	else
		unlink(logp);
	if (b)
		ssq_client_close(b);
	ssq_client_close(a);
	t_ssqd_stop(pid, &st, sock);
	return test_exit("ctrl_adv_shm_scribble");
}
