/* SPDX-License-Identifier: MIT */
/*
 * Adversarial review h-adv5t (branch h-tenslot): every client maps its
 * ssqd's whole arena at connect (client.c shm_arena_map), and a client
 * that attached no queue and shuts its connection is dropped at once,
 * its mapping left alone (serve.c kill_first: only one with queues
 * attached is waited for and killed). Its tenant's ssqd then has nothing
 * to serve and exits idle (tenant_idle.c tenant_busy counts connections,
 * not mappings): the arena's pages (--data-mib, hugepages where there are
 * any) live on in the client; its next connection starts a new ssqd with
 * a new arena. Before h-tenslot a tenant's ssqd never exited: one uid
 * could hold one arena. Now each idle exit hands it one more: one local
 * uid takes ssqd's memory (memfd pages ssqd made; the hugepage pool,
 * which every ssqd and tenant starts from) without bound, one
 * --tenant-idle-ms at a time.
 *
 * ssqd --tenants uid --allow-gid 65534 --tenant-idle-ms 1 --data-mib 8:
 * uid 60030 connects, shuts its connection keeping the mapping, waits
 * 300 ms, 12 times; then counts the arenas it maps that still hold memory
 * (their first page, the header ssqd wrote, reads; SIGBUS once the file
 * was cut): at most one (or two) should. Fixed: a tenant's ssqd exiting
 * idle truncates its memfd arena to 0 (setup.c, shm_arena_destroy_emptied).
 * Needs root (the client runs as uid 60030).
 */
#define _GNU_SOURCE
#include <grp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include "cluster_flow.h"
#include "ctrl/client/client_pvt.h"

#define ROUNDS 12

static char sock[108], logf[128];

static unsigned count(const char *needle)
{
	return t_log_count(logf, needle);
}

/* This process's ssqd arenas still holding memory (tlib.h t_arenas_held). */
static unsigned arenas(unsigned *maps, unsigned *mib)
{
	return t_arenas_held(maps, mib);
}

/* uid 60030, in a child: ROUNDS connections shut with their arena kept. */
static int hoarder(void)
{
	int st = 0;
	pid_t kid;

	fflush(NULL);
	kid = fork();
	if (kid == 0) {
		unsigned i, n, maps, mib, ok = 0;

		if (setgroups(0, NULL) || setgid(65534) || setuid(60030))
			_exit(255);
		for (i = 0; i < ROUNDS; i++) {
			struct ssq_client *c = NULL;
			int rc = ssq_client_connect(sock, &c);

			if (rc) {
				printf("connection %u: %d %s\n", i, rc,
				       ssq_client_strerror_last());
				usleep(300000);
				continue;
			}
			ok++;
			/* Its connection ends; its mapping (and c) is kept. */
			shutdown(c->sock, SHUT_RDWR);
			usleep(300000);
		}
		n = arenas(&maps, &mib);
		printf("uid 60030: %u connections shut, each arena kept: maps %u "
		       "arenas, %u of them holding memory, %u MiB\n",
		       ok, maps, n, mib);
		fflush(stdout);
		_exit(!maps ? 250 : n > 249 ? 249 : (int)n);
	}
	if (kid < 0 || waitpid(kid, &st, 0) != kid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

int main(void)
{
	const char *const args[] = { "--data-mib",  "8",     "--tenants",        "uid",
		                     "--allow-gid", "65534", "--tenant-idle-ms", "1",
		                     NULL };
	int n, st, up;
	pid_t d;

	t_need_ssqd();
	if (getuid() != 0)
		SKIP("not root: the client runs as uid 60030");
	d = t_tenants_ssqd("adv5h", sock, logf, args, &up);
	CHECK(up, "ssqd --tenants uid --allow-gid 65534 answered root");
	n = hoarder();
	printf("tenant uid 60030: %u starts, %u idle exits\n",
	       count("tenant uid 60030: its ssqd is pid "), count("exited, idle"));
	CHECK(n >= 0 && n != 250, "the hoarder mapped no arena (%d)", n);
	CHECK(n <= 2,
	      "one uid holds %d arenas of its tenant's exited ssqds (--data-mib 8): "
	      "each idle exit hands it a new one",
	      n);
	CHECK(t_ssqd_stop_ok(d, &st, sock), "ssqd exit status 0x%x", st);
	if (!test_failures)
		unlink(logf);
	return test_exit("ctrl_tenant_arena_emptied");
}
