/* SPDX-License-Identifier: MIT */
/*
 * ssqd's options in one place: the defaults (ssqd_options_default), --help's
 * text (usage), and the parser (ssqd_options_parse): one table, opt_defs,
 * gives each option its name, letter, handler and, for a number, its field
 * and range; getopt_long's table is made from it, and the checks across
 * options run once the command line is read (opt_check). A new option is a
 * row in opt_defs, a handler of its own only when a number in a range or a
 * string does not say it all, and its lines in usage().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ctrl/daemon/daemon.h"
#include "ctrl/daemon/peers/peers.h"
#include "ctrl/backend/mlx5_list.h"
#include "ctrl/proto/socket_path.h"
#include "ssq_version.h"

void ssqd_options_default(struct ssqd_options *o)
{
	memset(o, 0, sizeof(*o));
	o->nqueues = 1;
	o->log_level = SSQD_LOG_DEFAULT;
	o->sq_wqebbs = 1024;
	o->cqes = 1024;
	o->data_mib = 64;
	o->signal_every = 64;
	o->recv_depth = 256;
	o->recv_size = 4096;
	o->heal_ms = 50;
	o->stall_ms = 100;
	o->hugepages = SSQ_HUGEPAGES_AUTO;
	o->port = 1;
	o->gid_index = SSQD_GID_AUTO;
	o->qp_timeout = 14;
	o->allow_uid = -1;
	o->allow_gid = -1;
	o->hello_ms = 1000;
	o->max_uid_clients = SSQD_MAX_CLIENTS / 2;
	o->max_client_bufs = SSQD_CLIENT_BUFS_DEFAULT;
	o->listen_fd = -1;
	o->tenant_fd = -1;
	o->tenant_idle_ms = SSQD_TENANT_IDLE_MS;
}

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "Usage: ssqd [options]\n"
	    "Owns one shared RC send queue per peer and serves it to client "
	    "processes.\n\n"
	    "  -d, --device NAME        mlx5 device (e.g. mlx5_0) or \"emu\"; default: "
	    "the\n"
	    "                           first mlx5 device, else the emulated device\n"
	    "  -s, --socket PATH        client socket (default $SSQ_SOCKET, else\n"
	    "                           $XDG_RUNTIME_DIR/ssqd.sock, else\n"
	    "                           /run/ssqd/ssqd.sock for root, else\n"
	    "                           /tmp/ssqd-<uid>/ssqd.sock in a private "
	    "directory)\n"
	    "                           started by systemd with a socket (ssqd.socket),\n"
	    "                           ssqd serves that one\n"
	    "  -q, --queues N           shared queues q0..q<N-1>, 1..%u (default 1)\n"
	    "      --sq-size N          WQEBBs per send queue, a power of two 64..65536\n"
	    "                           (default 1024; a ConnectX takes at most its\n"
	    "                           max_qp_wr, 32768 on the emulated one)\n"
	    "      --cq-size N          CQEs per send CQ at least, a power of two "
	    "64..65536\n"
	    "                           (default 1024; never fewer than twice the\n"
	    "                           send queue's WQEBBs, so it cannot overrun)\n"
	    "      --data-mib N         data arena size in MiB, 1..65536 (default 64)\n"
	    "      --recv-depth N       receive WQEs kept posted per queue for SEND and\n"
	    "                           WRITE_WITH_IMM, 0 (none) or a power of two\n"
	    "                           1..%u (default 256)\n"
	    "      --recv-size BYTES    bytes per receive buffer, a multiple of 64 from\n"
	    "                           64 to %u (default 4096); the pool takes\n"
	    "                           2 x depth x size per queue, besides --data-mib\n"
	    "      --hugepages=MODE     auto (default), required or off\n"
	    "      --buffer-keys        each ssq_buf_alloc buffer its own keys, and no\n"
	    "                           remote access through the arena-wide key: a\n"
	    "                           peer reaches only buffers whose descriptor\n"
	    "                           (remote_addr, rkey) it was given (the default)\n"
	    "      --arena-rkey         one remote key for the whole data arena, as\n"
	    "                           before: any peer reaches every client's\n"
	    "                           buffers; for tools that address a peer's arena\n"
	    "                           by offset (ssq_queue_peer_rkey)\n"
	    "      --no-grants          with peers, buffers and registrations keep\n"
	    "                           remote keys of their own, reachable by any\n"
	    "                           peer that learns one, as before grants; by\n"
	    "                           default a peer reaches only what its owner\n"
	    "                           granted it (ssq_buf_grant)\n"
	    "  -l, --listen PORT        wait for a peer ssqd on this TCP port; a peer "
	    "that\n"
	    "                           dies can be replaced by a new one, a second "
	    "one\n"
	    "                           while it is healthy is refused\n"
	    "  -c, --connect HOST:PORT  connect to a listening peer ssqd; if it goes, "
	    "keep\n"
	    "                           serving and reconnect (backoff 0.1 s .. 2 s)\n"
	    "                           (neither: loopback, each queue's peer inside "
	    "ssqd)\n"
	    "      --name NAME          this daemon's name in a cluster (default: the\n"
	    "                           host name up to its first dot)\n"
	    "      --peer NAME=HOST:PORT\n"
	    "                           a peer daemon (repeatable); with --peer or\n"
	    "                           --peers, --listen is required and each peer\n"
	    "                           gets --queues queues, named NAME/q0..; of two\n"
	    "                           daemons the one whose name sorts first dials\n"
	    "      --peers FILE         peers, one 'NAME HOST:PORT' a line, # comments;\n"
	    "                           this daemon's own line gives loopback queues\n"
	    "      --eager              link every peer at start (default: a peer is\n"
	    "                           linked when a client first opens its queue)\n"
	    "      --max-active-peers N at most N peers linked at once; a new one\n"
	    "                           closes the least recently used idle one\n"
	    "      --idle-ms N          close a peer's link when none of its queues\n"
	    "                           has been open for N ms (default: never)\n"
	    "      --peer-key FILE      authenticate peers with the cluster's secret\n"
	    "                           in FILE (32+ bytes, owned by ssqd's uid, mode\n"
	    "                           0600; the same on every daemon): HMAC-SHA256\n"
	    "                           challenge-response, each message MACed, a\n"
	    "                           peer's links only from its host's address\n"
	    "      --status             print the queues, peers and clients of the\n"
	    "                           ssqd serving --socket (and of each tenant's\n"
	    "                           ssqd under --tenants), and exit\n"
	    "      --json               with --status: one JSON object, for scripts\n"
	    "      --log-level LEVEL    err, warning, notice, info (default) or\n"
	    "                           debug (or 3..7): leave out lines above it.\n"
	    "                           Lines carry the time, or under journald\n"
	    "                           ($JOURNAL_STREAM) their <N> priority\n"
	    "  -p, --ib-port N          device port, 1..2 (default 1)\n"
	    "      --qp-timeout N       every QP's local ACK timeout, 4.096 us x 2^N,\n"
	    "                           0..31 (0: none; default 14, 67 ms)\n"
	    "  -g, --gid-index N|auto|none\n"
	    "                           source GID of the GRH. auto (default): on\n"
	    "                           Ethernet (RoCE) the first RoCE v2 GID with an\n"
	    "                           IPv4 address, else IPv6; on InfiniBand no GRH\n"
	    "                           (LID). none: no GRH (refused on Ethernet)\n"
	    "      --emu-link-layer ib|eth\n"
	    "                           the emulated device's link layer (default ib)\n"
	    "      --emu-mtu BYTES      the emulated ports' active MTU, 256..4096\n"
	    "                           (default 4096 on ib, 1024 on eth)\n"
	    "      --heal-ms N          say so in the log when healing a queue after a\n"
	    "                           death is held up longer than N ms by a live\n"
	    "                           producer mid-reservation (default 50); ssqd\n"
	    "                           keeps serving and retrying every millisecond\n"
	    "      --stall-ms N         the deadline of every hold a client has in a "
	    "queue\n"
	    "                           (a reservation, the doorbell or CQ lease): a\n"
	    "                           live client whose hold does not move for N ms\n"
	    "                           (10 x N if it is not stopped) is killed\n"
	    "                           (SIGKILL) and healed as a death; a\n"
	    "                           queue with work outstanding and no completion\n"
	    "                           for N ms is repaired; 0 or 10..60000 (default\n"
	    "                           100; 0: no deadline)\n"
	    "      --allow-uid UID      also serve this uid (besides ssqd's own and "
	    "root)\n"
	    "      --allow-gid GID      also serve this gid\n"
	    "      --queue-uid qN=UID   queue qN takes only clients of this uid (or of\n"
	    "                           another --queue-uid / --queue-gid of qN);\n"
	    "                           repeatable, up to 32 rules in all\n"
	    "      --queue-gid qN=GID   the same for a (primary) gid\n"
	    "      --tenants none|uid|gid  none (default): all clients one trust\n"
	    "                           domain, one PD and queue; uid / gid: the\n"
	    "                           clients of each other uid (primary gid) get\n"
	    "                           an ssqd of their own (PD, arena, queues),\n"
	    "                           which this one starts; in a cluster each\n"
	    "                           links to the same tenant on every peer\n"
	    "      --tenant-idle-ms N   a tenant's ssqd with no client, memory or grant\n"
	    "                           for N ms exits (default 0: never;\n"
	    "                           the tenant --allow-uid/--allow-gid names never)\n"
	    "      --hello-ms N         a connection that has not said hello within N "
	    "ms\n"
	    "                           is closed (default 1000, 10..60000)\n"
	    "      --max-uid-clients N  connections one uid may hold, 1..%u (default "
	    "%u)\n"
	    "      --max-client-mib N   data arena MiB one client may hold (default "
	    "3/4\n"
	    "                           of --data-mib, at least 1)\n"
	    "      --max-uid-mib N      data arena MiB one uid's clients may hold\n"
	    "                           together (default all of --data-mib)\n"
	    "      --max-client-bufs N  buffers one client may hold, 1..%u (default %u)\n"
	    "      --list-devices       list mlx5 devices, ports, GIDs, capabilities; "
	    "exit\n"
	    "  -V, --version            print the version and git revision; exit\n"
	    "  -h, --help\n",
	    SSQ_MAX_QUEUES, SSQ_RECV_DEPTH_MAX, SSQ_RECV_SIZE_MAX, SSQD_MAX_CLIENTS,
	    SSQD_MAX_CLIENTS / 2, SSQ_DATA_MAX_BUFS, SSQD_CLIENT_BUFS_DEFAULT);
}

/* A whole decimal number in [lo, hi], or exit 2 naming the option. */
static long parse_num(const char *opt, const char *s, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || !*s || *end || v < lo || v > hi) {
		fprintf(stderr, "ssqd: %s '%s': want a number from %ld to %ld\n", opt, s,
		        lo, hi);
		usage(stderr);
		exit(2);
	}
	return v;
}

