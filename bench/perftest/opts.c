/* SPDX-License-Identifier: MIT */
/*
 * opts.c - the perftest-style tools' options: perftest's flags where they
 * apply (linux-rdma/perftest, src/perftest_parameters.c: -a -d -D -e -I -l -n
 * -q -Q -t -s -p -S -x -i -V, --report_gbits, --out_json[_file],
 * --run_infinitely), and ssq's own (-P, --mode, --wire, --json,
 * --ssq_socket, --server, --timeout). A leaf: it calls no other file of the
 * tools.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "ssq_version.h"
#include "opts.h"

const char *const pt_mode_names[] = { "lockfree", "spinlock", "qp-per-process", "proxy",
	                              "combine" };

int pt_is_lat(const struct pt_opts *o)
{
	return o->test == PT_WRITE_LAT || o->test == PT_SEND_LAT || pt_is_cqe_lat(o);
}

uint32_t pt_top_size(const struct pt_opts *o)
{
	if (!o->all_sizes || pt_is_atomic(o))
		return o->size;
	return pt_is_send(o) ? PT_MAX_SEND_SIZE : PT_MAX_SIZE;
}

int pt_is_cqe_lat(const struct pt_opts *o)
{
	return o->test == PT_READ_LAT || o->test == PT_ATOMIC_LAT;
}

int pt_is_read(const struct pt_opts *o)
{
	return o->test == PT_READ_BW || o->test == PT_READ_LAT;
}

int pt_is_atomic(const struct pt_opts *o)
{
	return o->test == PT_ATOMIC_BW || o->test == PT_ATOMIC_LAT;
}

int pt_is_send(const struct pt_opts *o)
{
	return o->test == PT_SEND_BW || o->test == PT_SEND_LAT;
}

uint32_t pt_queue_index(const struct pt_opts *o, uint32_t idx, uint32_t lane)
{
	uint32_t np = o->npeers ? o->npeers : 1, k = lane / np;

	return o->mode == PT_QP_PER_PROCESS ? idx * o->qps + k : k;
}

void pt_queue_name(const struct pt_opts *o, uint32_t idx, uint32_t lane, char *out,
                   size_t len)
{
	uint32_t np = o->npeers ? o->npeers : 1, k = pt_queue_index(o, idx, lane);

	if (o->npeers)
		snprintf(out, len, "%s/q%u", o->peers[lane % np], k);
	else
		snprintf(out, len, "q%u", k);
}

uint32_t pt_queues_needed(const struct pt_opts *o)
{
	return o->mode == PT_QP_PER_PROCESS ? o->procs * o->qps : o->qps;
}

uint32_t pt_lanes(const struct pt_opts *o)
{
	return o->qps * (o->npeers ? o->npeers : 1);
}

uint32_t pt_host_qps(const struct pt_opts *o)
{
	return pt_queues_needed(o) * (o->npeers ? o->npeers : 1);
}

void pt_host_queue_name(const struct pt_opts *o, uint32_t i, char *out, size_t len)
{
	uint32_t per = pt_queues_needed(o);

	if (o->npeers)
		snprintf(out, len, "%s/q%u", o->peers[i / per], i % per);
	else
		snprintf(out, len, "q%u", i);
}

/*
 * One --peers entry's "@HOST[:PORT]", where its server runs, into peer
 * @k. 0 or -1 (@why says what was wrong).
 */
static int parse_srv(struct pt_opts *o, uint32_t k, const char *at, size_t w, char *why,
                     size_t len)
{
	const char *colon = memchr(at, ':', w);
	size_t hw = colon ? (size_t)(colon - at) : w, i;
	unsigned long port = 0;

	for (i = colon ? hw + 1 : w; i < w; i++)
		port = at[i] >= '0' && at[i] <= '9' && port < 65536
		           ? port * 10 + (unsigned long)(at[i] - '0')
		           : 65536;
	if (hw < 1 || hw >= PT_SRV_HOST || memchr(at, '@', w) ||
	    (colon && (w == hw + 1 || port < 1 || port > 65535))) {
		snprintf(why, len,
		         "'%s@%.*s': want NAME@HOST or NAME@HOST:PORT (1..65535)",
		         o->peers[k], (int)w, at);
		return -1;
	}
	memcpy(o->peer_srv[k], at, hw);
	o->peer_srv[k][hw] = 0;
	o->peer_port[k] = (uint16_t)port;
	return 0;
}

/*
 * --peers FILE: a cluster's peers file, as ssqd reads it (NAME HOST:PORT a
 * line, # comments): into "NAME@HOST,..." in @list (HOST: where the
 * peer's server runs, with --ssq_socket; -p its port). 0 or -1 (@why).
 */
static int peers_file(const char *path, char *list, size_t size, char *why, size_t len)
{
	char line[512], name[64], addr[256], extra[2], *hash, *colon;
	size_t at = 0;
	unsigned no = 0;
	FILE *f = fopen(path, "r");

	if (!f) {
		snprintf(why, len, "%s", strerror(errno));
		return -1;
	}
	list[0] = 0;
	while (fgets(line, sizeof(line), f)) {
		int n;

		no++;
		hash = strchr(line, '#');
		if (hash)
			*hash = 0;
		n = sscanf(line, "%63s %255s %1s", name, addr, extra);
		if (n <= 0)
			continue;
		colon = n == 2 ? strrchr(addr, ':') : NULL;
		if (!colon || colon == addr) {
			snprintf(why, len, "line %u: want NAME HOST:PORT", no);
			fclose(f);
			return -1;
		}
		*colon = 0;
		n = snprintf(list + at, size - at, "%s%s@%s", at ? "," : "", name, addr);
		if (n < 0 || (size_t)n >= size - at) {
			snprintf(why, len, "line %u: more peers than a run takes", no);
			fclose(f);
			return -1;
		}
		at += (size_t)n;
	}
	fclose(f);
	if (!at) {
		snprintf(why, len, "names no peer");
		return -1;
	}
	return 0;
}

