/* SPDX-License-Identifier: MIT */
/*
 * RECOVER does not stop ssqd from serving: a queue in error whose drain is
 * held up by a producer stopped mid-build (its record says BUILDING, as a
 * SIGSTOPped process would leave it) makes one client's recovery wait up to
 * 2 s and end in -EBUSY, and meanwhile every other client's call is
 * answered (before, ssqd waited inline and those calls timed out). Once the
 * producer is idle again, the recovery succeeds and posting works.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <ssq/ssq.h>
#include <ssq/client.h>
#include "helpers.h"
#include "ctrl_flow.h"

struct recover_call {
	struct ssq_queue *q;
	int rc;
	volatile int done;
};

static void *recover_thread(void *arg)
{
	struct recover_call *r = arg;

	r->rc = ssq_queue_recover(r->q);
	r->done = 1;
	return NULL;
}

/* A WRITE with a bad rkey: the queue goes to error. 0 once its error CQE is back. */
static int break_queue(struct ssq_queue *q, const struct ssq_buf *b)
{
	struct ssq_producer *p = ssq_queue_producer(q);
	struct ssq_completion comp;
	double t0 = now_s();

	/* A key nobody registered: b's own, altered. */
	if (ssq_post_write(p, b->iova, b->lkey, 64, b->remote_addr, b->rkey ^ 0x5a5a, 1,
	                   SSQ_WQE_SIGNALED))
		return -1;
	while (now_s() - t0 < 10) {
		if (ssq_poll(p, &comp, 1) == 1)
			return comp.status != IBV_WC_SUCCESS ? 0 : -1;
		usleep(100);
	}
	return -1;
}

int main(void)
{
	struct ssq_client *c1, *c2, *c3;
	struct ssq_queue *q1, *q2;
	struct ssq_queue_info info[4];
	struct ssq_buf src, dst;
	struct recover_call r = { 0 };
	struct ssq_producer *stalled;
	pthread_t t;
	int calls = 0, ok = 0, rc = 0, status;
	pid_t d;

	snprintf(sock_path, sizeof(sock_path), "/tmp/ssq-rec-%d.sock", getpid());
	/*
	 * The stall is this very process's record: with a deadline, ssqd
	 * would kill us (test_ctrl_stall.c checks that it does). Here the
	 * point is a drain that takes long.
	 */
	flow_ssqd_opt = "--stall-ms=0";
	d = start_ssqd("off");
	c1 = connect_retry(d);
	c2 = c1 ? connect_retry(d) : NULL;
	c3 = c2 ? connect_retry(d) : NULL;
	if (!c3) {
		kill(d, SIGKILL);
		return 1;
	}
	CHECK(ssq_queue_open(c1, "q0", &q1) == 0, "open: %s", ssq_client_error(c1));
	CHECK(ssq_queue_open(c2, "q0", &q2) == 0, "open: %s", ssq_client_error(c2));
	CHECK(ssq_buf_alloc(c1, 4096, &src) == 0 && ssq_buf_alloc(c1, 4096, &dst) == 0,
	      "alloc: %s", ssq_client_error(c1));
	if (test_failures)
		goto out;
	CHECK(break_queue(q1, &src) == 0, "no error CQE for a bad rkey");

	/*
	 * q2's producer now looks stopped in the middle of building a WQE, as
	 * a SIGSTOPped one would: holding the last WQEBB reserved (a record
	 * BUILDING nothing is one ssqd's guard takes for a scribble, and resets
	 * the queue instead).
	 */
	stalled = ssq_queue_producer(q2);
	stalled->me->pos = __atomic_load_n(&stalled->ctl->reserve, __ATOMIC_ACQUIRE) - 1;
	stalled->me->len = 1;
	__atomic_store_n(&stalled->me->state, SSQ_PROD_BUILDING, __ATOMIC_SEQ_CST);
	r.q = q1;
	pthread_create(&t, NULL, recover_thread, &r);
	usleep(50 * 1000); /* let the RECOVER reach ssqd */
	while (!r.done) {
		calls++;
		rc = ssq_client_list(c3, info, 4);
		ok += rc == 1;
		if (rc != 1)
			break;
		usleep(10 * 1000);
	}
	pthread_join(t, NULL);
	CHECK(calls > 10 && ok == calls,
	      "%d of %d calls answered during the recovery; then %d (%s)", ok, calls, rc,
	      ssq_client_error(c3));
	CHECK(r.rc == -EBUSY,
	      "recovery held up by a stalled producer: %d (%s), want -EBUSY", r.rc,
	      ssq_client_error(c1));

	/* The producer goes back to idle: the recovery goes through. */
	__atomic_store_n(&stalled->me->state, SSQ_PROD_IDLE, __ATOMIC_SEQ_CST);
	rc = ssq_queue_recover(q1);
	CHECK(rc == 0, "recovery: %d (%s)", rc, ssq_client_error(c1));
	rc = ssq_queue_recover(q2);
	CHECK(rc == -EINVAL, "second recovery: %d (%s), want -EINVAL", rc,
	      ssq_client_error(c2));
	CHECK(write_and_wait(q1, &src, &dst, 64) == 0, "a WRITE after the recovery");
out:
	ssq_client_close(c1);
	ssq_client_close(c2);
	ssq_client_close(c3);
	t_ssqd_stop(d, &status, sock_path);
	return test_exit("ctrl_recover_async");
}
