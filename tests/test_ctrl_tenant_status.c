/* SPDX-License-Identifier: MIT */
/*
 * ssqd --status under --tenants uid shows every running tenant's ssqd, not
 * the first ssqd's own tenant alone: ssqd --tenants uid --allow-gid 65534
 * --queues 2; uid 65534 opens q0 and uid 65533 (both of gid 65534) opens
 * q1, each served by a tenant ssqd of its own started at its connection.
 *  - --status and --status --json list both tenants with their uid, their
 *    ssqd's pid, their queues (the open one's OPENS 1) and clients;
 *  - with uid 65533's tenant ssqd stopped (SIGSTOP), --status still comes
 *    back, within a bound (SSQD_STATUS_TENANT_MS plus slack for a busy
 *    machine), showing that tenant as not answering and the other as
 *    before; the first ssqd still serves its own clients meanwhile;
 *  - a uid other than ssqd's (or root) served by the first ssqd is refused
 *    the tenants (-EACCES): they are each other's to reach, not its.
 * Before: --status printed the first ssqd's own queues only, no tenant.
 * Needs root (the tenants' clients run as uids 65534 and 65533).
 */
#include <grp.h>
#include <sys/stat.h>
#include "cluster_flow.h"
#include "ctrl/daemon/status_tenants.h"

static char sock[108], logf[128], outf[128];

/* A client of @uid (gid 65534) holding queue @q open until its pipe closes. */
static pid_t holder(uid_t uid, const char *q, int *ready_rd, int *stop_wr)
{
	int r[2], s[2];
	pid_t pid;

	if (pipe(r) || pipe(s))
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		struct ssq_client *c;
		struct ssq_queue *qq;
		char b = 0;

		close(r[0]);
		close(s[1]);
		if (setgroups(0, NULL) || setgid(65534) || setuid(uid))
			_exit(2);
		if (ssq_client_connect(sock, &c)) {
			fprintf(stderr, "uid %u: connect: %s\n", (unsigned)uid,
			        ssq_client_strerror_last());
			_exit(3);
		}
		if (ssq_queue_open(c, q, &qq)) {
			fprintf(stderr, "uid %u: open %s: %s\n", (unsigned)uid, q,
			        ssq_client_error(c));
			_exit(4);
		}
		if (write(r[1], "r", 1) != 1)
			_exit(5);
		if (read(s[0], &b, 1) < 0)
			_exit(6);
		ssq_client_close(c);
		_exit(0);
	}
	close(r[1]);
	close(s[0]);
	*ready_rd = r[0];
	*stop_wr = s[1];
	return pid;
}

/* The pid of uid @uid's tenant ssqd, from ssqd's log; -1 if not there. */
static pid_t tenant_pid(unsigned uid)
{
	char buf[65536], needle[64], *s;
	FILE *f = fopen(logf, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = 0;
	snprintf(needle, sizeof(needle), "tenant uid %u: its ssqd is pid ", uid);
	s = strstr(buf, needle);
	return s ? (pid_t)atoi(s + strlen(needle)) : -1;
}

/*
 * Only ssqd's uid and root reach the tenants: ssqd --tenants gid
 * --allow-uid 65532, and uid 65532 of ssqd's own gid (0), so served by
 * this ssqd itself, runs --status: its list of tenants ends -EACCES.
 */
static void others_refused(void)
{
	const char *args[] = { "--tenants", "gid", "--allow-uid", "65532", NULL };
	char out[8192], cmd[512];
	struct ssq_client *c;
	FILE *f;
	size_t n;
	pid_t d = cf_start(sock, logf, 0, NULL, args), kid;
	int st;

	c = t_ssqd_connect(sock, d);
	CHECK(c != NULL, "connect to ssqd --tenants gid");
	if (c)
		ssq_client_close(c);
	chmod(sock, 0666);
	unlink(outf); /* root's: uid 65532 makes its own */
	fflush(NULL);
	kid = fork();
	if (kid == 0) {
		if (setgroups(0, NULL) || setgid(0) || setuid(65532))
			_exit(2);
		snprintf(cmd, sizeof(cmd), "'%s' --status --socket '%s' > %s 2>&1",
		         getenv("SSQD"), sock, outf);
		_exit(system(cmd) == 0 ? 0 : 3);
	}
	waitpid(kid, &st, 0);
	f = fopen(outf, "r");
	n = f ? fread(out, 1, sizeof(out) - 1, f) : 0;
	if (f)
		fclose(f);
	out[n] = 0;
	printf("--status as uid 65532 (gid 0):\n%s", out);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 &&
	          strstr(out, "tenants: ssqd: only ssqd's uid 0 or root may reach"),
	      "uid 65532's --status (status 0x%x) was not refused the tenants", st);
	CHECK(t_ssqd_stop_ok(d, &st, sock), "ssqd exit status 0x%x", st);
}

