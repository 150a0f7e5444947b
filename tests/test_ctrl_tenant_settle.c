/* SPDX-License-Identifier: MIT */
/*
 * ssqd's loop never waits on a tenant's ssqd that is slow to exit idle
 * (tenants.c): a connection of its uid that needs its closing slot (every
 * other slot taken) is parked, and handed to the new ssqd started in that
 * slot once the old one is gone.
 *
 * ssqd --tenants uid --allow-gid 65534 --tenant-idle-ms 300 on the emulated
 * device, uids 60000..60014 (group 65534) each holding a client: 15
 * tenants, one slot left, uid 65534's. Each tenant's ssqd, once let exit
 * idle, is held before it exits ($SSQD_TEST_TENANT_EXIT_DELAY_MS, a test
 * hook: tenant_idle.c). uid 65534 connects and closes; its ssqd exits idle
 * and is held; uid 65534 connects again (A) and waits for that slot:
 *  - wait: ssqd's wait for the old ssqd made long ($SSQD_TEST_TENANT_
 *    CLOSING_WAIT_MS, tenants.c): root's client (B, served by ssqd itself)
 *    connects and is answered while A is still unanswered and the old
 *    tenant's ssqd still there - by order, not by time; three more of
 *    uid 65534 wait with A, a fifth is refused (EAGAIN, "connect again");
 *    then the old one is ended (SIGTERM), reaped as an idle exit, and the
 *    four are answered by the new ssqd of its slot;
 *  - kill: the default wait (200 ms): the old ssqd is killed (the log
 *    says so, no failure counted) and A is answered by the new one;
 *  - stop: ssqd stopped while A waits: A is told so (ESHUTDOWN), not
 *    dropped.
 * Before: ssqd waited in its loop (10 ms naps for 200 ms, then SIGKILL and
 * a blocking waitpid): B was answered only after the old ssqd was killed.
 * Needs root (the clients run as other uids).
 */
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "cluster_flow.h"

#define HOLDERS 15u
#define UID0    60000u
/* Connections that may wait for one closing slot (SSQD_TENANT_PARKED). */
#define SSQD_PARKED 4u

static char sock[108], logf[128];

static unsigned count(const char *needle)
{
	return t_log_count(logf, needle);
}

/* Wait up to 30 s for @n of @needle (or one @alt, unless NULL) in ssqd's log. */
static int log_wait(const char *needle, unsigned n, const char *alt)
{
	double t0 = now_s();

	while (count(needle) < n && !(alt && count(alt)) && now_s() - t0 < 30)
		usleep(20000);
	return count(needle) >= n || (alt && count(alt));
}

/* Is @pid there, and not a zombie (killed, not reaped yet)? */
static int running(pid_t pid)
{
	char path[64], st = 'X';
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%*d (%*[^)]) %c", &st) != 1)
		st = 'X';
	fclose(f);
	return st != 'Z' && st != 'X';
}

/* @fd readable now? */
static int readable(int fd)
{
	struct pollfd p = { fd, POLLIN, 0 };

	return poll(&p, 1, 0) > 0;
}

/*
 * @wait_long: ssqd's wait for the old ssqd made long (the wait; else the
 * kill); @stop: ssqd stopped while A waits (A told why, ESHUTDOWN).
 */
