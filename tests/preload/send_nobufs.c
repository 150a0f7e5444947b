/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD shim for tests/test_adv7t_send_nobufs.c and
 * tests/test_adv8t_send_errnos.c: one sendmsg that carries SCM_RIGHTS
 * fails, the first after the file named by $SSQ_SEND_NOBUFS_ARM appears:
 * that file is unlinked by whichever call fails, so it fails once. With
 * the errno the file names - ENOBUFS (empty, or "ENOBUFS": as
 * sock_alloc_send_pskb under memory pressure, net/core/sock.c), "ENOMEM"
 * (the same, or scm_fp_copy's kmalloc, net/core/scm.c) or "ETOOMANYREFS"
 * (unix_attach_fds past RLIMIT_NOFILE in flight, net/unix/af_unix.c). Only in the first
 * ssqd it is preloaded into (the parent ssqd): its constructor takes LD_PRELOAD out of
 * that process's environment, so the tenants' ssqds it forks and execs run
 * without it. A program that runs ssqd (the <name>_nopidfd runs' launcher,
 * tests/sandbox/no_pidfd.c, which execs it in place) is left as it is,
 * its environment too: ssqd is what it is for.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
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
	if (strcmp(program_invocation_short_name, "ssqd"))
		return; /* not armed here: its sendmsg passes through */
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

/* The errno the arm file names (ENOBUFS when it names none), or 0: no file. */
static int armed(void)
{
	static const struct {
		const char *name;
		int err;
	} errs[] = { { "ENOMEM", ENOMEM }, { "ETOOMANYREFS", ETOOMANYREFS } };
	char buf[32] = "";
	unsigned i;
	ssize_t n;
	int fd = open(arm, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	for (i = 0; i < sizeof(errs) / sizeof(errs[0]); i++)
		if (!strncmp(buf, errs[i].name, strlen(errs[i].name)))
			return errs[i].err;
	return ENOBUFS;
}

__attribute__((visibility("default"))) ssize_t sendmsg(int s, const struct msghdr *mh,
                                                       int flags)
{
	int err;

	if (arm && mh && mh->msg_controllen && has_rights(mh) && (err = armed()) &&
	    unlink(arm) == 0) {
		fprintf(stderr,
		        "send_nobufs: sendmsg with SCM_RIGHTS on fd %d: "
		        "failed with %s\n",
		        s,
		        err == ENOMEM         ? "ENOMEM"
		        : err == ETOOMANYREFS ? "ETOOMANYREFS"
		                              : "ENOBUFS");
		errno = err;
		return -1;
	}
	if (!real_sendmsg) {
		errno = ENOSYS;
		return -1;
	}
	return real_sendmsg(s, mh, flags);
}
