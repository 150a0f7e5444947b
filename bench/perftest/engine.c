/* SPDX-License-Identifier: MIT */
/*
 * engine.c - options, ssqd start-up (one in loopback, two for --wire),
 * fan-out, results for the perftest-style tools. Shape after perftest
 * (linux-rdma/perftest): the same flags where they apply, the same tables
 * (report.c); -P, --mode, --wire and --json are ssq's.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <ssq/ssq.h>
#include <ssq/client.h>
#include "engine.h"

const char *const pt_mode_names[] = { "lockfree", "spinlock", "qp-per-process", "proxy" };

double pt_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int pt_is_lat(const struct pt_opts *o)
{
	return o->test == PT_WRITE_LAT || o->test == PT_SEND_LAT;
}

/* What each tool measures: the first lines of its usage text. */
static const char *measures(const struct pt_opts *o)
{
	switch (o->test) {
	case PT_WRITE_LAT:
		return "   RDMA WRITE latency, one message outstanding: from posting the "
		       "WRITE until\n"
		       "   the last byte of its destination changes, polled in memory "
		       "(perftest\n"
		       "   polls the same byte; loopback has no second host to echo it, "
		       "so "
		       "this is\n"
		       "   one way, not RTT/2; two hosts: the server WRITEs it back "
		       "and this\n"
		       "   is RTT/2, as perftest's). The CQE is reaped after the "
		       "clock stops.\n"
		       "   Needs a device that moves data (not SSQ_EMU_MODE=sink).\n";
	case PT_READ_BW:
		return "   RDMA READ bandwidth and message rate.\n";
	case PT_ATOMIC_BW:
		return "   ATOMIC fetch-and-add (8 bytes) rate.\n";
	case PT_SEND_BW:
		return "   SEND bandwidth and message rate into ssqd's receive pool "
		       "(ssqd\n"
		       "   --recv-depth >= the messages in flight, --recv-size >= -s); "
		       "in\n"
		       "   full mode the last pool-full of payloads is checked in its "
		       "log.\n";
	case PT_SEND_LAT:
		return "   SEND latency, one message outstanding: from posting the SEND "
		       "until\n"
		       "   the receive pool's log (ssq_recv_peek) shows it arrived (one "
		       "way,\n"
		       "   not RTT/2; two hosts: the server SENDs it back and this is "
		       "RTT/2).\n"
		       "   The CQE is reaped after the clock stops. Needs a\n"
		       "   device that moves data (not SSQ_EMU_MODE=sink).\n";
	default:
		return "   RDMA WRITE bandwidth and message rate.\n";
	}
}

