/* SPDX-License-Identifier: MIT */
/*
 * Zombies held under ptrace must not keep any uid out (tenant_zombie.c):
 * a tenant's ssqd that exited but is not reapable yet leaves its slot at
 * once, its pid kept to be reaped later.
 *
 * How a dead child stays unreapable: while a process is ptraced, its
 * zombie is its tracer's to reap first (wait_consider_task, kernel/exit.c;
 * tests/test_ctrl_tenant_dead_send.c holds one so). A dead slot cannot be
 * killed to free it, so the fix for another uid's closing slot
 * (tests/test_adv7t_closing_hog.c) skips it.
 *
 * This test, as root, starts ssqd --tenants uid --allow-gid 65534 on the
 * emulated device. uids 60000..60015 each start their tenant's ssqd (all
 * 16 slots, SSQD_MAX_TENANTS); the test seizes each (PTRACE_SEIZE), kills
 * it and holds its zombie, as whoever may ptrace them could. (One uid can
 * do the same alone, one slot per restart, over its backoff's waits:
 * about 100 s to fill 16; 16 uids take no waits.) Then uid 60016, which
 * has no slot, connects: it must be served, while all 16 zombies are
 * still held. Once they are let go, ssqd reaps all 16 (its log says how
 * each ended) and its stop is clean.
 * Before: "holder uid 60016: -87 ... ssqd serves 16 tenants besides its
 * own, the most it may" (EUSERS), until the tracer let a zombie go.
 * Needs root (the clients run as other uids; ptrace of ssqd's children).
 */
#define _GNU_SOURCE
#include <sys/wait.h>
#include "cluster_flow.h"

#define N    16u /* SSQD_MAX_TENANTS */
#define UID0 60000u

static char sock[108], logf[128];

int main(void)
{
	const char *const args[] = { "--data-mib",  "2",         "--sq-size",
		                     "64",          "--tenants", "uid",
		                     "--allow-gid", "65534",     NULL };
	int ready[2], hold[N], hold2 = -1, st, up, held[N] = { 0 };
	pid_t d, h[N], h2 = -1, t[N];
	unsigned i, nheld = 0;
	char b;
	siginfo_t si;

	t_need_ssqd();
	if (getuid() != 0)
		SKIP("not root: the clients run as other uids");
	signal(SIGPIPE, SIG_IGN);
	d = t_tenants_ssqd("a8zomb", sock, logf, args, &up);
	CHECK(up, "ssqd --tenants uid answered root");
	if (pipe(ready))
		return test_exit("adv8t_zombie_slots");
	for (i = 0; i < N; i++) {
		h[i] = t_tenant_holder(sock, UID0 + i, 65534, &hold[i], ready[1]);
		b = -1;
		CHECK(t_byte_within(ready[0], 60000, &b) && !b,
		      "uid %u's first client: errno %d", UID0 + i, b);
		held[i] = t_tenant_zombie_hold(logf, UID0 + i, &t[i]);
		CHECK(held[i], "uid %u's ssqd (pid %d) not seized and killed", UID0 + i,
		      (int)t[i]);
		nheld += held[i];
	}
	/* All closed first: each holder has the others' write ends too. */
	for (i = 0; i < N; i++)
		close(hold[i]);
	for (i = 0; i < N; i++)
		waitpid(h[i], &st, 0);
	printf("%u tenants' ssqd dead, their zombies held under ptrace\n", nheld);

	/* Another uid, all 16 zombies still held: served. */
	h2 = t_tenant_holder(sock, UID0 + N, 65534, &hold2, ready[1]);
	b = -1;
	CHECK(t_byte_within(ready[0], 60000, &b), "uid %u's client unanswered in 60 s",
	      UID0 + N);
	printf("uid %u's client, %u zombies held in the slots: errno %d (%s)\n", UID0 + N,
	       nheld, b, b ? strerror(b) : "served");
	CHECK(b == 0, "uid %u's client with %u zombies held: errno %d (%s)", UID0 + N,
	      nheld, b, strerror(b));
	for (i = 0; i < N; i++)
		CHECK(!held[i] || waitid(P_PID, (id_t)t[i], &si,
		                         WEXITED | WNOHANG | WNOWAIT | __WALL) == 0,
		      "zombie %d no longer held: the test proves nothing", (int)t[i]);
	close(hold2);
	waitpid(h2, &st, 0);

	/* Let them go: ssqd reaps every one. */
	t_tenant_zombies_go(t, held, N);
	CHECK(t_log_wait(logf, "found dead and killed, has exited", nheld, 60),
	      "ssqd reaped %u of the %u dead tenants' ssqd",
	      t_log_count(logf, "found dead and killed, has exited"), nheld);

	t_tenant_zombies_go(t, held, N);
	CHECK(t_ssqd_stop_ok(d, &st, sock), "ssqd exit status 0x%x", st);
	close(ready[0]);
	close(ready[1]);
	if (!test_failures)
		unlink(logf);
	return test_exit("adv8t_zombie_slots");
}
