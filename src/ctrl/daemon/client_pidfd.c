/* SPDX-License-Identifier: MIT */
/* Clients' processes by pidfd: see client_pidfd.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "ctrl/daemon/client_pidfd.h"

int ssqd_pidfd_open(pid_t pid)
{
	long fd;

	if (pid <= 0)
		return -1;
	fd = syscall(SYS_pidfd_open, pid, 0);
	return fd < 0 ? -1 : (int)fd;
}

int ssqd_pidfd_alive(int pidfd)
{
	/* A pidfd polls readable once its process has exited (pidfd_open(2)). */
	struct pollfd p = { pidfd, POLLIN, 0 };

	if (pidfd < 0)
		return 0;
	return poll(&p, 1, 0) == 0;
}

int ssqd_pidfd_kill(int pidfd)
{
	if (syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) < 0)
		return -errno;
	return 0;
}