void pt_usage(FILE *f, const struct pt_opts *o)
{
	fprintf(
	    f,
	    " Usage:\n"
	    "   %s [options]    run against a running ssqd (-S), else start one\n"
	    "   %s -S SOCK --server [-p PORT] [options]     two hosts: the server\n"
	    "   %s -S SOCK [-p PORT] [options] SERVER       two hosts: the client\n"
	    "%s"
	    "\n"
	    " Options:\n"
	    "  -a, --all                  Run sizes from 2 till 2^20\n"
	    "  -d, --ib-dev=<dev>         Use IB device <dev> (mlx5_N or emu; default:\n"
	    "                             the first mlx5 device, else the emulated one)\n"
	    "  -D, --duration=<sec>       Run for <sec> seconds instead of -n\n"
	    "  -h, --help                 Show this help screen\n"
	    "  -I, --inline_size=<size>   Max size of message to be sent in inline\n"
	    "                             (default 0)\n"
	    "  -l, --post_list=<n>        Post a list of <n> WQEs at once, one doorbell\n"
	    "                             (1..64, default 1)\n"
	    "  -n, --iters=<n>            Number of exchanges per process (default %u)\n"
	    "  -q, --qp=<n>               Num of QPs (1..%u, default 1): every sender\n"
	    "                             posts round-robin over n shared queues;\n"
	    "                             qp-per-process: n each, -P x n <= %u\n"
	    "  -Q, --cqe_poll=<n>         Generate a CQE every <n> messages\n"
	    "                             (CQ moderation, 1..%u, default 100)\n"
	    "  -t, --tx-depth=<dep>       Messages a sender keeps in flight per QP\n"
	    "                             (1..%u, >= -Q, default %u)\n"
	    "  -s, --size=<size>          Size of message to exchange (1..%u, default "
	    "%u)\n"
	    "      --report_gbits         Report max/average BW in Gbit/sec\n"
	    "  -P, --procs=<n>            Sender processes sharing the queue (1..%u)\n"
	    "      --mode=<mode>          lockfree (ssq, default), spinlock (one\n"
	    "                             process-shared lock per queue),\n"
	    "                             qp-per-process (each its own QPs, <= 16),\n"
	    "                             proxy (one posting process, SPSC rings)\n"
	    "  -S, --socket=<path>        A running ssqd's socket (default\n"
	    "                             $SSQ_SOCKET; neither: start ssqd)\n"
	    "      --wire                 Start two ssqd on the emulated device, one\n"
	    "                             --listen, one --connect, and send over the\n"
	    "                             emulated wire (UDP on 127.0.0.1) into the\n"
	    "                             listening one's arena (not with -S)\n"
	    "      --json=<file>          Write the results as JSON\n"
	    "      --server               Two hosts (ssqd -S with --listen/--connect):\n"
	    "                             hold the destination in this host's arena\n"
	    "                             for a client on -p, check what arrives\n"
	    "  -p, --port=<port>          The side channel's TCP port (default %u)\n"
	    "      --timeout=<sec>        Two hosts: the server waits this long for a\n"
	    "                             client (default: for ever), the client\n"
	    "                             retries connecting this long (default 10)\n"
	    "\n"
	    " BW peak: the best rate of all senders together over a window a tenth\n"
	    " of the run long; BW average: all messages over first post to last\n"
	    " completion.\n",
	    o->tool, o->tool, o->tool, measures(o), pt_is_lat(o) ? 1000u : 5000u,
	    PT_MAX_LANES, PT_MAX_LANES, PT_MAX_TX, PT_MAX_TX, PT_TX_DEPTH, PT_MAX_SIZE,
	    pt_is_lat(o) ? 2u : 65536u, PT_MAX_PROCS, PT_PORT);
}

static void bad_flag(const struct pt_opts *o, const char *fmt, const char *flag,
                     const char *val)
{
	fprintf(stderr, "%s: ", o->tool);
	fprintf(stderr, fmt, flag, val);
	fputc('\n', stderr);
	pt_usage(stderr, o);
	exit(1);
}

static uint64_t num(const struct pt_opts *o, const char *flag, const char *s, uint64_t lo,
                    uint64_t hi)
{
	char *end, range[64];
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (!*s || *end || *s == '-' || errno || v < lo || v > hi) {
		snprintf(range, sizeof(range), "%llu..%llu", (unsigned long long)lo,
		         (unsigned long long)hi);
		fprintf(stderr, "%s: %s '%s': want %s\n", o->tool, flag, s, range);
		pt_usage(stderr, o);
		exit(1);
	}
	return v;
}

/* The flag getopt stopped at: -c for a short one, else the word itself. */
static const char *flag_name(char *buf, const char *word)
{
	if (optopt > 0 && optopt < 128 && !(word[0] == '-' && word[1] == '-')) {
		buf[1] = (char)optopt;
		return buf;
	}
	return word;
}

