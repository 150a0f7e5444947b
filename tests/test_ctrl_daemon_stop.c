/* SPDX-License-Identifier: MIT */
/*
 * ssqd stopped with SIGTERM (or SIGINT) fences its queues on the way out:
 * a client still attached gets -EIO from its next reservation instead of
 * posting into a QP that nobody heals, routes or refills any more (on a
 * ConnectX the QP would stay in RTS while the client holds the UAR).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/wait.h>
#include <ssq/ssq.h>
#include <ssq/client.h>
#include "helpers.h"
#include "ctrl_flow.h"
#include "ctrl/client/client_pvt.h"

static void stop_with(int sig)
{
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_buf a, b;
	uint64_t pos;
	pid_t d = start_ssqd("off");
	int status, rc;

	c = connect_retry(d);
	CHECK(c != NULL, "connect");
	if (!c)
		return;
	CHECK(ssq_queue_open(c, "q0", &q) == 0 && ssq_buf_alloc(c, 64, &a) == 0 &&
	          ssq_buf_alloc(c, 64, &b) == 0,
	      "open: %s", ssq_client_error(c));
	CHECK(write_and_wait(q, &a, &b, 64) == 0, "a WRITE while ssqd runs");
	kill(d, sig);
	waitpid(d, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "ssqd exit status 0x%x",
	      status);
	/* ssqd's own fence, in the layout only ssqd writes. */
	CHECK(__atomic_load_n(&q->l->state, __ATOMIC_ACQUIRE) == SSQ_QUEUE_ERROR,
	      "signal %d: ssqd left q0 in layout state %u, not ERROR", sig,
	      (unsigned)q->l->state);
	/* -EIO from ssqd's fence, or -ENOTCONN once the library saw the hang-up. */
	rc = ssq_reserve(ssq_queue_producer(q), 1, &pos);
	CHECK(rc == -EIO || rc == -ENOTCONN,
	      "signal %d: a reservation after ssqd stopped: %d, want -EIO or -ENOTCONN",
	      sig, rc);
	ssq_client_close(c);
}

int main(void)
{
	snprintf(sock_path, sizeof(sock_path), "/tmp/ssq-stop-%d.sock", getpid());
	stop_with(SIGTERM);
	stop_with(SIGINT);
	unlink(sock_path);
	return test_exit("ctrl_daemon_stop");
}
