/* SPDX-License-Identifier: MIT */
/*
 * ssqd --status under --tenants: what the parent says of each tenant (its
 * uid, pid, closing, parked) is the parent's; what the tenant's ssqd says
 * of itself (its answer to HELLO and LIST, or its error) is that
 * process's, one its uid may reach (the brief: stopped, ptraced). Its
 * words must stay inside its own line: printed as they came, a newline in
 * them starts a line of the tenant's making - "tenant uid 0: ..." - that
 * reads as ssqd's own.
 *
 * This test, as root, starts ssqd --tenants uid --allow-gid 65534 on the
 * emulated device; uid 60000's client starts its tenant's ssqd (T). The
 * test stops T (SIGSTOP), runs ssqd --status, takes the asker's
 * connection the parent handed to T out of T's socket (a copy of T's end:
 * pidfd_getfd) and answers its HELLO as T could: an error whose text
 * holds a newline and a forged line. --status must not print that line
 * as one of its own.
 * Before: --status printed "tenant uid 0: ssqd pid 1, 7 queue(s), 7
 * client(s))" on a line of its own.
 * Needs root (the client runs as another uid; pidfd_getfd).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include "cluster_flow.h"
#include "ctrl/proto/msg.h"

#define UID    60000u
#define FORGED "tenant uid 0: ssqd pid 1, 7 queue(s), 7 client(s)"

static char sock[108], logf[128], outf[128];

/* The descriptor of the next message on @s, within 30 s, or -1. */
static int take_fd(int s)
{
	char cbuf[CMSG_SPACE(sizeof(int))], b;
	struct iovec iov = { &b, 1 };
	struct pollfd p = { s, POLLIN, 0 };
	struct msghdr mh;
	struct cmsghdr *cm;
	int fd = -1;

	if (poll(&p, 1, 30000) != 1)
		return -1;
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cbuf;
	mh.msg_controllen = sizeof(cbuf);
	if (recvmsg(s, &mh, MSG_CMSG_CLOEXEC) < 1)
		return -1;
	cm = CMSG_FIRSTHDR(&mh);
	if (cm && cm->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

int main(void)
{
	const char *const args[] = { "--data-mib",  "2",         "--sq-size",
		                     "64",          "--tenants", "uid",
		                     "--allow-gid", "65534",     NULL };
	int ready[2], hold, st, up, tfd, s = -1, a = -1, nfds = 0, got = -1;
	static char out[1 << 16];
	char byte = -1, why[128], *line;
	struct proto_msg m;
	pid_t d, h, t, asker = -1;
	FILE *f;
	size_t n;

	t_need_ssqd();
	if (getuid() != 0)
		SKIP("not root: the client runs as another uid");
	snprintf(outf, sizeof(outf), "/tmp/ssq-a7forge-%d.out", (int)getpid());
	d = t_tenants_ssqd("a7forge", sock, logf, args, &up);
	CHECK(up, "ssqd --tenants uid answered root");
	if (pipe(ready))
		return test_exit("adv7t_status_forge");
	h = t_tenant_holder(sock, UID, 65534, &hold, ready[1]);
	CHECK(read(ready[0], &byte, 1) == 1 && !byte, "uid %u's client: %d", UID, byte);
	t = (pid_t)t_log_last_num(logf, "tenant uid 60000: its ssqd is pid ");
	tfd = t > 0 ? t_proc_tenant_fd(t) : -1;
	s = t_proc_fd_copy(t, tfd);
	CHECK(s >= 0, "a copy of uid %u's ssqd's socket: %s", UID, strerror(errno));
	if (s < 0)
		goto out;

	/* T stopped: what the parent hands it waits in its socket, for us. */
	kill(t, SIGSTOP);
	fflush(NULL);
	asker = fork();
	if (asker == 0) {
		int o = open(outf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		if (o < 0 || dup2(o, 1) < 0 || dup2(o, 2) < 0)
			_exit(126);
		execl(getenv("SSQD"), "ssqd", "--status", "--socket", sock, (char *)NULL);
		_exit(127);
	}
	a = take_fd(s);
	CHECK(a >= 0, "the parent handed --status's connection to no one");
	if (a >= 0 &&
	    proto_msg_recv(a, &m, &got, 1, &nfds, 10000, why, sizeof(why)) == 0) {
		if (nfds)
			close(got);
		proto_msg_send_error(a, m.hdr.seq, -EIO, "busy\n" FORGED);
	}
	CHECK(waitpid(asker, &st, 0) == asker && WIFEXITED(st) && !WEXITSTATUS(st),
	      "ssqd --status: status 0x%x", st);
	asker = -1;
	f = fopen(outf, "r");
	n = f ? fread(out, 1, sizeof(out) - 1, f) : 0;
	if (f)
		fclose(f);
	out[n] = 0;
	printf("ssqd --status, uid %u's ssqd answering as it likes:\n%s", UID, out);
	for (line = out; line; line = strchr(line, '\n'), line = line ? line + 1 : NULL)
		CHECK(strncmp(line, FORGED, strlen(FORGED)),
		      "--status printed a line of the tenant's making: '%s'", FORGED);
	kill(t, SIGCONT);
out:
	if (asker > 0)
		waitpid(asker, &st, 0);
	if (a >= 0)
		close(a);
	if (s >= 0)
		close(s);
	close(hold);
	waitpid(h, &st, 0);
	CHECK(t_ssqd_stop_ok(d, &st, sock), "ssqd exit status 0x%x", st);
	close(ready[0]);
	close(ready[1]);
	if (!test_failures) {
		unlink(logf);
		unlink(outf);
	}
	return test_exit("adv7t_status_forge");
}