int pt_parse(int argc, char **argv, enum pt_test test, const char *tool,
             struct pt_opts *o)
{
	enum { OPT_GBITS = 256, OPT_MODE, OPT_JSON, OPT_WIRE, OPT_SERVER, OPT_TIMEOUT };
	static const struct option longs[] = {
		{ "all", no_argument, NULL, 'a' },
		{ "ib-dev", required_argument, NULL, 'd' },
		{ "duration", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ "inline_size", required_argument, NULL, 'I' },
		{ "post_list", required_argument, NULL, 'l' },
		{ "iters", required_argument, NULL, 'n' },
		{ "qp", required_argument, NULL, 'q' },
		{ "cqe_poll", required_argument, NULL, 'Q' },
		{ "tx-depth", required_argument, NULL, 't' },
		{ "size", required_argument, NULL, 's' },
		{ "procs", required_argument, NULL, 'P' },
		{ "socket", required_argument, NULL, 'S' },
		{ "report_gbits", no_argument, NULL, OPT_GBITS },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "json", required_argument, NULL, OPT_JSON },
		{ "wire", no_argument, NULL, OPT_WIRE },
		{ "server", no_argument, NULL, OPT_SERVER },
		{ "port", required_argument, NULL, 'p' },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ NULL, 0, NULL, 0 },
	};
	int opt, i, q_given = 0, s_given = 0;
	char flag[4] = "-?", val[16];

	memset(o, 0, sizeof(*o));
	o->test = test;
	o->tool = tool;
	o->mode = PT_LOCKFREE;
	o->size = pt_is_lat(o) ? 2 : 65536;
	o->iters = pt_is_lat(o) ? 1000 : 5000;
	o->qps = 1;
	o->post_list = 1;
	o->cq_mod = 100;
	o->tx_depth = PT_TX_DEPTH;
	o->procs = 1;
	o->socket = getenv("SSQ_SOCKET");
	o->port = PT_PORT;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":ad:D:hI:l:n:p:q:Q:s:t:P:S:", longs,
	                          NULL)) != -1) {
		switch (opt) {
		case 'a':
			o->all_sizes = 1;
			break;
		case 'd':
			o->device = optarg;
			break;
		case 'D':
			o->duration = (double)num(o, "-D", optarg, 1, 3600);
			break;
		case 'h':
			pt_usage(stdout, o);
			exit(0);
		case 'I':
			o->inline_size = (uint32_t)num(o, "-I", optarg, 0, 912);
			break;
		case 'l':
			o->post_list = (uint32_t)num(o, "-l", optarg, 1, 64);
			break;
		case 'n':
			o->iters = num(o, "-n", optarg, 1, 1000000000);
			break;
		case 'q':
			o->qps = (uint32_t)num(o, "-q", optarg, 1, PT_MAX_LANES);
			break;
		case 'Q':
			o->cq_mod = (uint32_t)num(o, "-Q", optarg, 1, PT_MAX_TX);
			q_given = 1;
			break;
		case 't':
			o->tx_depth = (uint32_t)num(o, "-t", optarg, 1, PT_MAX_TX);
			break;
		case 's':
			o->size = (uint32_t)num(o, "-s", optarg, 1, PT_MAX_SIZE);
			break;
		case 'P':
			o->procs = (uint32_t)num(o, "-P", optarg, 1, PT_MAX_PROCS);
			break;
		case 'S':
			o->socket = optarg;
			s_given = 1;
			break;
		case OPT_GBITS:
			o->gbits = 1;
			break;
		case OPT_MODE:
			for (i = 0; i < 4 && strcmp(optarg, pt_mode_names[i]); i++)
				;
			if (i == 4)
				bad_flag(
				    o,
				    "%s '%s': want lockfree, spinlock, qp-per-process or "
				    "proxy",
				    "--mode", optarg);
			o->mode = (enum pt_mode)i;
			break;
		case OPT_JSON:
			o->json = optarg;
			break;
		case OPT_WIRE:
			o->wire = 1;
			break;
		case OPT_SERVER:
			o->server = 1;
			break;
		case 'p':
			o->port = (uint16_t)num(o, "-p", optarg, 1, 65535);
			break;
		case OPT_TIMEOUT:
			o->timeout = (double)num(o, "--timeout", optarg, 1, 86400);
			break;
		case ':':
			bad_flag(o, "%s%s: needs a value",
			         flag_name(flag, argv[optind - 1]), "");
			break;
		default:
			bad_flag(o, "unknown flag %s%s",
			         flag_name(flag, argv[optind - 1]), "");
		}
	}
	if (optind < argc)
		o->peer_host = argv[optind++]; /* perftest: the server to run against */
	if (optind < argc)
		bad_flag(o, "unexpected argument %s%s (one server name at most)",
		         argv[optind], "");
	if (o->server && o->peer_host)
		bad_flag(o, "--server with a server name (%s%s): one role per side",
		         o->peer_host, "");
	if ((o->server || o->peer_host) && o->wire)
		bad_flag(o,
		         "%s%s: --wire is two ssqd on this host; two hosts need no "
		         "--wire",
		         o->server ? "--server" : o->peer_host, "");
	if ((o->server || o->peer_host) && !o->socket)
		bad_flag(o,
		         "%s%s: two hosts need -S (or $SSQ_SOCKET): this host's ssqd, "
		         "started with --listen or --connect",
		         o->server ? "--server" : o->peer_host, "");
	snprintf(val, sizeof(val), " %u", o->procs * o->qps);
	if (o->mode == PT_QP_PER_PROCESS && o->procs * o->qps > PT_MAX_LANES)
		bad_flag(o,
		         "-P x -q =%s queues with --mode qp-per-process: ssqd has at "
		         "most 16%s",
		         val, "");
	if (o->wire && s_given)
		bad_flag(o,
		         "%s%s: --wire starts its own two ssqd; a running one (-S) "
		         "cannot be used",
		         "-S", "");
	if (o->wire && o->device && strcmp(o->device, "emu"))
		bad_flag(o, "%s %s: --wire runs on the emulated device's wire (-d emu)",
		         "-d", o->device);
	if (o->wire)
		o->socket = NULL; /* not $SSQ_SOCKET either */
	if (!q_given && o->cq_mod > o->tx_depth)
		o->cq_mod = o->tx_depth; /* perftest lowers its default too */
	snprintf(val, sizeof(val), " %u", o->cq_mod);
	if (o->cq_mod > o->tx_depth)
		bad_flag(o, "%s%s: more than the tx depth (-t): it would never complete",
		         "-Q", val);
	snprintf(val, sizeof(val), " %u", o->post_list);
	if (o->post_list > o->tx_depth)
		bad_flag(o, "%s%s: a post list longer than the tx depth (-t)", "-l", val);
	if (o->test == PT_ATOMIC_BW)
		o->size = 8; /* perftest: atomics are 8 bytes, -s ignored */
	if (o->inline_size && (o->test == PT_READ_BW || o->test == PT_ATOMIC_BW))
		bad_flag(o, "%s%s: READ and atomics cannot be inline", "-I", "");
	if (o->test == PT_SEND_LAT && o->procs > 1 && o->size < 2)
		bad_flag(
		    o, "%s%s with -P > 1: a 1-byte SEND cannot say whose it is (-s >= 2)",
		    "-s 1", "");
	if (o->iters > 10000000 && pt_is_lat(o))
		bad_flag(o, "%s%s: latency tests keep every sample: at most 10000000",
		         "-n", "");
	return 0;
}

