/* SPDX-License-Identifier: MIT */
/*
 * Adversarial review h-adv6t (branch h-tsettle): connections parked on a
 * closing tenant's slot (tenant_park.c) by a hostile client - closed at
 * once, or never speaking - are handed over with the rest when the old
 * ssqd is killed, the real one among them is served, and ssqd keeps no
 * descriptor of theirs: over three park / kill / hand-over rounds its
 * descriptor count comes back to where it was (the park's copies, the
 * pidfd and the old slot's socket all closed), and it stops cleanly.
 *
 * ssqd --tenants uid --allow-gid 65534 --tenant-idle-ms 300 on the emulated
 * device, uids 60000..60014 each holding a client (15 tenants, one slot
 * left); each tenant's ssqd held after it was let exit idle
 * ($SSQD_TEST_TENANT_EXIT_DELAY_MS). Each round, uid 60030 connects and
 * closes; once its ssqd exits idle (held) it opens three bare connections
 * to ssqd's socket, closes two at once, keeps one silent, then connects for
 * real: parked (four, unless the kill came first), the old ssqd killed
 * after 200 ms, the real one answered (LIST) by the new ssqd.
 * Needs root (the clients run as other uids).
 */
#define _GNU_SOURCE
#include <grp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include "cluster_flow.h"

#define HOLDERS 15u
#define UID0    60000u
#define HOSTILE 60030u
#define ROUNDS  3u
/* Connections that may wait for one closing slot (SSQD_TENANT_PARKED). */
#define PARKED 4u

static char sock[108], logf[128];

static unsigned count(const char *needle)
{
	return t_log_count(logf, needle);
}

static int log_wait(const char *needle, unsigned n)
{
	return t_log_wait(logf, needle, n, 30);
}

/* A connection to ssqd's socket that says nothing (-1 if none). */
static int bare(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	if (s >= 0 && connect(s, (struct sockaddr *)&sa, sizeof(sa))) {
		close(s);
		s = -1;
	}
	return s;
}

/*
 * uid HOSTILE, in a child: a connection, closed; once @go says its ssqd
 * exits idle, PARKED - 1 bare ones (all but the last closed at once), then
 * a real one, answered? Exit 0 if so.
 */
static pid_t hostile(int done, int go)
{
	pid_t kid;

	fflush(NULL);
	kid = fork();
	if (kid == 0) {
		struct ssq_queue_info info[8];
		struct ssq_client *c = NULL;
		int rc, s[PARKED - 1];
		unsigned k;
		char b;

		if (setgroups(0, NULL) || setgid(65534) || setuid(HOSTILE))
			_exit(255);
		rc = ssq_client_connect(sock, &c);
		if (c)
			ssq_client_close(c);
		b = (char)-rc;
		(void)!write(done, &b, 1);
		if (rc || read(go, &b, 1) != 1)
			_exit(250);
		for (k = 0; k < PARKED - 1; k++) {
			s[k] = bare();
			if (s[k] < 0)
				_exit(251);
			if (k < PARKED - 2)
				close(s[k]);
		}
		c = NULL;
		rc = ssq_client_connect(sock, &c);
		if (!rc) {
			rc = ssq_client_list(c, info, 8);
			rc = rc > 0 ? 0 : rc ? rc : -ENODATA;
		}
		if (rc)
			printf("uid %u's real connection behind the bare ones: %d %s\n",
			       HOSTILE, rc,
			       c ? ssq_client_error(c) : ssq_client_strerror_last());
		fflush(stdout);
		if (c)
			ssq_client_close(c);
		_exit(rc ? 1 : 0);
	}
	return kid;
}

int main(void)
{
	const char *const args[] = { "--data-mib",       "2",   "--sq-size",   "64",
		                     "--tenants",        "uid", "--allow-gid", "65534",
		                     "--tenant-idle-ms", "300", NULL };
	int hold[HOLDERS], ready[2], done[2], go[2], st, up, ok = 0, fd0, fd1;
	pid_t pid[HOLDERS], d, h;
	unsigned i, r;
	char b;

	t_need_ssqd();
	if (getuid() != 0)
		SKIP("not root: the clients run as other uids");
	signal(SIGPIPE, SIG_IGN);
	/* Every tenant's ssqd (they inherit ssqd's environment): a slow exit. */
	setenv("SSQD_TEST_TENANT_EXIT_DELAY_MS", "600000", 1);
	d = t_tenants_ssqd("adv6tph", sock, logf, args, &up);
	CHECK(up, "ssqd --tenants uid answered root");
	if (pipe(ready) || pipe(done) || pipe(go))
		return test_exit("adv6t_park_hostile");
	for (i = 0; i < HOLDERS; i++) {
		pid[i] = t_tenant_holder(sock, UID0 + i, 65534, &hold[i], ready[1]);
		if (read(ready[0], &b, 1) == 1 && !b)
			ok++;
	}
	CHECK(ok == (int)HOLDERS, "%d of %u holders connected", ok, HOLDERS);
	/* Uid HOSTILE's slot adds its socket to this. */
	fd0 = t_proc_fds(d);
	for (r = 0; r < ROUNDS && !test_failures; r++) {
		h = hostile(done[1], go[0]);
		CHECK(read(done[0], &b, 1) == 1 && !b,
		      "round %u: uid %u's first connection: errno %d", r, HOSTILE, b);
		CHECK(log_wait("(--tenant-idle-ms): exiting", r + 1),
		      "round %u: uid %u's ssqd did not exit idle within 30 s", r,
		      HOSTILE);
		b = 1;
		CHECK(write(go[1], &b, 1) == 1, "round %u: go", r);
		CHECK(waitpid(h, &st, 0) == h && WIFEXITED(st) && !WEXITSTATUS(st),
		      "round %u: uid %u's real connection, parked behind bare ones, "
		      "failed (status 0x%x)",
		      r, HOSTILE, st);
		fd1 = t_proc_fds(d);
		printf("round %u: log: %u parked, %u killed, %u starts; ssqd holds %d "
		       "descriptors (%d before, and one slot's socket)\n",
		       r, count("to finish exiting idle"),
		       count("exiting idle took over"),
		       count("tenant uid 60030: its ssqd is pid "), fd1, fd0);
		/* Not rate limited, as the park's lines are. */
		CHECK(count("exiting idle took over") == r + 1,
		      "round %u: the old ssqd, with connections parked, not killed", r);
		CHECK(fd1 == fd0 + 1, "round %u: ssqd holds %d descriptors, not %d", r,
		      fd1, fd0 + 1);
	}
	CHECK(!count("has exited (status") && !count("not started again"),
	      "a killed idle exit was taken for a failure");
	for (i = 0; i < HOLDERS; i++)
		close(hold[i]);
	for (i = 0; i < HOLDERS; i++)
		waitpid(pid[i], &st, 0);
	CHECK(t_ssqd_stop_ok(d, &st, sock), "ssqd exit status 0x%x", st);
	if (!test_failures)
		unlink(logf);
	return test_exit("adv6t_park_hostile");
}
