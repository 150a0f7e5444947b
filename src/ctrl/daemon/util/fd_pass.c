/* SPDX-License-Identifier: MIT */
/*
 * A message with at most one descriptor over a unix socket (SCM_RIGHTS,
 * unix(7)): how the parent ssqd and its tenants' ssqds hand each other
 * connections and arenas (tenants.c, tenant_idle.c).
 */
#include <string.h>
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
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { buf, len };
	struct msghdr mh;
	struct cmsghdr *cm;
	ssize_t n;

	*fd = -1;
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cbuf;
	mh.msg_controllen = sizeof(cbuf);
	/*
	 * Room for one: more would be cut (MSG_CTRUNC) and the kernel
	 * installs none of those it cut (scm_detach_fds), so none leaks.
	 */
	n = recvmsg(s, &mh, flags | MSG_CMSG_CLOEXEC);
	cm = n >= 0 ? CMSG_FIRSTHDR(&mh) : NULL;
	if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
	    cm->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(fd, CMSG_DATA(cm), sizeof(int));
	return n;
}
