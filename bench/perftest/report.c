/* SPDX-License-Identifier: MIT */
/*
 * report.c - what a run's numbers become: the BW peak over the union of the
 * senders' timelines, latency statistics, and perftest's output
 * (linux-rdma/perftest: the parameter banner and address lines,
 * src/perftest_parameters.c ctx_print_test_info and
 * src/perftest_communication.c ctx_print_pingpong_data; the tables,
 * src/perftest_parameters.h RESULT_FMT*, REPORT_FMT*; --out_json's keys,
 * write_test_info_to_file and REPORT_FMT_JSON / REPORT_FMT_LAT_JSON), with
 * its units: MiB = 2^20 bytes, Gb = 10^9 bits (print_report_bw's
 * format_factor, 0x100000 or 125000000). Also ssq's --json records.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <ssq/ssq.h>
#include "ssq_version.h"
#include "report.h"

/*
 * BW peak: the best aggregate rate over a window this fraction of the run
 * (first post of any sender to last completion of any). The tiles of the
 * run are among the windows tried, and their mean is the average, so the
 * peak is never below it.
 */
#define PEAK_WINDOWS 10

/* Messages @s had completed at @t: linear between its samples. */
static double count_at(const struct pt_samples *s, double t)
{
	uint32_t lo = 0, hi, mid;

	if (!s->n || t <= s->t[0])
		return 0;
	hi = s->n - 1;
	if (t >= s->t[hi])
		return (double)s->m[hi];
	/* t[lo] <= t < t[hi], so t[hi] > t[lo] below. */
	while (hi - lo > 1) {
		mid = (lo + hi) / 2;
		if (s->t[mid] <= t)
			lo = mid;
		else
			hi = mid;
	}
	return (double)s->m[lo] +
	       (double)(s->m[hi] - s->m[lo]) * (t - s->t[lo]) / (s->t[hi] - s->t[lo]);
}

/* Every sender's messages completed in [a, a + w), per second. */
static double rate_from(const struct pt_shared *sh, uint32_t nsend, double a, double w,
                        double t0, double t1)
{
	double sum = 0;
	uint32_t i;

	if (a < t0)
		a = t0;
	if (a > t1 - w)
		a = t1 - w;
	for (i = 0; i < nsend; i++)
		sum += count_at(&sh->smp[i], a + w) - count_at(&sh->smp[i], a);
	return sum / w;
}

/*
 * The sum of the senders' piecewise-linear counts over a sliding window
 * changes slope only where the window's start or end crosses a sample, so
 * trying those starts (and the tiles) finds its exact maximum.
 */
double pt_peak_rate(const struct pt_shared *sh, uint32_t nsend)
{
	double t0 = 1e300, t1 = 0, w, best = 0, r;
	uint32_t i, j;
	int k;

	for (i = 0; i < nsend; i++) {
		const struct pt_samples *s = &sh->smp[i];

		if (!s->n)
			continue;
		t0 = s->t[0] < t0 ? s->t[0] : t0;
		t1 = s->t[s->n - 1] > t1 ? s->t[s->n - 1] : t1;
	}
	if (t1 <= t0)
		return 0;
	w = (t1 - t0) / PEAK_WINDOWS;
	for (k = 0; k < PEAK_WINDOWS; k++)
		if ((r = rate_from(sh, nsend, t0 + k * w, w, t0, t1)) > best)
			best = r;
	for (i = 0; i < nsend; i++)
		for (j = 0; j < sh->smp[i].n; j++) {
			double t = sh->smp[i].t[j];

			if ((r = rate_from(sh, nsend, t, w, t0, t1)) > best)
				best = r;
			if ((r = rate_from(sh, nsend, t - w, w, t0, t1)) > best)
				best = r;
		}
	return best;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void pt_lat_stats(double *s, uint64_t n, struct pt_row *r)
{
	double sum = 0, sq = 0;
	uint64_t i;

	qsort(s, n, sizeof(*s), cmp_double);
	for (i = 0; i < n; i++)
		sum += s[i];
	r->tavg = sum / n / 1e3;
	for (i = 0; i < n; i++)
		sq += (s[i] / 1e3 - r->tavg) * (s[i] / 1e3 - r->tavg);
	r->tstd = sqrt(sq / n);
	r->tmin = s[0] / 1e3;
	r->tmax = s[n - 1] / 1e3;
	r->ttyp = s[n / 2] / 1e3;
	r->p99 = s[(uint64_t)((n - 1) * 0.99)] / 1e3;
	r->p999 = s[(uint64_t)((n - 1) * 0.999)] / 1e3;
}

/* perftest's RESULT_LINE. */
static const char *dashes =
    "---------------------------------------------------------------------------------"
    "------";

/* Bytes per second in the table's unit: MiB/s (2^20), or Gb/s (--report_gbits). */
static double bw_unit(const struct pt_opts *o, double bps)
{
	return o->gbits ? bps / 125e6 : bps / 1048576.0;
}

/* The CPUs this process may run on (sched_getaffinity), as "0-3,6". */
static void cpu_list(char *out, size_t len)
{
	cpu_set_t set;
	size_t at = 0;
	int c, lo;

	out[0] = 0;
	if (sched_getaffinity(0, sizeof(set), &set)) {
		snprintf(out, len, "unknown");
		return;
	}
	for (c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, &set))
			continue;
		for (lo = c; c + 1 < CPU_SETSIZE && CPU_ISSET(c + 1, &set); c++)
			;
		if (at < len)
			at += (size_t)snprintf(out + at, len - at,
			                       lo == c ? "%s%d" : "%s%d-%d",
			                       at ? "," : "", lo, c);
	}
}

