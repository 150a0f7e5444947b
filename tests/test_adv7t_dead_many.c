/* SPDX-License-Identifier: MIT */
/*
 * Several tenants' ssqd found dead at once, none reapable (tenants.c,
 * ssqd_tenant_pass: killed by pidfd, the slot closing and dead, reaped
 * later): what held on integ11, pinned.
 *
 * This test, as root, starts ssqd --tenants uid --allow-gid 65534
 * --tenant-idle-ms 500 on the emulated device and counts its descriptors.
 * uids 60000..60002 each start their tenant's ssqd; the test seizes each
 * (PTRACE_SEIZE), kills it and holds its zombie (a ptraced zombie is its
 * tracer's to reap first: wait_consider_task, kernel/exit.c). Each uid
 * connects again: each is answered (served, or refused for now: its ssqd
 * failed), ssqd does not spin on the three unreapable ones, and --status
 * --json answers, listing all three as closing, "found dead and killed,
 * not reaped yet". Once the zombies are let go ssqd reaps all three and,
 * every client gone and every new tenant's ssqd exited idle, holds as many
 * descriptors as at its start (no pidfd, socket or parked connection
 * kept).
 * Needs root (the clients run as other uids; ptrace of ssqd's children).
 */
#define _GNU_SOURCE
#include <sys/wait.h>
#include "cluster_flow.h"

#define N    3u
#define UID0 60000u

static char sock[108], logf[128], outf[128];

int main(void)
{
	const char *const args[] = { "--data-mib",       "2",   "--sq-size",   "64",
		                     "--tenants",        "uid", "--allow-gid", "65534",
		                     "--tenant-idle-ms", "500", NULL };
	int ready[2], hold[N], hold2[N], st, up, base, fds = -1, held[N] = { 0 };
	pid_t d, h[N], h2[N], t[N];
	static char out[1 << 16];
	unsigned i, waited;
	char b;
	double cpu;

	t_need_ssqd();
	if (getuid() != 0)
		SKIP("not root: the clients run as other uids");
	signal(SIGPIPE, SIG_IGN);
	snprintf(outf, sizeof(outf), "/tmp/ssq-a7dead-%d.out", (int)getpid());
	d = t_tenants_ssqd("a7dead", sock, logf, args, &up);
	CHECK(up, "ssqd --tenants uid answered root");
	if (pipe(ready))
		return test_exit("adv7t_dead_many");
	base = t_proc_fds(d);
	for (i = 0; i < N; i++) {
		h[i] = t_tenant_holder(sock, UID0 + i, 65534, &hold[i], ready[1]);
		CHECK(t_byte_within(ready[0], 30000, &b) && !b, "uid %u's first client",
		      UID0 + i);
		held[i] = t_tenant_zombie_hold(logf, UID0 + i, &t[i]);
		CHECK(held[i], "uid %u's ssqd (pid %d) not seized and killed", UID0 + i,
		      (int)t[i]);
	}
	/* All closed first: each holder has the others' write ends too. */
	for (i = 0; i < N; i++)
		close(hold[i]);
	for (i = 0; i < N; i++)
		waitpid(h[i], &st, 0);

	/* Each uid again: its ssqd's socket dead, its zombie not reapable. */
	for (i = 0; i < N; i++) {
		h2[i] = t_tenant_holder(sock, UID0 + i, 65534, &hold2[i], ready[1]);
		b = -1;
		CHECK(t_byte_within(ready[0], 40000, &b) && (b == 0 || b == EAGAIN),
		      "uid %u's second client, its dead ssqd held: errno %d", UID0 + i,
		      b);
	}
	cpu = t_proc_cpu_s(d);
	sleep(2);
	cpu = t_proc_cpu_s(d) - cpu;
	printf("ssqd's CPU over 2 s with %u zombies held: %.2f s\n", N, cpu);
	CHECK(cpu < 1.0, "ssqd used %.2f s of CPU in 2 s: it spins", cpu);
	st = t_ssqd_status(sock, 1, outf, out, sizeof(out), NULL);
	printf("--status --json, %u dead held: %s", N, out);
	CHECK(st == 0 && t_occurs(out, "\"why\": \"found dead and killed, not reaped "
	                               "yet\", \"closing\": true") == N,
	      "--status --json: not %u tenants found dead, closing", N);

	/* Let them go: all reaped, then nothing of theirs kept. */
	t_tenant_zombies_go(t, held, N);
	CHECK(t_log_wait(logf, "found dead and killed, has exited", N, 30),
	      "ssqd did not reap all %u dead tenants' ssqd", N);
	for (i = 0; i < N; i++)
		close(hold2[i]);
	for (i = 0; i < N; i++)
		waitpid(h2[i], &st, 0);
	for (waited = 0; waited < 300; waited++) {
		fds = t_proc_fds(d);
		if (fds <= base) /* base may count root's first client, closing */
			break;
		usleep(100000);
	}
	printf("ssqd's descriptors: %d at start, %d after\n", base, fds);
	CHECK(fds <= base, "ssqd holds %d descriptors, %d at its start", fds, base);

	t_tenant_zombies_go(t, held, N);
	CHECK(t_ssqd_stop_ok(d, &st, sock), "ssqd exit status 0x%x", st);
	close(ready[0]);
	close(ready[1]);
	if (!test_failures) {
		unlink(logf);
		unlink(outf);
	}
	return test_exit("adv7t_dead_many");
}
