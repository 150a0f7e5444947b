/* SPDX-License-Identifier: MIT */
/*
 * Adversary, several opens per connection: "death heals every record; the
 * stall watch judges each record".  A child opens q0 sixteen times on one
 * connection and reserves one WQEBB through each open, never publishing
 * (sixteen holes at the head of the ring), then
 *  1. is killed (SIGKILL): another client's WRITE behind the holes
 *     completes (flushed or not) within 3 s and the next one succeeds;
 *  2. is stopped (SIGSTOP) while it spins outside system calls: ssqd (--stall-ms 100)
 * kills it and the same holds.
 */
#include "stall_flow.h"
#include <sys/wait.h>

#define OPENS 16

static void holder(int report, int stop)
{
	struct ssq_client *c;
	struct ssq_queue *q[OPENS];
	uint64_t pos;
	char one = 1;
	int i;

	if (ssq_client_connect(sock_path, &c))
		_exit(3);
	for (i = 0; i < OPENS; i++)
		if (ssq_queue_open(c, "q0", &q[i]) ||
		    ssq_reserve(ssq_queue_producer(q[i]), 1, &pos))
			_exit(4);
	if (write(report, &one, 1) != 1)
		_exit(5);
	if (stop) /* spin outside any system call, to be stopped there */
		for (;;)
			__atomic_signal_fence(__ATOMIC_SEQ_CST);
	pause();
	_exit(0);
}

/* A WRITE's completion, whatever its status: seconds, or -1. */
static double any_comp(struct conn *k, uint64_t wr, double limit_s)
{
	struct ssq_completion comp;
	double t0 = now_s();
	int rc;

	while (
	    (rc = ssq_post_write(k->p, k->src.iova, k->src.lkey, 64, k->dst.remote_addr,
	                         k->dst.rkey, wr, SSQ_WQE_SIGNALED)) == -EAGAIN)
		if (now_s() - t0 > limit_s)
			return -1;
	if (rc == -EIO && !ssq_queue_recover(k->q))
		return any_comp(k, wr, limit_s);
	if (rc) {
		fprintf(stderr, "post: %d\n", rc);
		return -1;
	}
	while (now_s() - t0 < limit_s) {
		if (ssq_poll(k->p, &comp, 1) == 1 && comp.wr_id == wr)
			return comp.status == IBV_WC_SUCCESS ? now_s() - t0
			                                     : -(now_s() - t0) - 10;
		usleep(100);
	}
	return -1;
}

int main(void)
{
	struct conn v;
	int round, p[2], st;
	double t, t2;
	pid_t d, h;
	char one;

	d = stall_ssqd_up("adv-keys-multi");
	if (d < 0)
		return 1;
	if (conn_open(&v)) {
		kill(d, SIGKILL);
		return 1;
	}
	for (round = 0; round < 2; round++) {
		if (pipe(p))
			return 1;
		h = fork();
		if (!h) {
			close(p[0]);
			holder(p[1], round);
		}
		close(p[1]);
		CHECK(read(p[0], &one, 1) == 1, "round %d: the holder's 16 reservations",
		      round);
		close(p[0]);
		if (round) {
			usleep(20000); /* out of its write(): spinning in user code */
			kill(h, SIGSTOP);
			CHECK(waitpid(h, &st, WUNTRACED) == h && WIFSTOPPED(st),
			      "the holder stopped");
		} else {
			kill(h, SIGKILL);
		}
		t = any_comp(&v, 100 + 2 * round, 3.0);
		t2 = any_comp(&v, 101 + 2 * round, 3.0);
		fprintf(stderr,
		        "round %d (%s): WRITE behind 16 holes: %.3f s (below -9: "
		        "flushed), next: %.3f s\n",
		        round, round ? "stopped" : "killed", t, t2);
		CHECK(t != -1 && (t >= 0 ? t : -t - 10) < 0.6,
		      "round %d: WRITE behind 16 holes completed within --stall-ms plus "
		      "the heal (0.6 s)",
		      round);
		CHECK(t2 >= 0, "round %d: the next WRITE succeeded", round);
		if (round)
			kill(h, SIGKILL);
		waitpid(h, &st, 0);
		fprintf(stderr, "round %d: holder %s %d\n", round,
		        WIFSIGNALED(st) ? "killed by" : "exited",
		        WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	}
	ssq_client_close(v.c);
	stall_ssqd_down(d);
	return test_exit("ctrl_adv_keys_multi_hold");
}