void pt_info_where(struct pt_info *in)
{
	time_t now = time(NULL);
	struct tm tm;

	if (gethostname(in->host, sizeof(in->host)))
		snprintf(in->host, sizeof(in->host), "unknown");
	in->host[sizeof(in->host) - 1] = 0;
	gmtime_r(&now, &tm);
	strftime(in->time, sizeof(in->time), "%Y-%m-%dT%H:%M:%SZ", &tm);
	cpu_list(in->cpus, sizeof(in->cpus));
}

/* perftest's testsStr, with its atomic type. */
static const char *verb_name(const struct pt_opts *o)
{
	switch (o->test) {
	case PT_SEND_BW:
	case PT_SEND_LAT:
		return "Send";
	case PT_READ_BW:
	case PT_READ_LAT:
		return "RDMA_Read";
	case PT_ATOMIC_BW:
	case PT_ATOMIC_LAT:
		return "Atomic";
	default:
		return "RDMA_Write";
	}
}

/*
 * perftest's test name: "RDMA_Write BW Test", @sep between the words;
 * -b: "Bidirectional" before "BW" (perftest's ctx_print_test_info and
 * write_test_info_to_file, src/perftest_parameters.c).
 */
static void test_name(const struct pt_opts *o, char sep, char *out, size_t len)
{
	snprintf(out, len, "%s%s%c%s%s%s%cTest", verb_name(o),
	         !pt_is_atomic(o) ? ""
	         : o->atomic_cas  ? (sep == ' ' ? " CMP_AND_SWAP" : "_CMP_AND_SWAP")
	                          : (sep == ' ' ? " FETCH_AND_ADD" : "_FETCH_AND_ADD"),
	         sep,
	         !o->bidir    ? ""
	         : sep == ' ' ? "Bidirectional "
	                      : "Bidirectional_",
	         pt_is_lat(o)        ? ""
	         : o->post_list <= 1 ? ""
	         : sep == ' '        ? "Post List "
	                             : "Post_List_",
	         pt_is_lat(o) ? "Latency" : "BW", sep);
}

/* Where the RDMA lands: perftest prints RKey/VAddr for READ and WRITE (and
 * here atomics, which address memory too). */
static int one_sided(const struct pt_opts *o)
{
	return !pt_is_send(o);
}

/* perftest: the side channel (TCP) is "Ethernet"; one host has none. */
static const char *exchange(const struct pt_opts *o)
{
	return o->peer_host || o->wire || o->npeers ? "Ethernet" : "none (one host)";
}

