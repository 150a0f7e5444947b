/* SPDX-License-Identifier: MIT */
/* A client of another uid that holds its tenant's slot (tlib.h). */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
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
