/* SPDX-License-Identifier: MIT */
/*
 * The client library after a reply timeout: ssqd is stopped (SIGSTOP: a
 * debugger, a long preemption) while a call waits, so the call returns
 * -ETIMEDOUT and ssqd's answer comes later. Every later call must get its
 * own answer, never the late one (before, every later call read the
 * previous call's reply), and what a late answer granted must be given
 * back: a buffer allocated for a call that had already given up is freed,
 * so the whole data arena can be allocated again.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <ssq/ssq.h>
#include <ssq/client.h>
#include "helpers.h"
#include "ctrl_flow.h"

#define BIG (6u << 20) /* of ssqd's 8 MiB data arena (ctrl_flow.h) */

int main(void)
{
	struct ssq_queue_info info[4];
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_buf small, big, big2;
	pid_t d;
	int rc, status;

	/*
	 * Calls that time out are this test's subject: a 1 s wait for the
	 * answer (client_call.c's default waits 25 s for a stopped ssqd).
	 */
	setenv("SSQ_REPLY_TIMEOUT_MS", "1000", 1);
	c = flow_up("seq", "off", &d);
	if (!c)
		return 1;

	/* A LIST that times out, then an ALLOC and a LIST that must be answered. */
	kill(d, SIGSTOP);
	rc = ssq_client_list(c, info, 4);
	CHECK(rc == -ETIMEDOUT, "list while ssqd is stopped: %d (%s)", rc,
	      ssq_client_error(c));
	kill(d, SIGCONT);
	rc = ssq_buf_alloc(c, 4096, &small);
	CHECK(rc == 0, "alloc after the timeout: %d (%s)", rc, ssq_client_error(c));
	CHECK(rc || small.len == 4096, "alloc gave %llu bytes",
	      (unsigned long long)small.len);
	rc = ssq_client_list(c, info, 4);
	CHECK(rc == 1, "list after the timeout: %d (%s)", rc, ssq_client_error(c));
	rc = ssq_buf_free(c, &small);
	CHECK(rc == 0, "free: %d (%s)", rc, ssq_client_error(c));

	/* An ALLOC that times out: its late buffer must not stay held. */
	kill(d, SIGSTOP);
	rc = ssq_buf_alloc(c, BIG, &big);
	CHECK(rc == -ETIMEDOUT, "alloc while ssqd is stopped: %d (%s)", rc,
	      ssq_client_error(c));
	kill(d, SIGCONT);
	rc = ssq_buf_alloc(c, BIG, &big2);
	CHECK(rc == 0, "the same %u bytes again after the timeout: %d (%s)", BIG, rc,
	      ssq_client_error(c));
	if (!rc)
		CHECK(ssq_buf_free(c, &big2) == 0, "free: %s", ssq_client_error(c));

	/* An ATTACH that times out: the next open of the queue must work. */
	kill(d, SIGSTOP);
	rc = ssq_queue_open(c, "q0", &q);
	CHECK(rc == -ETIMEDOUT, "open while ssqd is stopped: %d (%s)", rc,
	      ssq_client_error(c));
	kill(d, SIGCONT);
	rc = ssq_queue_open(c, "q0", &q);
	CHECK(rc == 0, "open after the timeout: %d (%s)", rc, ssq_client_error(c));
	if (!rc)
		CHECK(ssq_queue_close(q) == 0, "close: %s", ssq_client_error(c));

	ssq_client_close(c);
	t_ssqd_stop(d, &status, sock_path);
	return test_exit("ctrl_client_seq");
}
