/* SPDX-License-Identifier: MIT */
/*
 * ssqd's stop tells the end of a tenant's ssqd found dead, and still not
 * reapable, once (tenants.c, ssqd_tenants_stop): it was killed when it
 * was found dead (ssqd_tenant_pass) and its failure told then; at the stop
 * there is nothing to kill, only to say it is left to be reaped.
 *
 * This test, as root, starts ssqd --tenants uid --allow-gid 65534 on the
 * emulated device. uid 60000's client starts its tenant's ssqd (T); the
 * test seizes T (PTRACE_SEIZE), kills it and holds its zombie (a ptraced
 * zombie is its tracer's to reap first: wait_consider_task, kernel/exit.c).
 * uid 60000 connects again: T is found dead. Then ssqd is stopped with the
 * zombie still held: its log must gain one line about T (pid T), not two.
 * Before: "tenant 60000's ssqd (pid T) did not stop: killed", then
 * "tenant 60000's ssqd (pid T), killed, is not reapable after 2000 ms
 * (ptraced?): left" - a kill of a process dead for long, told as new.
 * Needs root (the clients run as other uids; ptrace of ssqd's child).
 */
#define _GNU_SOURCE
#include <sys/ptrace.h>
#include <sys/wait.h>
#include "cluster_flow.h"

#define UID     60000u
#define STARTED "tenant uid 60000: its ssqd is pid "

static char sock[108], logf[128];

int main(void)
{
	const char *const args[] = { "--data-mib",  "2",         "--sq-size",
		                     "64",          "--tenants", "uid",
		                     "--allow-gid", "65534",     NULL };
	int ready[2], hold, hold2, st, up, held = 0;
	unsigned before, after;
	pid_t d, h, h2, t;
	char b = -1, pidtag[32];
	siginfo_t si;

	t_need_ssqd();
	if (getuid() != 0)
		SKIP("not root: the clients run as other uids");
	signal(SIGPIPE, SIG_IGN);
	d = t_tenants_ssqd("tstopdead", sock, logf, args, &up);
	CHECK(up, "ssqd --tenants uid answered root");
	if (pipe(ready))
		return test_exit("ctrl_tenant_stop_dead_once");
	h = t_tenant_holder(sock, UID, 65534, &hold, ready[1]);
	CHECK(t_byte_within(ready[0], 60000, &b) && !b, "uid %u's first client: %d", UID,
	      b);
	t = (pid_t)t_log_last_num(logf, STARTED);
	if (t > 0 && ptrace(PTRACE_SEIZE, t, NULL, NULL) == 0) {
		kill(t, SIGKILL);
		memset(&si, 0, sizeof(si));
		held = waitid(P_PID, (id_t)t, &si, WEXITED | WNOWAIT | __WALL) == 0;
	}
	CHECK(held, "uid %u's ssqd (pid %d) not seized and killed", UID, (int)t);
	close(hold);
	waitpid(h, &st, 0);
	if (!held)
		goto out;

	/* Found dead at a send: killed, its failure told. */
	h2 = t_tenant_holder(sock, UID, 65534, &hold2, ready[1]);
	b = -1;
	CHECK(t_byte_within(ready[0], 60000, &b) && (b == 0 || b == EAGAIN),
	      "uid %u's second client, its dead ssqd held: errno %d", UID, b);
	close(hold2);
	waitpid(h2, &st, 0);

	/* Stopped with the zombie still held: one line about it. */
	snprintf(pidtag, sizeof(pidtag), "(pid %d)", (int)t);
	before = t_log_count(logf, pidtag);
	CHECK(t_ssqd_stop_ok(d, &st, sock), "ssqd exit status 0x%x", st);
	d = -1;
	after = t_log_count(logf, pidtag);
	printf("lines naming uid %u's dead ssqd %s: %u before the stop, %u after\n", UID,
	       pidtag, before, after);
	CHECK(after == before + 1,
	      "ssqd's stop logged %u lines about its dead tenant's ssqd %s, not one",
	      after - before, pidtag);
	CHECK(t_log_count(logf, "did not stop: killed") == 0,
	      "ssqd's stop says it killed a tenant's ssqd found dead long before");
out:
	if (held)
		waitpid(t, &st, __WALL);
	if (d > 0)
		CHECK(t_ssqd_stop_ok(d, &st, sock), "ssqd exit status 0x%x", st);
	close(ready[0]);
	close(ready[1]);
	if (!test_failures)
		unlink(logf);
	return test_exit("ctrl_tenant_stop_dead_once");
}
