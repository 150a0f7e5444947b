/* SPDX-License-Identifier: MIT */
/*
 * ssqd heals a client's producer records only once its process can no
 * longer write into the queue: a client dropped while its process still
 * runs with a queue attached is killed first (util/util.h), and healed
 * after it exited. Two such clients:
 *  - one shuts its connection down (an application closing the wrong fd);
 *  - one stops reading its replies while asking on (dropped as a slow
 *    reader).
 * Each must die of SIGKILL within a bound (before, both lived on with
 * records ssqd had healed under them), and the queue keeps working for the
 * others: a WRITE through it completes, and a new client attaches.
 * A third one execs another program with the queue attached: its socket
 * (close-on-exec) hangs up, but it no longer maps the queue, so ssqd heals
 * it without killing the program (before, the program was killed).
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include "ctrl_flow.h"
#include "ctrl/proto/msg.h"

/*
 * This process's own connection to ssqd: the socket opened last (the ones
 * below are the parent's, inherited through fork).
 */
static int client_socket(void)
{
	struct stat st;
	int fd, last = -1;

	for (fd = 3; fd < 1024; fd++)
		if (fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode))
			last = fd;
	return last;
}

/* Attach to q0, then misbehave as @how says, and wait to be killed. */
static int misbehave(const char *how, int ready)
{
	struct ssq_client *c;
	struct ssq_queue *q;
	uint32_t seq = 1000;
	int s;

	if (ssq_client_connect(sock_path, &c) || ssq_queue_open(c, "q0", &q))
		return 2;
	s = client_socket();
	if (s < 0)
		return 3;
	(void)!write(ready, "r", 1);
	if (!strcmp(how, "shutdown")) {
		shutdown(s, SHUT_RDWR);
	} else if (!strcmp(how, "exec")) {
		execl("/bin/sleep", "sleep", "3", (char *)NULL);
		return 4;
	} else {
		/* Ask on, never read: ssqd's queue of replies for us overflows. */
		while (proto_msg_send(s, SSQ_MSG_LIST, seq++, NULL, 0, NULL, 0) == 0 ||
		       errno == EAGAIN)
			usleep(100);
	}
	sleep(10);
	return 0; /* not killed */
}

/* Wait up to @limit_s for @pid; its status, or -1 (still running: killed now). */
static int reap(pid_t pid, double limit_s)
{
	double t0 = now_s();
	int status;

	while (now_s() - t0 < limit_s) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return status;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

/*
 * Fork a client that attaches to q0 and misbehaves as @how says; wait for
 * it to attach. Its pid, or -1 (a CHECK says why).
 */
static pid_t spawn(const char *how)
{
	int ready[2];
	pid_t m;
	char r;

	if (pipe(ready))
		return -1;
	m = fork();
	if (m == 0) {
		close(ready[0]);
		_exit(misbehave(how, ready[1]));
	}
	close(ready[1]);
	CHECK(read(ready[0], &r, 1) == 1, "[%s] the client never attached", how);
	close(ready[0]);
	return m;
}

int main(void)
{
	static const char *const hows[] = { "shutdown", "slow-reader", "exec" };
	struct ssq_client *c, *c2;
	struct ssq_queue *q, *q2;
	struct ssq_buf a, b;
	pid_t d, m;
	unsigned i;

	d = flow_start_q0("dropatt", &c, &q, &a, &b);
	if (d < 0)
		return test_exit("ctrl_drop_attached");
	for (i = 0; i < 3; i++) {
		int status = 0;

		m = spawn(hows[i]);
		if (m < 0)
			return 1;
		if (strcmp(hows[i], "exec")) {
			status = reap(m, 5.0);
			CHECK(status != -1 && WIFSIGNALED(status) &&
			          WTERMSIG(status) == SIGKILL,
			      "[%s] the client, dropped with q0 attached, was not killed "
			      "by "
			      "ssqd (status 0x%x; -1: still running after 5 s)",
			      hows[i], status);
		} else {
			usleep(1000 * 1000); /* ten times ssqd's grace */
			CHECK(waitpid(m, &status, WNOHANG) == 0,
			      "[exec] the program the client exec'd was ended (status "
			      "0x%x)",
			      status);
		}
		memset(a.addr, 0x40 + (int)i, 64);
		CHECK(write_and_wait(q, &a, &b, 64) == 0 && !memcmp(a.addr, b.addr, 64),
		      "[%s] a WRITE through q0 after the drop", hows[i]);
		if (!strcmp(hows[i], "exec")) {
			kill(m, SIGKILL);
			waitpid(m, NULL, 0);
		}
	}
	CHECK(ssq_client_connect(sock_path, &c2) == 0 &&
	          ssq_queue_open(c2, "q0", &q2) == 0,
	      "a new client cannot attach: %s", ssq_client_strerror_last());
	ssq_client_close(c2);
	ssq_client_close(c);
	t_ssqd_stop(d, NULL, sock_path);
	return test_exit("ctrl_drop_attached");
}
