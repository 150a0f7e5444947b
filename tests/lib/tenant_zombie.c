/* SPDX-License-Identifier: MIT */
/*
 * A tenant's ssqd held dead and unreapable (tlib.h): while a process is
 * ptraced, its zombie is its tracer's to reap first (wait_consider_task,
 * kernel/exit.c), so ssqd, its parent, cannot reap it until we let go.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include "tlib.h"

int t_tenant_zombie_hold(const char *log, uid_t uid, pid_t *pid)
{
	char needle[64];
	siginfo_t si;

	snprintf(needle, sizeof(needle), "tenant uid %u: its ssqd is pid ",
	         (unsigned)uid);
	*pid = (pid_t)t_log_last_num(log, needle);
	if (*pid <= 0 || ptrace(PTRACE_SEIZE, *pid, NULL, NULL) != 0)
		return 0;
	kill(*pid, SIGKILL);
	memset(&si, 0, sizeof(si));
	return waitid(P_PID, (id_t)*pid, &si, WEXITED | WNOWAIT | __WALL) == 0;
}

void t_tenant_zombies_go(const pid_t *pid, int *held, unsigned n)
{
	unsigned i;
	int st;

	for (i = 0; i < n; i++)
		if (held[i] && waitpid(pid[i], &st, __WALL) == pid[i])
			held[i] = 0;
}
