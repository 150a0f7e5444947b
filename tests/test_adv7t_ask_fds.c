/* SPDX-License-Identifier: MIT */
/*
 * What a tenant's ssqd sends its parent (tenants.c, tenant_recv_ask: an
 * ask to exit idle, with its arena's memfd) carries at most one descriptor
 * the parent keeps; any other it sends must be closed, never kept. A
 * tenant's ssqd is a process its uid may reach (the brief: stopped, killed,
 * ptraced), so the parent takes its socket as untrusted.
 *
 * ssqd_fd_recv (util/fd_pass.c) gave recvmsg CMSG_SPACE(sizeof(int))
 * bytes of control room: 24 on x86-64, room for two descriptors (the
 * kernel installs (msg_controllen - sizeof(struct cmsghdr)) / sizeof(int)
 * of them: scm_max_fds and scm_detach_fds, net/core/scm.c), but took one
 * only when cmsg_len said exactly one: two sent were both installed in
 * the parent and neither closed.
 *
 * This test, as root, starts ssqd --tenants uid --allow-gid 65534 on the
 * emulated device; uid 60000's client starts its tenant's ssqd (T). The
 * test takes a copy of T's end of the socket to its parent (pidfd_getfd;
 * its number is T's --tenant-fd) and sends 100 messages on it, each with
 * two descriptors. ssqd's descriptor count must not grow (2 of slack);
 * uid 60000 and root are still served.
 * Before: "ssqd holds 200 more descriptors after 100 messages".
 * Needs root (the client runs as another uid; pidfd_getfd).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/sockios.h>
#include <sys/wait.h>
#include "cluster_flow.h"

#define UID  60000u
#define MSGS 100

static char sock[108], logf[128];

/* One byte with descriptors @a and @b (SCM_RIGHTS) on @s. */
static int send_two(int s, int a, int b)
{
	char cbuf[CMSG_SPACE(2 * sizeof(int))], x = 'x';
	struct iovec iov = { &x, 1 };
	struct msghdr mh;
	struct cmsghdr *cm;
	int fds[2] = { a, b };

	memset(&mh, 0, sizeof(mh));
	memset(cbuf, 0, sizeof(cbuf));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cbuf;
	mh.msg_controllen = sizeof(cbuf);
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(cm), fds, sizeof(fds));
	return sendmsg(s, &mh, MSG_NOSIGNAL) == 1 ? 0 : -errno;
}

int main(void)
{
	const char *const args[] = { "--data-mib",  "2",         "--sq-size",
		                     "64",          "--tenants", "uid",
		                     "--allow-gid", "65534",     NULL };
	struct t_uid_clients u = { 0 };
	int ready[2], hold, st, up, tfd, s = -1, a, b, base, after, i, q;
	unsigned waited;
	pid_t d, h, t;
	char byte = -1;

	t_need_ssqd();
	if (getuid() != 0)
		SKIP("not root: the client runs as another uid");
	d = t_tenants_ssqd("a7askfds", sock, logf, args, &up);
	CHECK(up, "ssqd --tenants uid answered root");
	if (pipe(ready))
		return test_exit("adv7t_ask_fds");
	h = t_tenant_holder(sock, UID, 65534, &hold, ready[1]);
	CHECK(read(ready[0], &byte, 1) == 1 && !byte, "uid %u's client: %d", UID, byte);
	t = (pid_t)t_log_last_num(logf, "tenant uid 60000: its ssqd is pid ");
	tfd = t > 0 ? t_proc_tenant_fd(t) : -1;
	CHECK(tfd >= 0, "uid %u's ssqd (pid %d): no --tenant-fd", UID, (int)t);
	s = t_proc_fd_copy(t, tfd);
	CHECK(s >= 0, "pidfd_getfd of uid %u's ssqd's fd %d: %s", UID, tfd,
	      strerror(errno));
	if (s < 0)
		goto out;

	base = t_proc_fds(d);
	a = open("/dev/null", O_RDONLY | O_CLOEXEC);
	b = open("/dev/null", O_RDONLY | O_CLOEXEC);
	for (i = 0; i < MSGS; i++) {
		int rc = send_two(s, a, b);

		CHECK(!rc, "message %d: %s", i, strerror(-rc));
		if (rc)
			break;
	}
	close(a);
	close(b);
	/* All read by ssqd: nothing of ours left in the socket. */
	for (waited = 0; waited < 300; waited++) {
		if (ioctl(s, SIOCOUTQ, &q) == 0 && q == 0)
			break;
		usleep(100000);
	}
	usleep(300000);
	after = t_proc_fds(d);
	printf("ssqd's descriptors: %d before, %d after %d messages of 2 each\n", base,
	       after, MSGS);
	CHECK(after <= base + 2, "ssqd holds %d more descriptors after %d messages",
	      after - base, MSGS);

	/* Still serving: root, and uid 60000 (its ssqd took nothing of that). */
	u.sock = sock;
	u.uid = UID;
	u.gid = 65534;
	CHECK(t_uid_clients(&u) == 0, "uid %u's client after: %s", UID, u.said);
	u.uid = 0;
	u.gid = 0;
	CHECK(t_uid_clients(&u) == 0, "root's client after: %s", u.said);
	close(s);
out:
	close(hold);
	waitpid(h, &st, 0);
	CHECK(t_ssqd_stop_ok(d, &st, sock), "ssqd exit status 0x%x", st);
	close(ready[0]);
	close(ready[1]);
	if (!test_failures)
		unlink(logf);
	return test_exit("adv7t_ask_fds");
}
