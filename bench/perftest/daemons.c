/* SPDX-License-Identifier: MIT */
/*
 * daemons.c - the ssqd a tool starts: one on the device in loopback, or two
 * on the emulated device for --wire (one --listen, one --connect); their
 * queues (-q, --mode qp-per-process) and, for SEND, the receive pool.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <time.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <infiniband/mlx5dv.h>
#include <ssq/ssq.h>
#include <ssq/client.h>
#include "daemons.h"

/*
 * The first RDMA device libmlx5 drives, into @out; 0 if none. By
 * provider (mlx5dv_is_supported), not by the "mlx5" name prefix: rdma-core's
 * udev rule (kernel-boot/rdma-persistent-naming.rules) names ConnectX
 * devices rocep.../ibp... on Debian and Ubuntu.
 */
static int first_mlx5(char *out, size_t len)
{
	struct ibv_device **list;
	int n = 0, i, found = 0;

	list = ibv_get_device_list(&n);
	if (!list)
		return 0;
	for (i = 0; !found && i < n; i++)
		if (mlx5dv_is_supported(list[i]))
			found = snprintf(out, len, "%s", ibv_get_device_name(list[i])) <
			        (int)len;
	ibv_free_device_list(list);
	return found;
}

/* @path names an executable file. */
static int runnable(const char *path)
{
	return access(path, X_OK) == 0;
}

/*
 * The ssqd to start: $SSQD; else the one next to this tool (an install:
 * <prefix>/bin/ssqd, or <prefix>/sbin/ssqd beside <prefix>/bin); else, for
 * a tool run from its build tree, that tree's ssqd (PT_BUILD_SSQD, where
 * CMake builds it); else "ssqd" on $PATH.
 */