static uint32_t parse_pow2(const char *opt, const char *s, long lo, long hi)
{
	long v = parse_num(opt, s, lo, hi);

	if (v & (v - 1)) {
		fprintf(stderr, "ssqd: %s %ld: must be a power of two\n", opt, v);
		exit(2);
	}
	return (uint32_t)v;
}

/*
 * The parse under way: what the options write besides struct ssqd_options,
 * checked across options once the command line is read.
 */
struct opt_parse {
	struct ssqd_options *o;
	const char **socket_opt;
	int status;         /* --status */
	unsigned keys_said; /* 1: --buffer-keys, 2: --arena-rkey */
};

struct opt_def;
/*
 * An option's handler: -1 to read on, or the exit status that
 * ssqd_options_parse returns at once (0: --help and the like, 2: refused).
 */
typedef int opt_fn(struct opt_parse *p, const struct opt_def *def, const char *arg);

/*
 * One option: its long name, its short letter (0: none), whether it takes
 * an argument, its handler and, for the handlers that store a number or a
 * string, the field of struct ssqd_options (offset, size) and the range.
 */
struct opt_def {
	const char *name;
	char letter;
	char has_arg;
	opt_fn *fn;
	size_t off, size;
	long lo, hi;
};

#define OPT_FIELD(f)                                                                     \
	offsetof(struct ssqd_options, f), sizeof(((struct ssqd_options *)0)->f)

