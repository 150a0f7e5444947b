/* SPDX-License-Identifier: MIT */
/*
 * ssqd's receive pool in loopback (one ssqd; a queue's log holds what its
 * own clients send through it):
 *  - three producer processes send SEND, SEND_IMM and RDMA_WRITE_IMM
 *    (recv_flow.h) through the one shared queue, in batches built with
 *    ssq_reserve / ssq_prep_* / ssq_publish / ssq_submit and, every fourth
 *    batch, one call each (ssq_post_send); the parent reads the log as it
 *    fills (ssq_recv_copy): every message exactly once, in each producer's
 *    order, with its length, immediate and bytes, and every producer gets
 *    exactly its completions, in order;
 *  - a SEND longer than --recv-size: the sender's completion is
 *    REM_INV_REQ_ERR, the log's record LOC_LEN_ERR with no payload, posts
 *    get -EIO; ssq_queue_recover brings the queue back, the pool is posted
 *    again and the next message is logged right after the error record;
 *  - the window: after 3 x depth unread messages the newest depth are
 *    readable (ssq_recv_copy, and ssq_recv_peek + ssq_recv_check in place)
 *    and the one before them is -ESTALE, exactly; unarrived numbers are
 *    -EAGAIN, bad arguments -EINVAL;
 *  - an ssqd with --recv-depth 0 has no pool: -ENOTSUP.
 */
#include "recv_flow.h"

#define P     3u   /* producer processes */
#define B     150u /* batches each, 3 messages a batch */
#define SLOTS 16u  /* source slots (batches in flight) per producer */
#define CELLS (3 * B)

static char sock[108];
static struct rpace *pace;
static uint64_t imm_iova; /* the WRITE_IMM area: CELLS cells of RMAX per producer */
static uint32_t rkey;

/* Build message (p, s) at @pos, from @iova (its bytes already there). */
static void prep_msg(struct ssq_producer *prod, uint64_t pos, uint32_t p, uint32_t s,
                     uint64_t iova, uint32_t lkey, unsigned user)
{
	struct ssq_sq *sq = ssq_producer_sq(prod);
	unsigned f = ssq_wqe_flags(prod, pos, 1, user);

	if (s % 3 == 2)
		ssq_prep_rdma_write_imm(sq, (uint32_t)pos, iova, lkey, rmsg_len(p, s),
		                        imm_iova + ((uint64_t)p * CELLS + s) * RMAX, rkey,
		                        rmsg_imm(p, s), f);
	else
		ssq_prep_send(sq, (uint32_t)pos, rmsg_send_opcode(s), iova, lkey,
		              rmsg_len(p, s), rmsg_imm(p, s), f);
}

/* Reserve @n WQEBBs, reaping while the ring is full. Returns 0 or 1 (printed). */
static int reserve(struct ssq_producer *prod, uint32_t p, unsigned n, uint64_t *pos,
                   uint32_t *got)
{
	int rc;

	while ((rc = ssq_reserve(prod, n, pos)) == -EAGAIN)
		if (rreap(prod, p, got, NULL, NULL) < 0)
			return 1;
	if (rc)
		fprintf(stderr, "producer %u: reserve: %d\n", p, rc);
	return rc != 0;
}

