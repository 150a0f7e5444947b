/* SPDX-License-Identifier: MIT */
/*
 * Queues restricted to a uid or gid (--queue-uid / --queue-gid qN=ID): a
 * client whose uid and primary gid no rule of the queue names is refused
 * with -EACCES naming the options; one a rule names attaches and posts;
 * a queue without rules takes every client ssqd serves.
 */
#include "ctrl_flow.h"

static pid_t start_with(const char *opt1, const char *opt2)
{
	const char *ssqd = getenv("SSQD");
	pid_t pid = fork();

	if (pid == 0) {
		execl(ssqd, ssqd, "--device", test_device(), "--socket", sock_path,
		      "--hugepages=off", "--data-mib", "8", "--sq-size", "256",
		      "--queues", "3", opt1, opt2, (char *)NULL);
		_exit(127);
	}
	return pid;
}

int main(void)
{
	char other[32], mine[32], mygid[32];
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_buf a, b;
	pid_t d;
	int rc;

	signal(SIGPIPE, SIG_IGN);
	snprintf(sock_path, sizeof(sock_path), "/tmp/ssq-qacc-%d.sock", getpid());
	snprintf(other, sizeof(other), "q1=%u", (unsigned)getuid() + 4242);
	snprintf(mine, sizeof(mine), "q2=%u", (unsigned)getuid());
	d = start_with("--queue-uid", other);
	c = connect_retry(d);
	if (!c) {
		kill(d, SIGKILL);
		return 1;
	}
	rc = ssq_queue_open(c, "q1", &q);
	CHECK(rc == -EACCES, "q1, restricted to another uid: %d (%s)", rc,
	      ssq_client_error(c));
	CHECK(strstr(ssq_client_error(c), "--queue-uid") != NULL, "error: %s",
	      ssq_client_error(c));
	rc = ssq_queue_open(c, "q0", &q);
	CHECK(rc == 0, "q0, without rules: %d (%s)", rc, ssq_client_error(c));
	ssq_client_close(c);
	t_ssqd_stop(d, NULL, NULL);

	/* A uid rule and a gid rule that name us: both let us in. */
	snprintf(mygid, sizeof(mygid), "q1=%u", (unsigned)getgid());
	d = start_with("--queue-uid", mine);
	c = connect_retry(d);
	CHECK(c && ssq_queue_open(c, "q2", &q) == 0 && ssq_buf_alloc(c, 64, &a) == 0 &&
	          ssq_buf_alloc(c, 64, &b) == 0,
	      "q2, restricted to our uid: %s", c ? ssq_client_error(c) : "no ssqd");
	if (c && !test_failures) {
		memset(a.addr, 0x51, 64);
		CHECK(write_and_wait(q, &a, &b, 64) == 0 && !memcmp(a.addr, b.addr, 64),
		      "a WRITE through q2");
	}
	ssq_client_close(c);
	t_ssqd_stop(d, NULL, NULL);
	d = start_with("--queue-gid", mygid);
	c = connect_retry(d);
	CHECK(c && ssq_queue_open(c, "q1", &q) == 0, "q1, restricted to our gid: %s",
	      c ? ssq_client_error(c) : "no ssqd");
	ssq_client_close(c);
	t_ssqd_stop(d, NULL, sock_path);
	return test_exit("ctrl_queue_access");
}
