/* SPDX-License-Identifier: MIT */
/*
 * opts.c - the perftest-style tools' command line: perftest's flags where
 * they apply (linux-rdma/perftest, src/perftest_parameters.c: -a -d -D -e -I
 * -l -n -q -Q -t -s -p -S -x -i -V, --report_gbits, --out_json[_file],
 * --run_infinitely), and ssq's own (-P, --mode, --wire, --json,
 * --ssq_socket, --server, --timeout): the defaults, then each flag in turn.
 * Beside it, by job: opts_table.c (the flags getopt reads), opts_values.c
 * (a value read and checked), opts_perftest.c (perftest's further flags),
 * opts_checks.c (the checks between flags), opts_usage.c (-h),
 * opts_derived.c (what follows from the options). Together a leaf: they
 * call no other file of the tools.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ssq_version.h"
#include "opts_values.h"
#include "opts_table.h"
#include "opts_perftest.h"
#include "opts_checks.h"

/* -V: one line, as every ssq binary says it: the tool, ssq's version and revision. */
static void version(const struct pt_opts *o)
{
	printf("%s %s (git %s)\n", o->tool, SSQ_VERSION_STRING, SSQ_GIT_REVISION);
}

int pt_parse(int argc, char **argv, enum pt_test test, const char *tool,
             struct pt_opts *o)
{
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
	while ((opt = getopt_long(argc, argv, pt_short_opts, pt_long_opts, NULL)) != -1) {
		switch (opt) {
		case 'a':
			o->all_sizes = 1;
			break;
		case 'd':
			if (!*optarg)
				pt_bad_flag(o, "-d: an empty device name");
			o->device = optarg;
			break;
		case 'D':
			o->duration = (double)pt_flag_num(o, "-D", optarg, 1, 3600);
			break;
		case 'e':
			o->events = 1;
			break;
		case 'h':
			pt_usage(stdout, o);
			exit(0);
		case 'i':
			o->ib_port = (int)pt_flag_num(o, "-i", optarg, 1, 2);
			break;
		case 'I':
			o->inline_size = (uint32_t)pt_flag_num(o, "-I", optarg, 0, 912);
			break;
		case 'l':
			o->post_list = (uint32_t)pt_flag_num(o, "-l", optarg, 1, 64);
			break;
		case 'n':
			o->iters = pt_flag_num(o, "-n", optarg, 1, 1000000000);
			n_given = 1;
			break;
		case 'q':
			o->qps = (uint32_t)pt_flag_num(o, "-q", optarg, 1, PT_MAX_LANES);
			break;
		case 'Q':
			o->cq_mod = (uint32_t)pt_flag_num(o, "-Q", optarg, 1, PT_MAX_TX);
			q_given = 1;
			break;
		case 'S':
			/* It was the socket before: say where that went. */
			if (strchr(optarg, '/'))
				pt_bad_flag(
				    o,
				    "%s '%s': -S is the service level (0..15), as "
				    "perftest's; the ssqd socket is --ssq_socket=PATH",
				    "-S", optarg);
			o->sl = (uint32_t)pt_flag_num(o, "-S", optarg, 0, PT_MAX_SL);
			break;
		case 't':
			o->tx_depth =
			    (uint32_t)pt_flag_num(o, "-t", optarg, 1, PT_MAX_TX);
			break;
		case 's':
			/* SEND: what one of ssqd's receive buffers takes. */
			o->size = (uint32_t)pt_flag_num(o, "-s", optarg, 1,
			                                pt_is_send(o) ? PT_MAX_SEND_SIZE
			                                              : PT_MAX_SIZE);
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
		case PT_OPT_OUTPUT:
		case PT_OPT_REPORT_BOTH:
			pt_perftest_flag(o, opt, optarg);
			break;
		case 'P':
			o->procs =
			    (uint32_t)pt_flag_num(o, "-P", optarg, 1, PT_MAX_PROCS);
			break;
		case 'V':
			version(o);
			exit(0);
		case 'x':
			o->gid_index = (int)pt_flag_num(o, "-x", optarg, 0, 255);
			break;
		case PT_OPT_SSQ_SOCKET:
			if (!*optarg)
				pt_bad_flag(o, "--ssq_socket: an empty path");
			o->socket = optarg;
			s_given = 1;
			break;
		case PT_OPT_GBITS:
			o->gbits = 1;
			break;
		case PT_OPT_OUT_JSON:
			out_json = 1;
			break;
		case PT_OPT_OUT_JSON_FILE:
			if (!*optarg)
				pt_bad_flag(o, "--out_json_file: an empty file name");
			out_json_file = optarg;
			break;
		case PT_OPT_RUN_INF:
			o->run_inf = 1;
			break;
		case PT_OPT_MODE:
			for (i = 0; i < 5 && strcmp(optarg, pt_mode_names[i]); i++)
				;
			if (i == 5)
				pt_bad_flag(
				    o,
				    "%s '%s': want lockfree, spinlock, qp-per-process, "
				    "proxy or combine",
				    "--mode", optarg);
			o->mode = (enum pt_mode)i;
			break;
		case PT_OPT_JSON:
			o->json = optarg;
			break;
		case PT_OPT_QUEUE_PICK:
			o->queue_pick = 1;
			break;
		case PT_OPT_WIRE:
			o->wire = 1;
			break;
		case PT_OPT_PEERS:
			if (pt_parse_peers(o, optarg, why, sizeof(why)))
				pt_bad_flag(o, "--peers '%s': %s", optarg, why);
			break;
		case PT_OPT_SERVER:
			o->server = 1;
			break;
		case 'p':
			o->port = (uint16_t)pt_flag_num(o, "-p", optarg, 1, 65535);
			break;
		case PT_OPT_TIMEOUT:
			o->timeout =
			    (double)pt_flag_num(o, "--timeout", optarg, 1, 86400);
			break;
		case ':':
			pt_bad_flag(o, "%s: needs a value",
			            pt_flag_name(flag, argv[optind - 1]));
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
				pt_bad_flag(
				    o, "%s: a switch, it takes no value (drop '=%s')", sw,
				    eq + 1);
			}
			pt_bad_flag(o, "unknown flag %s",
			            pt_flag_name(flag, argv[optind - 1]));
		}
	}
	if (optind < argc)
		o->peer_host = argv[optind++]; /* perftest: the server to run against */
	if (optind < argc)
		pt_bad_flag(o, "unexpected argument %s (one server name at most)",
		            argv[optind]);
	/* perftest needs --out_json for a file; a file name alone implies it here. */
	if (out_json || out_json_file)
		o->out_json = out_json_file ? out_json_file : PT_OUT_JSON;
	pt_check_combinations(o, s_given, q_given, n_given);
	if (o->json)
		pt_check_out_path(o, "--json", o->json);
	if (o->out_json)
		pt_check_out_path(o, "--out_json_file", o->out_json);
	return 0;
}