static void ssqd_path(char *out, size_t len)
{
	char self[PATH_MAX];
	ssize_t n;
	char *slash;

	if (getenv("SSQD") && *getenv("SSQD")) {
		snprintf(out, len, "%s", getenv("SSQD"));
		return;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		slash = strrchr(self, '/');
		if (slash) {
			*slash = 0;
			if (snprintf(out, len, "%s/ssqd", self) < (int)len &&
			    runnable(out))
				return;
			if (snprintf(out, len, "%s/../sbin/ssqd", self) < (int)len &&
			    runnable(out))
				return;
#if defined(PT_BUILD_DIR) && defined(PT_BUILD_SSQD)
			if (!strcmp(self, PT_BUILD_DIR) && runnable(PT_BUILD_SSQD)) {
				snprintf(out, len, "%s", PT_BUILD_SSQD);
				return;
			}
#endif
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

/*
 * Start ssqd for @o as @d ("<tag>" names its socket and log), with @extra
 * (NULL-terminated: --listen PORT, --connect HOST:PORT, a cluster's
 * --name, --peer ...) after its own flags, and connect to it. Returns the
 * client or NULL (said why).
 */
static struct ssq_client *ssqd_start(const struct pt_opts *o, const char *dev,
                                     struct pt_daemon *d, const char *tag,
                                     const char *const *extra)
{
	char path[PATH_MAX], queues[16], mib[16], rdepth[16], rsize[16], gid[16],
	    port[16], mtu[16], qpto[16];
	const char *argv[28 + 2 * PT_MAX_PEERS + 8];
	struct ssq_client *c = NULL;
	uint32_t depth, bytes;
	unsigned a = 0;
	pid_t parent = getpid();
	/* Senders' sources, write_lat's slots and the destination. */
	uint64_t data = (uint64_t)(2 * o->procs + 2) * pt_top_size(o);
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
	if (o->gid_index >= 0) {
		snprintf(gid, sizeof(gid), "%d", o->gid_index);
		argv[a++] = "--gid-index";
		argv[a++] = gid;
	}
	if (o->ib_port) {
		snprintf(port, sizeof(port), "%d", o->ib_port);
		argv[a++] = "--ib-port";
		argv[a++] = port;
	}
	if (o->qp_timeout >= 0) {
		snprintf(qpto, sizeof(qpto), "%d", o->qp_timeout);
		argv[a++] = "--qp-timeout";
		argv[a++] = qpto;
	}
	if (o->mtu && !strcmp(dev, "emu")) {
		/* -m: the emulated ports' MTU; a ConnectX's is its port's. */
		snprintf(mtu, sizeof(mtu), "%u", o->mtu);
		argv[a++] = "--emu-mtu";
		argv[a++] = mtu;
	}
	while (extra && *extra)
		argv[a++] = *extra++;
	argv[a] = NULL;
	fflush(stdout); /* not twice: the child's copy of the buffer */
	d->pid = fork();
	if (d->pid == 0) {
		int fd = open(d->log, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		/*
		 * Its own process group, so a ^C (or timeout's signal to the
		 * group) reaches the tool, which stops ssqd after its senders;
		 * and stopped (SIGTERM) if the tool dies first.
		 */
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(127);
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
			        path, extra ? " " : "", extra ? extra[0] : "");
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
		while (waitpid(d->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (d->pid)
		unlink(d->sock);
	if (d->log[0])
		unlink(d->log);
	d->pid = 0;
}

/* Can 127.0.0.1:@port be bound just now (as ssqd's listener binds it)? */
static int bindable(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
		                 .sin_port = htons(port),
		                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), ok;

	ok = fd >= 0 && !setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) &&
	     !bind(fd, (struct sockaddr *)&a, sizeof(a));
	if (fd >= 0)
		close(fd);
	return ok;
}

/*
 * A TCP port on 127.0.0.1 free just now, for --listen; 0 if none. Below
 * the kernel's ephemeral range (ip_local_port_range), from a random start,
 * then on up: a port the kernel picked goes back to its pool, where any
 * outgoing connection (one ssqd dialing another) may take it before the
 * ssqd meant to listen there binds it.
 */
static uint16_t free_port(void)
{
	static unsigned next;
	unsigned lo = 32768, hi = 0, k;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");

	if (f) {
		if (fscanf(f, "%u %u", &lo, &hi) != 2)
			lo = 32768;
		fclose(f);
	}
	/* The range starts low: above it instead. */
	hi = lo > 11024 ? lo - 1 : 65535;
	lo = lo > 11024 ? 10000 : 61000;
	if (!next)
		next = (unsigned)getpid() * 7919u + (unsigned)time(NULL);
	for (k = 0; k <= hi - lo; k++) {
		uint16_t port = (uint16_t)(lo + next++ % (hi - lo + 1));

		if (bindable(port))
			return port;
	}
	return 0;
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
		*cd = ssqd_start(o, dev, dl, "-listen",
		                 (const char *const[]){ "--listen", port, NULL });
		if (*cd)
			*c = ssqd_start(o, dev, dc, "-connect",
			                (const char *const[]){ "--connect", to, NULL });
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
		       o->device ? "-d emu" : "no mlx5 device (mlx5dv_is_supported)");
	else
		printf("running on %s\n", dev);
	*c = *cd = ssqd_start(o, dev, dc, "", NULL);
	return *c ? 0 : -1;
}

int pt_start_cluster(const struct pt_opts *o, struct pt_daemon *dc, struct ssq_client **c,
                     struct pt_daemon *dp, struct ssq_client **cp)
{
	const char *mode = getenv("SSQ_EMU_MODE");
	const char *args[8 + 2 * PT_MAX_PEERS];
	char port[PT_MAX_PEERS + 1][8], peer[PT_MAX_PEERS + 1][PT_PEER_NAME + 24];
	char tag[PT_PEER_NAME + 2];
	uint16_t pn[PT_MAX_PEERS + 1];
	uint32_t k, j, a = 0;

	if (mode && !strcasecmp(mode, "sink")) {
		fprintf(stderr,
		        "%s: --peers with SSQ_EMU_MODE=sink: the sink device sends "
		        "nothing over the wire (use full)\n",
		        o->tool);
		return -1;
	}
	/* Index 0 is this host's ssqd, "here"; k + 1 is peer k. */
	for (k = 0; k <= o->npeers; k++) {
		for (j = 0, pn[k] = free_port(); pn[k] && j < k; j++)
			if (pn[j] == pn[k]) /* the kernel gave it again: another */
				pn[k] = free_port(), j = (uint32_t)-1;
		if (!pn[k]) {
			fprintf(stderr, "%s: --peers: no free TCP port on 127.0.0.1\n",
			        o->tool);
			return -1;
		}
		snprintf(port[k], sizeof(port[k]), "%u", pn[k]);
		snprintf(peer[k], sizeof(peer[k]), "%s=127.0.0.1:%u",
		         k ? o->peers[k - 1] : "here", pn[k]);
	}
	printf("--peers: %u+1 ssqd on the emulated mlx5 device, RC over the emulated "
	       "wire (UDP on 127.0.0.1): this host's (here) and",
	       o->npeers);
	for (k = 0; k < o->npeers; k++)
		printf(" %s", o->peers[k]);
	printf("\n");
	args[a++] = "--name";
	args[a++] = "here";
	args[a++] = "--listen";
	args[a++] = port[0];
	args[a++] = "--eager";
	for (k = 1; k <= o->npeers; k++) {
		args[a++] = "--peer";
		args[a++] = peer[k];
	}
	args[a] = NULL;
	*c = ssqd_start(o, "emu", dc, "-here", args);
	for (k = 0; *c && k < o->npeers; k++) {
		snprintf(tag, sizeof(tag), "-%s", o->peers[k]);
		cp[k] = ssqd_start(
		    o, "emu", &dp[k], tag,
		    (const char *const[]){ "--name", o->peers[k], "--listen", port[k + 1],
		                           "--eager", "--peer", peer[0], NULL });
		if (!cp[k])
			return -1;
	}
	if (!*c || wait_ready(o, *c, "sending"))
		return -1;
	for (k = 0; k < o->npeers; k++)
		if (wait_ready(o, cp[k], o->peers[k]))
			return -1;
	return 0;
}

void pt_port_facts(const char *dev, int port, struct pt_info *in)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_port_attr pa;
	int i, n = 0;

	in->why = "the device's port could not be queried";
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n && !ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev))
			ctx = ibv_open_device(list[i]);
	if (ctx && ibv_query_port(ctx, (uint8_t)port, &pa) == 0) {
		in->link = pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "IB";
		in->mtu = pa.active_mtu >= IBV_MTU_256 && pa.active_mtu <= IBV_MTU_4096
		              ? 128u << pa.active_mtu
		              : 0;
		in->lid = pa.lid;
	}
	if (ctx)
		ibv_close_device(ctx);
	if (list)
		ibv_free_device_list(list);
}