static int producer(uint32_t p)
{
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_producer *prod;
	struct ssq_buf src;
	uint32_t b, j, got = 0;
	uint64_t pos;
	double t0 = now_s();

	if (ssq_client_connect(sock, &c) || ssq_queue_open(c, "q0", &q) ||
	    ssq_buf_alloc(c, SLOTS * 3 * RMAX, &src)) {
		fprintf(stderr, "producer %u: %s\n", p, ssq_client_strerror_last());
		return 1;
	}
	prod = ssq_queue_producer(q);
	for (b = 0; b < B; b++) {
		size_t slot = (size_t)(b % SLOTS) * 3 * RMAX;

		/* The slot's last batch must be done before its bytes change. */
		while (b >= SLOTS && got <= b - SLOTS) {
			if (rreap(prod, p, &got, NULL, NULL) < 0 || now_s() - t0 > 60)
				return 1;
		}
		for (j = 0; j < 3; j++)
			rmsg_fill((uint8_t *)src.addr + slot + j * RMAX, p, 3 * b + j);
		if (rpace_wait(pace, 3, RDEPTH / 2)) {
			fprintf(stderr, "producer %u: the reader stopped\n", p);
			return 1;
		}
		if (b % 4 == 3) {
			/* One call per SEND; the WRITE_IMM, signaled, closes the batch.
			 */
			for (j = 0; j < 2; j++) {
				int rc;

				while ((rc = ssq_post_send(
				            prod, rmsg_send_opcode(3 * b + j),
				            src.iova + slot + j * RMAX, src.lkey,
				            rmsg_len(p, 3 * b + j),
				            rmsg_imm(p, 3 * b + j), 0, 0)) == -EAGAIN)
					if (rreap(prod, p, &got, NULL, NULL) < 0)
						return 1;
				if (rc) {
					fprintf(stderr, "producer %u: post_send: %d\n", p,
					        rc);
					return 1;
				}
			}
			if (reserve(prod, p, 1, &pos, &got))
				return 1;
			prep_msg(prod, pos, p, 3 * b + 2, src.iova + slot + 2 * RMAX,
			         src.lkey, SSQ_WQE_SIGNALED);
			ssq_publish(prod, pos, 1, b, SSQ_WQE_SIGNALED);
		} else {
			/* One batch of three WQEs, the last signaled. */
			if (reserve(prod, p, 3, &pos, &got))
				return 1;
			for (j = 0; j < 3; j++) {
				unsigned user = j == 2 ? SSQ_WQE_SIGNALED : 0;

				prep_msg(prod, pos + j, p, 3 * b + j,
				         src.iova + slot + j * RMAX, src.lkey, user);
				ssq_publish(prod, pos + j, 1, b, user);
			}
		}
		ssq_submit(prod);
	}
	if (rdrain(prod, p, &got, B, NULL, NULL, t0))
		return 1;
	ssq_client_close(c);
	return 0;
}

/* Post message (p, s) from the parent, signaled with wr_id @s; 0 or the error. */
static int post_one(struct ssq_producer *prod, uint32_t p, uint32_t s,
                    const struct ssq_buf *src)
{
	uint8_t *at = (uint8_t *)src->addr + (size_t)s * RMAX;
	uint64_t pos;
	int rc;

	rmsg_fill(at, p, s);
	rc = ssq_reserve(prod, 1, &pos);
	if (rc)
		return rc;
	prep_msg(prod, pos, p, s, src->iova + (uint64_t)s * RMAX, src->lkey,
	         SSQ_WQE_SIGNALED);
	ssq_publish(prod, pos, 1, s, SSQ_WQE_SIGNALED);
	ssq_submit(prod);
	return 0;
}

/* The next completion of @prod within 5 s, or status -1. */
static struct ssq_completion next_comp(struct ssq_producer *prod)
{
	struct ssq_completion c = { .status = -1 };
	double t0 = now_s();

	while (ssq_poll(prod, &c, 1) == 0 && now_s() - t0 < 5)
		usleep(100);
	return c;
}

static void wait_arrived(struct ssq_queue *q, uint64_t n)
{
	double t0 = now_s();

	while (ssq_recv_arrived(q) < n && now_s() - t0 < 10)
		usleep(200);
	usleep(20000); /* let the poller finish re-posting */
}

/* A SEND longer than the receive buffers, then recovery. */
static void too_long(struct ssq_client *cl, struct ssq_queue *q, struct rlog *r,
                     const struct ssq_buf *src)
{
	struct ssq_producer *prod = ssq_queue_producer(q);
	uint64_t base = ssq_recv_arrived(q), pos;
	struct ssq_recv_msg m;
	struct ssq_completion c;
	int rc;

	CHECK(ssq_post_send(prod, MLX5_OPCODE_SEND, src->iova, src->lkey, RMAX + 64, 0,
	                    77, SSQ_WQE_SIGNALED) == 0,
	      "post the long SEND");
	c = next_comp(prod);
	CHECK(c.wr_id == 77 && c.status == IBV_WC_REM_INV_REQ_ERR,
	      "the long SEND completes wr_id %llu status %d (%s), want 77 "
	      "REM_INV_REQ_ERR",
	      (unsigned long long)c.wr_id, c.status,
	      c.status >= 0 ? ibv_wc_status_str((enum ibv_wc_status)c.status) : "none");
	wait_arrived(q, base + 1);
	rc = ssq_recv_peek(q, base, &m);
	CHECK(rc == 0 && m.status == IBV_WC_LOC_LEN_ERR &&
	          m.opcode == MLX5_CQE_RESP_ERR &&
	          m.syndrome == MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR && !m.data &&
	          !m.byte_len,
	      "the long SEND's record: rc %d status %u opcode %u syndrome 0x%x data %p "
	      "len %u",
	      rc, m.status, m.opcode, m.syndrome, m.data, m.byte_len);
	CHECK(ssq_recv_arrived(q) == base + 1, "one record for the long SEND, not %llu",
	      (unsigned long long)(ssq_recv_arrived(q) - base));
	CHECK(ssq_reserve(prod, 1, &pos) == -EIO, "-EIO while the queue is in error");
	rc = ssq_queue_recover(q);
	CHECK(rc == 0, "recover: %d %s", rc, ssq_client_error(cl));
	/* Message 0 of producer P: a SEND, logged right after the error record. */
	CHECK(post_one(prod, P, 0, src) == 0, "post after recovery");
	c = next_comp(prod);
	CHECK(c.wr_id == 0 && c.status == IBV_WC_SUCCESS,
	      "after recovery: wr_id %llu status %d", (unsigned long long)c.wr_id,
	      c.status);
	wait_arrived(q, base + 2);
	r->k = base + 1;
	CHECK(rlog_take(r, NULL) == 1, "the first message after recovery is logged");
}

