/* SPDX-License-Identifier: MIT */
/*
 * A call to an ssqd that is alive but slow to answer - off the CPU on a
 * busy machine, stopped a while by a debugger or a freezer - waits for
 * the answer; one to an ssqd that died fails at once.
 *  - ssqd stopped (SIGSTOP) for 1.5 s while ssq_client_list, ssq_buf_alloc
 *    and ssq_queue_open each wait: after SIGCONT each returns its answer
 *    (the list, a buffer, the queue), not -ETIMEDOUT;
 *  - ssqd stopped, then killed (SIGKILL) 0.5 s into a call: the call
 *    returns -ENOTCONN within 3 s of the kill, not at the reply bound;
 *  - with $SSQ_REPLY_TIMEOUT_MS=300, a call to a stopped ssqd returns
 *    -ETIMEDOUT, its message naming the bound and the variable.
 * Before: each call of the first part returned -ETIMEDOUT after 1 s.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <ssq/ssq.h>
#include <ssq/client.h>
#include "helpers.h"
#include "ctrl_flow.h"

static pid_t d;

/* Stops ssqd, lets it go on after @arg ms (or kills it, when negative). */
static void *pause_ssqd(void *arg)
{
	long ms = (long)arg;

	usleep((useconds_t)(ms < 0 ? -ms : ms) * 1000);
	kill(d, ms < 0 ? SIGKILL : SIGCONT);
	return NULL;
}

/* ssqd stopped now, and continued (or killed) after @ms from another thread. */
static pthread_t stop_for(long ms)
{
	pthread_t t;

	kill(d, SIGSTOP);
	pthread_create(&t, NULL, pause_ssqd, (void *)ms);
	return t;
}

int main(void)
{
	struct ssq_queue_info info[4];
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_buf b;
	pthread_t t;
	double t0;
	int rc, status;

	unsetenv("SSQ_REPLY_TIMEOUT_MS");
	c = flow_up("slowd", "off", &d);
	if (!c)
		return 1;

	t = stop_for(1500);
	t0 = now_s();
	rc = ssq_client_list(c, info, 4);
	printf("list with ssqd stopped 1.5 s: %d after %.2f s\n", rc, now_s() - t0);
	CHECK(rc == 1, "list while ssqd is stopped 1.5 s: %d (%s)", rc,
	      ssq_client_error(c));
	pthread_join(t, NULL);

	t = stop_for(1500);
	rc = ssq_buf_alloc(c, 4096, &b);
	CHECK(rc == 0, "alloc while ssqd is stopped 1.5 s: %d (%s)", rc,
	      ssq_client_error(c));
	pthread_join(t, NULL);
	if (!rc)
		CHECK(ssq_buf_free(c, &b) == 0, "free: %s", ssq_client_error(c));

	t = stop_for(1500);
	rc = ssq_queue_open(c, "q0", &q);
	CHECK(rc == 0, "open while ssqd is stopped 1.5 s: %d (%s)", rc,
	      ssq_client_error(c));
	pthread_join(t, NULL);
	if (!rc)
		CHECK(ssq_queue_close(q) == 0, "close: %s", ssq_client_error(c));

	/* A bound of the caller's own: a stopped ssqd is given up on. */
	setenv("SSQ_REPLY_TIMEOUT_MS", "300", 1);
	t = stop_for(1500);
	t0 = now_s();
	rc = ssq_client_list(c, info, 4);
	printf("list with SSQ_REPLY_TIMEOUT_MS=300: %d after %.2f s: %s\n", rc,
	       now_s() - t0, ssq_client_error(c));
	CHECK(rc == -ETIMEDOUT && strstr(ssq_client_error(c), "SSQ_REPLY_TIMEOUT_MS"),
	      "list with a 300 ms bound while ssqd is stopped: %d (%s)", rc,
	      ssq_client_error(c));
	pthread_join(t, NULL);
	unsetenv("SSQ_REPLY_TIMEOUT_MS");

	/* A dead ssqd: the call fails when it dies, not at the bound. */
	t = stop_for(-500);
	t0 = now_s();
	rc = ssq_client_list(c, info, 4);
	printf("list with ssqd killed 0.5 s in: %d after %.2f s\n", rc, now_s() - t0);
	CHECK(rc == -ENOTCONN && now_s() - t0 < 3.5,
	      "list while ssqd dies: %d after %.2f s (%s)", rc, now_s() - t0,
	      ssq_client_error(c));
	pthread_join(t, NULL);
	ssq_client_close(c);
	t_ssqd_stop(d, &status, sock_path);
	{
		/* A killed ssqd leaves its socket's lock file: ours to remove. */
		char lock[128];

		snprintf(lock, sizeof(lock), "%s.lock", sock_path);
		unlink(lock);
	}
	return test_exit("ctrl_client_slow_daemon");
}
