/* SPDX-License-Identifier: MIT */
/*
 * ssqd - the daemon that owns the shared send queues: options, signals,
 * then setup and serve (daemon.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ctrl/daemon/daemon.h"
#include "ctrl/backend/mlx5_list.h"
#include "ctrl/proto/socket_path.h"

static struct ssqd daemon_state;

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
	    "  -q, --queues N           shared queues q0..q<N-1>, 1..%u (default 1)\n"
	    "      --sq-size N          WQEBBs per send queue, a power of two 64..65536\n"
	    "                           (default 1024)\n"
	    "      --cq-size N          CQEs per completion queue, a power of two "
	    "64..65536\n"
	    "                           (default 1024)\n"
	    "      --data-mib N         data arena size in MiB, 1..65536 (default 64)\n"
	    "      --recv-depth N       receive WQEs kept posted per queue for SEND and\n"
	    "                           WRITE_WITH_IMM, 0 (none) or a power of two\n"
	    "                           1..%u (default 256)\n"
	    "      --recv-size BYTES    bytes per receive buffer, a multiple of 64 from\n"
	    "                           64 to %u (default 4096); the pool takes\n"
	    "                           2 x depth x size per queue, besides --data-mib\n"
	    "      --hugepages=MODE     auto (default), required or off\n"
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
	    "  -p, --ib-port N          device port, 1..2 (default 1)\n"
	    "  -g, --gid-index N        GID index for the GRH (RoCE); default none\n"
	    "      --heal-ms N          say so in the log when healing a queue after a\n"
	    "                           death is held up longer than N ms by a live\n"
	    "                           producer mid-reservation (default 50); ssqd\n"
	    "                           keeps serving and retrying every millisecond\n"
	    "      --allow-uid UID      also serve this uid (besides ssqd's own and "
	    "root)\n"
	    "      --allow-gid GID      also serve this gid\n"
	    "      --hello-ms N         a connection that has not said hello within N "
	    "ms\n"
	    "                           is closed (default 1000, 10..60000)\n"
	    "      --max-uid-clients N  connections one uid may hold, 1..%u (default "
	    "%u)\n"
	    "      --max-client-mib N   data arena MiB one client may hold (default "
	    "half\n"
	    "                           of --data-mib, at least 1)\n"
	    "      --max-uid-mib N      data arena MiB one uid's clients may hold\n"
	    "                           together (default all of --data-mib)\n"
	    "      --max-client-bufs N  buffers one client may hold, 1..%u (default %u)\n"
	    "      --list-devices       list mlx5 devices, ports, GIDs, capabilities; "
	    "exit\n"
	    "  -h, --help\n",
	    SSQ_MAX_QUEUES, SSQ_RECV_DEPTH_MAX, SSQ_RECV_SIZE_MAX, SSQD_MAX_CLIENTS,
	    SSQD_MAX_CLIENTS / 2, SSQ_DATA_MAX_BUFS, SSQD_CLIENT_BUFS_DEFAULT);
}

static void on_signal(int sig)
{
	(void)sig;
	daemon_state.stop = 1;
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

int main(int argc, char **argv)
{
	enum {
		O_SQ = 256,
		O_CQ,
		O_DATA,
		O_HUGE,
		O_UID,
		O_GID,
		O_LIST,
		O_HEAL,
		O_RDEPTH,
		O_RSIZE,
		O_HELLO,
		O_UID_CLIENTS,
		O_CLIENT_MIB,
		O_UID_MIB,
		O_CLIENT_BUFS
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
		{ "ib-port", required_argument, NULL, 'p' },
		{ "gid-index", required_argument, NULL, 'g' },
		{ "heal-ms", required_argument, NULL, O_HEAL },
		{ "allow-uid", required_argument, NULL, O_UID },
		{ "allow-gid", required_argument, NULL, O_GID },
		{ "hello-ms", required_argument, NULL, O_HELLO },
		{ "max-uid-clients", required_argument, NULL, O_UID_CLIENTS },
		{ "max-client-mib", required_argument, NULL, O_CLIENT_MIB },
		{ "max-uid-mib", required_argument, NULL, O_UID_MIB },
		{ "max-client-bufs", required_argument, NULL, O_CLIENT_BUFS },
		{ "list-devices", no_argument, NULL, O_LIST },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ssqd *d = &daemon_state;
	struct ssqd_options *o = &d->opt;
	char why[512], default_sock[108];
	struct sigaction sa;
	int c, rc;

	ssqd_options_default(o);
	if (proto_default_socket(default_sock, sizeof(default_sock))) {
		fprintf(stderr, "ssqd: $SSQ_SOCKET or $XDG_RUNTIME_DIR is too long for a "
		                "socket path; pass --socket\n");
		return 2;
	}
	o->socket_path = default_sock;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "d:s:q:l:c:p:g:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			o->device = optarg;
			break;
		case 's':
			o->socket_path = optarg;
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
		case 'p':
			o->port = (uint8_t)parse_num("--ib-port", optarg, 1, 2);
			break;
		case 'g':
			o->gid_index = (int)parse_num("--gid-index", optarg, 0, 255);
			break;
		case O_HEAL:
			o->heal_ms = (unsigned)parse_num("--heal-ms", optarg, 1, 10000);
			break;
		case O_UID:
			o->allow_uid = parse_num("--allow-uid", optarg, 0, INT_MAX);
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
				printf("no mlx5 device in /sys/class/infiniband: only "
				       "the emulated "
				       "device (--device emu) is available\n");
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
	if (o->listen_port && o->connect_to) {
		fprintf(stderr, "ssqd: --listen and --connect exclude each other\n");
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

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	rc = ssqd_setup(d, why, sizeof(why));
	if (rc) {
		fprintf(stderr, "ssqd: %s\n", why);
		return 1;
	}
	fprintf(stderr,
	        "ssqd: %u queue(s) of %u WQEBBs on %s (%s), %llu MiB data arena at IOVA "
	        "0x%llx, %s pages; serving %s\n",
	        d->hdr->nqueues, o->sq_wqebbs, d->hdr->device, d->ops->kind,
	        (unsigned long long)o->data_mib, (unsigned long long)d->hdr->data_iova,
	        d->arena.hugepages ? "2 MiB huge" : "4 KiB memfd", o->socket_path);
	ssqd_serve(d);
	ssqd_teardown(d);
	fprintf(stderr, "ssqd: stopped\n");
	return 0;
}
