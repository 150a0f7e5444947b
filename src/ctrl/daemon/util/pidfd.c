/* SPDX-License-Identifier: MIT */
/* Clients' processes by pidfd: see util/util.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include "ctrl/daemon/util/util.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5, include/uapi/asm-generic/socket.h */
#endif

int ssqd_pidfd_of_peer(int fd, pid_t pid)
{
	socklen_t len = sizeof(int);
	int pidfd = -1;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0 && pidfd >= 0)
		return pidfd;
	/* The client waits for its hello's answer: the pid is still its own. */
	return ssqd_pidfd_open(pid);
}

int ssqd_pidfd_open(pid_t pid)
{
	int pidfd = pid > 0 ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;

	return pidfd >= 0 ? pidfd : -1;
}

int ssqd_pidfd_probe(void)
{
	int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);

	if (pidfd < 0)
		return -errno;
	close(pidfd);
	return 0;
}

int ssqd_pidfd_alive(int pidfd)
{
	/* A pidfd polls readable once its process has exited (pidfd_open(2)). */
	struct pollfd p = { pidfd, POLLIN, 0 };

	if (pidfd < 0)
		return 0;
	return poll(&p, 1, 0) == 0;
}

int ssqd_pid_maps_any(pid_t pid, const int *fds, int n)
{
	struct stat st[SSQD_MAPS_MAX];
	char path[64], line[512];
	FILE *f;
	int i, k = 0, found = 0;

	for (i = 0; i < n && k < SSQD_MAPS_MAX; i++)
		if (fds[i] >= 0 && fstat(fds[i], &st[k]) == 0)
			k++;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned int maj, min;
		unsigned long ino;

		if (sscanf(line, "%*x-%*x %*s %*x %x:%x %lu", &maj, &min, &ino) != 3 ||
		    !ino)
			continue;
		for (i = 0; i < k && !found; i++)
			found = ino == (unsigned long)st[i].st_ino &&
			        makedev(maj, min) == st[i].st_dev;
	}
	fclose(f);
	return found;
}

int ssqd_pidfd_signal(int pidfd, int sig)
{
	if (syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) < 0)
		return -errno;
	return 0;
}

int ssqd_pidfd_kill(int pidfd)
{
	return ssqd_pidfd_signal(pidfd, SIGKILL);
}