/* After a run of @size: did the WRITEs land? 0 or 1 (said why). */
int pt_check_dst(const struct pt_opts *o, const struct pt_env *e, uint32_t size)
{
	uint32_t p, i, np = o->test == PT_WRITE_LAT ? o->procs : 1;
	/* write_lat: the last WRITE's last byte was (iters - 1) % 255 + 1. */
	uint8_t last =
	    o->test == PT_WRITE_LAT ? (uint8_t)((o->iters - 1) % 255 + 1) : 0x5a;

	/* Every sender's source holds 0x5a (write_lat: but its last byte). */
	for (p = 0; p < np; p++) {
		const uint8_t *d = e->dst + (size_t)p * e->slot;

		for (i = 0; i < size; i++) {
			uint8_t want = i + 1 == size ? last : 0x5a;

			if (d[i] != want) {
				fprintf(stderr,
				        "%s: destination byte %u%s is 0x%02x after the "
				        "run, not 0x%02x\n",
				        o->tool, i, np > 1 ? " of a sender's slot" : "",
				        d[i], want);
				return 1;
			}
		}
	}
	return 0;
}

/* One size: fork the senders (and the proxy), start them together, collect. */
static int run_size(const struct pt_opts *o, struct pt_env *e, uint32_t size,
                    struct pt_row *r)
{
	uint32_t nproc = o->procs + (o->mode == PT_PROXY), i;
	uint64_t k;
	pid_t kids[PT_MAX_PROCS + 1];
	double t0 = 1e300, t1 = 0, peak = 0, start;
	uint64_t total = 0;
	int st, fail = 0;
	size_t lat_bytes =
	    pt_is_lat(o) ? (size_t)o->procs * o->iters * sizeof(double) : 0;
	uint64_t base[PT_MAX_LANES];