/*
 * --peers LIST: a count N (peers named peer1..peerN) or names separated by
 * commas, each as ssqd takes a peer's name (1..23 of A-Z a-z 0-9 . _ -),
 * none twice and none "here", the sending ssqd's name; a name may say
 * where its server runs (NAME@HOST[:PORT], with --ssq_socket).
 */
static int parse_peers(struct pt_opts *o, const char *list, char *why, size_t len)
{
	const char *p = list, *end, *at;
	char *stop;
	unsigned long n;
	size_t w, i, full;
	uint32_t k;

	if (strchr(list, '/') || access(list, F_OK) == 0) {
		char names[PT_MAX_PEERS * 2 * 300];

		if (peers_file(list, names, sizeof(names), why, len))
			return -1;
		o->peers_file = 1;
		return parse_peers(o, names, why, len);
	}
	n = strtoul(list, &stop, 10);
	if (*list >= '0' && *list <= '9' && !*stop) {
		if (n < 1 || n > PT_MAX_PEERS) {
			snprintf(why, len, "want 1..%u peers", PT_MAX_PEERS);
			return -1;
		}
		o->peers_counted = 1;
		for (o->npeers = 0; o->npeers < n; o->npeers++)
			snprintf(o->peers[o->npeers], PT_PEER_NAME, "peer%u",
			         o->npeers + 1);
		return 0;
	}
	/*
	 * A signed count ("-1", "+3") is a mistaken count, not a name, though
	 * '-' is a name's character: "-1" ran with one peer named "-1".
	 */
	if ((*list == '-' || *list == '+') && list[1] &&
	    strspn(list + 1, "0123456789") == strlen(list + 1)) {
		snprintf(why, len, "want 1..%u peers", PT_MAX_PEERS);
		return -1;
	}
	if (!*list) {
		snprintf(why, len, "an empty list: want N, NAME,... or a peers file");
		return -1;
	}
	for (o->npeers = 0; *p; p = *end ? end + 1 : end) {
		end = strchr(p, ',');
		end = end ? end : p + strlen(p);
		full = (size_t)(end - p);
		at = memchr(p, '@', full);
		w = at ? (size_t)(at - p) : full;
		if (o->npeers == PT_MAX_PEERS) {
			snprintf(why, len, "more than %u peers", PT_MAX_PEERS);
			return -1;
		}
		if (w < 1 || w >= PT_PEER_NAME) {
			snprintf(why, len, "a name of %zu characters: want 1..%u", w,
			         PT_PEER_NAME - 1);
			return -1;
		}
		for (i = 0; i < w; i++)
			if (!isalnum((unsigned char)p[i]) && !strchr("._-", p[i])) {
				snprintf(why, len, "'%.*s': want A-Z a-z 0-9 . _ -",
				         (int)w, p);
				return -1;
			}
		memcpy(o->peers[o->npeers], p, w);
		o->peers[o->npeers][w] = 0;
		if (at && parse_srv(o, o->npeers, at + 1, full - w - 1, why, len))
			return -1;
		if (!strcmp(o->peers[o->npeers], "here")) {
			snprintf(why, len, "'here' is the sending ssqd's own name");
			return -1;
		}
		for (k = 0; k < o->npeers; k++)
			if (!strcmp(o->peers[k], o->peers[o->npeers])) {
				snprintf(why, len, "%s named twice", o->peers[k]);
				return -1;
			}
		o->npeers++;
		if (*end && !end[1]) {
			snprintf(why, len, "a trailing comma");
			return -1;
		}
	}
	return 0;
}

/*
 * The receive pool SEND needs at every queue: buffers of the largest size,
 * at least as many posted as can be in flight to one queue (so no sender
 * ever waits out an RNR timer), a power of two (ssqd's rule).
 */
