/* SPDX-License-Identifier: MIT */
/*
 * A tenant's ssqd takes its connections from its parent (tenants.c), one
 * descriptor per message (SCM_RIGHTS). Out of descriptors (RLIMIT_NOFILE),
 * the kernel cannot install the one that comes: scm_detach_fds
 * (net/core/scm.c) stops at receive_fd's -EMFILE, sets MSG_CTRUNC and
 * the message's descriptor is released with it - the client's connection
 * closed under it, told nothing, its uid's ssqd saying nothing either.
 *
 * So a spare descriptor is held between receives (/dev/null), closed just
 * before each and opened again after: a connection then always has room
 * to arrive (the classic accept(2) EMFILE reserve). And a connection is
 * taken only with ROOM descriptors free besides: a client needs some of
 * its own to be served (its pidfd, serve.c; what its hello's answer
 * takes), and one taken with none would time out, told nothing useful.
 * Without the spare, or the room, that connection is told why (-EMFILE,
 * its uid's ssqd named) and closed, its room the spare's again. One
 * line per burst of refusals, and one when they end, not one each: a
 * client that retries in a loop would fill the log.
 *
 * Every connection that came counts as received (tenant_got), refused or
 * lost too: the parent sent it, and the ask to exit idle must match what
 * it sent (tenant_idle.c), else it is refused for ever.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h> /* SD_WARNING: util/log.c */
#include "ctrl/daemon/daemon.h"
#include "ctrl/daemon/util/util.h"
#include "ctrl/proto/msg.h"

/* Descriptors free a client needs, besides its socket, to be served. */
#define ROOM 8

/* The spare (-1: none held), and connections refused since the last taken. */
static int spare = -1;
static unsigned refused;

/* The spare held again, and ROOM descriptors free besides? */
static int room(void)
{
	int fd[ROOM], n, ok;

	if (spare < 0)
		spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
	for (n = 0; spare >= 0 && n < ROOM; n++) {
		fd[n] = dup(spare);
		if (fd[n] < 0)
			break;
	}
	ok = spare >= 0 && n == ROOM;
	while (n > 0)
		close(fd[--n]);
	return ok;
}

static const char *kind(const struct ssqd *d)
{
	return d->opt.allow_uid >= 0 ? "uid" : "gid";
}

static long who(const struct ssqd *d)
{
	return d->opt.allow_uid >= 0 ? d->opt.allow_uid : d->opt.allow_gid;
}

static unsigned long long nofile(void)
{
	struct rlimit rl;

	return getrlimit(RLIMIT_NOFILE, &rl) ? 0 : (unsigned long long)rl.rlim_cur;
}

/* Connection @fd (kind @what), or one lost (@fd -1), with no descriptor left. */
static void refuse(struct ssqd *d, int fd, char what)
{
	if (!refused++)
		fprintf(stderr,
		        SD_WARNING "ssqd: tenant %s %ld: out of file descriptors "
		                   "(RLIMIT_NOFILE %llu): connections refused "
		                   "(-EMFILE) until some close%s\n",
		        kind(d), who(d), nofile(),
		        fd < 0 ? "; one was lost (MSG_CTRUNC)" : "");
	if (fd < 0)
		return;
	/* A peer's link speaks another protocol: closed, its dialer retries. */
	if (what == 'c')
		proto_msg_send_error(fd, 0, -EMFILE,
		                     "ssqd tenant for %s %ld is out of file "
		                     "descriptors (RLIMIT_NOFILE %llu): connect again "
		                     "later",
		                     kind(d), who(d), nofile());
	close(fd);
}

int ssqd_tenant_recv(struct ssqd *d, char *what)
{
	char byte = 0;
	int fd, free_ok;
	ssize_t n;

	if (spare >= 0)
		close(spare);
	spare = -1;
	n = ssqd_fd_recv(d->opt.tenant_fd, &byte, 1, &fd, MSG_DONTWAIT);
	free_ok = room();
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		/* The ssqd we serve for is gone: so are we. */
		fprintf(stderr, SD_NOTICE "ssqd: tenant: the parent ssqd is gone\n");
		d->stop = 1;
		return -1;
	}
	*what = byte;
	if (n == 1 && (byte == 'c' || byte == 'p')) {
		d->tenant_got++; /* said when it asks to exit (tenant_idle.c) */
		/* No room: none for this connection's needs. */
		if (fd < 0 || !free_ok) {
			refuse(d, fd, byte);
			(void)room(); /* the spare again, its room freed */
			return -1;
		}
		if (refused)
			fprintf(stderr,
			        SD_NOTICE "ssqd: tenant %s %ld: file descriptors free "
			                  "again; %u connection(s) were refused "
			                  "(-EMFILE)\n",
			        kind(d), who(d), refused);
		refused = 0;
	}
	if (fd >= 0)
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return fd;
}
