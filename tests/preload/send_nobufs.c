/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD shim for tests/test_adv7t_send_nobufs.c: one sendmsg that
 * carries SCM_RIGHTS fails with ENOBUFS (as sock_alloc_send_pskb does
 * under memory pressure, net/core/sock.c), the first after the file named
 * by $SSQ_SEND_NOBUFS_ARM appears: that file is unlinked by whichever
 * call fails, so it fails once. Only in the process it was preloaded
 * into (the parent ssqd): its constructor takes LD_PRELOAD out of that
 * process's environment, so the tenants' ssqds it forks and execs run
 * without it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

static ssize_t (*real_sendmsg)(int, const struct msghdr *, int);
static char *arm;

__attribute__((constructor)) static void send_nobufs_init(void)
{
	const char *a = getenv("SSQ_SEND_NOBUFS_ARM");

	real_sendmsg =
	    (ssize_t(*)(int, const struct msghdr *, int))dlsym(RTLD_NEXT, "sendmsg");
	arm = a ? strdup(a) : NULL;
	unsetenv("LD_PRELOAD");
	unsetenv("SSQ_SEND_NOBUFS_ARM");
}

static int has_rights(const struct msghdr *mh)
{
	struct cmsghdr *cm;

	for (cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR((struct msghdr *)mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
			return 1;
	return 0;
}

__attribute__((visibility("default"))) ssize_t sendmsg(int s, const struct msghdr *mh,
                                                       int flags)
{
	if (arm && mh && mh->msg_controllen && has_rights(mh) && unlink(arm) == 0) {
		fprintf(stderr,
		        "send_nobufs: sendmsg with SCM_RIGHTS on fd %d: "
		        "failed with ENOBUFS\n",
		        s);
		errno = ENOBUFS;
		return -1;
	}
	if (!real_sendmsg) {
		errno = ENOSYS;
		return -1;
	}
	return real_sendmsg(s, mh, flags);
}