void pt_recv_pool(const struct pt_opts *o, uint32_t *depth, uint32_t *bytes)
{
	uint32_t top = pt_top_size(o), want, d = 256;

	want = o->test == PT_SEND_LAT         ? o->procs
	       : o->mode == PT_QP_PER_PROCESS ? o->tx_depth
	                                      : o->procs * o->tx_depth;
	while (d < want && d < 32768)
		d *= 2;
	*depth = d;
	*bytes = top < 64 ? 64 : (top + 63) & ~63u;
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
	case PT_READ_LAT:
		return "   RDMA READ latency, one READ outstanding: from posting it "
		       "until its\n"
		       "   completion is polled (the data is back), as perftest's "
		       "ib_read_lat\n"
		       "   (not halved: a READ is a round trip).\n";
	case PT_ATOMIC_LAT:
		return "   ATOMIC latency (8 bytes, -A FETCH_AND_ADD or CMP_AND_SWAP), "
		       "one\n"
		       "   outstanding: from posting it until its completion is "
		       "polled, as\n"
		       "   perftest's ib_atomic_lat (not halved).\n";
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
	    "   %s [options]    run against a running ssqd (--ssq_socket), else start "
	    "one;\n"
	    "                   but if this host's ssqd at the default socket has a "
	    "peer,\n"
	    "                   be perftest's server on it (two hosts, as perftest)\n"
	    "   %s [options] SERVER   two hosts: the client, on this host's ssqd "
	    "at the\n"
	    "                   default socket (unless --ssq_socket or $SSQ_SOCKET)\n"
	    "   %s --ssq_socket=SOCK --server [-p PORT] [options]   two hosts: the "
	    "server\n"
	    "   %s --ssq_socket=SOCK [-p PORT] [options] SERVER     two hosts: the "
	    "client\n"
	    "%s"
	    "\n"
	    " Options (perftest's):\n"
	    "  -a, --all                  Run sizes from 2 till 2^23 (SEND: 2^20)\n"
	    "  -d, --ib-dev=<dev>         Use IB device <dev> (mlx5_N or emu; default:\n"
	    "                             the first mlx5 device, else the emulated one)\n"
	    "  -D, --duration=<sec>       Run for <sec> seconds instead of -n\n"
	    "  -e, --events               Sleep instead of spinning: ssq_send_lat's\n"
	    "                             receiver until the SEND is logged\n"
	    "                             (ssq_recv_wait); a bandwidth test's senders,\n"
	    "                             lockfree or qp-per-process, for completions\n"
	    "                             when their window is full (ssq_wait)\n"
	    "  -h, --help                 Show this help screen\n"
	    "  -i, --ib-port=<port>       Use port <port> of the device (1..2; given to\n"
	    "                             the ssqd this tool starts as --ib-port)\n"
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
	    "  -S, --sl=<sl>              Service level (0..%u; ssqd's QPs use 0, so\n"
	    "                             only 0 runs)\n"
	    "  -t, --tx-depth=<dep>       Messages a sender keeps in flight per QP\n"
	    "                             (1..%u, >= -Q, default %u)\n"
	    "  -s, --size=<size>          Size of message to exchange (1..%u, default "
	    "%u)\n"
	    "  -V, --version              Display version number\n"
	    "  -u, --qp-timeout=<n>       QP timeout, 4.096 usec * 2^n (0..31; given\n"
	    "                             to the ssqd this tool starts as\n"
	    "                             --qp-timeout; its default 14)\n"
	    "  -x, --gid-index=<index>    GID index (0..255; given to the ssqd this\n"
	    "                             tool starts as --gid-index)\n"
	    "      --report_gbits         Report max/average BW in Gbit/sec (else\n"
	    "                             MiB/sec, MiB = 2^20 bytes, as perftest)\n"
	    "      --out_json             Save the report in a json file (perftest's\n"
	    "                             keys; default file %s)\n"
	    "      --out_json_file=<file> Name of the report json file (implies\n"
	    "                             --out_json); -a: \"results\" is a list\n"
	    "      --run_infinitely       Run until interrupted (SIGINT, SIGTERM),\n"
	    "                             printing a result line every -D seconds\n"
	    "                             (default %u); bandwidth tools, one host\n"
	    "      --cq-mod=<n>           The same as -Q\n"
	    "      --output=<units>       Print only one number a size: bandwidth\n"
	    "                             (BW average) or message_rate (bandwidth\n"
	    "                             tools), latency (t_avg, latency tools)\n"
	    "  -N, --noPeak               Don't measure BW peak (printed 0)\n"
	    "      --report-both          Report both directions of -b apart\n"
	    "                             (taken; ssq prints their sum)\n"
	    "  -C, --report-cycles        Latencies in CPU time-stamp cycles\n"
	    "  -H, --report-histogram     Print every latency sample, sorted\n"
	    "  -U, --report-unsorted      Print every latency sample as taken\n"
	    "  -o, --outs=<n>             READs (atomics) each sender keeps in\n"
	    "                             flight, at most -t (read and atomic bw)\n"
	    "  -A, --atomic_type=<type>   FETCH_AND_ADD (default) or CMP_AND_SWAP\n"
	    "  -m, --mtu=<mtu>            256..4096: the emulated ssqd this tool\n"
	    "                             starts runs at it (--emu-mtu); else the\n"
	    "                             ssqd's port must have it\n"
	    "  -F, --CPU-freq             Taken (ssq times with CLOCK_MONOTONIC)\n"
	    "  -c, --connection=RC        Taken (ssqd's queues are RC); others\n"
	    "                             are refused\n"
	    "  -b, --bidirectional        Two hosts, both sides send: the row is\n"
	    "                             the sum of both directions, as perftest's\n"
	    "                             (write, read and atomic bw; both sides -b)\n"
	    "  -R, -z                     Refused, saying why: ssqd links its QPs\n"
	    "                             without rdma_cm\n"
	    "\n"
	    " Options (ssq's):\n"
	    "  -P, --procs=<n>            Sender processes sharing the queue (1..%u)\n"
	    "      --mode=<mode>          lockfree (ssq, default), spinlock (one\n"
	    "                             process-shared lock per queue),\n"
	    "                             qp-per-process (each its own QPs, <= 64),\n"
	    "                             proxy (one posting process, SPSC rings),\n"
	    "                             combine (lockfree; single posts handed to\n"
	    "                             whoever posts: <ssq/combine.h>)\n"
	    "      --ssq_socket=<path>    A running ssqd's socket (default\n"
	    "                             $SSQ_SOCKET; neither: start ssqd: $SSQD,\n"
	    "                             else the ssqd next to this tool, else $PATH)\n"
	    "      --wire                 Start two ssqd on the emulated device, one\n"
	    "                             --listen, one --connect, and send over the\n"
	    "                             emulated wire (UDP on 127.0.0.1) into the\n"
	    "                             listening one's arena (not with "
	    "--ssq_socket)\n"
	    "      --peers=<n|names>      Start a cluster on the emulated wire: this\n"
	    "                             host's ssqd and one per peer (n, named\n"
	    "                             peer1.., or names a,b,c; <= 64); every\n"
	    "                             sender spreads its batches over the\n"
	    "                             peers' queues PEER/q<k>, -q per peer\n"
	    "                             (write, read and atomic bw). With\n"
	    "                             --ssq_socket: that ssqd's cluster, names\n"
	    "                             NAME[@HOST[:PORT]], a --server on each\n"
	    "                             peer's host (at HOST, else NAME; -p).\n"
	    "                             Or a peers FILE (NAME HOST:PORT lines)\n"
	    "      --json=<file>          Write ssq's records (one per size) as JSON\n"
	    "      --server               Two hosts (ssqd with --listen/--connect):\n"
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
	    o->tool, o->tool, o->tool, o->tool, measures(o), pt_is_lat(o) ? 1000u : 5000u,
	    PT_MAX_LANES, PT_MAX_LANES, PT_MAX_TX, PT_MAX_SL, PT_MAX_TX, PT_TX_DEPTH,
	    PT_MAX_SIZE, pt_is_lat(o) ? 2u : 65536u, PT_OUT_JSON, PT_INF_DURATION,
	    PT_MAX_PROCS, PT_PORT);
}

