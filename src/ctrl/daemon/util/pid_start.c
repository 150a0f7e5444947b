/* SPDX-License-Identifier: MIT */
/*
 * A client's process where no pidfd can be had: by its pid and the start
 * time /proc/PID/stat gave when it connected (see util/util.h). What it
 * parses (fs/proc/array.c, do_task_stat; proc_pid_stat(5)): the command
 * name in parentheses (it may hold one; the last counts), then field 3
 * the state (Z a zombie, X dead), field 20 num_threads, field 22
 * starttime, in clock ticks since boot: a process that took the pid since
 * started later. Pids are handed out cyclically (alloc_pid, kernel/pid.c:
 * idr_alloc_cyclic), so the same one comes back only after pid_max others
 * (32768 by default): within one tick (10 ms) only under a pid_max cut
 * to a few hundred, and that one case is what a pidfd alone rules out.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ctrl/daemon/util/util.h"

/*
 * /proc/@pid/stat's state, thread count and start time. 0, or -ESRCH when
 * there is no such process, -EIO when /proc cannot say.
 */
static int pid_stat(pid_t pid, char *state, long *threads, uint64_t *start)
{
	char path[40], buf[1024], *p, *end;
	ssize_t n;
	int fd, field;

	if (pid <= 0)
		return -ESRCH;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -EIO;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 && errno == ESRCH ? -ESRCH : -EIO;
	buf[n] = 0;
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return -EIO;
	*state = p[2];
	p += 3; /* at the space before field 4 */
	for (field = 4; field <= 22; field++) {
		errno = 0;
		if (*p != ' ')
			return -EIO;
		if (field == 20)
			*threads = strtol(p + 1, &end, 10);
		else if (field == 22)
			*start = strtoull(p + 1, &end, 10);
		else
			end = strchr(p + 1, ' ');
		if (!end || end == p + 1 || errno)
			return -EIO;
		p = end;
	}
	return 0;
}

uint64_t ssqd_pid_start(pid_t pid)
{
	uint64_t start = 0;
	long threads;
	char state;

	return pid_stat(pid, &state, &threads, &start) ? 0 : start;
}

/*
 * Process @pid, started at @start: 1 while it has not exited, 0 once it
 * has (gone, reaped and its pid taken by another, or a zombie with no
 * thread left), -EIO when /proc cannot say. A zombie leader whose other
 * threads run still counts: it exits with its last thread, as its pidfd
 * would say (pidfd_poll, kernel/fork.c; fs/pidfs.c since Linux 6.9:
 * readable once the thread group is empty).
 */
static int pid_alive(pid_t pid, uint64_t start)
{
	uint64_t now = 0;
	long threads = 0;
	char state = 0;
	int rc = pid_stat(pid, &state, &threads, &now);

	if (rc)
		return rc == -ESRCH ? 0 : rc;
	if (now != start)
		return 0;
	return !((state == 'Z' || state == 'X') && threads <= 1);
}

int ssqd_proc_alive(int pidfd, pid_t pid, uint64_t start)
{
	if (pidfd >= 0)
		return ssqd_pidfd_alive(pidfd);
	if (!start)
		return 0;                  /* nothing to look at (no /proc at connect) */
	return pid_alive(pid, start) != 0; /* unknown: assume it runs */
}

int ssqd_child_alive(int pidfd, pid_t pid)
{
	uint64_t start;

	if (pidfd >= 0)
		return ssqd_pidfd_alive(pidfd);
	start = ssqd_pid_start(pid);
	return !start || pid_alive(pid, start) != 0; /* unknown: it runs */
}

int ssqd_pid_kill(pid_t pid, uint64_t start)
{
	int alive;

	if (!start)
		return -ESRCH;
	/*
	 * Right before the kill: the one window left is a process that
	 * exits, is reaped and has its pid taken again between this look
	 * and kill(2) - which a pidfd alone closes.
	 */
	alive = pid_alive(pid, start);
	if (alive < 0)
		return alive;
	if (!alive)
		return -ESRCH;
	return kill(pid, SIGKILL) ? -errno : 0;
}

int ssqd_proc_kill(int pidfd, pid_t pid, uint64_t start)
{
	return pidfd >= 0 ? ssqd_pidfd_kill(pidfd) : ssqd_pid_kill(pid, start);
}