static void run(int wait_long, int stop)
{
	const char *args[] = { "--device",
		               "emu",
		               "--socket",
		               sock,
		               "--hugepages=off",
		               "--data-mib",
		               "2",
		               "--sq-size",
		               "64",
		               "--tenants",
		               "uid",
		               "--allow-gid",
		               "65534",
		               "--tenant-idle-ms",
		               "300",
		               NULL };
	const char *how = stop ? "stop" : wait_long ? "wait" : "kill";
	struct ssq_queue_info info[SSQ_MAX_QUEUES];
	int hold[HOLDERS], ready[2], a_ready[2], h_hold, a_hold[SSQD_PARKED], st, rc,
	    ok = 0;
	pid_t pid[HOLDERS], d, h, a[SSQD_PARKED], old;
	struct ssq_client *c;
	unsigned i, na = 1;
	char b;

	d = t_ssqd_exec(args, wait_long ? "SSQD_TEST_TENANT_CLOSING_WAIT_MS" : NULL,
	                wait_long ? "600000" : NULL, logf, 0);
	c = t_ssqd_connect(sock, d);
	CHECK(c != NULL, "%s: connect to ssqd --tenants uid", how);
	if (c)
		ssq_client_close(c);
	chmod(sock, 0666);
	if (pipe(ready) || pipe(a_ready))
		return;
	for (i = 0; i < HOLDERS; i++) {
		pid[i] = t_tenant_holder(sock, UID0 + i, 65534, &hold[i], ready[1]);
		if (read(ready[0], &b, 1) == 1 && !b)
			ok++;
	}
	CHECK(ok == (int)HOLDERS, "%s: %d of %u holders connected", how, ok, HOLDERS);

	/* uid 65534's ssqd, started by a client, then idle: it exits, held. */
	h = t_tenant_holder(sock, 65534, 65534, &h_hold, ready[1]);
	CHECK(read(ready[0], &b, 1) == 1 && !b, "%s: uid 65534's first client failed",
	      how);
	old = (pid_t)t_log_last_num(logf, "tenant uid 65534: its ssqd is pid ");
	close(h_hold);
	waitpid(h, &st, 0);
	CHECK(log_wait("(--tenant-idle-ms): exiting", 1, NULL),
	      "%s: uid 65534's ssqd did not exit idle within 30 s", how);

	/* A: uid 65534 again, with only its closing slot left. */
	a[0] = t_tenant_holder(sock, 65534, 65534, &a_hold[0], a_ready[1]);
	CHECK(log_wait("to finish exiting idle", 1, "exiting idle took over"),
	      "%s: ssqd never took uid 65534's connection (30 s)", how);
	if (stop) {
		/* Not dropped silently: told ssqd stops, before it closes. */
		CHECK(t_ssqd_stop_ok(d, &st, sock), "stop: ssqd exit status 0x%x", st);
		CHECK(read(a_ready[0], &b, 1) == 1 && b == ESHUTDOWN,
		      "stop: uid 65534's parked connection got errno %d, not "
		      "ESHUTDOWN",
		      b);
		printf("stop: uid 65534's parked connection refused, errno %d\n", b);
		close(a_hold[0]);
		waitpid(a[0], &st, 0);
		for (i = 0; i < HOLDERS; i++)
			close(hold[i]);
		for (i = 0; i < HOLDERS; i++)
			waitpid(pid[i], &st, 0);
		CHECK(!running(old), "stop: the old ssqd (pid %d) is still there",
		      (int)old);
		goto out;
	}
	if (wait_long) {
		/* B: served by ssqd itself, while A waits. */
		c = NULL;
		rc = ssq_client_connect(sock, &c);
		if (!rc) {
			rc = ssq_client_list(c, info, SSQ_MAX_QUEUES);
			rc = rc > 0 ? 0 : rc ? rc : -ENODATA;
		}
		CHECK(rc == 0, "wait: root's client, beside a parked one: %d %s", rc,
		      c ? ssq_client_error(c) : ssq_client_strerror_last());
		if (c)
			ssq_client_close(c);
		printf("wait: root's client answered; then uid 65534's waiting one "
		       "%s, its old ssqd (pid %d) %s\n",
		       readable(a_ready[0]) ? "already answered" : "still waiting",
		       (int)old, running(old) ? "still there" : "gone");
		CHECK(!readable(a_ready[0]) && running(old),
		      "wait: root's client was answered only after uid 65534's "
		      "connection (its old ssqd, pid %d, %s): ssqd's loop waited on "
		      "the closing tenant",
		      (int)old, running(old) ? "there" : "killed");
		/* More wait with A, up to SSQD_PARKED; one more is refused. */
		for (; na < SSQD_PARKED; na++) {
			a[na] =
			    t_tenant_holder(sock, 65534, 65534, &a_hold[na], a_ready[1]);
			CHECK(log_wait("to finish exiting idle", na + 1, NULL),
			      "wait: connection %u of uid 65534 not parked (30 s)",
			      na + 1);
		}
		h = t_tenant_holder(sock, 65534, 65534, &h_hold, ready[1]);
		CHECK(read(ready[0], &b, 1) == 1 && b == EAGAIN,
		      "wait: connection %u of uid 65534 got errno %d, not EAGAIN (the "
		      "slot's waiting room full)",
		      SSQD_PARKED + 1, b);
		close(h_hold);
		waitpid(h, &st, 0);
		CHECK(!readable(a_ready[0]) && running(old),
		      "wait: a parked connection was answered before the old ssqd "
		      "ended");
		kill(old, SIGTERM);
	}
	for (i = 0; i < na; i++)
		CHECK(read(a_ready[0], &b, 1) == 1 && !b,
		      "%s: uid 65534's parked connection %u failed (errno %d)", how,
		      i + 1, b);
	printf("%s: uid 65534's %u parked connection(s) answered; log: %u parked, %u "
	       "killed, "
	       "%u idle exits\n",
	       how, na, count("to finish exiting idle"), count("exiting idle took over"),
	       count("exited, idle"));
	CHECK(count("tenant uid 65534: its ssqd is pid ") == 2,
	      "%s: %u starts of uid 65534's ssqd, not 2", how,
	      count("tenant uid 65534: its ssqd is pid "));
	CHECK(count("exiting idle took over") == (wait_long ? 0u : 1u),
	      "%s: the old ssqd was%s killed", how, wait_long ? "" : " not");
	/* Its end, exit or kill, is no failure: no restart wait for A. */
	CHECK(count("exited, idle") == (wait_long ? 1u : 0u) &&
	          !count("has exited (status") && !count("not started again"),
	      "%s: the old ssqd's end was taken for a failure", how);
	CHECK(!running(old), "%s: the old ssqd (pid %d) is still there", how, (int)old);
	/* Each has the earlier ones' hold pipes too: all closed, then reaped. */
	for (i = 0; i < na; i++)
		close(a_hold[i]);
	for (i = 0; i < na; i++)
		waitpid(a[i], &st, 0);
	for (i = 0; i < HOLDERS; i++)
		close(hold[i]);
	for (i = 0; i < HOLDERS; i++)
		waitpid(pid[i], &st, 0);
	CHECK(t_ssqd_stop_ok(d, &st, sock), "%s: ssqd exit status 0x%x", how, st);
out:
	close(ready[0]);
	close(ready[1]);
	close(a_ready[0]);
	close(a_ready[1]);
}

int main(void)
{
	t_need_ssqd();
	if (getuid() != 0)
		SKIP("not root: the clients run as other uids");
	snprintf(sock, sizeof(sock), "/tmp/ssq-tsettle-%d.sock", (int)getpid());
	snprintf(logf, sizeof(logf), "/tmp/ssq-tsettle-%d.log", (int)getpid());
	signal(SIGPIPE, SIG_IGN);
	/* Every tenant's ssqd (they inherit ssqd's environment). */
	setenv("SSQD_TEST_TENANT_EXIT_DELAY_MS", "600000", 1);
	run(1, 0);
	if (!test_failures)
		run(0, 0);
	if (!test_failures)
		run(1, 1);
	if (!test_failures)
		unlink(logf);
	return test_exit("ctrl_tenant_settle");
}
