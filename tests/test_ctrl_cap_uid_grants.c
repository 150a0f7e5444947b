/* SPDX-License-Identifier: MIT */
/*
 * One uid cannot take every grant slot of ssqd while another uid may use
 * it (issue 28: one uid's clients took all 1024 with ssq_buf_grant /
 * ssq_mem_grant, 64 a connection, locking every other uid out of grants;
 * the producer records' bound, item 6, is the same rule). ssqd
 * --allow-uid 65534 on loopback: this uid grants 64 a connection over 8
 * connections (512, half), the next grant is -EDQUOT naming the uid's
 * bound; run as root, a process of uid 65534 still grants. Without
 * --allow-uid (ssqd is this uid's alone) the same uid's 513th grant works.
 * Before: "grant 513 by one uid while another may use ssqd: 0 ()".
 */
#include <grp.h>
#include <sys/stat.h>
#include "cluster_flow.h"

#define NCONN 9

static char sock[108];

/* In a child of uid 65534: connect, one buffer, one grant. 0 on success. */
static int other_uid_grants(void)
{
	struct ssq_client *c;
	struct ssq_desc dsc;
	struct ssq_buf b;
	int rc;

	if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
		return 2;
	if (ssq_client_connect(sock, &c))
		return 3;
	rc = ssq_buf_alloc(c, 4096, &b);
	if (!rc)
		rc = ssq_buf_grant(c, "q0", &b, 0, 64, IBV_ACCESS_REMOTE_WRITE, &dsc);
	if (rc)
		fprintf(stderr, "uid 65534: grant: %d (%s)\n", rc, ssq_client_error(c));
	ssq_client_close(c);
	return rc ? 1 : 0;
}

/*
 * 64 grants on each of connections @c[0..@nconn-1] (one buffer each), then
 * one more on @c[@nconn]; returns that last grant's outcome, or 1 when an
 * earlier one failed.
 */
static int grant_many(struct ssq_client **c, int nconn)
{
	struct ssq_desc dsc;
	struct ssq_buf b[NCONN];
	int i, k, rc = -EINVAL;

	for (i = 0; i <= nconn; i++) {
		rc = ssq_buf_alloc(c[i], 4096, &b[i]);
		if (rc) {
			CHECK(0, "alloc on connection %d: %d %s", i, rc,
			      ssq_client_error(c[i]));
			return 1;
		}
		for (k = 0; k < (i < nconn ? 64 : 1); k++) {
			rc = ssq_buf_grant(c[i], "q0", &b[i], (uint64_t)k * 64, 64,
			                   IBV_ACCESS_REMOTE_WRITE, &dsc);
			if (i < nconn && rc) {
				CHECK(0, "grant %d on connection %d: %d %s", k, i, rc,
				      ssq_client_error(c[i]));
				return 1;
			}
		}
	}
	return rc;
}

static pid_t start(int shared)
{
	const char *args[] = { shared ? "--allow-uid" : NULL, "65534", NULL };

	return cf_start(sock, NULL, 0, NULL, args);
}

static void stop(struct ssq_client **c, pid_t d)
{
	int i, st;

	for (i = 0; i < NCONN; i++)
		if (c[i])
			ssq_client_close(c[i]);
	CHECK(t_ssqd_stop_ok(d, &st, sock), "ssqd exit status 0x%x", st);
}

/* Connections c[0..NCONN-1] to ssqd @d; 0 when all connected. */
static int connect_all(struct ssq_client **c, pid_t d)
{
	int i;

	memset(c, 0, NCONN * sizeof(*c));
	c[0] = t_ssqd_connect(sock, d);
	if (!c[0])
		return -1;
	for (i = 1; i < NCONN; i++)
		if (ssq_client_connect(sock, &c[i]))
			return -1;
	return 0;
}

int main(void)
{
	struct ssq_client *c[NCONN];
	int rc, st;
	pid_t d, kid;

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	signal(SIGPIPE, SIG_IGN);
	t_rssqd_grants = 1;
	snprintf(sock, sizeof(sock), "/tmp/ssq-uidgr-%d.sock", (int)getpid());

	d = start(1);
	if (connect_all(c, d) == 0) {
		rc = grant_many(c, NCONN - 1);
		CHECK(rc == -EDQUOT && strstr(ssq_client_error(c[NCONN - 1]), "uid"),
		      "grant 513 by one uid while another may use ssqd: %d (%s); "
		      "want -EDQUOT naming the uid's bound",
		      rc, ssq_client_error(c[NCONN - 1]));
		if (getuid() == 0) {
			chmod(sock, 0666); /* uid 65534 may connect */
			kid = fork();
			if (kid == 0)
				_exit(other_uid_grants());
			waitpid(kid, &st, 0);
			CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
			      "uid 65534 could not grant while this uid held 512 "
			      "(status 0x%x)",
			      st);
		} else {
			printf("not root: uid 65534's own grant is not tried\n");
		}
	} else {
		CHECK(0, "%d connections to ssqd", NCONN);
	}
	stop(c, d);

	d = start(0);
	if (connect_all(c, d) == 0) {
		rc = grant_many(c, NCONN - 1);
		CHECK(rc == 0, "grant 513 of an ssqd of this uid alone: %d (%s)", rc,
		      ssq_client_error(c[NCONN - 1]));
	} else {
		CHECK(0, "%d connections to ssqd", NCONN);
	}
	stop(c, d);
	return test_exit("ctrl_cap_uid_grants");
}
