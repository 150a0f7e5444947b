/* SPDX-License-Identifier: MIT */
/*
 * Adversary, a dead client's buffers: "nothing is left half-done; one uid
 * cannot take what the others need". A client that leaves with buffers
 * allocated gets a grave: its buffers (and, with per-buffer keys, their
 * MRs, which a peer holding a descriptor still reaches) go back once every
 * queue has completed what was reserved at its death. ssqd has 256
 * graves; while a WQEBB reserved and not yet published holds q0 (here for
 * --stall-ms 5000, until its holder is killed), 300 clients of one uid
 * connect, take a 16 KiB buffer each and hang up. The 44 that found no
 * grave kept their buffers and keys for as long as ssqd ran ("buffers stay
 * allocated"), counted against nobody (their client is gone): repeated,
 * every uid is out of arena and MRs for good. (Then a client's signaled
 * WRITE completes the holder's healed WQEBB, as any traffic would.)
 * Fails while a client that leaves with no grave free keeps its buffers
 * after the queues have completed.
 */
#include "stall_flow.h"

#define LEAVERS 300
#define SZ      (16u << 10)

/*
 * 16 KiB buffers new clients get (three of them: one client meets its
 * --max-client-mib first), all freed again; -1 on an error.
 */
static int room(void)
{
	static struct ssq_buf b[3][1024];
	struct ssq_client *c[3];
	int n[3] = { 0 }, i, k, all = 0;

	for (k = 0; k < 3; k++) {
		if (ssq_client_connect(sock_path, &c[k]))
			return -1;
		while (n[k] < 1024 && !ssq_buf_alloc(c[k], SZ, &b[k][n[k]]))
			n[k]++;
		all += n[k];
	}
	for (k = 0; k < 3; k++) {
		for (i = 0; i < n[k]; i++)
			ssq_buf_free(c[k], &b[k][i]);
		ssq_client_close(c[k]);
	}
	return all;
}

static void holder(int report)
{
	struct ssq_client *c;
	struct ssq_queue *q;
	uint64_t pos;
	char one = 1;

	if (ssq_client_connect(sock_path, &c) || ssq_queue_open(c, "q0", &q) ||
	    ssq_reserve(ssq_queue_producer(q), 1, &pos))
		_exit(3);
	if (write(report, &one, 1) != 1)
		_exit(4);
	pause();
	_exit(0);
}

int main(void)
{
	int before, after = -1, i, p[2], rc, left = 0;
	struct ssq_client *c;
	struct ssq_buf b;
	double t0;
	pid_t d, h;
	char one;

	t_need_ssqd();
	setenv("SSQ_TEST_STALL_OPT", "--stall-ms=5000", 1);
	d = stall_ssqd_up("adv-mem-graves");
	if (d < 0)
		return 1;
	before = room();
	if (pipe(p))
		return 1;
	h = fork();
	if (h == 0) {
		close(p[0]);
		holder(p[1]);
	}
	close(p[1]);
	if (read(p[0], &one, 1) != 1) {
		CHECK(0, "the holder did not reserve");
		goto out;
	}
	t0 = now_s();
	for (i = 0; i < LEAVERS; i++) {
		/* ssqd may not have seen the last hang-ups yet (--max-uid-clients). */
		while ((rc = ssq_client_connect(sock_path, &c)) && now_s() - t0 < 3.0)
			usleep(1000);
		if (rc)
			break;
		left += !ssq_buf_alloc(c, SZ, &b);
		ssq_client_close(c);
	}
	fprintf(stderr, "%d clients left with a buffer each in %.2f s\n", left,
	        now_s() - t0);
	CHECK(now_s() - t0 < 4.0, "the leavers were done while q0 was held");
	kill(h, SIGKILL);
	waitpid(h, NULL, 0);
	/* Traffic, as a live queue has: a signaled WRITE completes the NOP. */
	if (ssq_client_connect(sock_path, &c) == 0) {
		struct ssq_completion comp;
		struct ssq_producer *pr;
		struct ssq_queue *q;
		int got = 0;

		if (ssq_queue_open(c, "q0", &q) == 0 && ssq_buf_alloc(c, 128, &b) == 0) {
			pr = ssq_queue_producer(q);
			t0 = now_s();
			while (ssq_post_write(pr, b.iova, b.lkey, 64, b.remote_addr + 64,
			                      b.rkey, 7, SSQ_WQE_SIGNALED) == -EAGAIN &&
			       now_s() - t0 < 5.0)
				usleep(1000);
			while (!got && now_s() - t0 < 5.0)
				got = ssq_poll(pr, &comp, 1) == 1;
			ssq_buf_free(c, &b);
		}
		CHECK(got, "a WRITE on q0 after the holder's death completes");
		ssq_client_close(c);
	}
	/* The hole is healed and every grave reaped: the arena is whole again. */
	for (t0 = now_s(); now_s() - t0 < 10.0; usleep(100 * 1000)) {
		after = room();
		if (after == before)
			break;
	}
	fprintf(stderr, "16 KiB buffers clients get: %d before, %d after\n", before,
	        after);
	CHECK(left == LEAVERS, "%d of %d leavers got their buffer", left, LEAVERS);
	CHECK(before > 0 && after == before,
	      "buffers of clients gone after the queues completed came back: %d of %d",
	      after, before);
	CHECK(log_count("stay allocated", NULL) == 0,
	      "ssqd kept buffers of a client gone: %d log lines",
	      log_count("stay allocated", NULL));
out:
	close(p[0]);
	stall_ssqd_down(d);
	return test_exit("ctrl_adv_mem_graves_full");
}
