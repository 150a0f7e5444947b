/* SPDX-License-Identifier: MIT */
/*
 * Adversarial review h-adv6t (branch h-tsettle): a tenant's ssqd exiting
 * idle empties its arena at teardown (setup.c, shm_arena_destroy_emptied)
 * so that a client that kept its mapping after hanging up does not keep
 * one arena per idle exit (tests/test_ctrl_tenant_arena_emptied.c). But
 * when its uid's connection is parked on its closing slot (every other
 * slot taken) and it takes over ssqd_tenant_closing_wait_ms (200 ms) to
 * go, ssqd_tenants_tick SIGKILLs it: its teardown never runs, the arena
 * is not emptied, and the client keeps its pages - "nothing is lost"
 * (tenants.c) holds for connections, not for the arena.
 *
 * ssqd --tenants uid --allow-gid 65534 --tenant-idle-ms 300 --data-mib 2
 * on the emulated device, uids 60000..60014 each holding a client (15
 * tenants, one slot left). Each tenant's ssqd is held after it was let
 * exit idle ($SSQD_TEST_TENANT_EXIT_DELAY_MS, the test hook for a slow
 * exit: a busy host, a slow device close). uid 60030 connects, shuts its
 * connection keeping the mapping; its ssqd exits idle, held; uid 60030
 * connects again: parked, the old ssqd killed after 200 ms, the new one
 * answers. Then uid 60030 counts the arenas it maps that still hold
 * memory: one (its live tenant's) should; two means the killed tenant's
 * arena was left whole.
 * Needs root (the clients run as other uids).
 */
#define _GNU_SOURCE
#include <grp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include "cluster_flow.h"
#include "ctrl/client/client_pvt.h"

#define HOLDERS 15u
#define UID0    60000u
#define HOARDER 60030u

static char sock[108], logf[128];

static unsigned count(const char *needle)
{
	return t_log_count(logf, needle);
}

static int log_wait(const char *needle, unsigned n)
{
	return t_log_wait(logf, needle, n, 30);
}

/* This process's ssqd arenas that still hold memory (*@maps: all of them). */
static unsigned arenas(unsigned *maps)
{
	return t_arenas_held(maps, NULL);
}

/*
 * uid HOARDER, in a child: a connection shut with its arena kept; once
 * @go says its ssqd exits idle, a second one (parked: every other slot
 * taken). Exit: the arenas still holding memory (250: the second failed,
 * 251: no arena mapped, 255: could not become the uid).
 */
static pid_t hoarder(int shut, int go)
{
	pid_t kid;

	fflush(NULL);
	kid = fork();
	if (kid == 0) {
		struct ssq_client *c = NULL, *c2 = NULL;
		unsigned n, maps;
		char b = 0;
		int rc;

		if (setgroups(0, NULL) || setgid(65534) || setuid(HOARDER))
			_exit(255);
		rc = ssq_client_connect(sock, &c);
		if (!rc)
			shutdown(c->sock, SHUT_RDWR); /* its mapping (and c) kept */
		b = (char)-rc;
		(void)!write(shut, &b, 1);
		if (rc || read(go, &b, 1) != 1)
			_exit(250);
		rc = ssq_client_connect(sock, &c2);
		if (rc) {
			printf("uid %u's parked connection: %d %s\n", HOARDER, rc,
			       ssq_client_strerror_last());
			fflush(stdout);
			_exit(250);
		}
		n = arenas(&maps);
		printf("uid %u: maps %u arenas, %u of them holding memory (one is its "
		       "live tenant's)\n",
		       HOARDER, maps, n);
		fflush(stdout);
		ssq_client_close(c2);
		_exit(!maps ? 251 : (int)n);
	}
	return kid;
}

int main(void)
{
	const char *const args[] = { "--data-mib",       "2",   "--sq-size",   "64",
		                     "--tenants",        "uid", "--allow-gid", "65534",
		                     "--tenant-idle-ms", "300", NULL };
	int hold[HOLDERS], ready[2], shut[2], go[2], st, up, ok = 0, n;
	pid_t pid[HOLDERS], d, h;
	unsigned i;
	char b;

	t_need_ssqd();
	if (getuid() != 0)
		SKIP("not root: the clients run as other uids");
	signal(SIGPIPE, SIG_IGN);
	/* Every tenant's ssqd (they inherit ssqd's environment): a slow exit. */
	setenv("SSQD_TEST_TENANT_EXIT_DELAY_MS", "600000", 1);
	d = t_tenants_ssqd("adv6tka", sock, logf, args, &up);
	CHECK(up, "ssqd --tenants uid answered root");
	if (pipe(ready) || pipe(shut) || pipe(go))
		return test_exit("adv6t_kill_arena");
	for (i = 0; i < HOLDERS; i++) {
		pid[i] = t_tenant_holder(sock, UID0 + i, 65534, &hold[i], ready[1]);
		if (read(ready[0], &b, 1) == 1 && !b)
			ok++;
	}
	CHECK(ok == (int)HOLDERS, "%d of %u holders connected", ok, HOLDERS);

	h = hoarder(shut[1], go[0]);
	CHECK(read(shut[0], &b, 1) == 1 && !b, "uid %u's first connection: errno %d",
	      HOARDER, b);
	CHECK(log_wait("(--tenant-idle-ms): exiting", 1),
	      "uid %u's ssqd did not exit idle within 30 s", HOARDER);
	b = 1;
	CHECK(write(go[1], &b, 1) == 1, "go");
	n = waitpid(h, &st, 0) == h && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	printf("log: %u parked, %u killed, %u starts of uid %u's ssqd\n",
	       count("to finish exiting idle"), count("exiting idle took over"),
	       count("tenant uid 60030: its ssqd is pid "), HOARDER);
	CHECK(count("exiting idle took over") == 1,
	      "the old ssqd was not killed for its slow idle exit");
	CHECK(n >= 0 && n < 250, "uid %u's second connection failed (%d)", HOARDER, n);
	CHECK(n <= 1,
	      "uid %u maps %d arenas holding memory: the tenant ssqd killed after "
	      "200 ms of its idle exit never emptied its arena",
	      HOARDER, n);
	for (i = 0; i < HOLDERS; i++)
		close(hold[i]);
	for (i = 0; i < HOLDERS; i++)
		waitpid(pid[i], &st, 0);
	CHECK(t_ssqd_stop_ok(d, &st, sock), "ssqd exit status 0x%x", st);
	if (!test_failures)
		unlink(logf);
	return test_exit("adv6t_kill_arena");
}