static void *opt_field(struct opt_parse *p, const struct opt_def *def)
{
	return (char *)p->o + def->off;
}

/* @v (in range, so it fits) into the unsigned or long field of @def. */
static void store_num(struct opt_parse *p, const struct opt_def *def, long v)
{
	void *f = opt_field(p, def);

	switch (def->size) {
	case 1:
		*(uint8_t *)f = (uint8_t)v;
		break;
	case 2:
		*(uint16_t *)f = (uint16_t)v;
		break;
	case 4:
		*(uint32_t *)f = (uint32_t)v;
		break;
	default:
		*(uint64_t *)f = (uint64_t)v;
		break;
	}
}

static int opt_num(struct opt_parse *p, const struct opt_def *def, const char *arg)
{
	char opt[40];

	snprintf(opt, sizeof(opt), "--%s", def->name);
	store_num(p, def, parse_num(opt, arg, def->lo, def->hi));
	return -1;
}

static int opt_pow2(struct opt_parse *p, const struct opt_def *def, const char *arg)
{
	char opt[40];

	snprintf(opt, sizeof(opt), "--%s", def->name);
	store_num(p, def, parse_pow2(opt, arg, def->lo, def->hi));
	return -1;
}

static int opt_str(struct opt_parse *p, const struct opt_def *def, const char *arg)
{
	*(const char **)opt_field(p, def) = arg;
	return -1;
}

