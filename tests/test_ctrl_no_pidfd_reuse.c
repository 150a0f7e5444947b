/* SPDX-License-Identifier: MIT */
/*
 * Without pidfds ssqd names a client's process by its pid and the start
 * time /proc/PID/stat gave at connect (util/util.h), and kills by pid
 * only while that start time holds. Run under tests/sandbox/no_pidfd.c
 * ($SSQ_NO_PIDFD: this test re-executes itself there), so that the by-pid
 * calls are also the only ones that can work:
 *  1. a live process whose start time is not the one recorded - its pid
 *     taken by another process since - is never killed (ssqd_pid_kill
 *     says -ESRCH), nor counted as the client (ssqd_proc_alive 0); with
 *     the right start time it is alive, and is killed;
 *  2. a process that exited and was reaped: gone, and not killed;
 *  3. a zombie (exited, not reaped): gone, as a pidfd would poll readable;
 *  4. a zombie leader whose other thread runs: alive (its pidfd would not
 *     poll readable yet), and killed with its thread;
 *  5. no start time (no /proc at connect): nothing is killed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "ctrl/daemon/util/util.h"
#include "helpers.h"

/* A child that sleeps until killed. */
static pid_t sleeper(void)
{
	pid_t p = fork();

	if (p == 0)
		for (;;)
			pause();
	return p;
}

static void *forever(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/* A child whose main thread exits while another sleeps: a zombie leader. */
static pid_t zombie_leader(void)
{
	pid_t p = fork();
	pthread_t t;

	if (p == 0) {
		if (pthread_create(&t, NULL, forever, NULL))
			_exit(3);
		pthread_exit(NULL);
	}
	return p;
}

/* @p's state letter in /proc/PID/stat, once it is @want, within 5 s. */
static char state_within(pid_t p, char want)
{
	char path[40], buf[512], *s = NULL, st = 0;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)p);
	for (i = 0; i < 500 && st != want; i++) {
		FILE *f = fopen(path, "r");

		st = 0;
		if (f && fgets(buf, sizeof(buf), f) && (s = strrchr(buf, ')')) && s[1])
			st = s[2];
		if (f)
			fclose(f);
		if (st != want)
			usleep(10000);
	}
	return st;
}

/*
 * @p was sent no SIGKILL: it dies of the SIGTERM sent now (a SIGKILL sent
 * before ends a process as SIGKILL, complete_signal, kernel/signal.c).
 */
static int unkilled(pid_t p)
{
	int status = 0;

	kill(p, SIGTERM);
	return waitpid(p, &status, 0) == p && WIFSIGNALED(status) &&
	       WTERMSIG(status) == SIGTERM;
}

static int killed_now(pid_t p)
{
	int status = 0;

	return waitpid(p, &status, 0) == p && WIFSIGNALED(status) &&
	       WTERMSIG(status) == SIGKILL;
}

int main(void)
{
	const char *wrap = getenv("SSQ_NO_PIDFD");
	char self[4096];
	uint64_t start;
	int status;
	pid_t p;

	if (!getenv("SSQ_NO_PIDFD_IN")) {
		if (!wrap)
			SKIP("SSQ_NO_PIDFD (tests/sandbox/no_pidfd.c) not set: run "
			     "through ctest");
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

		if (n <= 0)
			SKIP("no /proc/self/exe");
		self[n] = 0;
		setenv("SSQ_NO_PIDFD_IN", "1", 1);
		execl(wrap, wrap, self, (char *)NULL);
		fprintf(stderr, "exec %s: %s\n", wrap, strerror(errno));
		return 1;
	}
	CHECK(ssqd_pidfd_probe() == -ENOSYS, "pidfd_open not refused here: %d",
	      ssqd_pidfd_probe());

	/* 1. Another process on the pid: never killed. */
	p = sleeper();
	start = ssqd_pid_start(p);
	CHECK(start != 0, "no start time for a live child %d", (int)p);
	CHECK(ssqd_proc_alive(-1, p, start) == 1, "a live child is not alive");
	CHECK(ssqd_proc_alive(-1, p, start + 1) == 0,
	      "a process started at another time counts as the client");
	CHECK(ssqd_pid_kill(p, start + 1) == -ESRCH,
	      "a kill of a pid now another process's did not say -ESRCH");
	CHECK(ssqd_proc_kill(-1, p, start - 1) == -ESRCH,
	      "ssqd_proc_kill with no pidfd and another start time did not say "
	      "-ESRCH");
	CHECK(unkilled(p), "a process that took the client's pid was killed");
	p = sleeper();
	start = ssqd_pid_start(p);
	CHECK(ssqd_pid_kill(p, start) == 0, "the client itself could not be killed");
	CHECK(killed_now(p), "the client was not killed by SIGKILL");

	/* 2. Exited and reaped. */
	p = fork();
	if (p == 0)
		_exit(0);
	CHECK(state_within(p, 'Z') == 'Z', "the child did not exit");
	start = ssqd_pid_start(p);
	CHECK(start != 0, "no start time for a zombie");
	waitpid(p, &status, 0);
	CHECK(ssqd_proc_alive(-1, p, start) == 0, "a reaped process counts as alive");
	CHECK(ssqd_pid_kill(p, start) == -ESRCH, "a reaped process: not -ESRCH");

	/* 3. A zombie. */
	p = fork();
	if (p == 0)
		_exit(0);
	CHECK(state_within(p, 'Z') == 'Z', "the child did not exit");
	start = ssqd_pid_start(p);
	CHECK(ssqd_proc_alive(-1, p, start) == 0, "a zombie counts as alive");
	CHECK(ssqd_pid_kill(p, start) == -ESRCH, "a zombie: not -ESRCH");
	waitpid(p, &status, 0);

	/* 4. A zombie leader with a thread that runs. */
	p = zombie_leader();
	CHECK(state_within(p, 'Z') == 'Z', "the leader did not exit");
	start = ssqd_pid_start(p);
	CHECK(ssqd_proc_alive(-1, p, start) == 1,
	      "a zombie leader whose thread runs counts as gone");
	CHECK(ssqd_pid_kill(p, start) == 0, "the zombie leader's process: no kill");
	CHECK(killed_now(p), "the zombie leader's process was not killed");

	/* 5. No start time. */
	p = sleeper();
	CHECK(ssqd_pid_kill(p, 0) == -ESRCH && ssqd_proc_alive(-1, p, 0) == 0,
	      "a process with no start time was looked at by pid");
	CHECK(unkilled(p), "a process with no start time was killed");
	return test_exit("ctrl_no_pidfd_reuse");
}