/* -V: one line, as every ssq binary says it: the tool, ssq's version and revision. */
static void version(const struct pt_opts *o)
{
	printf("%s %s (git %s)\n", o->tool, SSQ_VERSION_STRING, SSQ_GIT_REVISION);
}

static void bad_flag(const struct pt_opts *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));
static void bad_flag(const struct pt_opts *o, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", o->tool);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	pt_usage(stderr, o);
	exit(1);
}

static uint64_t num(const struct pt_opts *o, const char *flag, const char *s, uint64_t lo,
                    uint64_t hi)
{
	char *end, range[64];
	unsigned long long v;

	/* Digits only: strtoull alone takes "+5", " 5" and "-1" (as 2^64 - 1). */
	errno = 0;
	v = strtoull(s, &end, 10);
	if (!*s || s[strspn(s, "0123456789")] || *end || errno || v < lo || v > hi) {
		snprintf(range, sizeof(range), "%llu..%llu", (unsigned long long)lo,
		         (unsigned long long)hi);
		fprintf(stderr, "%s: %s '%s': want %s\n", o->tool, flag, s, range);
		pt_usage(stderr, o);
		exit(1);
	}
	return v;
}

/*
 * The results go to @path (--json, --out_json_file) at the end of the run:
 * a name that cannot be written there is refused now, not after the run
 * it would have recorded.
 */
static void check_out_path(const struct pt_opts *o, const char *flag, const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[4096], msg[4200];
	struct stat st;
	int err = 0;

	if (!*path)
		bad_flag(o, "%s: an empty file name", flag);
	if (!stat(path, &st)) {
		if (S_ISDIR(st.st_mode))
			err = EISDIR;
		else if (access(path, W_OK))
			err = errno;
	} else if (errno != ENOENT) {
		err = errno;
	} else {
		if (!slash)
			snprintf(dir, sizeof(dir), ".");
		else
			snprintf(dir, sizeof(dir), "%.*s",
			         slash == path ? 1 : (int)(slash - path), path);
		if (access(dir, W_OK | X_OK))
			err = errno;
	}
	if (!err)
		return;
	snprintf(msg, sizeof(msg), "'%s': cannot write the results there (%s)", path,
	         strerror(err));
	bad_flag(o, "%s %s", flag, msg);
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

/* --peers: what it goes with. */
static void check_peers(struct pt_opts *o, int s_given, const char *role)
{
	uint32_t k;

	if (role)
		bad_flag(o,
		         "--peers with %s: the client names its servers in --peers "
		         "(NAME@HOST[:PORT]); a server finds its queue to the client "
		         "by the client's QPN",
		         o->server ? "--server" : o->peer_host);
	for (k = 0; !s_given && o->peers_file && k < o->npeers; k++)
		o->peer_srv[k][0] = 0; /* the tool's own cluster: names only */
	for (k = 0; !s_given && k < o->npeers; k++)
		if (o->peer_srv[k][0])
			bad_flag(o,
			         "--peers %s@...: where a peer's server runs is for a "
			         "running cluster (--ssq_socket)%s",
			         o->peers[k], "");
	if (s_given && o->peers_counted)
		bad_flag(o, "--peers N with --ssq_socket: name the running cluster's "
		            "peers (NAME[@HOST[:PORT]],...)");
	if (o->wire)
		bad_flag(o, "--peers with --wire: one or the other");
	if (!s_given && o->device && strcmp(o->device, "emu"))
		bad_flag(o,
		         "-d %s: --peers without --ssq_socket runs on the emulated "
		         "device's wire (-d emu)",
		         o->device);
	if (o->test != PT_WRITE_BW && o->test != PT_READ_BW && o->test != PT_ATOMIC_BW)
		bad_flag(o,
		         "--peers with %s: ssq_write_bw, ssq_read_bw and "
		         "ssq_atomic_bw spread over peers",
		         o->tool);
	if (pt_host_qps(o) > PT_MAX_LANES)
		bad_flag(o,
		         "queues %u x %u peers = %u, more than ssqd's %u "
		         "(qp-per-process: -P x -q per peer)",
		         pt_queues_needed(o), o->npeers, pt_host_qps(o), PT_MAX_LANES);
	if (!s_given)
		o->socket = NULL; /* not $SSQ_SOCKET either: the tool starts them */
}

/*
 * What a server refuses (--server, or a bare command: pt_become_server),
 * and what it takes without a meaning: the results files, which the client
 * writes (perftest's passive side of a WRITE or READ test writes none, and
 * a lab gives both sides the same flags).
 */
static void server_checks(struct pt_opts *o)
{
	if (!o->server)
		return;
	if (o->json || o->out_json) {
		fprintf(stderr, "%s: %s on the server: the client writes the results\n",
		        o->tool, o->json ? "--json" : "--out_json");
		o->json = o->out_json = NULL;
	}
	if (o->events)
		bad_flag(o, "-e: the server echoes by polling; give -e to the client");
	if (o->atomic_cas)
		bad_flag(o, "-A CMP_AND_SWAP with --server: the server checks its "
		            "counter by the fetch-and-adds it took");
	if (o->run_inf)
		bad_flag(o, "--run_infinitely: one host only (not with --server or a "
		            "server name)");
	if (o->gid_index >= 0 || o->ib_port)
		bad_flag(o,
		         "%s: the ssqd at %s set up its QPs already: start that ssqd "
		         "with --gid-index / --ib-port",
		         o->gid_index >= 0 ? "-x" : "-i", o->socket);
}

void pt_become_server(struct pt_opts *o)
{
	o->server = 1;
	pt_default_socket(o->default_sock, sizeof(o->default_sock));
	o->socket = o->default_sock;
	server_checks(o);
}

/*
 * As the library's clients look (src/ctrl/proto/socket_path.c,
 * proto_default_socket), less $SSQ_SOCKET, which pt_parse took already.
 */
void pt_default_socket(char *out, size_t len)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");

	if (xdg && *xdg)
		snprintf(out, len, "%s/ssqd.sock", xdg);
	else if (getuid() == 0)
		snprintf(out, len, "/run/ssqd/ssqd.sock");
	else
		snprintf(out, len, "/tmp/ssqd-%u/ssqd.sock", (unsigned)getuid());
}

