/* SPDX-License-Identifier: MIT */
/*
 * A tenant's ssqd is started with ssqd's own command line less what
 * tenants.c drops, plus --tenant-fd and the tenant's --allow-uid. Command
 * lines ssqd itself takes must give a tenant's ssqd one it takes too:
 *  - "--" last (getopt's end of options, nothing after it): ssqd runs;
 *    uid 65534's client connects and opens q0 through its tenant's ssqd;
 *  - the same with "=" and abbreviated long options (--allow-u=65534
 *    --tenants=uid).
 * Before: with "--" last, the tenant's ssqd got "-- --tenant-fd N
 * --allow-uid 65534", took them for arguments and exited 2 ("unexpected
 * argument '--tenant-fd'"), at start and again at each connection of
 * uid 65534, whose connects all failed.
 * Needs root (the other tenant's client runs as uid 65534).
 */
#include <grp.h>
#include <sys/stat.h>
#include "cluster_flow.h"

static char sock[108], logf[128];

/* uid 65534's client, in a child: 0 when it opened q0, else 1 (2: setuid). */
static int other(void)
{
	struct ssq_client *c = NULL;
	struct ssq_queue *q;
	int i, rc = -1;

	if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
		return 2;
	/* The tenant's first connection waits for its set-up: a few tries. */
	for (i = 0; i < 5 && rc; i++) {
		rc = ssq_client_connect(sock, &c);
		if (rc)
			usleep(200000);
	}
	if (rc) {
		fprintf(stderr, "uid 65534: connect: %d\n", rc);
		return 1;
	}
	rc = ssq_queue_open(c, "q0", &q);
	if (rc)
		fprintf(stderr, "uid 65534: open q0: %s\n", ssq_client_error(c));
	ssq_client_close(c);
	return rc ? 1 : 0;
}

static void run(const char *const *args, const char *what)
{
	struct ssq_client *c;
	pid_t d, kid;
	int st;

	d = cf_start(sock, logf, 0, NULL, args);
	c = t_ssqd_connect(sock, d);
	CHECK(c != NULL, "%s: connect as root", what);
	if (c)
		ssq_client_close(c);
	chmod(sock, 0666);
	fflush(NULL);
	kid = fork();
	if (kid == 0)
		_exit((st = other(), fflush(NULL), st));
	waitpid(kid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "%s: uid 65534 could not open q0 through its tenant (status 0x%x); "
	      "ssqd's log: %s",
	      what, st, logf);
	CHECK(!cf_file_has(logf, "unexpected argument"),
	      "%s: the tenant's ssqd refused its command line: see %s", what, logf);
	CHECK(t_ssqd_stop_ok(d, &st, sock), "%s: ssqd exit status 0x%x", what, st);
}

int main(void)
{
	static const char *const dashdash[] = { "--allow-uid", "65534", "--tenants",
		                                "uid",         "--",    NULL };
	static const char *const abbrev[] = { "--allow-u=65534", "--tenants=uid", NULL };

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	if (getuid() != 0)
		SKIP("not root: the other tenant's client runs as uid 65534 (setuid)");
	signal(SIGPIPE, SIG_IGN);
	snprintf(sock, sizeof(sock), "/tmp/ssq-tenargs-%d.sock", (int)getpid());
	snprintf(logf, sizeof(logf), "/tmp/ssq-tenargs-%d.log", (int)getpid());
	run(dashdash, "'--' last");
	run(abbrev, "'=' and abbreviations");
	if (!test_failures)
		unlink(logf);
	return test_exit("ctrl_adv_tenant_args");
}
