/* SPDX-License-Identifier: MIT */
/*
 * ssqd's options in one place: the defaults (ssqd_options_default), the
 * getopt table, its loop and the checks across options
 * (ssqd_options_parse), and --help's text (usage).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
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
	o->allow_uid = -1;
	o->allow_gid = -1;
	o->hello_ms = 1000;
	o->max_uid_clients = SSQD_MAX_CLIENTS / 2;
	o->max_client_bufs = SSQD_CLIENT_BUFS_DEFAULT;
	o->listen_fd = -1;
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
	    "      --status             print the queues and peers of the ssqd\n"
	    "                           serving --socket, and exit\n"
	    "      --json               with --status: one JSON object, for scripts\n"
	    "      --log-level LEVEL    err, warning, notice, info (default) or\n"
	    "                           debug (or 3..7): leave out lines above it.\n"
	    "                           Lines carry the time, or under journald\n"
	    "                           ($JOURNAL_STREAM) their <N> priority\n"
	    "  -p, --ib-port N          device port, 1..2 (default 1)\n"
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

/* --queue-uid / --queue-gid qN=ID: 0, or 1 after saying what is wrong. */
static int parse_queue_rule(struct ssqd_options *o, int is_gid, const char *s)
{
	const char *opt = is_gid ? "--queue-gid" : "--queue-uid";
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
		return 1;
	}
	o->queue_rules[o->nqueue_rules].queue = (uint8_t)q;
	o->queue_rules[o->nqueue_rules].is_gid = (uint8_t)is_gid;
	o->queue_rules[o->nqueue_rules].id = (uint32_t)id;
	o->nqueue_rules++;
	return 0;
bad:
	fprintf(stderr, "ssqd: %s '%s': want qN=%s (N 0..%u, a number)\n", opt, s,
	        is_gid ? "GID" : "UID", SSQ_MAX_QUEUES - 1);
	return 1;
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