/*
 * -b: both sides send (perftest's duplex). Only two hosts have a second
 * side: the server runs the client's senders' twins on its own ssqd into a
 * buffer the client grants it (twohost_server.c). perftest refuses -b in its
 * latency tests ("Bidirectional is only available in BW test",
 * src/perftest_parameters.c, parser_perftest). Whether there is a second
 * side is known once a bare command has looked for its ssqd (engine.c).
 */
static void check_bidir(struct pt_opts *o)
{
	if (!o->bidir)
		return;
	if (pt_is_lat(o))
		bad_flag(o, "-b: bidirectional is only available in the BW tools (as "
		            "perftest's)");
	if (o->test == PT_SEND_BW)
		bad_flag(o, "-b with ssq_send_bw: the SENDs back would land in this "
		            "ssqd's receive pool, which nothing checks yet; "
		            "ssq_write_bw, ssq_read_bw and ssq_atomic_bw take -b");
}

/* The checks between flags, once all are read. */
static void check_combinations(struct pt_opts *o, int s_given, int q_given, int n_given)
{
	const char *role = o->server ? "--server" : o->peer_host;

	if (o->server && o->peer_host)
		bad_flag(o, "--server with a server name (%s): one role per side",
		         o->peer_host);
	if (role && o->wire)
		bad_flag(o,
		         "%s: --wire is two ssqd on this host; two hosts need no "
		         "--wire",
		         role);
	/* perftest's two hosts: this host's ssqd, where its clients look. */
	if (role && !o->socket && !o->wire) {
		pt_default_socket(o->default_sock, sizeof(o->default_sock));
		o->socket = o->default_sock;
	}
	server_checks(o);
	check_bidir(o);
	if (o->mode == PT_QP_PER_PROCESS && o->procs * o->qps > PT_MAX_LANES)
		bad_flag(o,
		         "-P x -q = %u queues with --mode qp-per-process: ssqd has at "
		         "most %u",
		         o->procs * o->qps, PT_MAX_LANES);
	if (o->npeers)
		check_peers(o, s_given, role);
	if (o->wire && s_given)
		bad_flag(o, "--ssq_socket: --wire starts its own two ssqd; a running one "
		            "cannot be used");
	if (o->wire && o->device && strcmp(o->device, "emu"))
		bad_flag(o, "-d %s: --wire runs on the emulated device's wire (-d emu)",
		         o->device);
	if (o->wire)
		o->socket = NULL; /* not $SSQ_SOCKET either */
	if (o->sl)
		bad_flag(o,
		         "-S %u: ssqd sets up every QP with service level 0 (it has no "
		         "SL setting); only -S 0 runs",
		         o->sl);
	if (o->socket && (o->gid_index >= 0 || o->ib_port))
		bad_flag(o,
		         "%s: the ssqd at --ssq_socket (or $SSQ_SOCKET) set up its "
		         "QPs already: start that ssqd with --gid-index / --ib-port",
		         o->gid_index >= 0 ? "-x" : "-i");
	if (o->socket && o->qp_timeout >= 0)
		bad_flag(o,
		         "-u %d: the ssqd at %s set up its QPs already: start that "
		         "ssqd with --qp-timeout %d",
		         o->qp_timeout, o->socket, o->qp_timeout);
	/* -o: no sender keeps more READs (atomics) in flight than that. */
	if (o->out_reads && o->out_reads < o->tx_depth) {
		o->tx_depth = o->out_reads;
		if (o->cq_mod > o->tx_depth)
			o->cq_mod = o->tx_depth;
	}
	if (o->atomic_cas && role)
		bad_flag(o,
		         "-A CMP_AND_SWAP with %s: the server checks its counter "
		         "by the fetch-and-adds it took",
		         role);
	if (!q_given && o->cq_mod > o->tx_depth)
		o->cq_mod = o->tx_depth; /* perftest lowers its default too */
	if (o->cq_mod > o->tx_depth)
		bad_flag(o, "-Q %u: more than the tx depth (-t): it would never complete",
		         o->cq_mod);
	if (o->post_list > o->tx_depth)
		bad_flag(o, "-l %u: a post list longer than the tx depth (-t)",
		         o->post_list);
	if (pt_is_atomic(o))
		o->size = 8; /* perftest: atomics are 8 bytes, -s ignored */
	if (o->inline_size && (pt_is_read(o) || pt_is_atomic(o)))
		bad_flag(o, "-I: READ and atomics cannot be inline");
	if (o->test == PT_SEND_LAT && o->procs > 1 && o->size < 2)
		bad_flag(
		    o,
		    "-s 1 with -P > 1: a 1-byte SEND cannot say whose it is (-s >= 2)");
	if (o->events && pt_is_lat(o) && o->test != PT_SEND_LAT)
		bad_flag(o, "-e: a latency test times one message at a time by polling; "
		            "ssq_send_lat sleeps (ssq_recv_wait), the bandwidth tools "
		            "too (ssq_wait)");
	if (o->events && !pt_is_lat(o) && o->mode != PT_LOCKFREE &&
	    o->mode != PT_QP_PER_PROCESS && o->mode != PT_COMBINE)
		bad_flag(o, "-e: only lockfree and qp-per-process senders sleep "
		            "(ssq_wait; combine too); spinlock and proxy poll");
	if (o->iters > 10000000 && pt_is_lat(o))
		bad_flag(o, "-n: latency tests keep every sample: at most 10000000");
	if (!o->run_inf)
		return;
	/* perftest's own limits on --run_infinitely, and this tool's. */
	if (pt_is_lat(o))
		bad_flag(o, "--run_infinitely: bandwidth tools only (as perftest's)");
	if (o->all_sizes)
		bad_flag(o, "--run_infinitely: one size at a time (not with -a)");
	if (role)
		bad_flag(o, "--run_infinitely: one host only (not with --server or a "
		            "server name)");
	if (n_given)
		bad_flag(o, "--run_infinitely: runs until interrupted, a line every -D "
		            "seconds; -n does not apply");
	if (o->duration == 0)
		o->duration = PT_INF_DURATION;
}