/* 3 x depth messages left unread, then the window's edges. */
static void window(struct ssq_queue *q, struct rlog *r, const struct ssq_buf *src)
{
	struct ssq_producer *prod = ssq_queue_producer(q);
	uint32_t s0 = r->next[P], s, n = 3 * RDEPTH;
	uint64_t last, edge;
	struct ssq_recv_msg m;
	struct ssq_completion c;
	uint8_t buf[RMAX];
	int rc, ok = 1;

	for (s = s0; s < s0 + n && ok; s++) {
		ok = post_one(prod, P, s, src) == 0;
		c = next_comp(prod);
		ok = ok && c.status == IBV_WC_SUCCESS && c.wr_id == s;
	}
	CHECK(ok, "%u messages posted and completed (at %u)", n, s - s0);
	wait_arrived(q, r->k + n);
	last = ssq_recv_arrived(q);
	CHECK(last == r->k + n, "arrived %llu, want %llu", (unsigned long long)last,
	      (unsigned long long)(r->k + n));
	edge = last - RDEPTH; /* the oldest still readable */
	rc = ssq_recv_copy(q, edge - 1, buf, sizeof(buf), &m);
	CHECK(rc == -ESTALE, "copy of message %llu (one before the window): %d",
	      (unsigned long long)(edge - 1), rc);
	CHECK(ssq_recv_peek(q, edge - 1, &m) == -ESTALE, "peek before the window");
	CHECK(ssq_recv_check(q, edge - 1) == -ESTALE, "check before the window");
	CHECK(ssq_recv_copy(q, edge - 2 * RDEPTH, buf, sizeof(buf), &m) == -ESTALE,
	      "copy of a record already overwritten");
	CHECK(ssq_recv_peek(q, last, &m) == -EAGAIN, "peek of the next message");
	CHECK(ssq_recv_peek(q, last + 10 * RDEPTH, &m) == -EAGAIN, "peek far ahead");
	/* The newest depth messages, in place and copied. */
	rc = ssq_recv_peek(q, last - 1, &m);
	CHECK(rc == 0 && ssq_recv_check(q, last - 1) == 0,
	      "peek and check of the newest: %d", rc);
	r->k = edge;
	r->next[P] = s0 + n - RDEPTH;
	while (r->k < last && rlog_take(r, NULL) == 1)
		;
	CHECK(r->k == last, "the newest %u messages read back (stopped at %llu)", RDEPTH,
	      (unsigned long long)r->k);
	/* Arguments. */
	CHECK(ssq_recv_peek(q, last - 1, NULL) == -EINVAL, "peek without a record");
	CHECK(ssq_recv_peek(NULL, 0, &m) == -EINVAL, "peek without a queue");
	CHECK(ssq_recv_copy(q, last - 1, NULL, 5, &m) == -EINVAL, "copy to NULL");
	CHECK(ssq_recv_copy(q, last - 1, NULL, 0, &m) == 0 && m.byte_len,
	      "copy of nothing still gives the record");
	CHECK(ssq_recv_copy(q, last - 1, buf, 4, NULL) == 0, "a short copy");
}

