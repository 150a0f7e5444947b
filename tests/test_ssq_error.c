/* SPDX-License-Identifier: MIT */
/*
 * An error CQE in the middle of a shared queue's stream: ssqd's emulated
 * device is told (SSQ_EMU_FAULT) to fail the 301st WQE it executes with a
 * remote access error. Three producer processes post signaled RDMA WRITEs.
 * Exactly one completion in all carries that error, and it reaches the
 * producer that posted the WQE; every WQE before it succeeded, every WQE
 * after it comes back to its own producer flushed; each producer sees its
 * completions in its posting order, one per request; new reservations get
 * -EIO. Then one process asks ssqd to recover the queue, and every
 * producer posts again successfully, data checked.
 */
#include "ssq_flow.h"

#define P       3u
#define FAIL_AT 301u
#define AFTER   56u /* messages each posts after recovery (multiple of 8) */

static char sock[108];

struct tally {
	uint32_t posted, ok, err, flushed, order_bad, other;
	uint64_t err_wr_id;
};

/* Count one completion: its status, and whether it came in posting order. */
static void tally_one(struct tally *t, const struct ssq_completion *c, uint32_t p,
                      uint64_t next)
{
	if (c->wr_id != (((uint64_t)p << 32) | next))
		t->order_bad++;
	if (c->status == IBV_WC_SUCCESS) {
		t->ok++;
	} else if (c->status == IBV_WC_REM_ACCESS_ERR) {
		t->err++;
		t->err_wr_id = c->wr_id;
	} else if (c->status == IBV_WC_WR_FLUSH_ERR) {
		t->flushed++;
	} else {
		t->other++;
	}
}

/* Post signaled WRITEs until the queue refuses (-EIO); take every completion. */
static void phase1(struct ssq_producer *prod, uint32_t p, const struct ssq_buf *src,
                   const struct msg_area *a, struct tally *t)
{
	struct ssq_completion comp[16];
	uint64_t next = 0;
	double t0 = now_s();
	int rc, k, n;

	memset(t, 0, sizeof(*t));
	for (;;) {
		uint64_t cell = msg_cell(a, p, t->posted % a->per_proc);

		rc = ssq_post_write(prod, src->iova, src->lkey, CELL,
		                    a->dst_iova + cell * CELL, a->rkey,
		                    ((uint64_t)p << 32) | t->posted, SSQ_WQE_SIGNALED);
		if (rc == -EIO)
			break;
		if (rc == 0)
			t->posted++;
		if (now_s() - t0 > 30)
			return;
		n = ssq_poll(prod, comp, 16);
		for (k = 0; k < n; k++)
			tally_one(t, &comp[k], p, next++);
	}
	/* Every request posted comes back, one way or another. */
	while (t->ok + t->err + t->flushed + t->other < t->posted && now_s() - t0 < 30) {
		n = ssq_poll(prod, comp, 16);
		for (k = 0; k < n; k++)
			tally_one(t, &comp[k], p, next++);
	}
}

static int producer(uint32_t p, const struct msg_area *a, int report, int go)
{
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_buf src;
	struct tally t;
	uint32_t posted = 0;
	char cmd;
	int rc;

	if (ssq_client_connect(sock, &c) || ssq_queue_open(c, "q0", &q) ||
	    ssq_buf_alloc(c, 64 * (CELL + 8), &src))
		return 1;
	if (write(report, "", 1) != 1 || read(go, &cmd, 1) != 1) /* start together */
		return 1;
	phase1(ssq_queue_producer(q), p, &src, a, &t);
	if (write(report, &t, sizeof(t)) != sizeof(t) || read(go, &cmd, 1) != 1)
		return 1;
	if (cmd == 'r') { /* this one asks for the recovery */
		rc = ssq_queue_recover(q);
		if (rc)
			fprintf(stderr, "recover: %d %s\n", rc, ssq_client_error(c));
		if (write(report, &rc, sizeof(rc)) != sizeof(rc) ||
		    read(go, &cmd, 1) != 1)
			return 1;
	}
	/* After recovery: messages (p, 0 .. AFTER-1), checked by the parent. */
	rc = run_producer(ssq_queue_producer(q), a, p, AFTER, NULL, src.addr, src.iova,
	                  src.lkey, NULL, &posted);
	ssq_client_close(c);
	return rc;
}

