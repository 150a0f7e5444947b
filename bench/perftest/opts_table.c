/* SPDX-License-Identifier: MIT */
/*
 * opts_table.c - the perftest-style tools' flags as getopt_long reads
 * them: perftest's names and letters where ssq takes them (linux-rdma/
 * perftest, src/perftest_parameters.c, parser: its long_options[] and its
 * short option string), and ssq's own.
 */
#include <stddef.h>
#include "opts_table.h"

/* The letters; ':' first: a missing value comes back as ':', not '?'. */
const char pt_short_opts[] = ":ad:D:ehi:I:l:n:p:q:Q:s:S:t:P:Vx:FNCHUbRzc:o:A:m:u:";

const struct option pt_long_opts[] = {
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
	{ "ssq_socket", required_argument, NULL, PT_OPT_SSQ_SOCKET },
	{ "report_gbits", no_argument, NULL, PT_OPT_GBITS },
	{ "out_json", no_argument, NULL, PT_OPT_OUT_JSON },
	{ "out_json_file", required_argument, NULL, PT_OPT_OUT_JSON_FILE },
	{ "run_infinitely", no_argument, NULL, PT_OPT_RUN_INF },
	{ "mode", required_argument, NULL, PT_OPT_MODE },
	{ "queue-pick", no_argument, NULL, PT_OPT_QUEUE_PICK },
	{ "json", required_argument, NULL, PT_OPT_JSON },
	{ "wire", no_argument, NULL, PT_OPT_WIRE },
	{ "peers", required_argument, NULL, PT_OPT_PEERS },
	{ "server", no_argument, NULL, PT_OPT_SERVER },
	{ "port", required_argument, NULL, 'p' },
	{ "timeout", required_argument, NULL, PT_OPT_TIMEOUT },
	/* perftest's, with its spellings (report-histogrm is its). */
	{ "cq-mod", required_argument, NULL, 'Q' },
	{ "output", required_argument, NULL, PT_OPT_OUTPUT },
	{ "report-both", no_argument, NULL, PT_OPT_REPORT_BOTH },
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
