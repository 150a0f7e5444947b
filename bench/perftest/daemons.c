/* SPDX-License-Identifier: MIT */
/*
 * daemons.c - the ssqd a tool starts: one on the device in loopback, or two
 * on the emulated device for --wire (one --listen, one --connect); their
 * queues (-q, --mode qp-per-process) and, for SEND, the receive pool.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <ssq/ssq.h>
#include <ssq/client.h>
#include "engine.h"

/* The first mlx5 device in /sys/class/infiniband, into @out; 0 if none. */
static int first_mlx5(char *out, size_t len)
{
	DIR *d = opendir("/sys/class/infiniband");
	struct dirent *e;
	int found = 0;

	if (!d)
		return 0;
	while (!found && (e = readdir(d)) != NULL)
		if (!strncmp(e->d_name, "mlx5", 4))
			found = snprintf(out, len, "%s", e->d_name) < (int)len;
	closedir(d);
	return found;
}

/* $SSQD, else ssqd in the build tree (the tool is <build>/bench/perftest/x). */
static void ssqd_path(char *out, size_t len)
{
	char self[PATH_MAX];
	ssize_t n;
	char *slash;

	if (getenv("SSQD")) {
		snprintf(out, len, "%s", getenv("SSQD"));
		return;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		slash = strrchr(self, '/');
		if (slash) {
			*slash = 0;
			if (snprintf(out, len, "%s/../../ssqd", self) < (int)len &&
			    access(out, X_OK) == 0)
				return;
		}
	}
	snprintf(out, len, "ssqd"); /* $PATH */
}

/* Copy ssqd's log to stderr: why it did not start. */
static void show_log(const char *log)
{
	char buf[512];
	size_t n;
	FILE *f = fopen(log, "r");

	if (!f)
		return;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		fwrite(buf, 1, n, stderr);
	fclose(f);
}

void pt_queue_name(const struct pt_opts *o, uint32_t idx, uint32_t lane, char *out,
                   size_t len)
{
	snprintf(out, len, "q%u",
	         o->mode == PT_QP_PER_PROCESS ? idx * o->qps + lane : lane);
}

uint32_t pt_queues_needed(const struct pt_opts *o)
{
	return o->mode == PT_QP_PER_PROCESS ? o->procs * o->qps : o->qps;
}

int pt_is_send(const struct pt_opts *o)
{
	return o->test == PT_SEND_BW || o->test == PT_SEND_LAT;
}

/*
 * The receive pool SEND needs at every queue: buffers of the largest size,
 * at least as many posted as can be in flight to one queue (so no sender
 * ever waits out an RNR timer), a power of two (ssqd's rule).
 */
void pt_recv_pool(const struct pt_opts *o, uint32_t *depth, uint32_t *bytes)
{
	uint32_t top = o->all_sizes ? PT_MAX_SIZE : o->size, want, d = 256;

	want = o->test == PT_SEND_LAT         ? o->procs
	       : o->mode == PT_QP_PER_PROCESS ? o->tx_depth
	                                      : o->procs * o->tx_depth;
	while (d < want && d < 32768)
		d *= 2;
	*depth = d;
	*bytes = top < 64 ? 64 : (top + 63) & ~63u;
}

/*
 * Start ssqd for @o as @d ("<tag>" names its socket and log), with
 * @peer_flag @peer_arg (--listen PORT, --connect HOST:PORT) when given,
 * and connect to it. Returns the client or NULL (said why).
 */
static struct ssq_client *ssqd_start(const struct pt_opts *o, const char *dev,
                                     struct pt_daemon *d, const char *tag,
                                     const char *peer_flag, const char *peer_arg)
{
	char path[PATH_MAX], queues[16], mib[16], rdepth[16], rsize[16];
	const char *argv[24];
	struct ssq_client *c = NULL;
	uint32_t depth, bytes;
	unsigned a = 0;
	/* Senders' sources, write_lat's slots and the destination. */
	uint64_t data =
	    (uint64_t)(2 * o->procs + 2) * (o->all_sizes ? PT_MAX_SIZE : o->size);
	int i, st;

	ssqd_path(path, sizeof(path));
	snprintf(d->sock, sizeof(d->sock), "/tmp/ssq-perftest.%d%s.sock", getpid(), tag);
	snprintf(d->log, sizeof(d->log), "/tmp/ssq-perftest.%d%s.log", getpid(), tag);
	snprintf(queues, sizeof(queues), "%u", pt_queues_needed(o));
	snprintf(mib, sizeof(mib), "%llu", (unsigned long long)(data >> 20) + 16);
	pt_recv_pool(o, &depth, &bytes);
	snprintf(rdepth, sizeof(rdepth), "%u", depth);
	snprintf(rsize, sizeof(rsize), "%u", bytes);
	argv[a++] = path;
	argv[a++] = "--device";
	argv[a++] = dev;
	argv[a++] = "--socket";
	argv[a++] = d->sock;
	argv[a++] = "--queues";
	argv[a++] = queues;
	argv[a++] = "--data-mib";
	argv[a++] = mib;
	argv[a++] = "--sq-size";
	argv[a++] = "4096";
	argv[a++] = strcmp(dev, "emu") ? "--hugepages=auto" : "--hugepages=off";
	if (pt_is_send(o)) {
		argv[a++] = "--recv-depth";
		argv[a++] = rdepth;
		argv[a++] = "--recv-size";
		argv[a++] = rsize;
	}
	if (peer_flag) {
		argv[a++] = peer_flag;
		argv[a++] = peer_arg;
	}
	argv[a] = NULL;
	fflush(stdout); /* not twice: the child's copy of the buffer */
	d->pid = fork();
	if (d->pid == 0) {
		int fd = open(d->log, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(127);
		execvp(path, (char *const *)argv);
		fprintf(stderr, "%s: cannot run %s: %s\n", o->tool, path,
		        strerror(errno));
		_exit(127);
	}
	if (d->pid < 0) {
		fprintf(stderr, "%s: fork: %s\n", o->tool, strerror(errno));
		d->pid = 0;
		return NULL;
	}
	for (i = 0; i < 400 && ssq_client_connect(d->sock, &c); i++) {
		if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
			fprintf(stderr, "%s: ssqd (%s%s%s) exited at start:\n", o->tool,
			        path, peer_flag ? " " : "", peer_flag ? peer_flag : "");
			show_log(d->log);
			d->pid = 0;
			return NULL;
		}
		usleep(25 * 1000);
	}
	if (!c) {
		fprintf(stderr, "%s: ssqd at %s: %s\n", o->tool, d->sock,
		        ssq_client_strerror_last());
		show_log(d->log);
	}
	return c;
}