static int opt_flag(struct opt_parse *p, const struct opt_def *def, const char *arg)
{
	(void)arg;
	*(int *)opt_field(p, def) = 1;
	return -1;
}

static int opt_socket(struct opt_parse *p, const struct opt_def *def, const char *arg)
{
	(void)def;
	p->o->socket_path = *p->socket_opt = arg;
	return -1;
}

/* --recv-depth: 0 or a power of two; --recv-size: a multiple of 64. */
static int opt_recv(struct opt_parse *p, const struct opt_def *def, const char *arg)
{
	int depth = !strcmp(def->name, "recv-depth");
	uint32_t v;

	opt_num(p, def, arg);
	v = depth ? p->o->recv_depth : p->o->recv_size;
	if (depth ? (v & (v - 1)) != 0 : (v & 63) != 0) {
		fprintf(stderr, "ssqd: --%s %u: must be %s\n", def->name, v,
		        depth ? "0 or a power of two" : "a multiple of 64");
		return 2;
	}
	return -1;
}

static int opt_stall(struct opt_parse *p, const struct opt_def *def, const char *arg)
{
	opt_num(p, def, arg);
	if (p->o->stall_ms && p->o->stall_ms < 10) {
		fprintf(stderr,
		        "ssqd: --stall-ms %u: want 0 (no deadline) or 10 to 60000: "
		        "below 10 ms a process the scheduler merely preempted would be "
		        "killed\n",
		        p->o->stall_ms);
		return 2;
	}
	return -1;
}

static int opt_hugepages(struct opt_parse *p, const struct opt_def *def, const char *arg)
{
	(void)def;
	if (!strcmp(arg, "auto"))
		p->o->hugepages = SSQ_HUGEPAGES_AUTO;
	else if (!strcmp(arg, "required"))
		p->o->hugepages = SSQ_HUGEPAGES_REQUIRED;
	else if (!strcmp(arg, "off"))
		p->o->hugepages = SSQ_HUGEPAGES_OFF;
	else {
		fprintf(stderr, "ssqd: --hugepages '%s': want auto, required or off\n",
		        arg);
		return 2;
	}
	return -1;
}

static int opt_tenants(struct opt_parse *p, const struct opt_def *def, const char *arg)
{
	(void)def;
	if (!strcmp(arg, "none"))
		p->o->tenants = SSQD_TENANTS_NONE;
	else if (!strcmp(arg, "uid"))
		p->o->tenants = SSQD_TENANTS_UID;
	else if (!strcmp(arg, "gid"))
		p->o->tenants = SSQD_TENANTS_GID;
	else {
		fprintf(stderr, "ssqd: --tenants '%s': want none, uid or gid\n", arg);
		return 2;
	}
	return -1;
}

static int opt_log_level(struct opt_parse *p, const struct opt_def *def, const char *arg)
{
	(void)def;
	p->o->log_level = ssqd_log_level_parse(arg);
	if (p->o->log_level < 0) {
		fprintf(stderr,
		        "ssqd: --log-level %s: want err, warning, notice, info, debug "
		        "or 0..7\n",
		        arg);
		return 2;
	}
	return -1;
}