void pt_print_banner(const struct pt_opts *o, const struct pt_info *in)
{
	char name[80];
	uint32_t i;

	test_name(o, ' ', name, sizeof(name));
	printf("%s\n", dashes);
	printf("                    %s\n", name);
	printf(" Dual-port       : OFF\t\tDevice         : %s\n", in->dev);
	printf(" Number of qps   : %u\t\tTransport type : IB\n", in->nq);
	if (o->queue_pick)
		printf(" Queue pick      : ssqd's, one of the %u per sender (\"any\")\n",
		       o->qps);
	printf(" Connection type : RC\t\tUsing SRQ      : OFF\n");
	if (!pt_is_lat(o))
		printf(" TX depth        : %u\n", o->tx_depth);
	if (o->post_list > 1)
		printf(" Post List       : %u\n", o->post_list);
	if (!pt_is_lat(o))
		printf(" CQ Moderation   : %u\n", o->cq_mod);
	if (in->mtu)
		printf(" Mtu             : %u[B]\n", in->mtu);
	else
		printf(" Mtu             : unknown (%s)\n", in->why ? in->why : "?");
	if (in->link)
		printf(" Link type       : %s\n", in->link);
	else
		printf(" Link type       : unknown (%s)\n", in->why ? in->why : "?");
	if (o->gid_index >= 0)
		printf(" GID index       : %d\n", o->gid_index);
	if ((pt_is_read(o) || pt_is_atomic(o)) && o->out_reads)
		printf(" Outstand reads  : %u (each sender's; the QP's own is ssqd's)\n",
		       o->out_reads);
	else if (pt_is_read(o) || pt_is_atomic(o))
		printf(" Outstand reads  : unknown (ssqd's QP setting)\n");
	else
		printf(" Max inline data : %u[B]\n", o->inline_size);
	printf(" rdma_cm QPs\t : OFF\n");
	printf(" Data ex. method : %s\n", exchange(o));
	printf("%s\n", dashes);
	/* perftest's BASIC_ADDR_FMT and RDMA_FMT; ssq exposes no PSN, nor a LID. */
	for (i = 0; i < in->nq; i++) {
		if (in->lid >= 0)
			printf(" local address: LID %#04x", (unsigned)in->lid);
		else
			printf(" local address: LID unknown");
		if (in->qpn[i])
			printf(" QPN %#06x PSN unknown\n", in->qpn[i]);
		else
			printf(" QPN unknown PSN unknown\n");
	}
	for (i = 0; i < in->nq; i++) {
		printf(" remote address: LID unknown");
		if (in->peer_qpn[i])
			printf(" QPN %#06x PSN unknown", in->peer_qpn[i]);
		else
			printf(" QPN unknown PSN unknown");
		if (one_sided(o))
			printf(" RKey %#08x VAddr %#016llx", in->rkey,
			       (unsigned long long)in->vaddr);
		putchar('\n');
	}
}

/*
 * --output: the number a row reports, alone on the real standard output
 * (as perftest's "%lf\n"); everything else the tool prints to standard
 * output goes to /dev/null meanwhile, so a script reads one number a size.
 */
static FILE *result_out;