	/* The receive logs count on across sizes: this run's start from here. */
	for (i = 0; e->check_recv && i < e->nrq; i++)
		base[i] = ssq_recv_arrived(e->rq[i]);

	e->sh = mmap(NULL, sizeof(*e->sh), PROT_READ | PROT_WRITE,
	             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	e->lat = lat_bytes ? mmap(NULL, lat_bytes, PROT_READ | PROT_WRITE,
	                          MAP_SHARED | MAP_ANONYMOUS, -1, 0)
	                   : NULL;
	if (e->sh == MAP_FAILED || e->lat == MAP_FAILED) {
		fprintf(stderr, "%s: mmap: %s\n", o->tool, strerror(errno));
		return 1;
	}
	for (i = 0; i < PT_MAX_LANES; i++)
		pthread_spin_init(&e->sh->lock[i], PTHREAD_PROCESS_SHARED);
	if (e->check_data)
		memset(e->dst, 0, e->dst_len);
	fflush(stdout);
	for (i = 0; i < nproc; i++) {
		kids[i] = fork();
		if (kids[i] == 0)
			_exit(i < o->procs ? pt_sender(o, e, i, size) : pt_proxy(o, e));
		if (kids[i] < 0) {
			fprintf(stderr, "%s: fork: %s\n", o->tool, strerror(errno));
			e->sh->abort = 1;
			nproc = i;
		}
	}
	start = pt_now();
	while (__atomic_load_n(&e->sh->ready, __ATOMIC_ACQUIRE) < nproc &&
	       !__atomic_load_n(&e->sh->abort, __ATOMIC_RELAXED) && pt_now() - start < 30)
		usleep(200);
	__atomic_store_n(&e->sh->go, 1, __ATOMIC_RELEASE);
	for (i = 0; i < nproc; i++) {
		struct pt_result *res = &e->sh->res[i];

		waitpid(kids[i], &st, 0);
		if (res->rc || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "%s: %s %u failed: %s\n", o->tool,
			        i < o->procs ? "sender" : "proxy", i,
			        res->why[0]       ? res->why
			        : WIFSIGNALED(st) ? strsignal(WTERMSIG(st))
			        : e->sh->abort    ? "stopped: another process failed"
			                          : "no reason given");
			fail = 1;
			continue;
		}
		if (i >= o->procs)
			continue;
		total += res->msgs;
		t0 = res->t0 < t0 ? res->t0 : t0;
		t1 = res->t1 > t1 ? res->t1 : t1;
	}
	if (!fail && e->check_data)
		fail = pt_check_dst(o, e, size);
	if (!fail && e->check_recv)
		fail = pt_check_recv(o, e, size, base, total);
	if (!fail) {
		memset(r, 0, sizeof(*r));
		r->size = size;
		r->iters = total;
		r->mpps = total / (t1 - t0) / 1e6;
		if (!lat_bytes)
			peak = pt_peak_rate(e->sh, o->procs);
		if (peak < r->mpps * 1e6)
			peak = r->mpps * 1e6; /* rounding; latency runs */
		r->peak_mbs = peak * size / 1e6;
		r->avg_mbs = r->mpps * size;
		/* Two hosts: a round trip per sample; perftest reports RTT/2. */
		for (k = 0;
		     lat_bytes && o->peer_host && k < (uint64_t)o->procs * o->iters; k++)
			e->lat[k] /= 2;
		if (lat_bytes)
			pt_lat_stats(e->lat, (uint64_t)o->procs * o->iters, r);
	}
	munmap(e->sh, sizeof(*e->sh));
	if (lat_bytes)
		munmap(e->lat, lat_bytes);
	return fail;
}

