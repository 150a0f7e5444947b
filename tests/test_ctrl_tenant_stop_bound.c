/* SPDX-License-Identifier: MIT */
/*
 * ssqd's stop waits for its tenants' ssqd within one bound, whatever they
 * do (tenants.c, ssqd_tenants_stop): SIGTERM to all, up to 10 s for all
 * together, SIGKILL to the rest, then a short wait to reap them; one
 * still not reapable is left (to init, once ssqd is gone), never waited
 * for without end.
 *
 * A tenant's ssqd that neither stops at SIGTERM nor can be reaped after
 * SIGKILL: one a debugger holds. This test, as root, starts ssqd --tenants
 * uid --allow-gid 65534 on the emulated device; uid 60000's client starts
 * its tenant's ssqd (T), which the test seizes (PTRACE_SEIZE) and never
 * lets run again: ssqd's SIGTERM stops it (signal-delivery-stop, its
 * tracer's to resume), and after SIGKILL its zombie is the tracer's to
 * reap first (wait_consider_task, kernel/exit.c); uid 60001's (S) is
 * stopped (SIGSTOP). ssqd is stopped (SIGTERM): it must exit, status 0,
 * within 40 s (one 10 s bound for both, plus 2 s for T's reaping), its log
 * saying both were killed and T left unreaped.
 * Before (a blocking waitpid after SIGKILL): ssqd waited until the test
 * let T's zombie go: "ssqd still there 40 s after its SIGTERM".
 * Needs root (the client runs as another uid; ptrace of ssqd's child).
 */
#define _GNU_SOURCE
#include <poll.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include "cluster_flow.h"

#define UID 60000u

static char sock[108], logf[128];

int main(void)
{
	const char *const args[] = { "--data-mib",  "2",         "--sq-size",
		                     "64",          "--tenants", "uid",
		                     "--allow-gid", "65534",     NULL };
	int ready[2], hold, hold_s, st = 0, up, seized, gone = 0;
	pid_t d, h, hs, t, sp;
	double t0, secs = 0;
	char b = -1;

	t_need_ssqd();
	if (getuid() != 0)
		SKIP("not root: the clients run as other uids");
	signal(SIGPIPE, SIG_IGN);
	d = t_tenants_ssqd("tstopbound", sock, logf, args, &up);
	CHECK(up, "ssqd --tenants uid answered root");
	if (pipe(ready))
		return test_exit("ctrl_tenant_stop_bound");
	h = t_tenant_holder(sock, UID, 65534, &hold, ready[1]);
	CHECK(read(ready[0], &b, 1) == 1 && !b, "uid %u's client: %d", UID, b);
	t = (pid_t)t_log_last_num(logf, "tenant uid 60000: its ssqd is pid ");
	hs = t_tenant_holder(sock, UID + 1, 65534, &hold_s, ready[1]);
	CHECK(read(ready[0], &b, 1) == 1 && !b, "uid %u's client: %d", UID + 1, b);
	sp = (pid_t)t_log_last_num(logf, "tenant uid 60001: its ssqd is pid ");
	/* The second holder has the first one's hold pipe too: both closed first. */
	close(hold);
	close(hold_s);
	waitpid(h, &st, 0);
	waitpid(hs, &st, 0);
	CHECK(sp > 0 && !kill(sp, SIGSTOP), "uid %u's ssqd not stopped", UID + 1);
	seized = t > 0 && ptrace(PTRACE_SEIZE, t, NULL, NULL) == 0;
	CHECK(seized, "PTRACE_SEIZE of uid %u's ssqd (pid %d): %s", UID, (int)t,
	      strerror(errno));

	kill(d, SIGTERM);
	t0 = now_s();
	while (!(gone = waitpid(d, &st, WNOHANG) == d) && now_s() - t0 < 40)
		usleep(50000);
	secs = now_s() - t0;
	printf("ssqd %s %.1f s after its SIGTERM, its tenant's ssqd (pid %d) held\n",
	       gone ? "exited" : "still there", secs, (int)t);
	CHECK(gone,
	      "ssqd still there 40 s after its SIGTERM: it waits for its "
	      "tenant's ssqd (pid %d), held by a tracer",
	      (int)t);
	if (seized)
		waitpid(t, NULL, __WALL); /* T's zombie (or its stop) let go */
	if (!gone) {
		/* Let ssqd finish: T killed, its zombie reaped above. */
		kill(t, SIGKILL);
		waitpid(t, NULL, __WALL);
		waitpid(d, &st, 0);
	}
	CHECK(WIFEXITED(st) && !WEXITSTATUS(st), "ssqd exit status 0x%x", st);
	CHECK(!gone || t_log_count(logf, "did not stop: killed") == 2,
	      "ssqd's log does not say it killed both tenants' ssqd");
	CHECK(!gone || t_log_count(logf, "not reapable"),
	      "ssqd's log does not say it left its tenant's ssqd unreaped");
	t_ssqd_gone(sock);
	close(ready[0]);
	close(ready[1]);
	if (!test_failures)
		unlink(logf);
	return test_exit("ctrl_tenant_stop_bound");
}
