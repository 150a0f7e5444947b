/* SPDX-License-Identifier: MIT */
/*
 * A count of ssq_wait sleepers left behind costs the queue's other
 * clients: a process killed asleep never takes its count back (ctl->waiters
 * is client memory, and so is a scribble of it), and every client that
 * routes the CQ then makes a FUTEX_WAKE (and moves wake_seq) per pass that
 * delivers completions, for as long as the queue lives. ssqd's guard takes
 * back a count whose sleepers' beat has stood for half a second.
 *
 * Checked against ssqd on the emulated device: a count of 1 that nobody
 * beats for is gone within 3 s, and twenty WRITEs then polled move
 * wake_seq not at all; a live sleeper (ssq_wait in a thread, beating each
 * slice) keeps its count for the whole of its 300 ms wait.
 */
#include <pthread.h>
#include "ctrl_flow.h"

static struct ssq_producer *p;

static void *sleeper(void *arg)
{
	int *rc = arg;

	*rc = ssq_wait(p, 1, 300000000ull); /* nothing posted: times out */
	return NULL;
}

int main(void)
{
	struct ssq_buf a = { 0 }, b = { 0 };
	struct ssq_completion comp;
	struct ssq_client *c = NULL;
	struct ssq_queue *q = NULL;
	uint32_t seq0, seen = 0;
	double t0;
	pthread_t t;
	int i, rc = 0;
	pid_t d;

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	d = flow_start_q0("wait-stale", &c, &q, &a, &b);
	CHECK(d >= 0, "ssqd serves a client");
	if (d < 0)
		return test_exit("ctrl_wait_stale_count");
	p = ssq_queue_producer(q);

	/*
	 * A live sleeper keeps its count: had ssqd taken it back under the
	 * sleeper, the sleeper's own decrement at the end would leave it
	 * below 0.
	 */
	CHECK(pthread_create(&t, NULL, sleeper, &rc) == 0, "the sleeper");
	pthread_join(t, NULL);
	CHECK(rc == -ETIMEDOUT, "the sleeper: %d, want -ETIMEDOUT", rc);
	seen = __atomic_load_n(&p->ctl->waiters, __ATOMIC_RELAXED);
	CHECK(seen == 0,
	      "after a live sleeper's 300 ms wait the count is %u (0x%x: taken back "
	      "under it)",
	      seen, seen);

	/* A count nobody beats for goes. */
	__atomic_fetch_add(&p->ctl->waiters, 1, __ATOMIC_SEQ_CST);
	for (t0 = now_s();
	     now_s() - t0 < 3.0 && __atomic_load_n(&p->ctl->waiters, __ATOMIC_RELAXED);)
		usleep(10000);
	CHECK(__atomic_load_n(&p->ctl->waiters, __ATOMIC_RELAXED) == 0,
	      "a count nobody beats for: still %u after 3 s", p->ctl->waiters);
	seq0 = __atomic_load_n(&p->ctl->wake_seq, __ATOMIC_RELAXED);
	for (i = 0; i < 20; i++) {
		CHECK(ssq_post_write(p, a.iova, a.lkey, 64, b.remote_addr, b.rkey, 1 + i,
		                     SSQ_WQE_SIGNALED) == 0,
		      "WRITE %d", i);
		for (t0 = now_s(); ssq_poll(p, &comp, 1) == 0 && now_s() - t0 < 5;)
			;
	}
	CHECK(__atomic_load_n(&p->ctl->wake_seq, __ATOMIC_RELAXED) == seq0,
	      "twenty WRITEs polled after the count was left: routers woke nobody %u "
	      "times",
	      __atomic_load_n(&p->ctl->wake_seq, __ATOMIC_RELAXED) - seq0);
	ssq_client_close(c);
	t_ssqd_stop(d, NULL, sock_path);
	return test_exit("ctrl_wait_stale_count");
}
