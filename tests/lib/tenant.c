/* SPDX-License-Identifier: MIT */
/* A client of another uid that holds its tenant's slot (tlib.h). */
#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tlib.h"

pid_t t_tenant_holder(const char *sock, uid_t uid, gid_t gid, int *hold, int ready)
{
	int p[2];
	pid_t pid;

	if (pipe(p))
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		struct ssq_client *c = NULL;
		char b;
		int rc;

		close(p[1]);
		rc = setgroups(0, NULL) || setgid(gid) || setuid(uid)
		         ? -EPERM
		         : ssq_client_connect(sock, &c);
		if (rc)
			printf("holder uid %u: %d %s\n", (unsigned)uid, rc,
			       c ? ssq_client_error(c) : ssq_client_strerror_last());
		fflush(stdout);
		b = (char)-rc;
		(void)!write(ready, &b, 1);
		if (!rc)
			(void)!read(p[0], &b, 1);
		if (c)
			ssq_client_close(c);
		_exit(0);
	}
	close(p[0]);
	if (pid < 0) {
		close(p[1]);
		return -1;
	}
	*hold = p[1];
	return pid;
}

int t_byte_within(int fd, int ms, char *b)
{
	struct pollfd p = { fd, POLLIN, 0 };

	return poll(&p, 1, ms) == 1 && read(fd, b, 1) == 1;
}

unsigned t_tenant_holders(const char *sock, uid_t uid0, gid_t gid, unsigned n, pid_t *pid,
                          int *hold, const int ready[2])
{
	unsigned i, ok = 0;
	char b;

	for (i = 0; i < n; i++) {
		pid[i] = t_tenant_holder(sock, uid0 + i, gid, &hold[i], ready[1]);
		if (read(ready[0], &b, 1) == 1 && !b)
			ok++;
	}
	return ok;
}

pid_t t_tenant_idle_exit(const char *sock, const char *log, uid_t uid, gid_t gid,
                         const int ready[2], int *served, int *exited)
{
	char needle[64], b;
	int hold, st;
	pid_t h, old;

	h = t_tenant_holder(sock, uid, gid, &hold, ready[1]);
	*served = read(ready[0], &b, 1) == 1 && !b;
	snprintf(needle, sizeof(needle), "tenant uid %u: its ssqd is pid ",
	         (unsigned)uid);
	old = (pid_t)t_log_last_num(log, needle);
	close(hold);
	waitpid(h, &st, 0);
	*exited = t_log_wait(log, "(--tenant-idle-ms): exiting", 1, 30);
	return old;
}
