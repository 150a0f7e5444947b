/* SPDX-License-Identifier: MIT */
/* What /proc says of a process (tlib.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "tlib.h"

int t_proc_fds(pid_t pid)
{
	char path[64];
	struct dirent *e;
	DIR *dir;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	dir = opendir(path);
	if (!dir)
		return -1;
	while ((e = readdir(dir)))
		n += e->d_name[0] != '.';
	closedir(dir);
	return n;
}

double t_proc_run_wait(pid_t pid)
{
	char path[64];
	unsigned long long run, wait;
	FILE *f;
	int n;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/thread-self/schedstat");
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fscanf(f, "%llu %llu", &run, &wait);
	fclose(f);
	return n == 2 ? (double)wait * 1e-9 : -1;
}

double t_proc_cpu_s(pid_t pid)
{
	unsigned long ut = 0, st = 0;
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%*d (%*[^)]) %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
	           &ut, &st) != 2)
		ut = st = 0;
	fclose(f);
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

int t_proc_tenant_fd(pid_t pid)
{
	char path[64], buf[4096], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	for (p = buf; p < buf + n; p += strlen(p) + 1)
		if (!strcmp(p, "--tenant-fd") && p + strlen(p) + 1 < buf + n)
			return atoi(p + strlen(p) + 1);
	return -1;
}

int t_proc_fd_copy(pid_t pid, int fd)
{
	int pfd, s, e;

	if (pid <= 0 || fd < 0)
		return -1;
	pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd < 0)
		return -1;
	s = (int)syscall(SYS_pidfd_getfd, pfd, fd, 0);
	e = errno;
	close(pfd);
	errno = e;
	return s;
}

int t_proc_alive(pid_t pid)
{
	char path[64], state = 'X';
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%*d (%*[^)]) %c", &state) != 1)
		state = 'X';
	fclose(f);
	return state != 'Z' && state != 'X';
}