int ssqd_options_parse(struct ssqd_options *o, int argc, char **argv, char *sock,
                       size_t socklen, const char **socket_opt)
{
	enum {
		O_SQ = 256,
		O_CQ,
		O_DATA,
		O_HUGE,
		O_UID,
		O_GID,
		O_QUEUE_UID,
		O_QUEUE_GID,
		O_LIST,
		O_HEAL,
		O_RDEPTH,
		O_RSIZE,
		O_HELLO,
		O_UID_CLIENTS,
		O_CLIENT_MIB,
		O_UID_MIB,
		O_CLIENT_BUFS,
		O_EMU_LINK,
		O_EMU_MTU,
		O_STALL,
		O_BUFFER_KEYS,
		O_ARENA_RKEY,
		O_NO_GRANTS,
		O_NAME,
		O_PEER,
		O_PEERS,
		O_EAGER,
		O_MAX_ACTIVE,
		O_IDLE,
		O_STATUS,
		O_JSON,
		O_LOG_LEVEL
	};
	static const struct option opts[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "socket", required_argument, NULL, 's' },
		{ "queues", required_argument, NULL, 'q' },
		{ "sq-size", required_argument, NULL, O_SQ },
		{ "cq-size", required_argument, NULL, O_CQ },
		{ "data-mib", required_argument, NULL, O_DATA },
		{ "recv-depth", required_argument, NULL, O_RDEPTH },
		{ "recv-size", required_argument, NULL, O_RSIZE },
		{ "hugepages", required_argument, NULL, O_HUGE },
		{ "listen", required_argument, NULL, 'l' },
		{ "connect", required_argument, NULL, 'c' },
		{ "name", required_argument, NULL, O_NAME },
		{ "peer", required_argument, NULL, O_PEER },
		{ "peers", required_argument, NULL, O_PEERS },
		{ "eager", no_argument, NULL, O_EAGER },
		{ "max-active-peers", required_argument, NULL, O_MAX_ACTIVE },
		{ "idle-ms", required_argument, NULL, O_IDLE },
		{ "status", no_argument, NULL, O_STATUS },
		{ "json", no_argument, NULL, O_JSON },
		{ "log-level", required_argument, NULL, O_LOG_LEVEL },
		{ "ib-port", required_argument, NULL, 'p' },
		{ "gid-index", required_argument, NULL, 'g' },
		{ "heal-ms", required_argument, NULL, O_HEAL },
		{ "stall-ms", required_argument, NULL, O_STALL },
		{ "buffer-keys", no_argument, NULL, O_BUFFER_KEYS },
		{ "arena-rkey", no_argument, NULL, O_ARENA_RKEY },
		{ "no-grants", no_argument, NULL, O_NO_GRANTS },
		{ "allow-uid", required_argument, NULL, O_UID },
		{ "allow-gid", required_argument, NULL, O_GID },
		{ "queue-uid", required_argument, NULL, O_QUEUE_UID },
		{ "queue-gid", required_argument, NULL, O_QUEUE_GID },
		{ "hello-ms", required_argument, NULL, O_HELLO },
		{ "max-uid-clients", required_argument, NULL, O_UID_CLIENTS },
		{ "max-client-mib", required_argument, NULL, O_CLIENT_MIB },
		{ "max-uid-mib", required_argument, NULL, O_UID_MIB },
		{ "max-client-bufs", required_argument, NULL, O_CLIENT_BUFS },
		{ "emu-link-layer", required_argument, NULL, O_EMU_LINK },
		{ "emu-mtu", required_argument, NULL, O_EMU_MTU },
		{ "list-devices", no_argument, NULL, O_LIST },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char why[512];
	int status = 0;
	unsigned keys_said = 0; /* 1: --buffer-keys, 2: --arena-rkey */
	int c;

	ssqd_options_default(o);
	if (proto_default_socket(sock, socklen)) {
		fprintf(stderr, "ssqd: $SSQ_SOCKET or $XDG_RUNTIME_DIR is too long for a "
		                "socket path; pass --socket\n");
		return 2;
	}
	o->socket_path = sock;
	*socket_opt = NULL;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "d:s:q:l:c:p:g:Vh", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			o->device = optarg;
			break;
		case 's':
			o->socket_path = *socket_opt = optarg;
			break;
		case 'q':
			o->nqueues =
			    (unsigned)parse_num("--queues", optarg, 1, SSQ_MAX_QUEUES);
			break;
		case O_SQ:
			o->sq_wqebbs = parse_pow2("--sq-size", optarg, 64, 65536);
			break;
		case O_CQ:
			o->cqes = parse_pow2("--cq-size", optarg, 64, 65536);
			break;
		case O_DATA:
			o->data_mib = (uint64_t)parse_num("--data-mib", optarg, 1, 65536);
			break;
		case O_RDEPTH:
			o->recv_depth = (uint32_t)parse_num("--recv-depth", optarg, 0,
			                                    SSQ_RECV_DEPTH_MAX);
			if (o->recv_depth & (o->recv_depth - 1)) {
				fprintf(stderr,
				        "ssqd: --recv-depth %u: must be 0 or a power of "
				        "two\n",
				        o->recv_depth);
				return 2;
			}
			break;
		case O_RSIZE:
			o->recv_size = (uint32_t)parse_num("--recv-size", optarg, 64,
			                                   SSQ_RECV_SIZE_MAX);
			if (o->recv_size & 63) {
				fprintf(
				    stderr,
				    "ssqd: --recv-size %u: must be a multiple of 64\n",
				    o->recv_size);
				return 2;
			}
			break;
		case O_HUGE:
			if (!strcmp(optarg, "auto"))
				o->hugepages = SSQ_HUGEPAGES_AUTO;
			else if (!strcmp(optarg, "required"))
				o->hugepages = SSQ_HUGEPAGES_REQUIRED;
			else if (!strcmp(optarg, "off"))
				o->hugepages = SSQ_HUGEPAGES_OFF;
			else {
				fprintf(stderr,
				        "ssqd: --hugepages '%s': want auto, required or "
				        "off\n",
				        optarg);
				return 2;
			}
			break;
		case 'l':
			o->listen_port =
			    (uint16_t)parse_num("--listen", optarg, 1, 65535);
			break;
		case 'c':
			o->connect_to = optarg;
			break;
		case O_NAME:
			o->name = optarg;
			break;
		case O_EAGER:
			o->eager = 1;
			break;
		case O_STATUS:
			status = 1;
			break;
		case O_JSON:
			o->status_json = 1;
			break;
		case O_LOG_LEVEL:
			o->log_level = ssqd_log_level_parse(optarg);
			if (o->log_level < 0) {
				fprintf(stderr,
				        "ssqd: --log-level %s: want err, warning, "
				        "notice, info, debug or 0..7\n",
				        optarg);
				return 2;
			}
			break;
		case O_MAX_ACTIVE:
			o->max_active_peers = (unsigned)parse_num(
			    "--max-active-peers", optarg, 1, SSQD_MAX_PEERS);
			break;
		case O_IDLE:
			o->idle_ms =
			    (unsigned)parse_num("--idle-ms", optarg, 10, 86400000);
			break;
		case O_PEER:
		case O_PEERS:
			if ((c == O_PEER
			         ? ssqd_peer_opt(o, optarg, why, sizeof(why))
			         : ssqd_peers_file(o, optarg, why, sizeof(why)))) {
				fprintf(stderr, "ssqd: %s\n", why);
				return 2;
			}
			break;
		case 'p':
			o->port = (uint8_t)parse_num("--ib-port", optarg, 1, 2);
			break;
		case 'g':
			if (!strcmp(optarg, "auto"))
				o->gid_index = SSQD_GID_AUTO;
			else if (!strcmp(optarg, "none"))
				o->gid_index = SSQD_GID_NONE;
			else
				o->gid_index =
				    (int)parse_num("--gid-index (auto, none or an index)",
				                   optarg, 0, 255);
			break;
		case O_EMU_LINK:
			if (!strcmp(optarg, "ib"))
				o->conf.emu_link_layer = IBV_LINK_LAYER_INFINIBAND;
			else if (!strcmp(optarg, "eth"))
				o->conf.emu_link_layer = IBV_LINK_LAYER_ETHERNET;
			else {
				fprintf(stderr,
				        "ssqd: --emu-link-layer '%s': want ib or eth\n",
				        optarg);
				return 2;
			}
			break;
		case O_EMU_MTU: {
			uint32_t mtu = parse_pow2("--emu-mtu", optarg, 256, 4096);

			o->conf.emu_mtu = (enum ibv_mtu)(__builtin_ctz(mtu) - 7);
			break;
		}
		case O_HEAL:
			o->heal_ms = (unsigned)parse_num("--heal-ms", optarg, 1, 10000);
			break;
		case O_BUFFER_KEYS:
			keys_said |= 1;
			break;
		case O_ARENA_RKEY:
			keys_said |= 2;
			o->arena_rkey = 1;
			break;
		case O_NO_GRANTS:
			o->no_grants = 1;
			break;
		case O_STALL:
			o->stall_ms = (unsigned)parse_num("--stall-ms", optarg, 0, 60000);
			if (o->stall_ms && o->stall_ms < 10) {
				fprintf(stderr,
				        "ssqd: --stall-ms %u: want 0 (no deadline) or 10 "
				        "to 60000: below 10 ms a process the scheduler "
				        "merely preempted would be killed\n",
				        o->stall_ms);
				return 2;
			}
			break;
		case O_UID:
			o->allow_uid = parse_num("--allow-uid", optarg, 0, INT_MAX);
			break;
		case O_QUEUE_UID:
		case O_QUEUE_GID:
			if (parse_queue_rule(o, c == O_QUEUE_GID, optarg))
				return 2;
			break;
		case O_GID:
			o->allow_gid = parse_num("--allow-gid", optarg, 0, INT_MAX);
			break;
		case O_HELLO:
			o->hello_ms =
			    (unsigned)parse_num("--hello-ms", optarg, 10, 60000);
			break;
		case O_UID_CLIENTS:
			o->max_uid_clients = (unsigned)parse_num(
			    "--max-uid-clients", optarg, 1, SSQD_MAX_CLIENTS);
			break;
		case O_CLIENT_MIB:
			o->max_client_mib =
			    (uint64_t)parse_num("--max-client-mib", optarg, 1, 65536);
			break;
		case O_UID_MIB:
			o->max_uid_mib =
			    (uint64_t)parse_num("--max-uid-mib", optarg, 1, 65536);
			break;
		case O_CLIENT_BUFS:
			o->max_client_bufs = (unsigned)parse_num(
			    "--max-client-bufs", optarg, 1, SSQ_DATA_MAX_BUFS);
			break;
		case O_LIST:
			if (ssqd_mlx5_list_devices(stdout) == 0)
				printf("no mlx5 device (none that mlx5dv_is_supported "
				       "accepts): only the emulated device (--device "
				       "emu) is available\n");
			return 0;
		case 'V':
			printf("ssqd %s (git %s)\n", SSQ_VERSION_STRING,
			       SSQ_GIT_REVISION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "ssqd: unknown or incomplete option '%s'\n",
			        argv[optind - 1]);
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "ssqd: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	/* A client of the ssqd at --socket: its queues and peers, then exit. */
	if (status)
		return o->status_json ? ssqd_status_json(o->socket_path, stdout)
		                      : ssqd_status_print(o->socket_path, stdout);
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
	if (ssqd_peer_opts_check(o, why, sizeof(why))) {
		fprintf(stderr, "ssqd: %s\n", why);
		return 2;
	}
	for (c = 0; c < (int)o->nqueue_rules; c++)
		if (o->queue_rules[c].queue >= o->nqueues) {
			fprintf(stderr,
			        "ssqd: --queue-%s q%u=%u: there are only %u queues "
			        "(q0..q%u)\n",
			        o->queue_rules[c].is_gid ? "gid" : "uid",
			        o->queue_rules[c].queue, o->queue_rules[c].id, o->nqueues,
			        o->nqueues - 1);
			return 2;
		}
	/* The arena quotas default to shares of --data-mib and stay within it. */
	if (!o->max_client_mib)
		o->max_client_mib = o->data_mib >= 4 ? o->data_mib * 3 / 4 : 1;
	if (!o->max_uid_mib)
		o->max_uid_mib = o->data_mib;
	if (o->max_client_mib > o->data_mib || o->max_uid_mib > o->data_mib) {
		fprintf(stderr,
		        "ssqd: --max-client-mib %llu / --max-uid-mib %llu: at most "
		        "--data-mib %llu\n",
		        (unsigned long long)o->max_client_mib,
		        (unsigned long long)o->max_uid_mib,
		        (unsigned long long)o->data_mib);
		return 2;
	}
	return -1;
}
