/* SPDX-License-Identifier: MIT */
/*
 * ssqd - the daemon that owns the shared send queues: options
 * (options.c), signals, systemd's socket activation and readiness, then
 * setup and serve (setup.c, serve.c). Only this file talks to systemd (libsystemd):
 * started any other way, sd_listen_fds() finds nothing and sd_notify() does nothing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include "ctrl/daemon/daemon.h"
#include "ctrl/daemon/queues/queues.h"
#include "ctrl/daemon/nofile.h"

static struct ssqd daemon_state;

static void on_signal(int sig)
{
	(void)sig;
	daemon_state.stop = 1;
}

/*
 * systemd socket activation (ssqd.socket): one listening AF_UNIX
 * SOCK_SEQPACKET socket at fd 3, served in place of --socket's. Returns
 * -1 when none was passed (LISTEN_PID is not ssqd's, or no LISTEN_FDS: not
 * socket-activated), else the fd with its path in @path; exits 1 saying
 * why when what was passed is not one such socket.
 */
static int activation_socket(char *path, size_t pathlen)
{
	struct sockaddr_un sa;
	socklen_t len = sizeof(sa);
	int n = sd_listen_fds(1), fd = SD_LISTEN_FDS_START;

	if (n == 0)
		return -1;
	if (n < 0) {
		fprintf(stderr, SD_ERR "ssqd: socket activation: %s\n", strerror(-n));
		exit(1);
	}
	if (n > 1) {
		fprintf(stderr,
		        SD_ERR "ssqd: socket activation passed %d sockets: want one, a "
		               "ListenSequentialPacket= unix socket (ssqd.socket)\n",
		        n);
		exit(1);
	}
	if (sd_is_socket_unix(fd, SOCK_SEQPACKET, 1, NULL, 0) <= 0) {
		fprintf(stderr,
		        SD_ERR
		        "ssqd: socket activation: fd %d is not a listening AF_UNIX "
		        "SOCK_SEQPACKET socket (ssqd.socket needs "
		        "ListenSequentialPacket=PATH)\n",
		        fd);
		exit(1);
	}
	memset(&sa, 0, sizeof(sa));
	if (getsockname(fd, (struct sockaddr *)&sa, &len) < 0 ||
	    len <= offsetof(struct sockaddr_un, sun_path))
		snprintf(path, pathlen, "fd %d", fd); /* unnamed */
	else if (!sa.sun_path[0])
		snprintf(path, pathlen, "@%.*s", /* abstract */
		         (int)(len - offsetof(struct sockaddr_un, sun_path) - 1),
		         sa.sun_path + 1);
	else
		snprintf(path, pathlen, "%.*s", (int)sizeof(sa.sun_path), sa.sun_path);
	return fd;
}
/*
 * What ssqd counted of each queue's send CQ arming (queues/send_arm.c), for
 * a lab's verdicts (scripts/hw-check.sh, ctrl_wait_lone): that the armed
 * CQ's event reached ssqd, not only that a sleeper woke. Read once its
 * threads have stopped (teardown would stop them too).
 */
static void log_arm_counts(struct ssqd *d)
{
	unsigned i;

	ssqd_send_arm_stop(d);
	for (i = 0; i < d->own.nqueues; i++)
		if (d->queues[i].txa.arms || d->queues[i].txa.events)
			fprintf(stderr,
			        "ssqd: queue %u: send CQ armed %llu times, %llu events\n",
			        i, (unsigned long long)d->queues[i].txa.arms,
			        (unsigned long long)d->queues[i].txa.events);
}

int main(int argc, char **argv)
{
	struct ssqd *d = &daemon_state;
	struct ssqd_options *o = &d->opt;
	char why[512], default_sock[108], passed_sock[sizeof(default_sock) + 8];
	const char *socket_opt;
	struct sigaction sa;
	int rc;

	rc = ssqd_options_parse(o, argc, argv, default_sock, sizeof(default_sock),
	                        &socket_opt);
	if (rc >= 0)
		return rc;
	rc = ssqd_log_setup(o->log_level);
	if (rc)
		fprintf(stderr, "ssqd: log stream: %s; lines go out as they are\n",
		        strerror(-rc));
	/*
	 * A tenant's ssqd (tenants.c) takes its connections from --tenant-fd,
	 * binds no socket and claims no path: its parent holds them.
	 */
	if (o->tenant_fd >= 0) {
		char who[32];

		snprintf(who, sizeof(who), "tenant %s %ld",
		         o->allow_uid >= 0 ? "uid" : "gid",
		         o->allow_uid >= 0 ? o->allow_uid : o->allow_gid);
		ssqd_log_who(who);
		snprintf(passed_sock, sizeof(passed_sock), "fd %d", o->tenant_fd);
		o->listen_fd = o->tenant_fd;
		o->socket_path = passed_sock;
	} else {
		o->listen_fd = activation_socket(passed_sock, sizeof(passed_sock));
	}
	if (o->listen_fd >= 0 && o->tenant_fd < 0) {
		if (socket_opt && strcmp(socket_opt, passed_sock))
			fprintf(stderr,
			        SD_WARNING
			        "ssqd: serving the socket systemd passed, %s, not "
			        "--socket %s\n",
			        passed_sock, socket_opt);
		o->socket_path = passed_sock;
	}

	/* Before DPDK's EAL, the device and the sockets take theirs. */
	ssqd_nofile_raise();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	rc = ssqd_setup(d, why, sizeof(why));
	if (rc) {
		fprintf(stderr, SD_ERR "ssqd: %s\n", why);
		(void)sd_notifyf(0, "STATUS=setup failed: %s\nERRNO=%d", why, -rc);
		return 1;
	}
	rc = ssqd_tenants_start(d, why, sizeof(why));
	if (rc) {
		fprintf(stderr, SD_ERR "ssqd: --tenants: %s\n", why);
		ssqd_teardown(d);
		return 1;
	}
	ssqd_nofile_report(d);
	fprintf(stderr,
	        SD_NOTICE
	        "ssqd: %u queue(s) of %u WQEBBs on %s (%s), %llu MiB data arena at IOVA "
	        "0x%llx, %s pages; serving %s\n",
	        d->own.nqueues, d->queues[0].local.dv_qp.sq.wqe_cnt, d->own.device,
	        d->ops->kind, (unsigned long long)o->data_mib,
	        (unsigned long long)d->own.data_iova,
	        d->arena.hugepages ? "2 MiB huge" : "4 KiB memfd", o->socket_path);
	/* Serving: the socket listens (connections queue until the loop runs). */
	(void)sd_notifyf(0, "READY=1\nSTATUS=serving %u queue(s) on %s (%s) at %s",
	                 d->own.nqueues, d->own.device, d->ops->kind, o->socket_path);
	ssqd_serve(d);
	(void)sd_notify(0, "STOPPING=1\nSTATUS=stopping");
	ssqd_tenants_stop(d);
	log_arm_counts(d);
	ssqd_teardown(d);
	fprintf(stderr, SD_NOTICE "ssqd: stopped\n");
	return 0;
}
