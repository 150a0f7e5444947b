/* SPDX-License-Identifier: MIT */
/*
 * A message with at most one descriptor over a unix socket (SCM_RIGHTS,
 * unix(7)): how the parent ssqd and its tenants' ssqds hand each other
 * connections and arenas (tenants.c, tenant_idle.c).
 */
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include "ctrl/daemon/util/util.h"

ssize_t ssqd_fd_send(int s, const void *buf, size_t len, int fd, int flags)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { (void *)buf, len };
	struct msghdr mh;
	struct cmsghdr *cm;

	memset(&mh, 0, sizeof(mh));
	memset(cbuf, 0, sizeof(cbuf));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	if (fd >= 0) {
		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	return sendmsg(s, &mh, flags | MSG_NOSIGNAL);
}

ssize_t ssqd_fd_recv(int s, void *buf, size_t len, int *fd, int flags)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { buf, len };
	struct msghdr mh;
	struct cmsghdr *cm;
	int one, first = -1;
	size_t i, k, got = 0;
	ssize_t n;

	*fd = -1;
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = ctl.buf;
	mh.msg_controllen = sizeof(ctl.buf);
	/*
	 * The sender may be a process its uid reaches (a tenant's ssqd): it
	 * sends what it likes. The kernel installs as many of a message's
	 * descriptors as the control room has room for - (msg_controllen -
	 * sizeof(struct cmsghdr)) / sizeof(int): scm_max_fds, scm_detach_fds,
	 * net/core/scm.c; CMSG_SPACE of one int is room for two on 64-bit -
	 * and releases those cut (MSG_CTRUNC). So every one installed is
	 * looked at: kept only when it came alone, else all closed.
	 */
	n = recvmsg(s, &mh, flags | MSG_CMSG_CLOEXEC);
	for (cm = n >= 0 ? CMSG_FIRSTHDR(&mh) : NULL; cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < k; i++) {
			memcpy(&one, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (!got++)
				first = one;
			else
				close(one);
		}
	}
	if (got == 1 && !(mh.msg_flags & MSG_CTRUNC))
		*fd = first;
	else if (got)
		close(first);
	return n;
}