static int opt_peer(struct opt_parse *p, const struct opt_def *def, const char *arg)
{
	char why[512];

	if (strcmp(def->name, "peer") ? ssqd_peers_file(p->o, arg, why, sizeof(why))
	                              : ssqd_peer_opt(p->o, arg, why, sizeof(why))) {
		fprintf(stderr, "ssqd: %s\n", why);
		return 2;
	}
	return -1;
}

static int opt_gid_index(struct opt_parse *p, const struct opt_def *def, const char *arg)
{
	if (!strcmp(arg, "auto"))
		p->o->gid_index = SSQD_GID_AUTO;
	else if (!strcmp(arg, "none"))
		p->o->gid_index = SSQD_GID_NONE;
	else
		p->o->gid_index = (int)parse_num("--gid-index (auto, none or an index)",
		                                 arg, def->lo, def->hi);
	return -1;
}

static int opt_emu_link(struct opt_parse *p, const struct opt_def *def, const char *arg)
{
	(void)def;
	if (!strcmp(arg, "ib"))
		p->o->conf.emu_link_layer = IBV_LINK_LAYER_INFINIBAND;
	else if (!strcmp(arg, "eth"))
		p->o->conf.emu_link_layer = IBV_LINK_LAYER_ETHERNET;
	else {
		fprintf(stderr, "ssqd: --emu-link-layer '%s': want ib or eth\n", arg);
		return 2;
	}
	return -1;
}

static int opt_emu_mtu(struct opt_parse *p, const struct opt_def *def, const char *arg)
{
	uint32_t mtu = parse_pow2("--emu-mtu", arg, def->lo, def->hi);

	/* 256 << (IBV_MTU_x - 1): IBV_MTU_256 is 1 (enum ibv_mtu, libibverbs/verbs.h). */
	p->o->conf.emu_mtu = (enum ibv_mtu)(__builtin_ctz(mtu) - 7);
	return -1;
}

static int opt_keys(struct opt_parse *p, const struct opt_def *def, const char *arg)
{
	(void)arg;
	if (strcmp(def->name, "arena-rkey")) {
		p->keys_said |= 1;
	} else {
		p->keys_said |= 2;
		p->o->arena_rkey = 1;
	}
	return -1;
}

static int opt_status(struct opt_parse *p, const struct opt_def *def, const char *arg)
{
	(void)def, (void)arg;
	p->status = 1;
	return -1;
}

/* --queue-uid / --queue-gid qN=ID. */
static int opt_queue_rule(struct opt_parse *p, const struct opt_def *def, const char *s)
{
	int is_gid = !strcmp(def->name, "queue-gid");
	const char *opt = is_gid ? "--queue-gid" : "--queue-uid";
	struct ssqd_options *o = p->o;
	unsigned long q, id;
	char *end;

	errno = 0;
	if (s[0] != 'q' || s[1] < '0' || s[1] > '9')
		goto bad;
	q = strtoul(s + 1, &end, 10);
	if (errno || *end != '=' || q >= SSQ_MAX_QUEUES || end[1] < '0' || end[1] > '9')
		goto bad;
	id = strtoul(end + 1, &end, 10);
	if (errno || *end || id > INT_MAX)
		goto bad;
	if (o->nqueue_rules >= SSQD_MAX_QUEUE_RULES) {
		fprintf(stderr,
		        "ssqd: %s %s: at most %u --queue-uid / --queue-gid rules\n", opt,
		        s, SSQD_MAX_QUEUE_RULES);
		return 2;
	}
	o->queue_rules[o->nqueue_rules].queue = (uint8_t)q;
	o->queue_rules[o->nqueue_rules].is_gid = (uint8_t)is_gid;
	o->queue_rules[o->nqueue_rules].id = (uint32_t)id;
	o->nqueue_rules++;
	return -1;
bad:
	fprintf(stderr, "ssqd: %s '%s': want qN=%s (N 0..%u, a number)\n", opt, s,
	        is_gid ? "GID" : "UID", SSQ_MAX_QUEUES - 1);
	return 2;
}