int pt_output_start(const struct pt_opts *o)
{
	int fd;

	if (o->output == PT_OUT_FULL)
		return 0;
	fflush(stdout);
	fd = dup(STDOUT_FILENO);
	if (fd < 0 || !(result_out = fdopen(fd, "w")) ||
	    !freopen("/dev/null", "w", stdout)) {
		fprintf(stderr, "%s: --output: %s\n", o->tool, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * -C: the CPU's time-stamp counter per microsecond, perftest's "cycles"
 * (get_cycles: rdtsc on x86-64, cntvct_el0 on aarch64). aarch64 says its
 * counter's rate (CNTFRQ_EL0); x86-64's is timed against CLOCK_MONOTONIC
 * over 50 ms. 0: no such counter here.
 */
double pt_cycles_per_usec(void)
{
#if defined(__x86_64__)
	struct timespec a, b;
	uint64_t c0, c1;
	uint32_t lo, hi;
	double us;

	clock_gettime(CLOCK_MONOTONIC, &a);
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	c0 = (uint64_t)hi << 32 | lo;
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec) < 50e6);
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	c1 = (uint64_t)hi << 32 | lo;
	us = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 1e3;
	return (double)(c1 - c0) / us;
#elif defined(__aarch64__)
	uint64_t f;

	__asm__ volatile("mrs %0, cntfrq_el0" : "=r"(f));
	return (double)f / 1e6;
#else
	return 0;
#endif
}

void pt_print_samples(const struct pt_opts *o, const double *ns, uint64_t n, double scale)
{
	uint64_t i;

	/* perftest's -H / -U lists: "#, usec" then "i, value" (%g). */
	printf("#, %s\n", o->lat_cycles ? "cycles" : "usec");
	for (i = 0; i < n; i++)
		printf("%llu, %g\n", (unsigned long long)i + 1, ns[i] / 1e3 * scale);
}

void pt_print_header(const struct pt_opts *o)
{
	printf("%s\n", dashes);
	if (pt_is_lat(o) && o->lat_cycles)
		printf(" #bytes #iterations    t_min[cycles]    t_max[cycles]  "
		       "t_typical[cycles]    "
		       "t_avg[cycles]    t_stdev[cycles]   99%% percentile[cycles]   "
		       "99.9%% percentile[cycles] \n");
	else if (pt_is_lat(o))
		printf(" #bytes #iterations    t_min[usec]    t_max[usec]  "
		       "t_typical[usec]    "
		       "t_avg[usec]    t_stdev[usec]   99%% percentile[usec]   99.9%% "
		       "percentile[usec] \n");
	else if (o->gbits)
		printf(
		    " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   "
		    "MsgRate[Mpps]\n");
	else
		printf(" #bytes     #iterations    BW peak[MiB/sec]    BW "
		       "average[MiB/sec]   MsgRate[Mpps]\n");
}

void pt_print_row(const struct pt_opts *o, const struct pt_row *r)
{
	if (result_out) {
		if (r)
			fprintf(result_out, "%lf\n",
			        o->output == PT_OUT_LAT  ? r->tavg
			        : o->output == PT_OUT_MR ? r->mpps
			                                 : bw_unit(o, r->avg_bps));
		fflush(result_out);
		return;
	}
	if (!r) {
		printf("%s\n", dashes);
		return;
	}
	if (pt_is_lat(o))
		printf(
		    " %-7u %-10llu %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     "
		    "%-7.2f\t\t%-7.2f   \t\t%-7.2f\n",
		    r->size, (unsigned long long)r->iters, r->tmin, r->tmax, r->ttyp,
		    r->tavg, r->tstd, r->p99, r->p999);
	else
		printf(" %-10u %-14llu %-18.2f %-20.2f %-.6f\n", r->size,
		       (unsigned long long)r->iters, bw_unit(o, r->peak_bps),
		       bw_unit(o, r->avg_bps), r->mpps);
	fflush(stdout);
}

/*
 * -b: perftest's row is both directions' sum, BW peak, BW average and
 * message rate added, #bytes and #iterations this side's own
 * (print_full_bw_report with rem_bw_rep, src/perftest_parameters.c).
 */
void pt_bidir_sum(struct pt_row *sum, const struct pt_row *rem)
{
	sum->peak_bps += rem->peak_bps;
	sum->avg_bps += rem->avg_bps;
	sum->mpps += rem->mpps;
}

/*
 * -b --report-both: after the sum, perftest prints this side's and the
 * remote side's report apart, each under a title and the column header
 * (main of src/write_bw.c, read_bw.c, atomic_bw.c: "if
 * (user_param.report_both && user_param.duplex)": RESULT_LINE, " Local
 * results: ", RESULT_LINE, RESULT_FMT, print_full_bw_report(my_bw_rep,
 * NULL); then the same for " Remote results: " and rem_bw_rep). The
 * table's closing line follows, as there (pt_print_row with NULL).
 */
void pt_print_report_both(const struct pt_opts *o, const struct pt_row *local,
                          const struct pt_row *rem)
{
	printf("%s\n\n Local results: \n", dashes);
	pt_print_header(o);
	pt_print_row(o, local);
	printf("%s\n\n Remote results: \n", dashes);
	pt_print_header(o);
	pt_print_row(o, rem);
}

/* @s as a JSON string (quotes, backslashes and control bytes escaped). */
static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

/* "key": "value", */
static void json_kv(FILE *f, const char *key, const char *val, const char *end)
{
	fprintf(f, "\"%s\": ", key);
	json_str(f, val);
	fputs(end, f);
}

/* What every record says about where and when: version .. cpus, then @end. */
static void json_where(FILE *f, const struct pt_info *in, const char *sep,
                       const char *end)
{
	json_kv(f, "version", SSQ_VERSION_STRING, sep);
	json_kv(f, "revision", SSQ_GIT_REVISION, sep);
	json_kv(f, "host", in->host, sep);
	json_kv(f, "time", in->time, sep);
	json_kv(f, "cpus", in->cpus, end);
}

static const char *transport(const struct pt_opts *o)
{
	return o->peer_host ? "two-host"
	       : o->npeers  ? "cluster"
	       : o->wire    ? "wire"
	                    : "local";
}

static FILE *open_out(const struct pt_opts *o, const char *flag, const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		fprintf(stderr, "%s: %s %s: %s\n", o->tool, flag, path, strerror(errno));
	return f;
}

int pt_write_json(const struct pt_opts *o, const struct pt_info *in,
                  const struct pt_row *rows, unsigned n)
{
	FILE *f = open_out(o, "--json", o->json);
	unsigned i;

	if (!f)
		return 1;
	fprintf(f, "[\n");
	for (i = 0; i < n; i++) {
		const struct pt_row *r = &rows[i];

		fprintf(
		    f,
		    "  {\"tool\": \"%s\", \"mode\": \"%s\", \"procs\": %u, \"size\": %u, "
		    "\"iterations\": %llu, \"seconds\": %.9f, \"device\": ",
		    o->tool, pt_mode_names[o->mode], o->procs, r->size,
		    (unsigned long long)r->iters, r->secs);
		json_str(f, in->dev);
		fprintf(f, ", \"emu_mode\": ");
		json_str(f, in->emu_mode);
		fprintf(f,
		        ", \"transport\": \"%s\", \"qps\": %u, \"peers\": %u, "
		        "\"host_qps\": %u, \"post_list\": %u, \"cq_mod\": %u, "
		        "\"tx_depth\": %u, "
		        "\"inline_size\": %u, \"run_infinitely\": %s, \"events\": %s, "
		        "\"queue_pick\": %s, "
		        "\"bw_peak_mib_s\": %.6f, \"bw_avg_mib_s\": %.6f, "
		        "\"msg_rate_mpps\": %.6f, \"ns_per_wqe\": %.2f, "
		        "\"sender_cpu_ns_per_wqe\": %.2f",
		        transport(o), o->qps, o->npeers ? o->npeers : 1, pt_host_qps(o),
		        o->post_list, o->cq_mod, o->tx_depth, o->inline_size,
		        o->run_inf ? "true" : "false", o->events ? "true" : "false",
		        o->queue_pick ? "true" : "false", r->peak_bps / 1048576.0,
		        r->avg_bps / 1048576.0, r->mpps,
		        r->mpps > 0 ? 1e3 / r->mpps : 0.0, r->cpu_ns);
		if (pt_is_lat(o))
			fprintf(
			    f,
			    ", \"t_min_us\": %.3f, \"t_max_us\": %.3f, \"t_typical_us\": "
			    "%.3f, \"t_avg_us\": %.3f, \"t_stdev_us\": %.3f, "
			    "\"p99_us\": %.3f, \"p999_us\": %.3f",
			    r->tmin, r->tmax, r->ttyp, r->tavg, r->tstd, r->p99, r->p999);
		fprintf(f, ", ");
		json_where(f, in, ", ", i + 1 < n ? "},\n" : "}\n");
	}
	fprintf(f, "]\n");
	return fclose(f) ? 1 : 0;
}

/* perftest's "results" of one row: REPORT_FMT_JSON or REPORT_FMT_LAT_JSON. */
static void out_json_result(FILE *f, const struct pt_opts *o, const struct pt_row *r)
{
	fprintf(f, "\"MsgSize\": %u,\n\"n_iterations\": %llu,\n", r->size,
	        (unsigned long long)r->iters);
	if (pt_is_lat(o))
		fprintf(f,
		        "\"t_min\": %.2f,\n\"t_max\": %.2f,\n\"t_typical\": %.2f,\n"
		        "\"t_avg\": %.2f,\n\"t_stdev\": %.2f,\n\"percentile_99\": "
		        "%.2f,\n\"percentile_99.9\": %.2f\n",
		        r->tmin, r->tmax, r->ttyp, r->tavg, r->tstd, r->p99, r->p999);
	else
		fprintf(f,
		        "\"BW_peak\": %.2f,\n\"BW_average\": %.2f,\n\"MsgRate\": %.6f\n",
		        bw_unit(o, r->peak_bps), bw_unit(o, r->avg_bps), r->mpps);
}

int pt_write_out_json(const struct pt_opts *o, const struct pt_info *in,
                      const struct pt_row *rows, unsigned n)
{
	FILE *f = open_out(o, "--out_json_file", o->out_json);
	char name[80];
	unsigned i;

	if (!f)
		return 1;
	test_name(o, '_', name, sizeof(name));
	/* perftest's write_test_info_to_file, then ssq's keys. */
	fprintf(f, "{\n\"test_info\": {\n\"test\": \"%s\",\n\"Dual_port\": \"OFF\",\n",
	        name);
	json_kv(f, "Device", in->dev, ",\n");
	fprintf(f,
	        "\"Number_of_qps\": %u,\n\"Transport_type\": \"IB\",\n"
	        "\"Connection_type\": \"RC\",\n\"Using_SRQ\": \"OFF\",\n",
	        in->nq);
	if (!pt_is_lat(o))
		fprintf(f, "\"TX_depth\": %u,\n", o->tx_depth);
	if (o->post_list > 1)
		fprintf(f, "\"Post_List\": %u,\n", o->post_list);
	if (!pt_is_lat(o))
		fprintf(f, "\"CQ_Moderation\": %u,\n", o->cq_mod);
	if (in->mtu)
		fprintf(f, "\"Mtu\": %u,\n", in->mtu);
	else
		fprintf(f, "\"Mtu\": null,\n");
	/* perftest's link_layer_str says "Unknown" for what it cannot name. */
	json_kv(f, "Link_type", in->link ? in->link : "Unknown", ",\n");
	if (o->gid_index >= 0)
		fprintf(f, "\"GID_index\": %d,\n", o->gid_index);
	if (pt_is_read(o) || pt_is_atomic(o))
		fprintf(f, "\"Outstand_reads\": null,\n");
	else
		fprintf(f, "\"Max_inline_data\": %u,\n", o->inline_size);
	fprintf(f, "\"rdma_cm_QPs\": \"OFF\",\n");
	json_kv(f, "Data_ex_method", exchange(o), ",\n");
	fprintf(f,
	        "\"SL\": %u,\n\"BW_unit\": \"%s\",\n\"tool\": \"%s\",\n\"mode\": "
	        "\"%s\",\n\"procs\": %u,\n\"transport\": \"%s\",\n",
	        o->sl, o->gbits ? "Gb/sec" : "MiB/sec", o->tool, pt_mode_names[o->mode],
	        o->procs, transport(o));
	json_kv(f, "emu_mode", in->emu_mode, ",\n");
	fprintf(f, "\"run_infinitely\": %s,\n", o->run_inf ? "true" : "false");
	json_where(f, in, ",\n", "\n},\n");
	/* One size: perftest's object; -a: a list of them (perftest keeps the last). */
	fprintf(f, "\"results\": %s", n == 1 ? "{\n" : "[\n");
	for (i = 0; i < n; i++) {
		if (n > 1)
			fprintf(f, "{\n");
		out_json_result(f, o, &rows[i]);
		if (n > 1)
			fprintf(f, "}%s\n", i + 1 < n ? "," : "");
	}
	fprintf(f, "%s\n}\n", n == 1 ? "}" : "]");
	return fclose(f) ? 1 : 0;
}
