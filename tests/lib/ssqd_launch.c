/* SPDX-License-Identifier: MIT */
/*
 * Starting ssqd for a test and connecting to it (tlib.h): the one fork and
 * exec every test's launcher goes through.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>
#include "test_device.h"
#include "tlib.h"

pid_t t_ssqd_exec(const char *const *args, const char *env_name, const char *env_value,
                  const char *log, int append)
{
	const char *ssqd = getenv("SSQD");
	const char *argv[42];
	int n = 0;
	pid_t pid;

	argv[n++] = ssqd;
	while (args && *args && n < 41)
		argv[n++] = *args++;
	argv[n] = NULL;
	pid = fork();
	if (pid == 0) {
		if (log) {
			int fd =
			    open(log, O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC),
			         0600);

			if (fd >= 0)
				dup2(fd, 2);
		}
		if (env_name)
			setenv(env_name, env_value, 1);
		execv(ssqd, (char *const *)argv);
		perror("exec ssqd");
		_exit(127);
	}
	return pid;
}

int t_rssqd_grants;

pid_t t_rssqd_start(const char *sock, unsigned recv_depth, unsigned recv_size,
                    const char *wire_fault, const char *const *args, const char *log,
                    int append)
{
	char depth[16], size[16];
	const char *argv[40] = {
		"--device",   test_device(), "--socket",  sock,  "--hugepages=off",
		"--data-mib", "8",           "--sq-size", "256", "--recv-depth",
		depth,        "--recv-size", size
	};
	int n = 13;

	snprintf(depth, sizeof(depth), "%u", recv_depth);
	snprintf(size, sizeof(size), "%u", recv_size);
	if (!t_rssqd_grants)
		argv[n++] = "--no-grants";
	while (args && *args && n < 37)
		argv[n++] = *args++;
	argv[n] = NULL;
	return t_ssqd_exec(argv, wire_fault ? "SSQ_EMU_WIRE_FAULT" : NULL, wire_fault,
	                   log, append);
}

struct ssq_client *t_ssqd_connect(const char *sock, pid_t pid)
{
	struct ssq_client *c = NULL;
	int i, status;

	for (i = 0; i < 400 && ssq_client_connect(sock, &c); i++) {
		if (pid > 0 && waitpid(pid, &status, WNOHANG) == pid) {
			fprintf(stderr, "ssqd exited at start (status 0x%x)\n", status);
			return NULL;
		}
		usleep(50 * 1000);
	}
	return c;
}

void t_ssqd_stop(pid_t pid, int *status, const char *sock)
{
	if (pid > 0) {
		kill(pid, SIGTERM);
		waitpid(pid, status, 0);
	}
	if (sock)
		unlink(sock);
}

int t_ssqd_stop_ok(pid_t pid, int *status, const char *sock)
{
	t_ssqd_stop(pid, status, sock);
	return WIFEXITED(*status) && WEXITSTATUS(*status) == 0;
}
