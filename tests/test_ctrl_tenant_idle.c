/* SPDX-License-Identifier: MIT */
/*
 * A tenant's ssqd with nothing to serve exits (--tenant-idle-ms;
 * tenants.c, tenant_idle.c), and no connection is lost to its exit:
 * ssqd --tenants uid --allow-gid 65534 on the emulated device.
 *  - idle 300 ms: uid 65534's client held open for 1.5 s keeps its
 *    tenant (no exit meanwhile, the client still answered); closed, the
 *    tenant's ssqd exits, ssqd's log saying so as no failure (no warning,
 *    no restart wait), its process gone; the next connection starts a new
 *    one and is served;
 *  - the race, idle 1 ms: uid 65534 connects, is answered and closes,
 *    again and again with waits of 0..30 ms, so that connections arrive
 *    just as the tenant asks to exit or is exiting: every one is served,
 *    and the tenant exits and starts again many times meanwhile; again
 *    with each ask held 5 ms after its count was taken (a test hook,
 *    $SSQD_TEST_TENANT_ASK_DELAY_MS), so that connections sent meanwhile
 *    meet an ask that does not count them: the parent says no, and they
 *    are served too.
 * Before: tenants' ssqds never exited (and ssqd had no --tenant-idle-ms).
 * Needs root (the tenant's client runs as uid 65534).
 */
#include <sys/stat.h>
#include <sys/wait.h>
#include "cluster_flow.h"

static char sock[108], logf[128];

/* Times @needle is in ssqd's log. */
static unsigned count(const char *needle)
{
	return t_log_count(logf, needle);
}

static unsigned exits(void)
{
	return count("tenant 65534: its ssqd (pid ");
}

/* The pid in the last "its ssqd is pid N" of uid 65534; -1: none. */
static pid_t last_tenant(void)
{
	return (pid_t)t_log_last_num(logf, "tenant uid 65534: its ssqd is pid ");
}

/*
 * As uid 65534, in a child: @n connections, each answered (a LIST) and
 * closed, @hold_ms held first, then up to @gap_ms (random) apart: how
 * many failed (their first error printed), 200 if it could not become
 * uid 65534.
 */
static int clients(unsigned n, unsigned hold_ms, unsigned gap_ms)
{
	struct t_uid_clients u = { .sock = sock,
		                   .uid = 65534,
		                   .gid = 65534,
		                   .n = n,
		                   .hold_ms = hold_ms,
		                   .gap_ms = gap_ms };

	return t_uid_clients(&u);
}

static pid_t start(const char *idle_ms, const char *ask_delay)
{
	const char *args[] = { "--device",
		               "emu",
		               "--socket",
		               sock,
		               "--hugepages=off",
		               "--data-mib",
		               "8",
		               "--sq-size",
		               "256",
		               "--tenants",
		               "uid",
		               "--allow-gid",
		               "65534",
		               "--tenant-idle-ms",
		               idle_ms,
		               NULL };
	struct ssq_client *c;
	pid_t d = t_ssqd_exec(args, ask_delay ? "SSQD_TEST_TENANT_ASK_DELAY_MS" : NULL,
	                      ask_delay, logf, 0);

	c = t_ssqd_connect(sock, d);
	CHECK(c != NULL, "connect to ssqd --tenants uid --tenant-idle-ms %s", idle_ms);
	if (c)
		ssq_client_close(c);
	chmod(sock, 0666);
	return d;
}

static void stop(pid_t d)
{
	int st;

	CHECK(t_ssqd_stop_ok(d, &st, sock), "ssqd exit status 0x%x", st);
	CHECK(!count("has exited (status") && !count("not started again"),
	      "ssqd took a tenant's idle exit for a failure");
	CHECK(!count("ended with status"), "a tenant's ssqd ended badly at the stop");
}

static void idle_exit(void)
{
	double t0;
	pid_t d = start("300", NULL), tp;
	int rc;

	rc = clients(1, 1500, 0);
	CHECK(rc == 0, "a client held 1.5 s failed (%d)", rc);
	CHECK(exits() == 0, "the tenant exited while its client was connected");
	tp = last_tenant();
	for (t0 = now_s(); exits() < 1 && now_s() - t0 < 20;)
		usleep(20000);
	CHECK(exits() == 1, "the idle tenant did not exit within 20 s (%u exits)",
	      exits());
	CHECK(count("exited, idle") == 1, "ssqd's log does not say it exited idle");
	for (t0 = now_s(); tp > 0 && kill(tp, 0) == 0 && now_s() - t0 < 10;)
		usleep(20000);
	CHECK(tp > 0 && kill(tp, 0) < 0 && errno == ESRCH,
	      "the idle tenant's ssqd (pid %d) is still there (or not reaped)", (int)tp);
	rc = clients(1, 0, 0);
	CHECK(rc == 0, "the connection after the idle exit failed (%d)", rc);
	CHECK(count("tenant uid 65534: its ssqd is pid ") == 2, "%u tenant starts, not 2",
	      count("tenant uid 65534: its ssqd is pid "));
	stop(d);
}

/*
 * @ask_delay: the tenant's ask held that long after its count was taken
 * (a test hook, tenant_idle.c), so that connections sent meanwhile meet
 * an ask that does not count them; NULL: as it runs.
 */
static void race(const char *ask_delay)
{
	pid_t d = start("1", ask_delay);
	unsigned n = 100, e, s, no;
	int rc;

	rc = clients(n, 0, 30);
	e = count("exited, idle");
	s = count("tenant uid 65534: its ssqd is pid ");
	no = count("asked to exit idle with");
	printf("%u connections with --tenant-idle-ms 1, asks held %s ms: %d failed; %u "
	       "tenant starts, %u idle exits, %u asks to exit refused (a connection on "
	       "its way)\n",
	       n, ask_delay ? ask_delay : "0", rc, s, e, no);
	if (ask_delay)
		CHECK(no >= 1, "no ask to exit met a connection on its way: the race "
		               "was not run");
	CHECK(rc == 0, "%d of %u connections failed around the tenant's idle exits", rc,
	      n);
	/*
	 * The race was run: the tenant went and came back (how often is the
	 * machine's timing: 9 to 45 seen, fewer with asks held, whose
	 * refusals show the race instead).
	 */
	CHECK(e >= (ask_delay ? 1u : 3u),
	      "only %u idle exits in %u connections: the race was not run", e, n);
	stop(d);
}

int main(void)
{
	t_need_ssqd();
	if (getuid() != 0)
		SKIP("not root: the tenant's client runs as uid 65534");
	snprintf(sock, sizeof(sock), "/tmp/ssq-tidle-%d.sock", (int)getpid());
	snprintf(logf, sizeof(logf), "/tmp/ssq-tidle-%d.log", (int)getpid());
	signal(SIGPIPE, SIG_IGN);
	idle_exit();
	race(NULL);
	race("5");
	if (!test_failures)
		unlink(logf);
	return test_exit("ctrl_tenant_idle");
}
