/* SPDX-License-Identifier: MIT */
/*
 * Adversarial review h-adv5t (branch h-tenslot): the restart wait
 * (tenant_backoff.c) doubles with each failure after a short run and
 * "starts over once a run lasted SSQD_TENANT_HEALTHY_MS (10 s)". Runs
 * that end well - an idle exit, now - are not counted at all: a tenant
 * whose runs are short (a client now and then, --tenant-idle-ms) keeps
 * the wait its failures of long ago built up, and its next crash after
 * any number of good runs waits that much doubled again, refusing its uid
 * -EAGAIN for seconds instead of 100 ms.
 *
 * ssqd --tenants uid --allow-gid 65534 --tenant-idle-ms 200: uid 65534's
 * tenant is killed right after each of 5 starts (waits 100..1600 ms);
 * then 4 runs end well (idle exits); then it is killed once more: the
 * next connection is told the wait - at most 200 ms expected.
 * Needs root (the client runs as uid 65534).
 */
#include <sys/wait.h>
#include "cluster_flow.h"

static char sock[108], logf[128];
static char said[512]; /* what ssqd said to the last client() */

static unsigned count(const char *needle)
{
	return t_log_count(logf, needle);
}

/* The pid in the last "tenant uid 65534: its ssqd is pid N"; -1: none. */
static pid_t last_tenant(void)
{
	return (pid_t)t_log_last_num(logf, "tenant uid 65534: its ssqd is pid ");
}

/*
 * uid 65534 connects, lists, closes, in a child: 0 if served, else its
 * errno; what ssqd said in said[].
 */
static int client(void)
{
	struct t_uid_clients u = { .sock = sock, .uid = 65534, .gid = 65534, .quiet = 1 };
	int rc = t_uid_clients(&u);

	snprintf(said, sizeof(said), "%s", u.said);
	return rc && u.first_err ? u.first_err : rc;
}

/* Connect until served (a restart wait meanwhile), 20 s at most: 0 if served. */
static int served(void)
{
	double t0;
	int rc;

	for (t0 = now_s(); (rc = client()) != 0 && now_s() - t0 < 20;)
		usleep(50000);
	return rc;
}

/* The tenant's ssqd started last: killed, and its reap seen in the log. */
static void crash(void)
{
	unsigned n = count("has exited (status");
	pid_t t = last_tenant();
	double t0;

	if (t > 0)
		kill(t, SIGKILL);
	for (t0 = now_s(); count("has exited (status") == n && now_s() - t0 < 10;)
		usleep(20000);
}

int main(void)
{
	const char *const args[] = { "--data-mib",  "2",     "--tenants",        "uid",
		                     "--allow-gid", "65534", "--tenant-idle-ms", "200",
		                     NULL };
	unsigned i, exits, wait_ms = 0;
	const char *in;
	double t0;
	int st, rc;
	int up;
	pid_t d;

	t_need_ssqd();
	if (getuid() != 0)
		SKIP("not root: the tenant's client runs as uid 65534");
	d = t_tenants_ssqd("adv5b", sock, logf, args, &up);
	CHECK(up, "ssqd --tenants uid --allow-gid 65534 answered root");
	/* 5 failures after short runs: waits of 100, 200, 400, 800, 1600 ms. */
	for (i = 0; i < 5; i++) {
		CHECK(served() == 0, "start %u of uid 65534's tenant", i);
		crash();
	}
	/* 4 runs that end well (idle exits). */
	for (i = 0; i < 4; i++) {
		exits = count("exited, idle");
		CHECK(served() == 0, "good run %u of uid 65534's tenant", i);
		for (t0 = now_s(); count("exited, idle") == exits && now_s() - t0 < 10;)
			usleep(20000);
		CHECK(count("exited, idle") > exits, "good run %u ended idle", i);
	}
	/* One crash after a short run, all that followed the old ones good. */
	CHECK(served() == 0, "uid 65534's tenant after its good runs");
	crash();
	said[0] = 0;
	rc = client();
	in = strstr(said, "at a connection in ");
	if (in)
		wait_ms = (unsigned)atoi(in + strlen("at a connection in "));
	printf("after 5 old failures, 4 good runs and one crash: %d '%s'\n", rc, said);
	CHECK(!in || wait_ms <= 200,
	      "one crash after 4 good runs waits %u ms: the old failures' wait (1600 "
	      "ms) doubled, as if no run had ended well since",
	      wait_ms);
	CHECK(t_ssqd_stop_ok(d, &st, sock), "ssqd exit status 0x%x", st);
	if (!test_failures)
		unlink(logf);
	return test_exit("ctrl_tenant_backoff_good_runs");
}
