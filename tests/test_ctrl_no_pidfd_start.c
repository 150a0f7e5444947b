/* SPDX-License-Identifier: MIT */
/*
 * ssqd on a kernel or in a sandbox without pidfds (run under
 * tests/sandbox/no_pidfd.c, $SSQ_NO_PIDFD) says so once at start, naming
 * what it does instead, and serves: a WRITE through q0 completes. Where
 * the kernel has pidfds, ssqd says nothing of it. Then, without pidfds, a
 * client that hangs up with q0 attached and exits at once is healed once
 * it is gone: q0 goes on working, and no kill is said.
 */
#include "stall_flow.h"

#define SAID "no pidfds here"

/* ssqd under @wrap (NULL: none) at a socket named after @tag; its pid. */
static pid_t up(const char *tag, const char *wrap)
{
	if (wrap)
		setenv("SSQ_TEST_SSQD_WRAP", wrap, 1);
	else
		unsetenv("SSQ_TEST_SSQD_WRAP");
	return stall_ssqd_up(tag);
}

/* A client that attaches q0, shuts its connection down and exits. */
static void hangs_up_and_exits(void)
{
	struct conn k;
	pid_t v = fork();
	int status = 0;

	if (v == 0)
		_exit(conn_open(&k) ? 3 : 0); /* exit closes the connection */
	waitpid(v, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "a client that attaches and exits: status 0x%x", status);
}

int main(void)
{
	const char *wrap = getenv("SSQ_NO_PIDFD");
	struct conn k;
	pid_t d;
	int n;

	if (!wrap)
		SKIP("SSQ_NO_PIDFD (tests/sandbox/no_pidfd.c) not set: run through "
		     "ctest");
	/* With pidfds, as this kernel has them: nothing said. */
	d = up("nopidfd-has", NULL);
	if (d < 0)
		return 1;
	CHECK(conn_open(&k) == 0 && write_timed(&k, 1, WAIT_S) >= 0,
	      "a WRITE through q0 with pidfds");
	ssq_client_close(k.c);
	n = log_count(SAID, NULL);
	stall_ssqd_down(d);
	CHECK(n == 0, "ssqd said \"" SAID "\" %d times on a kernel that has them", n);

	d = up("nopidfd-none", wrap);
	if (d < 0)
		return 1;
	CHECK(conn_open(&k) == 0 && write_timed(&k, 2, WAIT_S) >= 0,
	      "a WRITE through q0 without pidfds");
	hangs_up_and_exits();
	hangs_up_and_exits();
	CHECK(write_timed(&k, 3, WAIT_S) >= 0,
	      "a WRITE through q0 after two clients exited");
	ssq_client_close(k.c);
	n = log_count(SAID, "start time");
	CHECK(n == 1,
	      "ssqd said \"" SAID "\" and what it does instead %d times, not once", n);
	CHECK(log_count("killed", NULL) == 0, "ssqd killed a client that exited");
	printf("without pidfds, ssqd said \"" SAID "\" %d time(s) and served\n", n);
	stall_ssqd_down(d);
	return test_exit("ctrl_no_pidfd_start");
}
