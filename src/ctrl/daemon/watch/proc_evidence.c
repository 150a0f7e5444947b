/* SPDX-License-Identifier: MIT */
/*
 * Reading /proc for the stall watch, thread by thread (a process's own
 * stat is its leader's, which may have exited while others run). The
 * sources of what it parses:
 *  - /proc/PID/task/TID/stat: the state letter after the command name's
 *    closing parenthesis (the name may hold one; the last counts); T
 *    stopped by a signal, t stopped by a tracer (fs/proc/array.c,
 *    task_state_array);
 *  - /proc/PID/task/TID/syscall: "running" while the task runs, else the
 *    system call it is blocked in and its arguments, or "-1 SP PC" when it
 *    is not in one (fs/proc/base.c, proc_pid_syscall; lib/syscall.c,
 *    collect_syscall: syscall_get_nr is -1 outside a system call). A task
 *    stopped by a signal that interrupted a system call still shows that
 *    call (it is restarted on resume). Reading it takes ptrace access
 *    (PTRACE_MODE_ATTACH_FSCREDS): root, or the same uid where Yama's
 *    ptrace_scope allows.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ctrl/daemon/watch/watch.h"

/* Up to @len - 1 bytes of @path into @buf, NUL-terminated: bytes read or -1. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return n;
}

/* @tid of @pid (a name in /proc/PID/task) stopped, and outside a system call? */
static int task_stopped_in_user(pid_t pid, const char *tid)
{
	char path[64], buf[128], *p, *end;
	long nr;

	snprintf(path, sizeof(path), "/proc/%d/task/%.16s/stat", (int)pid, tid);
	if (read_small(path, buf, sizeof(buf)) <= 0)
		return 0;
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || (p[2] != 'T' && p[2] != 't'))
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/task/%.16s/syscall", (int)pid, tid);
	if (read_small(path, buf, sizeof(buf)) <= 0)
		return 1; /* no access: the kernel did not say */
	nr = strtol(buf, &end, 10);
	return end == buf || nr < 0; /* "running", "-1 SP PC", or unparsable */
}

int ssqd_proc_stopped_in_user(pid_t pid)
{
	char path[40];
	struct dirent *e;
	int found = 0;
	DIR *dir;

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return 0;
	/* Every thread: the leader may have exited (a zombie) or be running. */
	while (!found && (e = readdir(dir)) != NULL)
		if (e->d_name[0] >= '0' && e->d_name[0] <= '9')
			found = task_stopped_in_user(pid, e->d_name);
	closedir(dir);
	return found;
}