int main(void)
{
	const char *ssqd = getenv("SSQD");
	struct ssq_client *c = NULL;
	struct ssq_queue *q;
	struct ssq_buf dst, cnt;
	struct msg_area a;
	struct tally t[P];
	int report[P][2], go[P][2], status, rc;
	uint32_t i, errs = 0, err_owner = P, total_ok = 0;
	pid_t d, kids[P];
	char cmd;

	if (!ssqd)
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	signal(SIGPIPE, SIG_IGN);
	snprintf(sock, sizeof(sock), "/tmp/ssq-err-%d.sock", getpid());
	c = ssqd_start(sock, "8", "256", "err_at=301,syndrome=0x13,vendor=0x42", &d);
	a.per_proc = 1000;
	a.nlong = P;
	a.short_len = 0;
	if (!c || ssq_queue_open(c, "q0", &q) ||
	    ssq_buf_alloc(c, P * 1000 * CELL, &dst) ||
	    ssq_buf_alloc(c, P * 1000 * 8, &cnt)) {
		fprintf(stderr, "setup failed\n");
		kill(d, SIGKILL);
		return 1;
	}
	msg_area_place(&a, &dst, &cnt);

	for (i = 0; i < P; i++) {
		if (pipe(report[i]) || pipe(go[i]))
			return 1;
		kids[i] = fork();
		if (kids[i] == 0)
			_exit(producer(i, &a, report[i][1], go[i][0]));
	}
	for (i = 0; i < P; i++)
		CHECK(read(report[i][0], &cmd, 1) == 1, "ready %u", i);
	for (i = 0; i < P; i++)
		CHECK(write(go[i][1], "s", 1) == 1, "start %u", i);
	for (i = 0; i < P; i++) {
		CHECK(read(report[i][0], &t[i], sizeof(t[i])) == sizeof(t[i]),
		      "report %u", i);
		CHECK(t[i].order_bad == 0, "producer %u: %u completions out of order", i,
		      t[i].order_bad);
		CHECK(t[i].ok + t[i].err + t[i].flushed == t[i].posted && t[i].other == 0,
		      "producer %u: posted %u, got %u ok %u error %u flushed %u other", i,
		      t[i].posted, t[i].ok, t[i].err, t[i].flushed, t[i].other);
		errs += t[i].err;
		total_ok += t[i].ok;
		if (t[i].err)
			err_owner = i;
	}
	CHECK(errs == 1, "%u error completions, expected exactly 1", errs);
	/* WQEs execute in queue order: the failed one is the 301st, 300 before it. */
	CHECK(total_ok == FAIL_AT - 1, "%u successes before the error, expected %u",
	      total_ok, FAIL_AT - 1);
	if (err_owner < P)
		CHECK((uint32_t)(t[err_owner].err_wr_id >> 32) == err_owner &&
		          (uint32_t)t[err_owner].err_wr_id == t[err_owner].ok,
		      "the error came as wr_id 0x%llx to producer %u (its %u-th request)",
		      (unsigned long long)t[err_owner].err_wr_id, err_owner,
		      t[err_owner].ok);
	printf(
	    "posted %u/%u/%u; the error went to producer %u, the rest flushed to their "
	    "owners\n",
	    t[0].posted, t[1].posted, t[2].posted, err_owner);

	/* Producer 0 recovers; then everyone posts again. */
	cmd = 'r';
	CHECK(write(go[0][1], &cmd, 1) == 1, "go");
	CHECK(read(report[0][0], &rc, sizeof(rc)) == sizeof(rc) && rc == 0,
	      "recovery: %d", rc);
	CHECK(ssq_queue_recover(q) == -EINVAL, "a second recovery found something to do");
	memset(dst.addr, 0, dst.len);
	memset(cnt.addr, 0, cnt.len);
	cmd = 'g';
	for (i = 0; i < P; i++)
		CHECK(write(go[i][1], &cmd, 1) == 1, "go");
	for (i = 0; i < P; i++) {
		waitpid(kids[i], &status, 0);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "producer %u after recovery: exit 0x%x", i, status);
		CHECK(check_msgs(&a, i, AFTER, 1) == 0,
		      "producer %u's messages after recovery", i);
	}
	ssq_client_close(c);
	CHECK(t_ssqd_stop_ok(d, &status, NULL), "ssqd exit 0x%x", status);
	unlink(sock);
	return test_exit("ssq_error");
}