static int opt_list(struct opt_parse *p, const struct opt_def *def, const char *arg)
{
	(void)p, (void)def, (void)arg;
	if (ssqd_mlx5_list_devices(stdout) == 0)
		printf("no mlx5 device (none that mlx5dv_is_supported accepts): only "
		       "the emulated device (--device emu) is available\n");
	return 0;
}

static int opt_version(struct opt_parse *p, const struct opt_def *def, const char *arg)
{
	(void)p, (void)def, (void)arg;
	printf("ssqd %s (git %s)\n", SSQ_VERSION_STRING, SSQ_GIT_REVISION);
	return 0;
}

static int opt_help(struct opt_parse *p, const struct opt_def *def, const char *arg)
{
	(void)p, (void)def, (void)arg;
	usage(stdout);
	return 0;
}

/* Every option, in --help's order; ranges as usage() states them. */
static const struct opt_def opt_defs[] = {
	{ "device", 'd', 1, opt_str, OPT_FIELD(device), 0, 0 },
	{ "socket", 's', 1, opt_socket, 0, 0, 0, 0 },
	{ "queues", 'q', 1, opt_num, OPT_FIELD(nqueues), 1, SSQ_MAX_QUEUES },
	{ "sq-size", 0, 1, opt_pow2, OPT_FIELD(sq_wqebbs), 64, 65536 },
	{ "cq-size", 0, 1, opt_pow2, OPT_FIELD(cqes), 64, 65536 },
	{ "data-mib", 0, 1, opt_num, OPT_FIELD(data_mib), 1, 65536 },
	{ "recv-depth", 0, 1, opt_recv, OPT_FIELD(recv_depth), 0, SSQ_RECV_DEPTH_MAX },
	{ "recv-size", 0, 1, opt_recv, OPT_FIELD(recv_size), 64, SSQ_RECV_SIZE_MAX },
	{ "hugepages", 0, 1, opt_hugepages, 0, 0, 0, 0 },
	{ "buffer-keys", 0, 0, opt_keys, 0, 0, 0, 0 },
	{ "arena-rkey", 0, 0, opt_keys, 0, 0, 0, 0 },
	{ "listen", 'l', 1, opt_num, OPT_FIELD(listen_port), 1, 65535 },
	{ "connect", 'c', 1, opt_str, OPT_FIELD(connect_to), 0, 0 },
	{ "name", 0, 1, opt_str, OPT_FIELD(name), 0, 0 },
	{ "peer", 0, 1, opt_peer, 0, 0, 0, 0 },
	{ "peers", 0, 1, opt_peer, 0, 0, 0, 0 },
	{ "eager", 0, 0, opt_flag, OPT_FIELD(eager), 0, 0 },
	{ "max-active-peers", 0, 1, opt_num, OPT_FIELD(max_active_peers), 1,
	  SSQD_MAX_PEERS },
	{ "peer-key", 0, 1, opt_str, OPT_FIELD(peer_key), 0, 0 },
	{ "no-grants", 0, 0, opt_flag, OPT_FIELD(no_grants), 0, 0 },
	{ "idle-ms", 0, 1, opt_num, OPT_FIELD(idle_ms), 10, 86400000 },
	{ "status", 0, 0, opt_status, 0, 0, 0, 0 },
	{ "json", 0, 0, opt_flag, OPT_FIELD(status_json), 0, 0 },
	{ "log-level", 0, 1, opt_log_level, 0, 0, 0, 0 },
	{ "ib-port", 'p', 1, opt_num, OPT_FIELD(port), 1, 2 },
	{ "qp-timeout", 0, 1, opt_num, OPT_FIELD(qp_timeout), 0, 31 },
	{ "gid-index", 'g', 1, opt_gid_index, 0, 0, 0, 255 },
	{ "emu-link-layer", 0, 1, opt_emu_link, 0, 0, 0, 0 },
	{ "emu-mtu", 0, 1, opt_emu_mtu, 0, 0, 256, 4096 },
	{ "heal-ms", 0, 1, opt_num, OPT_FIELD(heal_ms), 1, 10000 },
	{ "stall-ms", 0, 1, opt_stall, OPT_FIELD(stall_ms), 0, 60000 },
	{ "allow-uid", 0, 1, opt_num, OPT_FIELD(allow_uid), 0, INT_MAX },
	{ "allow-gid", 0, 1, opt_num, OPT_FIELD(allow_gid), 0, INT_MAX },
	{ "queue-uid", 0, 1, opt_queue_rule, 0, 0, 0, 0 },
	{ "queue-gid", 0, 1, opt_queue_rule, 0, 0, 0, 0 },
	{ "tenants", 0, 1, opt_tenants, 0, 0, 0, 0 },
	{ "tenant-fd", 0, 1, opt_num, OPT_FIELD(tenant_fd), 3, INT_MAX },
	{ "tenant-idle-ms", 0, 1, opt_num, OPT_FIELD(tenant_idle_ms), 0, 86400000 },
	{ "hello-ms", 0, 1, opt_num, OPT_FIELD(hello_ms), 10, 60000 },
	{ "max-uid-clients", 0, 1, opt_num, OPT_FIELD(max_uid_clients), 1,
	  SSQD_MAX_CLIENTS },
	{ "max-client-mib", 0, 1, opt_num, OPT_FIELD(max_client_mib), 1, 65536 },
	{ "max-uid-mib", 0, 1, opt_num, OPT_FIELD(max_uid_mib), 1, 65536 },
	{ "max-client-bufs", 0, 1, opt_num, OPT_FIELD(max_client_bufs), 1,
	  SSQ_DATA_MAX_BUFS },
	{ "list-devices", 0, 0, opt_list, 0, 0, 0, 0 },
	{ "version", 'V', 0, opt_version, 0, 0, 0, 0 },
	{ "help", 'h', 0, opt_help, 0, 0, 0, 0 },
};

