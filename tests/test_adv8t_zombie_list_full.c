/* SPDX-License-Identifier: MIT */
/*
 * The list of exited, unreapable tenants' ssqd is bounded
 * (SSQD_TENANT_ZOMBIES, 32; tenant_zombie.c), and a full one locks nobody
 * out either: one more zombie still frees its slot, and is forgotten with
 * an error line naming its pid - never a wait, never a refusal.
 *
 * This test, as root, starts ssqd --tenants uid --allow-gid 65534 on the
 * emulated device. uids 60000..60032 (33) each start their tenant's ssqd
 * in turn; the test seizes each (PTRACE_SEIZE), kills it and holds its
 * zombie (a ptraced zombie is its tracer's to reap first:
 * wait_consider_task, kernel/exit.c). Each uid must be served, the 17th
 * to the 33rd too, in slots their predecessors' zombies left; ssqd's log
 * must say once that one was left unreaped, the list full; uid 60033 is
 * then served as well. Once the zombies are let go ssqd reaps the 32 it
 * kept, and its stop is clean.
 * Before (a775c4e): the 17th uid got -EUSERS ("ssqd serves 16 tenants
 * besides its own"), as in tests/test_adv8t_zombie_slots.c.
 * Needs root (the clients run as other uids; ptrace of ssqd's children).
 */
#define _GNU_SOURCE
#include <sys/wait.h>
#include "cluster_flow.h"

#define N    33u /* SSQD_TENANT_ZOMBIES + 1 */
#define KEPT 32u /* SSQD_TENANT_ZOMBIES */
#define UID0 60000u
#define FULL "others wait to be reaped already: its slot freed"

static char sock[108], logf[128];

/* uid @uid's client, served (1) or not, its holder closed at once. */
static int served(uid_t uid, const int ready[2])
{
	int hold, st;
	pid_t h = t_tenant_holder(sock, uid, 65534, &hold, ready[1]);
	char b = -1;
	int ok = t_byte_within(ready[0], 60000, &b) && !b;

	if (!ok)
		printf("uid %u's client: errno %d (%s)\n", (unsigned)uid, b,
		       b > 0 ? strerror(b) : "unanswered");
	close(hold);
	waitpid(h, &st, 0);
	return ok;
}

int main(void)
{
	const char *const args[] = { "--data-mib",  "2",         "--sq-size",
		                     "64",          "--tenants", "uid",
		                     "--allow-gid", "65534",     NULL };
	int ready[2], st, up, held[N] = { 0 };
	unsigned i, nheld = 0, nserved = 0;
	pid_t d, t[N];

	t_need_ssqd();
	if (getuid() != 0)
		SKIP("not root: the clients run as other uids");
	signal(SIGPIPE, SIG_IGN);
	d = t_tenants_ssqd("a8zfull", sock, logf, args, &up);
	CHECK(up, "ssqd --tenants uid answered root");
	if (pipe(ready))
		return test_exit("adv8t_zombie_list_full");
	for (i = 0; i < N; i++) {
		/* Its tenant's ssqd started, then held dead: the client closes. */
		if (!served(UID0 + i, ready))
			continue;
		nserved++;
		held[i] = t_tenant_zombie_hold(logf, UID0 + i, &t[i]);
		nheld += held[i];
	}
	printf("%u of %u uids served, %u zombies held\n", nserved, N, nheld);
	CHECK(nserved == N && nheld == N, "%u of %u uids served, %u zombies held",
	      nserved, N, nheld);
	/* The last zombie is out of its slot once a connection needs one. */
	CHECK(served(UID0 + N, ready), "uid %u not served with %u zombies held", UID0 + N,
	      nheld);
	CHECK(t_log_wait(logf, FULL, 1, 30) && t_log_count(logf, FULL) == 1,
	      "ssqd's log says %u times that a zombie was left, the list full: not "
	      "once",
	      t_log_count(logf, FULL));

	/* Let them go: ssqd reaps the ones it kept. */
	t_tenant_zombies_go(t, held, N);
	CHECK(t_log_wait(logf, "found dead and killed, has exited", KEPT, 60),
	      "ssqd reaped %u of the %u dead tenants' ssqd it kept",
	      t_log_count(logf, "found dead and killed, has exited"), KEPT);

	t_tenant_zombies_go(t, held, N);
	CHECK(t_ssqd_stop_ok(d, &st, sock), "ssqd exit status 0x%x", st);
	close(ready[0]);
	close(ready[1]);
	if (!test_failures)
		unlink(logf);
	return test_exit("adv8t_zombie_list_full");
}
