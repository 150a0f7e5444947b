/* SPDX-License-Identifier: MIT */
/*
 * size_run.c - one size of a run: fork the senders (run.c) and the proxy,
 * start them together, collect their numbers into a table row, check the
 * data (checks.c); --run_infinitely prints a row every -D seconds until a
 * signal. The client's run (engine.c) and, with -b, the two-host server's
 * own direction (twohost_server.c) run a size through it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <ssq/ssq.h>
#include <ssq/client.h>
#include "size_run.h"
#include "checks.h"
#include "report.h"
#include "run.h"
#include "proxy.h"

volatile sig_atomic_t pt_interrupted;

/* waitpid, again after a signal (--run_infinitely catches them). */
static pid_t wait_for(pid_t pid, int *st)
{
	pid_t r;

	while ((r = waitpid(pid, st, 0)) < 0 && errno == EINTR)
		;
	return r;
}

/* Has one of @n @kids ended (without reaping it)? */
static int any_ended(const pid_t *kids, uint32_t n)
{
	siginfo_t si;
	uint32_t i;

	for (i = 0; i < n; i++) {
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)kids[i], &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
		    si.si_pid == kids[i])
			return 1;
	}
	return 0;
}

/*
 * --run_infinitely: every -D seconds a row from the senders' live counts
 * (that interval's messages over its time; no peak, as perftest), until a
 * signal or a process ends. Rewrites --json and --out_json with each row,
 * as perftest rewrites its file. 0, or 1 (a file could not be written).
 */
static int report_forever(const struct pt_opts *o, struct pt_env *e,
                          const struct pt_info *in, uint32_t size, const pid_t *kids,
                          uint32_t nproc)
{
	double t_prev = pt_now(), next = t_prev + o->duration, now, secs;
	uint64_t prev = 0, sum;
	struct pt_row r;
	uint32_t i;

	while (!pt_interrupted && !__atomic_load_n(&e->sh->abort, __ATOMIC_RELAXED) &&
	       !any_ended(kids, nproc)) {
		now = pt_now();
		if (now < next) {
			usleep(next - now > 0.02 ? 20000
			                         : (useconds_t)((next - now) * 1e6));
			continue;
		}
		for (sum = 0, i = 0; i < o->procs; i++)
			sum += __atomic_load_n(&e->sh->res[i].live, __ATOMIC_RELAXED);
		secs = now - t_prev;
		memset(&r, 0, sizeof(r));
		r.size = size;
		r.iters = sum - prev;
		r.secs = secs;
		r.mpps = (double)r.iters / secs / 1e6;
		r.avg_bps = (double)r.iters * size / secs;
		pt_print_row(o, &r);
		if ((o->json && pt_write_json(o, in, &r, 1)) ||
		    (o->out_json && pt_write_out_json(o, in, &r, 1)))
			return 1;
		prev = sum;
		t_prev = now;
		next += o->duration;
	}
	return 0;
}

/*
 * A latency row from @n samples (ns): -U lists them as taken, -H sorted,
 * perftest's "#, usec" lists, then the table's header again; -C reports in
 * time-stamp counter cycles instead of usec.
 */
static void lat_report(const struct pt_opts *o, double *ns, uint64_t n, struct pt_row *r)
{
	double scale = o->lat_cycles ? pt_cycles_per_usec() : 1;

	if (o->lat_unsorted)
		pt_print_samples(o, ns, n, scale);
	pt_lat_stats(ns, n, r);
	if (o->lat_hist)
		pt_print_samples(o, ns, n, scale);
	if (o->lat_unsorted || o->lat_hist)
		pt_print_header(o);
	r->tmin *= scale;
	r->tmax *= scale;
	r->ttyp *= scale;
	r->tavg *= scale;
	r->tstd *= scale;
	r->p99 *= scale;
	r->p999 *= scale;
}

int pt_run_size(const struct pt_opts *o, struct pt_env *e, const struct pt_info *in,
                uint32_t size, struct pt_row *r)
{
	uint32_t nproc = o->procs + (o->mode == PT_PROXY), i;
	uint64_t k;
	pid_t kids[PT_MAX_PROCS + 1], parent = getpid();
	double t0 = 1e300, t1 = 0, peak = 0, start, cpu = 0;
	uint64_t total = 0;
	int st, fail = 0;
	size_t lat_bytes =
	    pt_is_lat(o) ? (size_t)o->procs * o->iters * sizeof(double) : 0;
	uint64_t base[PT_MAX_LANES];

	memset(e->peer_msgs, 0, sizeof(e->peer_msgs));
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
	if (e->check_data && !o->npeers)
		memset(e->dst, 0, e->dst_len);
	for (i = 0; e->check_data && i < o->npeers; i++)
		memset(e->peer_dst[i].addr, 0, e->peer_dst[i].len);
	fflush(stdout);
	for (i = 0; i < nproc; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			/* Not left running if the tool dies; a signal is the tool's. */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				_exit(1);
			if (o->run_inf) {
				signal(SIGINT, SIG_IGN);
				signal(SIGTERM, SIG_IGN);
			}
			_exit(i < o->procs ? pt_sender(o, e, i, size) : pt_proxy(o, e));
		}
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
	if (o->run_inf) {
		fail = report_forever(o, e, in, size, kids, nproc);
		__atomic_store_n(&e->sh->stop, 1, __ATOMIC_RELAXED);
	}
	for (i = 0; i < nproc; i++) {
		struct pt_result *res = &e->sh->res[i];

		wait_for(kids[i], &st);
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
		cpu += res->cpu;
		for (k = 0; k < o->npeers; k++)
			e->peer_msgs[k] += res->peer_msgs[k];
		t0 = res->t0 < t0 ? res->t0 : t0;
		t1 = res->t1 > t1 ? res->t1 : t1;
	}
	/* Where ssqd put the senders: said after the table (engine.c). */
	for (i = 0, k = 0; !fail && o->queue_pick && i < o->procs; i++)
		k += (uint64_t)snprintf(e->picked + k, sizeof(e->picked) - k, "%sq%u",
		                        i ? " " : "", e->sh->res[i].picked);
	if (!fail && e->check_data)
		fail = pt_check_dst(o, e, size);
	if (!fail && e->check_recv)
		fail = pt_check_recv(o, e, size, base, total);
	if (!fail) {
		memset(r, 0, sizeof(*r));
		r->size = size;
		r->iters = total;
		r->secs = t1 - t0;
		r->mpps = total / (t1 - t0) / 1e6;
		r->cpu_ns = total ? cpu / (double)total * 1e9 : 0;
		if (!lat_bytes)
			peak = pt_peak_rate(e->sh, o->procs);
		if (peak < r->mpps * 1e6)
			peak = r->mpps * 1e6; /* rounding; latency runs */
		r->peak_bps = peak * size;
		r->avg_bps = (double)total * size / (t1 - t0);
		/*
		 * Two hosts: a round trip per sample; perftest reports RTT/2,
		 * but for READ and atomics (rtt_factor 1, print_report_lat).
		 */
		for (k = 0; lat_bytes && o->peer_host && !pt_is_cqe_lat(o) &&
		            k < (uint64_t)o->procs * o->iters;
		     k++)
			e->lat[k] /= 2;
		if (o->no_peak)
			r->peak_bps = 0; /* -N: perftest prints 0 */
		if (lat_bytes)
			lat_report(o, e->lat, (uint64_t)o->procs * o->iters, r);
	}
	munmap(e->sh, sizeof(*e->sh));
	if (lat_bytes)
		munmap(e->lat, lat_bytes);
	return fail;
}