#define OPT_N (sizeof(opt_defs) / sizeof(opt_defs[0]))

/*
 * getopt_long's table and short-option string from opt_defs: an option
 * with a letter returns it, one without returns 256 + its index.
 */
static void opt_getopt_table(struct option *lo, char *shorts)
{
	unsigned i;

	for (i = 0; i < OPT_N; i++) {
		const struct opt_def *def = &opt_defs[i];

		lo[i] = (struct option){ def->name,
			                 def->has_arg ? required_argument : no_argument,
			                 NULL, def->letter ? def->letter : 256 + (int)i };
		if (def->letter) {
			*shorts++ = def->letter;
			if (def->has_arg)
				*shorts++ = ':';
		}
	}
	lo[OPT_N] = (struct option){ NULL, 0, NULL, 0 };
	*shorts = '\0';
}

/* What getopt_long returned, as the option's entry; NULL: unknown. */
static const struct opt_def *opt_lookup(int c)
{
	unsigned i;

	if (c >= 256)
		return c - 256 < (int)OPT_N ? &opt_defs[c - 256] : NULL;
	for (i = 0; i < OPT_N; i++)
		if (opt_defs[i].letter && opt_defs[i].letter == c)
			return &opt_defs[i];
	return NULL;
}

/*
 * What a tenant's ssqd (tenants.c) is not given of this command line: the
 * socket and who may use it (the tenant's own are set for it), --connect
 * (refused under --tenants), --tenants itself, and what only asks and
 * exits. It keeps the cluster's options (--name, --peers, --listen: it
 * binds no port, its links come through this ssqd; peers/tenant.c).
 */
static const char *const tenant_drops[] = {
	"socket",         "connect",      "status",    "json",    "allow-uid",
	"allow-gid",      "queue-uid",    "queue-gid", "tenants", "tenant-fd",
	"tenant-idle-ms", "list-devices", "version",   "help",
};

static int tenant_dropped(const struct opt_def *def)
{
	unsigned i;

	for (i = 0; i < sizeof(tenant_drops) / sizeof(tenant_drops[0]); i++)
		if (!strcmp(def->name, tenant_drops[i]))
			return 1;
	return 0;
}

