/* SPDX-License-Identifier: MIT */
/*
 * Every transient error of the hand-over leaves the tenant's ssqd alone
 * and gives the client that very errno (tenants.c, ssqd_tenant_gone):
 * ENOBUFS and ENOMEM (sock_alloc_send_pskb under memory pressure,
 * net/core/sock.c; scm_fp_copy's allocation, net/core/scm.c) and
 * ETOOMANYREFS (unix_attach_fds: more descriptors in flight than
 * RLIMIT_NOFILE, a non-root ssqd; net/unix/af_unix.c). Only ENOBUFS was
 * tested (tests/test_adv7t_send_nobufs.c); the shim now fails with the
 * errno its arm file names (tests/preload/send_nobufs.c).
 *
 * This test, as root, starts ssqd --tenants uid --allow-gid 65534 on the
 * emulated device under that shim. uid 60000's first client starts its
 * tenant's ssqd (T); then, for each of ENOBUFS, ENOMEM and ETOOMANYREFS,
 * the test arms the shim with it and connects a client of uid 60000: it
 * must get that errno, the shim must have failed exactly one more send,
 * and T must be the same live process, never "found dead". Last, a client
 * of uid 60000 is served by T (one start of its ssqd in all).
 * Needs root (the clients run as another uid).
 */
#define _GNU_SOURCE
#include <sys/wait.h>
#include "cluster_flow.h"

#define UID     60000u
#define STARTED "tenant uid 60000: its ssqd is pid "

static char sock[108], logf[128], arm[128];

/* Arm the shim: its next SCM_RIGHTS send fails with @name. */
static int arm_with(const char *name)
{
	int fd = open(arm, O_CREAT | O_TRUNC | O_WRONLY, 0600);
	int ok = fd >= 0 && write(fd, name, strlen(name)) == (ssize_t)strlen(name);

	if (fd >= 0)
		close(fd);
	return ok;
}

int main(void)
{
	static const struct {
		const char *name;
		int err;
	} errs[] = { { "ENOBUFS", ENOBUFS },
		     { "ENOMEM", ENOMEM },
		     { "ETOOMANYREFS", ETOOMANYREFS } };
	const char *const args[] = { "--data-mib",  "2",         "--sq-size",
		                     "64",          "--tenants", "uid",
		                     "--allow-gid", "65534",     NULL };
	const char *so = getenv("SSQ_SEND_NOBUFS_SO");
	int ready[2], hold1 = -1, hold, st, up;
	pid_t d, h1, h, t;
	unsigned i;
	char b = -1;

	t_need_ssqd();
	if (getuid() != 0)
		SKIP("not root: the clients run as other uids");
	CHECK(so && *so, "SSQ_SEND_NOBUFS_SO unset: run it from ctest");
	if (!so || !*so)
		return test_exit("adv8t_send_errnos");
	signal(SIGPIPE, SIG_IGN);
	snprintf(arm, sizeof(arm), "/tmp/ssq-a8errnos-%d.arm", (int)getpid());
	unlink(arm);
	d = t_tenants_ssqd_shim("a8errnos", so, arm, sock, logf, args, &up);
	CHECK(up, "ssqd --tenants uid answered root");
	if (pipe(ready))
		return test_exit("adv8t_send_errnos");
	h1 = t_tenant_holder(sock, UID, 65534, &hold1, ready[1]);
	CHECK(t_byte_within(ready[0], 60000, &b) && !b, "uid %u's first client: %d", UID,
	      b);
	t = (pid_t)t_log_last_num(logf, STARTED);
	CHECK(t > 0 && t_proc_alive(t), "no ssqd running for uid %u", UID);
	if (t <= 0)
		goto out;

	for (i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
		CHECK(arm_with(errs[i].name), "%s: %s", arm, strerror(errno));
		h = t_tenant_holder(sock, UID, 65534, &hold, ready[1]);
		b = -1;
		CHECK(t_byte_within(ready[0], 60000, &b), "uid %u's client unanswered",
		      UID);
		close(hold);
		waitpid(h, &st, 0);
		printf("uid %u's client, the hand-over failing once with %s: errno %d "
		       "(%s)\n",
		       UID, errs[i].name, b, strerror(b));
		CHECK(access(arm, F_OK) != 0 &&
		          t_log_count(logf, "send_nobufs: sendmsg") == i + 1,
		      "the shim did not fail a send with %s: the test proves nothing",
		      errs[i].name);
		CHECK(b == errs[i].err, "uid %u's client: errno %d (%s), not %s", UID, b,
		      strerror(b), errs[i].name);
		/* Killed, its pidfd's SIGKILL went before the client's answer. */
		CHECK(t_log_count(logf, "found dead") == 0,
		      "after %s ssqd's log says uid %u's live ssqd was found dead",
		      errs[i].name, UID);
	}
	h = t_tenant_holder(sock, UID, 65534, &hold, ready[1]);
	b = -1;
	CHECK(t_byte_within(ready[0], 60000, &b) && !b, "uid %u's last client: errno %d",
	      UID, b);
	close(hold);
	waitpid(h, &st, 0);
	CHECK(t_proc_alive(t) && t_log_count(logf, STARTED) == 1 &&
	          t_log_last_num(logf, STARTED) == t,
	      "uid %u not served by its one ssqd pid %d (%u starts)", UID, (int)t,
	      t_log_count(logf, STARTED));
	printf("uid %u's last client: errno %d, its ssqd still pid %d\n", UID, b,
	       (int)t_log_last_num(logf, STARTED));
out:
	close(hold1);
	waitpid(h1, &st, 0);
	CHECK(t_ssqd_stop_ok(d, &st, sock), "ssqd exit status 0x%x", st);
	close(ready[0]);
	close(ready[1]);
	unlink(arm);
	if (!test_failures)
		unlink(logf);
	return test_exit("adv8t_send_errnos");
}