/*
 * SEND: every queue's receive log, where its receiver keeps it (loopback
 * @c's queue itself, @q0 already open; --wire the listening ssqd's queue
 * of the same name), and a pool that takes what this run sends.
 */
int pt_open_recv_logs(const struct pt_opts *o, struct ssq_client *c,
                      struct ssq_client *cd, struct ssq_queue *q0, struct pt_env *e)
{
	uint32_t i, depth, bytes, top = o->all_sizes ? PT_MAX_SIZE : o->size;
	char name[16];

	pt_recv_pool(o, &depth, &bytes);
	e->nrq = pt_queues_needed(o);
	for (i = 0; i < e->nrq; i++) {
		snprintf(name, sizeof(name), "q%u", i);
		if (i == 0 && cd == c) {
			e->rq[i] = q0;
		} else if (ssq_queue_open(cd, name, &e->rq[i])) {
			fprintf(stderr, "%s: receive log of %s: %s\n", o->tool, name,
			        ssq_client_error(cd));
			return -1;
		}
	}
	if (!ssq_recv_depth(e->rq[0])) {
		fprintf(stderr,
		        "%s: the receiving ssqd has no receive pool (--recv-depth 0): "
		        "SEND needs one\n",
		        o->tool);
		return -1;
	}
	if (ssq_recv_size(e->rq[0]) < top) {
		fprintf(stderr,
		        "%s: -s %u: the receiving ssqd's buffers take %u bytes "
		        "(--recv-size)\n",
		        o->tool, top, ssq_recv_size(e->rq[0]));
		return -1;
	}
	if (ssq_recv_depth(e->rq[0]) < depth)
		printf("%s: the receive pool keeps %u posted, fewer than can be in "
		       "flight (%u): senders may wait out RNR timers\n",
		       o->tool, ssq_recv_depth(e->rq[0]), depth);
	return 0;
}

/*
 * An ssqd with a peer (--listen / --connect) sends its queues' RDMA into
 * the peer's arena: only a two-host run (--server, or a server name) may
 * use it, and a two-host run needs one. 0, or -1 (said why).
 */
static int two_host_role(const struct pt_opts *o, struct ssq_client *c)
{
	int peer = ssq_client_peer_mode(c), role = o->server || o->peer_host;

	if (peer && !role) {
		fprintf(stderr,
		        "%s: ssqd at %s has a peer ssqd (--listen/--connect): its queues "
		        "write into the peer host's arena, where this run has nothing "
		        "allocated. Run two hosts like perftest: on the peer's host\n"
		        "  %s -S <its ssqd socket> --server [-p PORT] [flags]\n"
		        "and here\n"
		        "  %s -S %s [-p PORT] [flags] <peer host>\n"
		        "(or, on one host, no -S: the tool starts its own ssqd)\n",
		        o->tool, o->socket, o->tool, o->tool, o->socket);
		return -1;
	}
	if (!peer && role) {
		fprintf(stderr,
		        "%s: %s: ssqd at %s has no peer ssqd (it runs loopback): two "
		        "hosts need ssqd --listen PORT on one and --connect HOST:PORT "
		        "on the other\n",
		        o->tool, o->server ? "--server" : o->peer_host, o->socket);
		return -1;
	}
	return 0;
}

