/* SPDX-License-Identifier: MIT */
/* Clients of another uid, in a child that becomes it (tlib.h). */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tlib.h"

/* One connection of the child's: 0 served, else the -errno it failed with. */
static int one(const struct t_uid_clients *u, unsigned i, char *said, size_t len)
{
	struct ssq_queue_info info[8]; /* it says how many it has, any number */
	struct ssq_client *c = NULL;
	int rc = ssq_client_connect(u->sock, &c);

	if (!rc) {
		if (u->hold_ms)
			usleep(u->hold_ms * 1000);
		rc = ssq_client_list(c, info, 8);
		rc = rc > 0 ? 0 : rc ? rc : -ENODATA;
	}
	if (rc)
		snprintf(said, len, "connection %u of uid %u: %d %s", i, (unsigned)u->uid,
		         rc, c ? ssq_client_error(c) : ssq_client_strerror_last());
	if (c)
		ssq_client_close(c);
	return rc;
}

int t_uid_clients(struct t_uid_clients *u)
{
	unsigned n = u->n ? u->n : 1;
	int p[2], st = 0;
	ssize_t got;
	pid_t kid;

	u->said[0] = 0;
	u->first_err = 0;
	if (pipe(p))
		return 255;
	fflush(NULL);
	kid = fork();
	if (kid == 0) {
		char said[sizeof(u->said)] = "";
		unsigned i, bad = 0;
		int first = 0;

		close(p[0]);
		srand((unsigned)getpid());
		if (setgroups(0, NULL) || setgid(u->gid) || setuid(u->uid))
			_exit(200);
		for (i = 0; i < n; i++) {
			int rc = one(u, i, bad ? NULL : said, bad ? 0 : sizeof(said));

			if (rc && !bad++) {
				first = -rc;
				if (!u->quiet)
					printf("%s\n", said);
			}
			if (u->pause_ms)
				usleep(u->pause_ms * 1000);
			else if (u->gap_ms)
				usleep((unsigned)rand() % (u->gap_ms * 1000));
		}
		fflush(stdout);
		/* The first failure's errno, then its words, for the parent. */
		if (write(p[1], &first, sizeof(first)) != (ssize_t)sizeof(first) ||
		    write(p[1], said, strlen(said)) < 0)
			_exit(254);
		_exit(bad > 199 ? 199 : (int)bad);
	}
	close(p[1]);
	if (kid < 0 || waitpid(kid, &st, 0) != kid || !WIFEXITED(st)) {
		close(p[0]);
		return 255;
	}
	/* The child wrote less than a pipe holds, then exited: all there. */
	if (read(p[0], &u->first_err, sizeof(u->first_err)) ==
	        (ssize_t)sizeof(u->first_err) &&
	    (got = read(p[0], u->said, sizeof(u->said) - 1)) > 0)
		u->said[got] = 0;
	close(p[0]);
	return WEXITSTATUS(st);
}