void pt_ssqd_stop(struct pt_daemon *d)
{
	if (d->pid > 0) {
		kill(d->pid, SIGTERM);
		waitpid(d->pid, NULL, 0);
	}
	if (d->pid)
		unlink(d->sock);
	if (d->log[0])
		unlink(d->log);
	d->pid = 0;
}

/* A TCP port on 127.0.0.1 free just now, for --listen; 0 if none. */
static uint16_t free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
		                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	uint16_t port = 0;

	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* Until every queue of @c is in RTS (the peers have connected): 0 or -1. */
static int wait_ready(const struct pt_opts *o, struct ssq_client *c, const char *who)
{
	struct ssq_queue_info qi[PT_MAX_LANES];
	int i, k, n = 0, ok = 0;

	for (i = 0; i < 400 && !ok; i++) {
		n = ssq_client_list(c, qi, PT_MAX_LANES);
		for (ok = n > 0, k = 0; k < n; k++)
			ok &= qi[k].ready != 0;
		if (!ok)
			usleep(25 * 1000);
	}
	if (!ok)
		fprintf(stderr, "%s: the %s ssqd's queues never came up (%d listed)\n",
		        o->tool, who, n);
	return ok ? 0 : -1;
}

/*
 * Start what @o needs: one ssqd (loopback), or with --wire two on the
 * emulated device, the destination's --listen and the senders' --connect.
 * *@c: the senders' ssqd, *@cd: the destination's (the same in loopback).
 */
int pt_start_daemons(const struct pt_opts *o, char *dev, size_t devlen,
                     struct pt_daemon *dl, struct pt_daemon *dc, struct ssq_client **c,
                     struct ssq_client **cd)
{
	char port[8], to[32];
	const char *mode = getenv("SSQ_EMU_MODE");
	uint16_t pn;

	if (o->wire) {
		snprintf(dev, devlen, "emu");
		if (mode && !strcasecmp(mode, "sink")) {
			fprintf(
			    stderr,
			    "%s: --wire with SSQ_EMU_MODE=sink: the sink device sends "
			    "nothing over the wire (use full)\n",
			    o->tool);
			return -1;
		}
		pn = free_port();
		if (!pn) {
			fprintf(stderr, "%s: --wire: no free TCP port on 127.0.0.1\n",
			        o->tool);
			return -1;
		}
		snprintf(port, sizeof(port), "%u", pn);
		snprintf(to, sizeof(to), "127.0.0.1:%u", pn);
		printf("--wire: two ssqd on the emulated mlx5 device, RC over the "
		       "emulated wire (UDP on 127.0.0.1)\n");
		*cd = ssqd_start(o, dev, dl, "-listen", "--listen", port);
		if (*cd)
			*c = ssqd_start(o, dev, dc, "-connect", "--connect", to);
		if (!*c || wait_ready(o, *cd, "listening") ||
		    wait_ready(o, *c, "connecting"))
			return -1;
		return 0;
	}
	if (o->device)
		snprintf(dev, devlen, "%s", o->device);
	else if (!first_mlx5(dev, devlen))
		snprintf(dev, devlen, "emu");
	if (!strcmp(dev, "emu"))
		printf("%s: running on the emulated mlx5 device\n",
		       o->device ? "-d emu" : "no mlx5 device in /sys/class/infiniband");
	else
		printf("running on %s\n", dev);
	*c = *cd = ssqd_start(o, dev, dc, "", NULL, NULL);
	return *c ? 0 : -1;
}
