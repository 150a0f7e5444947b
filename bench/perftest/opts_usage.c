/* SPDX-License-Identifier: MIT */
/*
 * opts_usage.c - the perftest-style tools' usage text (-h, and after a bad
 * flag): what each tool measures, then every flag.
 */
#include <stdio.h>
#include "opts.h"

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
	    "                             (after their sum, as perftest's)\n"
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
	    "      --queue-pick           Each sender opens queue \"any\" once: ssqd\n"
	    "                             picks one of its -q queues, the least\n"
	    "                             busy (recent rate, then producers), and\n"
	    "                             the sender posts only there (lockfree,\n"
	    "                             spinlock, combine; bw tools, one host)\n"
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