/* getopt values of the long options without a short one. */
enum {
	OPT_GBITS = 256,
	OPT_MODE,
	OPT_JSON,
	OPT_WIRE,
	OPT_SERVER,
	OPT_TIMEOUT,
	OPT_SSQ_SOCKET,
	OPT_OUT_JSON,
	OPT_OUT_JSON_FILE,
	OPT_RUN_INF,
	OPT_PEERS,
	OPT_OUTPUT,
	OPT_REPORT_BOTH
};

/*
 * perftest's flags beyond the basic set: those with a meaning for ssq set
 * it; those with none are taken with one line saying so (a lab's script
 * runs as it is); those ssq cannot honour are refused, saying why.
 * perftest's own checks come with them (-C/-H/-U latency tools only, -N
 * and -b bandwidth only, -o READ and atomics, -A atomics).
 */
static void perftest_flag(struct pt_opts *o, int opt, const char *arg)
{
	switch (opt) {
	case 'F':
		/* perftest: don't fail when the CPU frequency varies. */
		fprintf(stderr,
		        "%s: -F: taken; ssq's clock is CLOCK_MONOTONIC, not CPU cycles, "
		        "so a varying CPU frequency changes nothing\n",
		        o->tool);
		break;
	case 'c':
		if (strcmp(arg, "RC"))
			bad_flag(o,
			         "-c %s: ssqd's queues are RC QPs (mlx5 send queues it "
			         "shares); only -c RC runs",
			         arg);
		fprintf(stderr, "%s: -c RC: taken; ssqd's queues are RC already\n",
		        o->tool);
		break;
	case 'u':
		/* perftest's qp_timeout, 4.096 us x 2^N: ssqd --qp-timeout. */
		o->qp_timeout = (int)num(o, "-u", arg, 0, 31);
		break;
	case 'b':
		o->bidir = 1; /* checked with the role: check_bidir */
		break;
	case 'R':
	case 'z':
		bad_flag(o,
		         "-%c: ssqd links QPs over its own TCP exchange (--listen, "
		         "--connect), not rdma_cm; there is no rdma_cm path yet",
		         opt);
		break;
	case 'o':
		if (o->test != PT_READ_BW && o->test != PT_ATOMIC_BW)
			bad_flag(o, "-o: outstanding reads apply to READ and atomics "
			            "(ssq_read_bw, ssq_atomic_bw), as perftest's");
		o->out_reads = (uint32_t)num(o, "-o", arg, 1, PT_MAX_TX);
		break;
	case 'A':
		if (!pt_is_atomic(o))
			bad_flag(o, "-A: the atomic type is ssq_atomic_bw's and "
			            "ssq_atomic_lat's, as perftest's");
		if (!strcmp(arg, "CMP_AND_SWAP"))
			o->atomic_cas = 1;
		else if (strcmp(arg, "FETCH_AND_ADD"))
			bad_flag(o, "-A %s: want CMP_AND_SWAP or FETCH_AND_ADD", arg);
		break;
	case 'm':
		o->mtu = (uint32_t)num(o, "-m", arg, 256, 4096);
		if (o->mtu & (o->mtu - 1))
			bad_flag(o, "-m %s: want 256, 512, 1024, 2048 or 4096", arg);
		break;
	case 'N':
		if (pt_is_lat(o))
			bad_flag(o, "-N: bandwidth tools only (as perftest's)");
		o->no_peak = 1;
		break;
	case 'C':
	case 'H':
	case 'U':
		if (!pt_is_lat(o))
			bad_flag(o, "-%c: latency tools only (as perftest's)", opt);
		if (opt == 'C')
			o->lat_cycles = 1;
		else if (opt == 'H')
			o->lat_hist = 1;
		else
			o->lat_unsorted = 1;
		break;
	case OPT_REPORT_BOTH:
		/*
		 * With -b, the two directions' rows apart after their sum
		 * (pt_print_report_both, report.c); without -b, a no-op, as
		 * perftest's (report_both && duplex).
		 */
		o->report_both = 1;
		break;
	default: /* OPT_OUTPUT */
		o->output = !strcmp(arg, "bandwidth")      ? PT_OUT_BW
		            : !strcmp(arg, "message_rate") ? PT_OUT_MR
		            : !strcmp(arg, "latency")      ? PT_OUT_LAT
		                                           : PT_OUT_FULL;
		if (o->output == PT_OUT_FULL)
			bad_flag(o,
			         "--output=%s: want bandwidth, message_rate or "
			         "latency",
			         arg);
		if (pt_is_lat(o) != (o->output == PT_OUT_LAT))
			bad_flag(o, "--output=%s: %s", arg,
			         pt_is_lat(o) ? "a latency tool reports latency"
			                      : "a bandwidth tool reports bandwidth "
			                        "or message_rate");
	}
}

