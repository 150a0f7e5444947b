/* SPDX-License-Identifier: MIT */
/*
 * Adversary (h-adv9), held: without pidfds ssqd names a client's process
 * by its pid and the start time in /proc/PID/stat (util/pid_start.c),
 * whose second field is the command name in parentheses - which the
 * process sets itself (prctl PR_SET_NAME, up to 15 bytes, any bytes but
 * NUL: fs/proc/array.c prints it unescaped in stat). A client naming
 * itself so that a first-')' parse would read a forged state, thread
 * count and start time ("a) Z 1 1 1 1 1", parentheses only, a newline,
 * spaces, empty) must not pass for a zombie nor for another start time:
 * for each, the start time read lies between this process's and now, the
 * live process is alive, a start time one tick off names nobody (no
 * kill, -ESRCH, the process still there), and the right one kills it.
 * What it shows: the last ')' is the kernel's; every hostile name holds.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include "ctrl/daemon/util/util.h"
#include "helpers.h"

static const char *const names[] = {
	"a) Z 1 1 1 1 1", ") ) ) ) ) ) ) )", "x\n) X 9 9 9 9", "(", "", "  1 2 3 4 5 6 7",
};

/* A child named @name that sleeps until killed; -1 if it never says so. */
static pid_t named(const char *name)
{
	int fds[2];
	char c;
	pid_t p;

	if (pipe(fds))
		return -1;
	p = fork();
	if (p == 0) {
		close(fds[0]);
		(void)prctl(PR_SET_NAME, name, 0, 0, 0);
		(void)!write(fds[1], "n", 1);
		for (;;)
			pause();
	}
	close(fds[1]);
	if (p < 0 || read(fds[0], &c, 1) != 1) {
		close(fds[0]);
		return -1;
	}
	close(fds[0]);
	return p;
}

/* Clock ticks since boot, now (/proc/uptime), plus one. */
static unsigned long long ticks_now(void)
{
	FILE *f = fopen("/proc/uptime", "r");
	double up = 0;

	if (!f || fscanf(f, "%lf", &up) != 1)
		up = 0;
	if (f)
		fclose(f);
	return (unsigned long long)(up * (double)sysconf(_SC_CLK_TCK)) + 1;
}

int main(void)
{
	uint64_t me = ssqd_pid_start(getpid());
	unsigned i;

	CHECK(me != 0, "this process's start time: 0");
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		pid_t p = named(names[i]);
		uint64_t start;
		int status = 0, rc;

		CHECK(p > 0, "child %u", i);
		if (p <= 0)
			continue;
		start = ssqd_pid_start(p);
		printf("name %u (%zu bytes): start %llu (this process %llu, now %llu)\n",
		       i, strlen(names[i]), (unsigned long long)start,
		       (unsigned long long)me, ticks_now());
		CHECK(start >= me && start <= ticks_now(),
		      "name %u: start time %llu outside [%llu, now %llu]", i,
		      (unsigned long long)start, (unsigned long long)me, ticks_now());
		CHECK(ssqd_proc_alive(-1, p, start) == 1,
		      "name %u: the live process is gone", i);
		CHECK(ssqd_proc_alive(-1, p, start + 1) == 0,
		      "name %u: another start time passes for it", i);
		rc = ssqd_pid_kill(p, start + 1);
		CHECK(rc == -ESRCH && waitpid(p, &status, WNOHANG) == 0,
		      "name %u: killed by a start time one tick off: %d", i, rc);
		rc = ssqd_pid_kill(p, start);
		CHECK(rc == 0, "name %u: its kill: %d", i, rc);
		if (rc)
			kill(p, SIGKILL);
		CHECK(waitpid(p, &status, 0) == p && WIFSIGNALED(status) &&
		          WTERMSIG(status) == SIGKILL,
		      "name %u: not killed (status %x)", i, status);
	}
	return test_exit("adv9_pid_comm_held");
}