/* An ssqd without a pool. */
static void no_pool(void)
{
	static const char *const args[] = { "--recv-depth", "0", NULL };
	char s2[108];
	struct ssq_client *c;
	struct ssq_queue *q = NULL;
	struct ssq_recv_msg m;
	uint8_t buf[8];
	pid_t pid;

	snprintf(s2, sizeof(s2), "/tmp/ssq-recv0-%d.sock", getpid());
	pid = rssqd_start(s2, NULL, args);
	c = ssqd_connect_pid(s2, pid);
	CHECK(c && ssq_queue_open(c, "q0", &q) == 0, "ssqd --recv-depth 0: %s",
	      c ? ssq_client_error(c) : ssq_client_strerror_last());
	if (c && q) {
		CHECK(ssq_recv_depth(q) == 0 && ssq_recv_size(q) == 0 &&
		          ssq_recv_arrived(q) == 0,
		      "no pool: depth %u size %u", ssq_recv_depth(q), ssq_recv_size(q));
		CHECK(ssq_recv_peek(q, 0, &m) == -ENOTSUP, "peek without a pool");
		CHECK(ssq_recv_copy(q, 0, buf, 8, &m) == -ENOTSUP, "copy without a pool");
		CHECK(ssq_recv_check(q, 0) == -ENOTSUP, "check without a pool");
	}
	ssq_client_close(c);
	t_ssqd_stop(pid, NULL, s2);
}

int main(void)
{
	struct ssq_client *c = NULL;
	struct ssq_queue *q = NULL;
	struct ssq_buf area, src;
	struct rlog r;
	pid_t d, kids[P];
	uint32_t i;
	int status, done = 0;
	double t0;

	t_need_ssqd();
	pace = rpace_new();
	snprintf(sock, sizeof(sock), "/tmp/ssq-recv-%d.sock", getpid());
	d = rssqd_start(sock, NULL, NULL);
	c = ssqd_connect_pid(sock, d);
	CHECK(c && ssq_queue_open(c, "q0", &q) == 0 &&
	          ssq_buf_alloc(c, (uint64_t)(P + 1) * CELLS * RMAX, &area) == 0 &&
	          ssq_buf_alloc(c, (uint64_t)4 * RDEPTH * RMAX, &src) == 0,
	      "setup: %s", c ? ssq_client_error(c) : ssq_client_strerror_last());
	if (!c || !q || !pace)
		goto out;
	CHECK(ssq_recv_depth(q) == RDEPTH && ssq_recv_size(q) == RMAX,
	      "pool of %u x %u bytes", ssq_recv_depth(q), ssq_recv_size(q));
	memset(area.addr, 0, area.len);
	/* Loopback: the peer's arena is this arena, area at its descriptor. */
	imm_iova = area.remote_addr;
	rkey = area.rkey;
	memset(&r, 0, sizeof(r));
	r.q = q;
	r.nprod = P + 1; /* P: the parent, later */
	r.imm_area = area.addr;
	r.per_prod = CELLS;

	t0 = now_s();
	for (i = 0; i < P; i++) {
		kids[i] = fork();
		if (kids[i] == 0)
			_exit(producer(i));
	}
	/* Read as the log fills; a dead producer ends the wait. */
	while (r.k < (uint64_t)P * CELLS && !r.bad && now_s() - t0 < 60) {
		int got = rlog_take(&r, pace);

		if (got == 0) {
			pid_t w = waitpid(-1, &status, WNOHANG);

			if (w > 0) {
				done++;
				CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
				      "producer pid %d exit 0x%x", (int)w, status);
				if (!WIFEXITED(status) || WEXITSTATUS(status))
					break;
			}
			usleep(20);
		}
	}
	if (r.k < (uint64_t)P * CELLS || r.bad)
		for (i = 0; i < P; i++)
			kill(kids[i], SIGKILL); /* paced to a reader that gave up */
	CHECK(r.k == (uint64_t)P * CELLS && !r.bad, "log: %llu of %u messages, %u wrong",
	      (unsigned long long)r.k, P * CELLS, r.bad);
	for (i = 0; i < P; i++)
		CHECK(r.next[i] == CELLS, "producer %u: %u of %u messages logged", i,
		      r.next[i], CELLS);
	while (done < (int)P && waitpid(-1, &status, 0) > 0) {
		done++;
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "producer exit 0x%x",
		      status);
	}
	printf("%u processes x %u messages (SEND, SEND_IMM, WRITE_IMM) through one "
	       "shared queue, logged and checked in %.2f s\n",
	       P, CELLS, now_s() - t0);
	CHECK(ssq_recv_arrived(q) == (uint64_t)P * CELLS, "no extra records: %llu",
	      (unsigned long long)ssq_recv_arrived(q));

	too_long(c, q, &r, &src);
	window(q, &r, &src);
	no_pool();
out:
	ssq_client_close(c);
	CHECK(t_ssqd_stop_ok(d, &status, NULL), "ssqd exit 0x%x", status);
	unlink(sock);
	return test_exit("ctrl_recv");
}
