/* SPDX-License-Identifier: MIT */
/*
 * A send error that is not the tenant's death leaves its ssqd alone
 * (tenants.c, ssqd_tenant_gone). ssqd_tenant_pass hands a client's
 * connection to its uid's ssqd with sendmsg and SCM_RIGHTS; that fails
 * with ENOBUFS or ENOMEM under memory pressure, or ETOOMANYREFS for a
 * non-root ssqd with many descriptors in flight, while the tenant's ssqd
 * is alive and well. Only a closed peer (EPIPE, ECONNRESET, ENOTCONN) is
 * its death.
 * This test, as root, starts ssqd --tenants uid --allow-gid 65534 on the
 * emulated device under tests/preload/send_nobufs.c, whose sendmsg with
 * SCM_RIGHTS fails once with ENOBUFS when armed. uid 60000's first client
 * starts its tenant's ssqd (T); the test arms the shim; uid 60000's second
 * client must get -ENOBUFS with a sentence to connect again, T must stay
 * alive (no "found dead" in ssqd's log), and uid 60000's third client
 * must be served by T (still one start of its ssqd in the log).
 * Before (any error but EAGAIN taken for death): the second client got
 * EAGAIN ("tenant uid 60000's ssqd failed (it was killed by signal 9 ...")
 * and T was killed by its pidfd, counted a failure in its restart backoff.
 * Needs root (the clients run as another uid).
 */
#define _GNU_SOURCE
#include <poll.h>
#include <sys/wait.h>
#include "cluster_flow.h"

#define UID     60000u
#define STARTED "tenant uid 60000: its ssqd is pid "

static char sock[108], logf[128], arm[128];

/* A byte on @fd within @ms, into *@b (1), or none (0). */
static int byte_within(int fd, int ms, char *b)
{
	struct pollfd p = { fd, POLLIN, 0 };

	return poll(&p, 1, ms) == 1 && read(fd, b, 1) == 1;
}

int main(void)
{
	const char *const args[] = { "--data-mib",  "2",         "--sq-size",
		                     "64",          "--tenants", "uid",
		                     "--allow-gid", "65534",     NULL };
	const char *so = getenv("SSQ_SEND_NOBUFS_SO");
	int ready[2], hold1 = -1, hold2 = -1, hold3 = -1, st, up, fd, i;
	pid_t d, h1, h2 = -1, h3 = -1, t;
	char b = -1;

	t_need_ssqd();
	if (getuid() != 0)
		SKIP("not root: the clients run as other uids");
	CHECK(so && *so, "SSQ_SEND_NOBUFS_SO unset: run it from ctest");
	if (!so || !*so)
		return test_exit("adv7t_send_nobufs");
	signal(SIGPIPE, SIG_IGN);
	snprintf(arm, sizeof(arm), "/tmp/ssq-tnobufs-%d.arm", (int)getpid());
	unlink(arm);
	d = t_tenants_ssqd_shim("tnobufs", so, arm, sock, logf, args, &up);
	CHECK(up, "ssqd --tenants uid answered root");
	if (pipe(ready))
		return test_exit("adv7t_send_nobufs");
	h1 = t_tenant_holder(sock, UID, 65534, &hold1, ready[1]);
	CHECK(byte_within(ready[0], 30000, &b) && !b, "uid %u's first client: %d", UID,
	      b);
	t = (pid_t)t_log_last_num(logf, STARTED);
	CHECK(t > 0 && t_proc_alive(t), "no ssqd running for uid %u", UID);
	if (t <= 0)
		goto out;

	/* The next SCM_RIGHTS send of ssqd's fails, once, with ENOBUFS. */
	fd = open(arm, O_CREAT | O_WRONLY, 0600);
	CHECK(fd >= 0, "%s: %s", arm, strerror(errno));
	if (fd >= 0)
		close(fd);
	h2 = t_tenant_holder(sock, UID, 65534, &hold2, ready[1]);
	b = -1;
	CHECK(byte_within(ready[0], 30000, &b), "uid %u's second client unanswered", UID);
	printf("uid %u's second client, ssqd's send to its tenant failing once with "
	       "ENOBUFS: errno %d (%s)\n",
	       UID, b, strerror(b));
	CHECK(access(arm, F_OK) != 0 && t_log_count(logf, "send_nobufs: sendmsg") == 1,
	      "the shim never failed a send: the test proves nothing");
	CHECK(b == ENOBUFS, "uid %u's second client: errno %d (%s), not ENOBUFS", UID, b,
	      strerror(b));
	/*
	 * Killed, it would be gone within moments (SIGKILL by its pidfd
	 * before the client was answered); alive, it stays: 3 s to tell.
	 */
	for (i = 0; i < 30 && t_proc_alive(t); i++)
		usleep(100000);
	printf("uid %u's ssqd (pid %d) after that send: %s\n", UID, (int)t,
	       t_proc_alive(t) ? "alive" : "gone");
	CHECK(t_proc_alive(t),
	      "uid %u's live ssqd (pid %d) was killed for a send's ENOBUFS", UID, (int)t);
	CHECK(t_log_count(logf, "found dead") == 0,
	      "ssqd's log says uid %u's live ssqd was found dead", UID);

	/* Its next client: served, by the same ssqd. */
	h3 = t_tenant_holder(sock, UID, 65534, &hold3, ready[1]);
	b = -1;
	CHECK(byte_within(ready[0], 30000, &b) && !b, "uid %u's third client: errno %d",
	      UID, b);
	CHECK(t_log_count(logf, STARTED) == 1 && t_log_last_num(logf, STARTED) == t &&
	          t_proc_alive(t),
	      "uid %u's third client not served by its ssqd pid %d (%u starts)", UID,
	      (int)t, t_log_count(logf, STARTED));
	printf("uid %u's third client: errno %d, its ssqd still pid %d\n", UID, b,
	       (int)t_log_last_num(logf, STARTED));
out:
	if (h3 > 0) {
		close(hold3);
		waitpid(h3, &st, 0);
	}
	if (h2 > 0) {
		close(hold2);
		waitpid(h2, &st, 0);
	}
	close(hold1);
	waitpid(h1, &st, 0);
	CHECK(t_ssqd_stop_ok(d, &st, sock), "ssqd exit status 0x%x", st);
	close(ready[0]);
	close(ready[1]);
	unlink(arm);
	if (!test_failures)
		unlink(logf);
	return test_exit("adv7t_send_nobufs");
}