/* The checks across options, the quotas' defaults: -1, or 2 after saying why. */
static int opt_check(struct ssqd_options *o, unsigned keys_said)
{
	char why[512];
	unsigned i;

	if (o->status_json) {
		fprintf(stderr, "ssqd: --json goes with --status\n");
		return 2;
	}
	if (keys_said == 3) {
		fprintf(stderr,
		        "ssqd: --buffer-keys and --arena-rkey exclude each other\n");
		return 2;
	}
	if (o->listen_port && o->connect_to && !o->npeers) {
		fprintf(stderr, "ssqd: --listen and --connect exclude each other\n");
		return 2;
	}
	if (o->tenants && !o->npeers && (o->listen_port || o->connect_to)) {
		/*
		 * A cluster's links are each tenant's own (peers/tenant.c); the
		 * one-peer modes' first link is made at start, before any
		 * tenant's ssqd runs, and its one peer has no name to route by.
		 */
		fprintf(stderr,
		        "ssqd: --tenants: peers are carried per tenant in a cluster "
		        "only (--name and --peer/--peers with --listen), not with "
		        "--listen or --connect alone\n");
		return 2;
	}
	if (o->tenants && o->argc > (int)SSQD_MAX_ARGS) {
		fprintf(stderr, "ssqd: --tenants: at most %u words on the command line\n",
		        SSQD_MAX_ARGS);
		return 2;
	}
	if (ssqd_peer_opts_check(o, why, sizeof(why))) {
		fprintf(stderr, "ssqd: %s\n", why);
		return 2;
	}
	for (i = 0; i < o->nqueue_rules; i++)
		if (o->queue_rules[i].queue >= o->nqueues) {
			fprintf(stderr,
			        "ssqd: --queue-%s q%u=%u: there are only %u queues "
			        "(q0..q%u)\n",
			        o->queue_rules[i].is_gid ? "gid" : "uid",
			        o->queue_rules[i].queue, o->queue_rules[i].id, o->nqueues,
			        o->nqueues - 1);
			return 2;
		}
	/* The arena quotas default to shares of --data-mib and stay within it. */
	if (!o->max_client_mib)
		o->max_client_mib = o->data_mib >= 4 ? o->data_mib * 3 / 4 : 1;
	/* --max-uid-mib unset (0): clients/request.c picks all or half of it. */
	if (o->max_client_mib > o->data_mib || o->max_uid_mib > o->data_mib) {
		int uid = o->max_uid_mib > o->data_mib;

		fprintf(stderr, "ssqd: --max-%s-mib %llu: at most --data-mib %llu\n",
		        uid ? "uid" : "client",
		        (unsigned long long)(uid ? o->max_uid_mib : o->max_client_mib),
		        (unsigned long long)o->data_mib);
		return 2;
	}
	return -1;
}

int ssqd_options_parse(struct ssqd_options *o, int argc, char **argv, char *sock,
                       size_t socklen, const char **socket_opt)
{
	struct opt_parse p = { o, socket_opt, 0, 0 };
	struct option lo[OPT_N + 1];
	char shorts[2 * OPT_N + 1];
	const struct opt_def *def;
	int c, rc;

	ssqd_options_default(o);
	if (proto_default_socket(sock, socklen)) {
		fprintf(stderr, "ssqd: $SSQ_SOCKET or $XDG_RUNTIME_DIR is too long for a "
		                "socket path; pass --socket\n");
		return 2;
	}
	o->socket_path = sock;
	*socket_opt = NULL;
	opt_getopt_table(lo, shorts);
	opterr = 0;
	o->argc = argc;
	o->argv = argv;
	for (;;) {
		int first = optind, i;

		c = getopt_long(argc, argv, shorts, lo, NULL);
		if (c == -1)
			break;
		def = opt_lookup(c);
		if (!def) {
			fprintf(stderr, "ssqd: unknown or incomplete option '%s'\n",
			        argv[optind - 1]);
			usage(stderr);
			return 2;
		}
		/* The words this option took: argv[first, optind). */
		for (i = first; i < optind && i < (int)SSQD_MAX_ARGS; i++)
			o->arg_drop[i] = (uint8_t)tenant_dropped(def);
		rc = def->fn(&p, def, optarg);
		if (rc >= 0)
			return rc;
	}
	if (optind < argc) {
		fprintf(stderr, "ssqd: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	/* A client of the ssqd at --socket: its queues and peers, then exit. */
	if (p.status)
		return o->status_json ? ssqd_status_json(o->socket_path, stdout)
		                      : ssqd_status_print(o->socket_path, stdout);
	return opt_check(o, p.keys_said);
}
