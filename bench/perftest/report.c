/* SPDX-License-Identifier: MIT */
/*
 * report.c - what a run's numbers become: the BW peak over the union of the
 * senders' timelines, latency statistics, the perftest tables, --json.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <ssq/ssq.h>
#include "engine.h"

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

int pt_check_recv(const struct pt_opts *o, const struct pt_env *e, uint32_t size,
                  const uint64_t *base, uint64_t sent)
{
	uint64_t got = 0, k, lo, a;
	struct ssq_recv_msg m = { 0 };
	double t0 = pt_now();
	uint32_t i, j;

	/* The pool's poller logs a message after the sender's CQE: wait for it. */
	do {
		for (got = 0, i = 0; i < e->nrq; i++)
			got += ssq_recv_arrived(e->rq[i]) - base[i];
	} while (got < sent && pt_now() - t0 < 10 && !usleep(1000));
	if (got != sent) {
		fprintf(stderr, "%s: the receive pool logged %llu of %llu SENDs\n",
		        o->tool, (unsigned long long)got, (unsigned long long)sent);
		return 1;
	}
	/* The newest depth messages of each queue are still there: check them. */
	for (i = 0; i < e->nrq; i++) {
		a = ssq_recv_arrived(e->rq[i]);
		lo = a - base[i] > ssq_recv_depth(e->rq[i]) ? a - ssq_recv_depth(e->rq[i])
		                                            : base[i];
		for (k = lo; k < a; k++) {
			const uint8_t *d;
			int bad = ssq_recv_peek(e->rq[i], k, &m) ||
			          m.status != IBV_WC_SUCCESS ||
			          m.opcode != MLX5_CQE_RESP_SEND || m.byte_len != size ||
			          !m.data;

			d = m.data;
			/* Sender s's payload: s + 1 (size >= 2), then 0x5a. */
			for (j = 0; !bad && j < size; j++)
				bad = j == 0 && size >= 2 ? d[0] < 1 || d[0] > o->procs
				                          : d[j] != 0x5a;
			if (bad || ssq_recv_check(e->rq[i], k)) {
				fprintf(
				    stderr,
				    "%s: queue q%u, received message %llu: status %u, "
				    "opcode 0x%x, %u bytes (want %u), payload byte %u "
				    "wrong or overwritten\n",
				    o->tool, i, (unsigned long long)k, m.status, m.opcode,
				    m.byte_len, size, j ? j - 1 : 0);
				return 1;
			}
		}
	}
	return 0;
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

static const char *dashes =
    "---------------------------------------------------------------------------------"
    "------";

void pt_print_header(const struct pt_opts *o)
{
	printf("%s\n", dashes);
	if (pt_is_lat(o))
		printf(" #bytes #iterations    t_min[usec]    t_max[usec]  "
		       "t_typical[usec]    "
		       "t_avg[usec]    t_stdev[usec]   99%% percentile[usec]   99.9%% "
		       "percentile[usec] \n");
	else if (o->gbits)
		printf(
		    " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   "
		    "MsgRate[Mpps]\n");
	else
		printf(
		    " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   "
		    "MsgRate[Mpps]\n");
}

void pt_print_row(const struct pt_opts *o, const struct pt_row *r)
{
	double k = o->gbits ? 8e6 / 1e9 : 1; /* MB/s to Gb/s */

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
		       (unsigned long long)r->iters, r->peak_mbs * k, r->avg_mbs * k,
		       r->mpps);
	fflush(stdout);
}

int pt_write_json(const struct pt_opts *o, const char *dev, const char *emu_mode,
                  const struct pt_row *rows, unsigned n)
{
	FILE *f = fopen(o->json, "w");
	unsigned i;

	if (!f) {
		fprintf(stderr, "%s: --json %s: %s\n", o->tool, o->json, strerror(errno));
		return 1;
	}
	fprintf(f, "[\n");
	for (i = 0; i < n; i++) {
		const struct pt_row *r = &rows[i];

		fprintf(
		    f,
		    "  {\"tool\": \"%s\", \"mode\": \"%s\", \"procs\": %u, \"size\": %u, "
		    "\"iterations\": %llu, \"device\": \"%s\", \"emu_mode\": \"%s\", "
		    "\"transport\": \"%s\", \"qps\": %u, "
		    "\"post_list\": %u, \"cq_mod\": %u, \"tx_depth\": %u, "
		    "\"inline_size\": %u, "
		    "\"bw_peak_mb_s\": %.2f, \"bw_avg_mb_s\": %.2f, "
		    "\"msg_rate_mpps\": %.6f, \"ns_per_wqe\": %.2f",
		    o->tool, pt_mode_names[o->mode], o->procs, r->size,
		    (unsigned long long)r->iters, dev, emu_mode,
		    o->peer_host ? "two-host"
		    : o->wire    ? "wire"
		                 : "local",
		    o->qps, o->post_list, o->cq_mod, o->tx_depth, o->inline_size,
		    r->peak_mbs, r->avg_mbs, r->mpps, r->mpps > 0 ? 1e3 / r->mpps : 0.0);
		if (pt_is_lat(o))
			fprintf(
			    f,
			    ", \"t_min_us\": %.3f, \"t_max_us\": %.3f, \"t_typical_us\": "
			    "%.3f, \"t_avg_us\": %.3f, \"t_stdev_us\": %.3f, "
			    "\"p99_us\": %.3f, \"p999_us\": %.3f",
			    r->tmin, r->tmax, r->ttyp, r->tavg, r->tstd, r->p99, r->p999);
		fprintf(f, "}%s\n", i + 1 < n ? "," : "");
	}
	fprintf(f, "]\n");
	return fclose(f) ? 1 : 0;
}