int main(void)
{
	const char *args[] = { "--tenants", "uid", "--allow-gid", "65534",
		               "--queues",  "2",   NULL };
	char out[16384], want[256];
	int rd[2] = { -1, -1 }, wr[2] = { -1, -1 }, st, i;
	pid_t d, kid[2] = { -1, -1 }, tp[2];
	struct ssq_client *c;
	double secs;
	char b;

	t_need_ssqd();
	if (getuid() != 0)
		SKIP("not root: the tenants' clients run as uids 65534 and 65533");
	snprintf(sock, sizeof(sock), "/tmp/ssq-tstat-%d.sock", (int)getpid());
	snprintf(logf, sizeof(logf), "/tmp/ssq-tstat-%d.log", (int)getpid());
	snprintf(outf, sizeof(outf), "/tmp/ssq-tstat-%d.out", (int)getpid());
	d = cf_start(sock, logf, 0, NULL, args);
	c = t_ssqd_connect(sock, d);
	CHECK(c != NULL, "connect to ssqd --tenants uid");
	if (!c)
		goto out;
	chmod(sock, 0666);
	kid[0] = holder(65534, "q0", &rd[0], &wr[0]);
	kid[1] = holder(65533, "q1", &rd[1], &wr[1]);
	for (i = 0; i < 2; i++)
		CHECK(kid[i] > 0 && read(rd[i], &b, 1) == 1,
		      "uid %d's client did not open its queue (see above)", 65534 - i);
	if (test_failures)
		goto out;
	tp[0] = tenant_pid(65534);
	tp[1] = tenant_pid(65533);
	CHECK(tp[0] > 0 && tp[1] > 0, "tenants' pids not in %s", logf);

	st = t_ssqd_status(sock, 0, outf, out, sizeof(out), &secs);
	printf("--status (%.1f s):\n%s", secs, out);
	CHECK(st == 0, "--status exit status 0x%x", st);
	for (i = 0; i < 2; i++) {
		snprintf(want, sizeof(want),
		         "tenant uid %d: ssqd pid %d, 2 queue(s), 2 client(s)", 65534 - i,
		         (int)tp[i]);
		CHECK(strstr(out, want), "--status lacks '%s'", want);
	}
	/* q0 open once in uid 65534's tenant, q1 in uid 65533's. */
	CHECK(strstr(out, "\n  q0 ") && strstr(out, "\n  q1 "),
	      "--status lacks the tenants' queue tables");
	st = t_ssqd_status(sock, 1, outf, out, sizeof(out), &secs);
	printf("--status --json (%.1f s): %s", secs, out);
	for (i = 0; i < 2; i++) {
		snprintf(
		    want, sizeof(want),
		    "{\"kind\": \"uid\", \"id\": %d, \"pid\": %d, \"answering\": true, "
		    "\"clients\": 2, \"queues\": [{\"name\": \"q0\"",
		    65534 - i, (int)tp[i]);
		CHECK(st == 0 && strstr(out, want), "--status --json lacks '%s'", want);
	}
	CHECK(strstr(out, "\"name\": \"q0\", \"qpn\"") &&
	          strstr(out, "\"opens\": 1, \"refused\": 0"),
	      "--status --json: no queue with one open");

	/* uid 65533's tenant stopped: the status still comes, within a bound. */
	kill(tp[1], SIGSTOP);
	st = t_ssqd_status(sock, 0, outf, out, sizeof(out), &secs);
	printf("--status with tenant %d stopped (%.1f s):\n%s", (int)tp[1], secs, out);
	snprintf(want, sizeof(want), "tenant uid 65533: ssqd pid %d: not answering",
	         (int)tp[1]);
	CHECK(st == 0 && strstr(out, want), "--status lacks '%s'", want);
	snprintf(want, sizeof(want), "tenant uid 65534: ssqd pid %d, 2 queue(s)",
	         (int)tp[0]);
	CHECK(strstr(out, want), "--status lacks '%s' beside a stopped tenant", want);
	CHECK(secs < SSQD_STATUS_TENANT_MS / 1000.0 + 15,
	      "--status took %.1f s with a tenant stopped", secs);
	/* The first ssqd's loop did not wait on it: its own clients are served. */
	{
		struct ssq_queue_info qi[2];

		CHECK(ssq_client_list(c, qi, 2) == 2,
		      "LIST while a tenant is stopped: %s", ssq_client_error(c));
	}
	kill(tp[1], SIGCONT);
out:
	/* All pipes closed first: the second child holds the first one's too. */
	for (i = 0; i < 2; i++) {
		if (wr[i] >= 0)
			close(wr[i]);
		if (rd[i] >= 0)
			close(rd[i]);
	}
	for (i = 0; i < 2; i++)
		if (kid[i] > 0)
			waitpid(kid[i], &st, 0);
	if (c)
		ssq_client_close(c);
	CHECK(t_ssqd_stop_ok(d, &st, sock), "ssqd exit status 0x%x", st);
	/* The tenants stopped as ssqd does: exit 0 (under ASan, no report). */
	CHECK(!cf_file_has(logf, "ended with status"), "a tenant's ssqd failed: see %s",
	      logf);
	others_refused();
	if (!test_failures) {
		unlink(logf);
		unlink(outf);
	}
	return test_exit("ctrl_tenant_status");
}