int pt_parse(int argc, char **argv, enum pt_test test, const char *tool,
             struct pt_opts *o)
{
	static const struct option longs[] = {
		{ "all", no_argument, NULL, 'a' },
		{ "ib-dev", required_argument, NULL, 'd' },
		{ "duration", required_argument, NULL, 'D' },
		{ "events", no_argument, NULL, 'e' },
		{ "help", no_argument, NULL, 'h' },
		{ "ib-port", required_argument, NULL, 'i' },
		{ "inline_size", required_argument, NULL, 'I' },
		{ "post_list", required_argument, NULL, 'l' },
		{ "iters", required_argument, NULL, 'n' },
		{ "qp", required_argument, NULL, 'q' },
		{ "cqe_poll", required_argument, NULL, 'Q' },
		{ "sl", required_argument, NULL, 'S' },
		{ "tx-depth", required_argument, NULL, 't' },
		{ "size", required_argument, NULL, 's' },
		{ "version", no_argument, NULL, 'V' },
		{ "gid-index", required_argument, NULL, 'x' },
		{ "procs", required_argument, NULL, 'P' },
		{ "ssq_socket", required_argument, NULL, OPT_SSQ_SOCKET },
		{ "report_gbits", no_argument, NULL, OPT_GBITS },
		{ "out_json", no_argument, NULL, OPT_OUT_JSON },
		{ "out_json_file", required_argument, NULL, OPT_OUT_JSON_FILE },
		{ "run_infinitely", no_argument, NULL, OPT_RUN_INF },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "json", required_argument, NULL, OPT_JSON },
		{ "wire", no_argument, NULL, OPT_WIRE },
		{ "peers", required_argument, NULL, OPT_PEERS },
		{ "server", no_argument, NULL, OPT_SERVER },
		{ "port", required_argument, NULL, 'p' },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		/* perftest's, with its spellings (report-histogrm is its). */
		{ "cq-mod", required_argument, NULL, 'Q' },
		{ "output", required_argument, NULL, OPT_OUTPUT },
		{ "report-both", no_argument, NULL, OPT_REPORT_BOTH },
		{ "noPeak", no_argument, NULL, 'N' },
		{ "report-cycles", no_argument, NULL, 'C' },
		{ "report-histogrm", no_argument, NULL, 'H' },
		{ "report-histogram", no_argument, NULL, 'H' },
		{ "report-unsorted", no_argument, NULL, 'U' },
		{ "outs", required_argument, NULL, 'o' },
		{ "atomic_type", required_argument, NULL, 'A' },
		{ "mtu", required_argument, NULL, 'm' },
		{ "CPU-freq", no_argument, NULL, 'F' },
		{ "connection", required_argument, NULL, 'c' },
		{ "qp-timeout", required_argument, NULL, 'u' },
		{ "bidirectional", no_argument, NULL, 'b' },
		{ "rdma_cm", no_argument, NULL, 'R' },
		{ "comm_rdma_cm", no_argument, NULL, 'z' },
		{ NULL, 0, NULL, 0 },
	};
	int opt, i, q_given = 0, s_given = 0, n_given = 0, out_json = 0;
	const char *out_json_file = NULL;
	char flag[4] = "-?", why[80], sw[32];
	const char *eq;

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
	o->gid_index = -1;
	o->qp_timeout = -1;
	o->socket = getenv("SSQ_SOCKET");
	if (o->socket && !*o->socket)
		o->socket = NULL;
	o->port = PT_PORT;
	opterr = 0;
	while ((opt = getopt_long(argc, argv,
	                          ":ad:D:ehi:I:l:n:p:q:Q:s:S:t:P:Vx:FNCHUbRzc:o:A:m:u:",
	                          longs, NULL)) != -1) {
		switch (opt) {
		case 'a':
			o->all_sizes = 1;
			break;
		case 'd':
			if (!*optarg)
				bad_flag(o, "-d: an empty device name");
			o->device = optarg;
			break;
		case 'D':
			o->duration = (double)num(o, "-D", optarg, 1, 3600);
			break;
		case 'e':
			o->events = 1;
			break;
		case 'h':
			pt_usage(stdout, o);
			exit(0);
		case 'i':
			o->ib_port = (int)num(o, "-i", optarg, 1, 2);
			break;
		case 'I':
			o->inline_size = (uint32_t)num(o, "-I", optarg, 0, 912);
			break;
		case 'l':
			o->post_list = (uint32_t)num(o, "-l", optarg, 1, 64);
			break;
		case 'n':
			o->iters = num(o, "-n", optarg, 1, 1000000000);
			n_given = 1;
			break;
		case 'q':
			o->qps = (uint32_t)num(o, "-q", optarg, 1, PT_MAX_LANES);
			break;
		case 'Q':
			o->cq_mod = (uint32_t)num(o, "-Q", optarg, 1, PT_MAX_TX);
			q_given = 1;
			break;
		case 'S':
			/* It was the socket before: say where that went. */
			if (strchr(optarg, '/'))
				bad_flag(
				    o,
				    "%s '%s': -S is the service level (0..15), as "
				    "perftest's; the ssqd socket is --ssq_socket=PATH",
				    "-S", optarg);
			o->sl = (uint32_t)num(o, "-S", optarg, 0, PT_MAX_SL);
			break;
		case 't':
			o->tx_depth = (uint32_t)num(o, "-t", optarg, 1, PT_MAX_TX);
			break;
		case 's':
			/* SEND: what one of ssqd's receive buffers takes. */
			o->size =
			    (uint32_t)num(o, "-s", optarg, 1,
			                  pt_is_send(o) ? PT_MAX_SEND_SIZE : PT_MAX_SIZE);
			o->size_given = 1;
			break;
		case 'F':
		case 'c':
		case 'u':
		case 'b':
		case 'R':
		case 'z':
		case 'o':
		case 'A':
		case 'm':
		case 'N':
		case 'C':
		case 'H':
		case 'U':
		case OPT_OUTPUT:
		case OPT_REPORT_BOTH:
			perftest_flag(o, opt, optarg);
			break;
		case 'P':
			o->procs = (uint32_t)num(o, "-P", optarg, 1, PT_MAX_PROCS);
			break;
		case 'V':
			version(o);
			exit(0);
		case 'x':
			o->gid_index = (int)num(o, "-x", optarg, 0, 255);
			break;
		case OPT_SSQ_SOCKET:
			if (!*optarg)
				bad_flag(o, "--ssq_socket: an empty path");
			o->socket = optarg;
			s_given = 1;
			break;
		case OPT_GBITS:
			o->gbits = 1;
			break;
		case OPT_OUT_JSON:
			out_json = 1;
			break;
		case OPT_OUT_JSON_FILE:
			if (!*optarg)
				bad_flag(o, "--out_json_file: an empty file name");
			out_json_file = optarg;
			break;
		case OPT_RUN_INF:
			o->run_inf = 1;
			break;
		case OPT_MODE:
			for (i = 0; i < 5 && strcmp(optarg, pt_mode_names[i]); i++)
				;
			if (i == 5)
				bad_flag(
				    o,
				    "%s '%s': want lockfree, spinlock, qp-per-process, "
				    "proxy or combine",
				    "--mode", optarg);
			o->mode = (enum pt_mode)i;
			break;
		case OPT_JSON:
			o->json = optarg;
			break;
		case OPT_WIRE:
			o->wire = 1;
			break;
		case OPT_PEERS:
			if (parse_peers(o, optarg, why, sizeof(why)))
				bad_flag(o, "--peers '%s': %s", optarg, why);
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
			bad_flag(o, "%s: needs a value",
			         flag_name(flag, argv[optind - 1]));
			break;
		default:
			/*
			 * "--events=1": getopt_long names the switch (optopt)
			 * it refused a value for; an unknown word leaves 0.
			 */
			eq = strchr(argv[optind - 1], '=');
			if (optopt && eq && !strncmp(argv[optind - 1], "--", 2)) {
				snprintf(sw, sizeof(sw), "%.*s",
				         (int)(eq - argv[optind - 1]), argv[optind - 1]);
				bad_flag(o,
				         "%s: a switch, it takes no value (drop '=%s')",
				         sw, eq + 1);
			}
			bad_flag(o, "unknown flag %s", flag_name(flag, argv[optind - 1]));
		}
	}
	if (optind < argc)
		o->peer_host = argv[optind++]; /* perftest: the server to run against */
	if (optind < argc)
		bad_flag(o, "unexpected argument %s (one server name at most)",
		         argv[optind]);
	/* perftest needs --out_json for a file; a file name alone implies it here. */
	if (out_json || out_json_file)
		o->out_json = out_json_file ? out_json_file : PT_OUT_JSON;
	check_combinations(o, s_given, q_given, n_given);
	if (o->json)
		check_out_path(o, "--json", o->json);
	if (o->out_json)
		check_out_path(o, "--out_json_file", o->out_json);
	return 0;
}
