/* SPDX-License-Identifier: MIT */
/*
 * opts_perftest.c - perftest's flags beyond the basic set (issue 30: a
 * lab's scripts run unchanged): set where they mean something for ssq,
 * taken with a note where they mean nothing, refused by name where ssq
 * cannot honour them.
 */
#include <stdio.h>
#include <string.h>
#include "opts_values.h"
#include "opts_table.h"
#include "opts_perftest.h"

/*
 * perftest's flags beyond the basic set: those with a meaning for ssq set
 * it; those with none are taken with one line saying so (a lab's script
 * runs as it is); those ssq cannot honour are refused, saying why.
 * perftest's own checks come with them (-C/-H/-U latency tools only, -N
 * and -b bandwidth only, -o READ and atomics, -A atomics).
 */
void pt_perftest_flag(struct pt_opts *o, int opt, const char *arg)
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
			pt_bad_flag(
			    o,
			    "-c %s: ssqd's queues are RC QPs (mlx5 send queues it "
			    "shares); only -c RC runs",
			    arg);
		fprintf(stderr, "%s: -c RC: taken; ssqd's queues are RC already\n",
		        o->tool);
		break;
	case 'u':
		/* perftest's qp_timeout, 4.096 us x 2^N: ssqd --qp-timeout. */
		o->qp_timeout = (int)pt_flag_num(o, "-u", arg, 0, 31);
		break;
	case 'b':
		o->bidir = 1; /* checked with the role: check_bidir */
		break;
	case 'R':
	case 'z':
		pt_bad_flag(o,
		            "-%c: ssqd links QPs over its own TCP exchange (--listen, "
		            "--connect), not rdma_cm; there is no rdma_cm path yet",
		            opt);
		break;
	case 'o':
		if (o->test != PT_READ_BW && o->test != PT_ATOMIC_BW)
			pt_bad_flag(o, "-o: outstanding reads apply to READ and atomics "
			               "(ssq_read_bw, ssq_atomic_bw), as perftest's");
		o->out_reads = (uint32_t)pt_flag_num(o, "-o", arg, 1, PT_MAX_TX);
		break;
	case 'A':
		if (!pt_is_atomic(o))
			pt_bad_flag(o, "-A: the atomic type is ssq_atomic_bw's and "
			               "ssq_atomic_lat's, as perftest's");
		if (!strcmp(arg, "CMP_AND_SWAP"))
			o->atomic_cas = 1;
		else if (strcmp(arg, "FETCH_AND_ADD"))
			pt_bad_flag(o, "-A %s: want CMP_AND_SWAP or FETCH_AND_ADD", arg);
		break;
	case 'm':
		o->mtu = (uint32_t)pt_flag_num(o, "-m", arg, 256, 4096);
		if (o->mtu & (o->mtu - 1))
			pt_bad_flag(o, "-m %s: want 256, 512, 1024, 2048 or 4096", arg);
		break;
	case 'N':
		if (pt_is_lat(o))
			pt_bad_flag(o, "-N: bandwidth tools only (as perftest's)");
		o->no_peak = 1;
		break;
	case 'C':
	case 'H':
	case 'U':
		if (!pt_is_lat(o))
			pt_bad_flag(o, "-%c: latency tools only (as perftest's)", opt);
		if (opt == 'C')
			o->lat_cycles = 1;
		else if (opt == 'H')
			o->lat_hist = 1;
		else
			o->lat_unsorted = 1;
		break;
	case PT_OPT_REPORT_BOTH:
		/*
		 * With -b, the two directions' rows apart after their sum
		 * (pt_print_report_both, report.c); without -b, a no-op, as
		 * perftest's (report_both && duplex).
		 */
		o->report_both = 1;
		break;
	default: /* PT_OPT_OUTPUT */
		o->output = !strcmp(arg, "bandwidth")      ? PT_OUT_BW
		            : !strcmp(arg, "message_rate") ? PT_OUT_MR
		            : !strcmp(arg, "latency")      ? PT_OUT_LAT
		                                           : PT_OUT_FULL;
		if (o->output == PT_OUT_FULL)
			pt_bad_flag(o,
			            "--output=%s: want bandwidth, message_rate or "
			            "latency",
			            arg);
		if (pt_is_lat(o) != (o->output == PT_OUT_LAT))
			pt_bad_flag(o, "--output=%s: %s", arg,
			            pt_is_lat(o) ? "a latency tool reports latency"
			                         : "a bandwidth tool reports bandwidth "
			                           "or message_rate");
	}
}