int pt_main(const struct pt_opts *o)
{
	char dev[64] = "emu";
	const char *emu_mode = "";
	struct pt_daemon dl = { 0 }, dc = { 0 };
	struct ssq_client *c = NULL, *cd = NULL;
	struct ssq_queue *q;
	struct ssq_queue_info qi[PT_MAX_LANES];
	struct ssq_buf dst;
	struct pt_env e = { 0 };
	struct pt_row rows[24];
	char verdicts[24][200];
	uint32_t sizes[24], nsizes = 0, s, top, need = pt_queues_needed(o);
	int rc = 1, n, fail, moves;

	signal(SIGPIPE, SIG_IGN);
	e.th_fd = -1;
	if (o->socket) {
		if (ssq_client_connect(o->socket, &c)) {
			fprintf(stderr, "%s: ssqd at %s: %s\n", o->tool, o->socket,
			        ssq_client_strerror_last());
			return 1;
		}
		cd = c;
		if (two_host_role(o, c))
			goto out;
		if (o->server) {
			rc = pt_th_server(o, c);
			goto out;
		}
		snprintf(dev, sizeof(dev), "%s", ssq_client_device(c));
		printf("running on device %s (ssqd at %s)\n", dev, o->socket);
	} else if (pt_start_daemons(o, dev, sizeof(dev), &dl, &dc, &c, &cd)) {
		goto out;
	}
	if (!strcmp(dev, "emu"))
		emu_mode = getenv("SSQ_EMU_MODE") ? getenv("SSQ_EMU_MODE") : "full";
	if (pt_is_lat(o) && !strcasecmp(emu_mode, "sink")) {
		fprintf(stderr,
		        "%s: SSQ_EMU_MODE=sink moves no data, and %s waits for "
		        "the data to land: use full mode\n",
		        o->tool, o->tool + 4);
		goto out;
	}
	n = ssq_client_list(c, qi, PT_MAX_LANES);
	if (n < (int)need) {
		fprintf(stderr,
		        "%s: -P %u -q %u --mode %s needs queues q0..q%u; ssqd has %d\n",
		        o->tool, o->procs, o->qps, pt_mode_names[o->mode], need - 1, n);
		goto out;
	}
	top = o->all_sizes && o->test != PT_ATOMIC_BW ? PT_MAX_SIZE : o->size;
	/* The emulated device's sink mode checks WQEs and moves nothing. */
	moves = strcmp(emu_mode, "sink") != 0;
	/* write_lat: a 64-byte aligned slot per sender, each watching its own. */
	e.slot = o->test == PT_WRITE_LAT ? (top + 63) & ~63u : 0;
	if (o->peer_host) {
		/* Two hosts: the destination is the server's, in its ssqd's arena. */
		if (ssq_queue_open(c, "q0", &q)) {
			fprintf(stderr, "%s: q0: %s\n", o->tool, ssq_client_error(c));
			goto out;
		}
		memset(&dst, 0, sizeof(dst));
		/*
		 * write_lat: the server WRITEs each sender's slot back into
		 * its slot of this buffer here, where the sender waits for it.
		 * send_lat: its echoes come to this ssqd's receive logs; the
		 * senders map a destination all the same (a small one here).
		 */
		if ((e.slot || o->test == PT_SEND_LAT) &&
		    ssq_buf_alloc(c, e.slot ? (uint64_t)e.slot * o->procs : 64, &dst)) {
			fprintf(stderr, "%s: %s\n", o->tool, ssq_client_error(c));
			goto out;
		}
		if (pt_th_client_open(o, q, top, moves, e.slot ? &dst : NULL, &e))
			goto out;
		dst.iova = e.dst_iova; /* the WRITEs go to the server's arena */
		if (!e.slot && o->test != PT_SEND_LAT)
			dst.len = e.dst_len;
	} else if (ssq_queue_open(c, "q0", &q) ||
	           ssq_buf_alloc(
	               cd, e.slot ? (uint64_t)e.slot * o->procs : (top < 8 ? 8 : top),
	               &dst)) {
		fprintf(stderr, "%s: %s\n", o->tool,
		        *ssq_client_error(c) ? ssq_client_error(c)
		                             : ssq_client_error(cd));
		goto out;
	}
	/* Two hosts: send_bw's SENDs are logged at the server; send_lat's echoes here. */
	if (pt_is_send(o) && (!o->peer_host || o->test == PT_SEND_LAT) &&
	    pt_open_recv_logs(o, c, cd, q, &e))
		goto out;
	if (o->inline_size > ssq_queue_sq(q)->max_inline) {
		fprintf(stderr, "%s: -I %u: the QP takes at most %u inline bytes\n",
		        o->tool, o->inline_size, ssq_queue_sq(q)->max_inline);
		pt_usage(stderr, o);
		goto out;
	}
	if (o->all_sizes && o->test != PT_ATOMIC_BW)
		for (s = 2; s <= PT_MAX_SIZE; s *= 2)
			sizes[nsizes++] = s;
	else
		sizes[nsizes++] = o->size;
	e.socket = o->socket ? o->socket : dc.sock;
	e.dst_socket = o->socket ? o->socket : o->wire ? dl.sock : dc.sock;
	e.dst_off = dst.off;
	e.dst_len = dst.len;
	/* The destination daemon's IOVA; over the wire its peer rkey. */
	e.dst_iova = dst.iova;
	e.rkey = ssq_queue_peer_rkey(q); /* two hosts: checked against the server's */
	e.dst = dst.addr;
	/*
	 * Two hosts: the server checks, after each size (pt_th_client_done);
	 * write_lat checks its pong slots here, which hold the server's echo.
	 */
	e.check_data =
	    (o->test == PT_WRITE_LAT || (o->test == PT_WRITE_BW && !o->peer_host)) &&
	    moves;
	e.check_recv = o->test == PT_SEND_BW && moves && !o->peer_host;
	printf("%s: %s, %u sender process%s, mode %s%s%s, %u QP%s%s%s\n", o->tool,
	       o->test == PT_READ_BW     ? "RDMA READ"
	       : o->test == PT_ATOMIC_BW ? "ATOMIC fetch-and-add"
	       : pt_is_send(o)           ? "SEND"
	                                 : "RDMA WRITE",
	       o->procs, o->procs > 1 ? "es" : "", pt_mode_names[o->mode],
	       o->mode == PT_PROXY ? " (+1 proxy process)" : "",
	       *emu_mode ? (strcmp(emu_mode, "sink") ? "" : ", device in sink mode") : "",
	       need, need > 1 ? "s" : "", o->wire ? ", over the emulated wire" : "",
	       !o->peer_host ? ""
	       : o->test == PT_SEND_BW
	           ? ", into the server's receive pool through the peer ssqd"
	       : pt_is_lat(o)
	           ? (o->test == PT_SEND_LAT
	                  ? ", ping-pong: the server SENDs each back (times are "
	                    "RTT/2, as perftest's)"
	                  : ", ping-pong: the server WRITEs each back (times are "
	                    "RTT/2, as perftest's)")
	           : ", to the server's arena through the peer ssqd");
	pt_print_header(o);
	for (s = 0; s < nsizes; s++) {
		if (e.th_fd >= 0 && pt_th_client_start(o, &e, sizes[s]))
			goto out;
		fail = run_size(o, &e, sizes[s], &rows[s]);
		if (!fail)
			pt_print_row(o, &rows[s]);
		if (e.th_fd >= 0 &&
		    pt_th_client_done(o, &e, sizes[s], fail ? 0 : rows[s].iters, !fail,
		                      verdicts[s], sizeof(verdicts[s]))) {
			if (!fail)
				fprintf(stderr, "%s\n", verdicts[s]);
			goto out;
		}
		if (fail)
			goto out;
	}
	pt_print_row(o, NULL);
	/* The server's verdicts after the table, which stays perftest's. */
	for (s = 0; e.th_fd >= 0 && s < nsizes; s++)
		printf("%s\n", verdicts[s]);
	rc = o->json ? pt_write_json(o, dev, emu_mode, rows, nsizes) : 0;
	pt_th_client_close(o, &e);
out:
	if (e.th_fd >= 0)
		close(e.th_fd); /* no BYE: the server must not take this for success */
	if (cd && cd != c)
		ssq_client_close(cd);
	if (c)
		ssq_client_close(c);
	/* The sender's side first: the listener would wait for it otherwise. */
	pt_ssqd_stop(&dc);
	pt_ssqd_stop(&dl);
	return rc;
}
