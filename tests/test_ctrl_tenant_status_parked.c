/* SPDX-License-Identifier: MIT */
/*
 * ssqd --status [--json] shows a tenant's ssqd that is exiting idle and
 * how many connections of its uid are parked waiting for it to be gone
 * (tenant_status.c, tenant_park.c): "closing" and "parked" in the JSON,
 * the other fields as before.
 *
 * ssqd --tenants uid --allow-gid 65534 --tenant-idle-ms 300 on the emulated
 * device, uids 60000..60014 each holding a client (15 tenants, one slot
 * left); every tenant's ssqd held after it was let exit idle
 * ($SSQD_TEST_TENANT_EXIT_DELAY_MS) and ssqd's wait for it made long
 * ($SSQD_TEST_TENANT_CLOSING_WAIT_MS; test hooks, tenant_idle.c and
 * tenant_park.c). uid 65534 connects and closes; its ssqd exits idle,
 * held; uid 65534 connects twice more: both parked. --status then lists
 * that ssqd as exiting idle with 2 connections waiting, the 15 others
 * answering with none; once the old ssqd ends (SIGTERM) both are answered
 * and --status lists uid 65534's new ssqd, answering, none waiting.
 * Before: --status left a closing tenant's ssqd out, and said nothing of
 * what waited for it.
 * Needs root (the clients run as other uids).
 */
#include <poll.h>
#include <sys/wait.h>
#include "cluster_flow.h"

#define HOLDERS 15u
#define UID0    60000u
#define PARK    2u

static char sock[108], logf[128], outf[128];

int main(void)
{
	const char *const args[] = { "--data-mib",       "2",   "--sq-size",   "64",
		                     "--tenants",        "uid", "--allow-gid", "65534",
		                     "--tenant-idle-ms", "300", NULL };
	int hold[HOLDERS], ready[2], a_ready[2], a_hold[PARK], st, up, ok, served, exited;
	pid_t pid[HOLDERS], d, a[PARK], old, fresh;
	static char out[1 << 16];
	char want[256], b;
	unsigned i;

	t_need_ssqd();
	if (getuid() != 0)
		SKIP("not root: the clients run as other uids");
	signal(SIGPIPE, SIG_IGN);
	snprintf(outf, sizeof(outf), "/tmp/ssq-tstpark-%d.out", (int)getpid());
	/* Every tenant's ssqd (they inherit ssqd's environment): a slow exit. */
	setenv("SSQD_TEST_TENANT_EXIT_DELAY_MS", "600000", 1);
	setenv("SSQD_TEST_TENANT_CLOSING_WAIT_MS", "600000", 1);
	d = t_tenants_ssqd("tstpark", sock, logf, args, &up);
	CHECK(up, "ssqd --tenants uid answered root");
	if (pipe(ready) || pipe(a_ready))
		return test_exit("ctrl_tenant_status_parked");
	ok = (int)t_tenant_holders(sock, UID0, 65534, HOLDERS, pid, hold, ready);
	CHECK(ok == (int)HOLDERS, "%d of %u holders connected", ok, HOLDERS);

	/* uid 65534's ssqd, started by a client, then idle: it exits, held. */
	old = t_tenant_idle_exit(sock, logf, 65534, 65534, ready, &served, &exited);
	CHECK(served, "uid 65534's first client failed");
	CHECK(exited, "uid 65534's ssqd did not exit idle within 30 s");
	for (i = 0; i < PARK; i++) {
		a[i] = t_tenant_holder(sock, 65534, 65534, &a_hold[i], a_ready[1]);
		CHECK(t_log_wait(logf, "to finish exiting idle", i + 1, 30),
		      "connection %u of uid 65534 not parked (30 s)", i + 1);
	}

	st = t_ssqd_status(sock, 0, outf, out, sizeof(out), NULL);
	printf("--status, %u parked:\n%s", PARK, out);
	snprintf(want, sizeof(want),
	         "tenant uid 65534: ssqd pid %d: exiting idle, %u connection(s) of its "
	         "uid waiting for it to be gone\n",
	         (int)old, PARK);
	CHECK(st == 0 && strstr(out, want), "--status lacks '%s'", want);
	st = t_ssqd_status(sock, 1, outf, out, sizeof(out), NULL);
	printf("--status --json, %u parked: %s", PARK, out);
	snprintf(want, sizeof(want),
	         "{\"kind\": \"uid\", \"id\": 65534, \"pid\": %d, \"answering\": false, "
	         "\"why\": \"exiting idle\", \"closing\": true, \"parked\": %u}",
	         (int)old, PARK);
	CHECK(st == 0 && strstr(out, want), "--status --json lacks '%s'", want);
	CHECK(t_occurs(out, "\"answering\": true") == HOLDERS &&
	          t_occurs(out, "\"closing\": false, \"parked\": 0}") == HOLDERS,
	      "--status --json: not %u tenants answering with none waiting", HOLDERS);
	CHECK(t_log_count(logf, "tenant uid 65534: its ssqd is pid ") == 1 &&
	          !t_log_count(logf, "exiting idle took over"),
	      "uid 65534's old ssqd was replaced before --status asked");

	/* The old one ends: both are answered by the new ssqd of its slot. */
	kill(old, SIGTERM);
	for (i = 0; i < PARK; i++)
		CHECK(read(a_ready[0], &b, 1) == 1 && !b,
		      "uid 65534's parked connection %u failed (errno %d)", i + 1, b);
	fresh = (pid_t)t_log_last_num(logf, "tenant uid 65534: its ssqd is pid ");
	CHECK(fresh > 0 && fresh != old, "no new ssqd for uid 65534");
	st = t_ssqd_status(sock, 1, outf, out, sizeof(out), NULL);
	printf("--status --json, handed over: %s", out);
	snprintf(want, sizeof(want),
	         "{\"kind\": \"uid\", \"id\": 65534, \"pid\": %d, \"answering\": true",
	         (int)fresh);
	CHECK(st == 0 && strstr(out, want), "--status --json lacks '%s'", want);
	CHECK(t_occurs(out, "\"closing\": false, \"parked\": 0}") == HOLDERS + 1 &&
	          !strstr(out, "\"closing\": true"),
	      "--status --json: a tenant still closing or waited for");

	for (i = 0; i < PARK; i++)
		close(a_hold[i]);
	for (i = 0; i < PARK; i++)
		waitpid(a[i], &st, 0);
	for (i = 0; i < HOLDERS; i++)
		close(hold[i]);
	for (i = 0; i < HOLDERS; i++)
		waitpid(pid[i], &st, 0);
	CHECK(t_ssqd_stop_ok(d, &st, sock), "ssqd exit status 0x%x", st);
	close(ready[0]);
	close(ready[1]);
	close(a_ready[0]);
	close(a_ready[1]);
	if (!test_failures) {
		unlink(logf);
		unlink(outf);
	}
	return test_exit("ctrl_tenant_status_parked");
}
