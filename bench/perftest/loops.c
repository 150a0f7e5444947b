/* SPDX-License-Identifier: MIT */
/* loops.c - a sender's bandwidth and latency loops (loops.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <ssq/ssq.h>
#include <ssq/client.h>
#include "loops.h"

#define WAKE_SLICE_NS 10000000 /* -e: look at the run this often while asleep */

/*
 * The loop of a bandwidth test: batches of -l requests, round-robin over
 * the lanes, at most -t in flight per lane, every -Q-th of a lane's
 * messages signaled and its last one too. Returns 0 or -1 (why in pt->why).
 */
int pt_bw_loop(const struct pt_opts *o, struct pt_port *pt, const struct pt_req *tmpl,
               struct pt_result *res)
{
	uint64_t n = o->duration > 0 ? UINT64_MAX : o->iters, posted = 0;
	uint32_t l = o->post_list, q = o->cq_mod, batches = 0, li = 0, nl = pt->nlanes;
	unsigned spins = 0;
	/* -D: until a time; --run_infinitely: until the parent says stop. */
	int timed = o->duration > 0;
	double end = 0, tw = 0, last = 0;
	struct pt_req r[64];
	unsigned j, k;
	int last_on_lane;

	double c0 = pt_cpu_now();

	res->t0 = pt_now();
	pt_sample(pt->smp, 0, res->t0);
	if (timed)
		end = res->t0 + o->duration;
	while (posted < n) {
		struct pt_lane *ln = &pt->lane[li];

		k = (unsigned)(n - posted < l ? n - posted : l);
		if (timed && (++batches & 63) == 0 &&
		    (o->run_inf ? __atomic_load_n(&pt->sh->stop, __ATOMIC_RELAXED) != 0
		                : pt_now() >= end)) {
			/* This batch and one on each other lane are the last. */
			n = posted + k + (uint64_t)(nl - 1) * l;
			timed = 0;
		}
		/* No batch after this one comes back to this lane: signal its end. */
		last_on_lane = n - posted - k <= (uint64_t)(nl - 1) * l;
		for (spins = 0; ln->posted + k - ln->completed > o->tx_depth;
		     pt_idle_wait(pt, ln, &spins)) {
			if (pt_port_poll(pt) || pt_stopped(pt->sh))
				return -1;
			/* Room now: wait no more (a wait here would oversleep). */
			if (ln->posted + k - ln->completed <= o->tx_depth)
				break;
			if (!spins)
				tw = pt_now(); /* not on the fast path: only when waiting
				                */
			else if (pt_now() - tw > PT_STALL_S) {
				snprintf(pt->why, pt->why_len, "completions stopped");
				return -1;
			}
		}
		for (j = 0; j < k; j++) {
			uint64_t i = ln->posted + j;

			r[j] = *tmpl;
			r[j].raddr = ln->raddr;
			r[j].rkey = ln->rkey;
			r[j].wr_id = i;
			r[j].flags = ((i + 1) % q == 0 || (last_on_lane && j + 1 == k))
			                 ? SSQ_WQE_SIGNALED
			                 : 0;
		}
		if (pt_post_wait(pt, li, r, k))
			return -1;
		ln->posted += k;
		posted += k;
		li = li + 1 == nl ? 0 : li + 1;
	}
	last = pt_now();
	for (spins = 0; pt->completed < posted;) {
		if (pt_port_poll(pt) || pt_stopped(pt->sh))
			return -1;
		if (pt_now() - last > PT_STALL_S) {
			snprintf(pt->why, pt->why_len, "%llu of %llu completions",
			         (unsigned long long)pt->completed,
			         (unsigned long long)posted);
			return -1;
		}
		if (pt->completed < posted) {
			struct pt_lane *ln = pt_owed_lane(pt);

			if (ln)
				pt_idle_wait(pt, ln, &spins);
			else
				pt_backoff(&spins);
		}
	}
	res->t1 = pt_now();
	res->cpu = pt_cpu_now() - c0;
	res->msgs = posted;
	pt_sample(pt->smp, posted, res->t1);
	return 0;
}

/*
 * A latency loop's message @i on lane @ln, timed already (the clock stopped
 * at @t1): wait for its completion, so that the next one starts alone.
 * Returns 0 or -1 (why in pt->why).
 */
static int reap_lane(struct pt_port *pt, struct pt_lane *ln, uint64_t i, double t1)
{
	unsigned spins;

	for (spins = 0; ln->completed < ln->posted; pt_backoff(&spins)) {
		if (pt_port_poll(pt) || pt_stopped(pt->sh))
			return -1;
		if (pt_now() - t1 > PT_STALL_S) {
			snprintf(pt->why, pt->why_len, "no completion for %llu",
			         (unsigned long long)i);
			return -1;
		}
	}
	return 0;
}

/*
 * A latency loop's message @i on lane @ln, posted at @t0, seen arrived just
 * now: its time into samples[@i] (ns), then its CQE reaped before the next
 * post (reap_lane; nothing to wait for where the loop polled the CQE
 * already). Returns 0 or -1 (why in pt->why).
 */
static int lat_sample(struct pt_port *pt, struct pt_lane *ln, uint64_t i, double t0,
                      double *samples)
{
	double t1 = pt_now();

	samples[i] = (t1 - t0) * 1e9;
	return reap_lane(pt, ln, i, t1);
}

/* A latency loop's end: its clock stopped, its -n messages counted. Returns 0. */
static int lat_end(const struct pt_opts *o, struct pt_result *res)
{
	res->t1 = pt_now();
	res->msgs = o->iters;
	return 0;
}

/*
 * A latency loop's message @i: its last source byte set to @v (1..255,
 * never the one before), posted signaled on its lane, *@t0 taken just
 * before the post. Returns the lane, or NULL (why in pt->why).
 */
static struct pt_lane *lat_post(struct pt_port *pt, struct pt_req *r, uint64_t i,
                                uint8_t *src, uint32_t size, uint8_t v, double *t0)
{
	uint32_t li = (uint32_t)(i % pt->nlanes);
	struct pt_lane *ln = &pt->lane[li];

	src[size - 1] = v;    /* inline copies it when built; DMA reads it later */
	r->raddr = ln->raddr; /* each lane's own key: a grant is per queue */
	r->rkey = ln->rkey;
	r->wr_id = ln->posted;
	r->flags = SSQ_WQE_SIGNALED;
	*t0 = pt_now();
	if (pt_post_wait(pt, li, r, 1))
		return NULL;
	ln->posted++;
	return ln;
}

/*
 * One spin of a latency loop's wait for message @i, posted at @t0; every
 * 1024th: give up if the run stopped or a completion failed, or with
 * @never ("%llu": the message) after PT_STALL_S, else yield the core (the
 * device thread may need it). Returns 0 or -1 (why in pt->why).
 */
static int lat_spin(struct pt_port *pt, unsigned *spins, double t0, uint64_t i,
                    const char *never)
{
	ssq_cpu_relax();
	if ((++*spins & 1023) != 0)
		return 0;
	if (pt_stopped(pt->sh) || pt_port_poll(pt))
		return -1;
	if (pt_now() - t0 > PT_STALL_S) {
		snprintf(pt->why, pt->why_len, never, (unsigned long long)i);
		return -1;
	}
	sched_yield();
	return 0;
}

/*
 * The loop of ssq_write_lat: one message outstanding. Each WRITE carries a
 * new last byte (1..255, never the one before); the time is from posting it
 * until that byte shows in the destination, polled in memory (perftest's
 * write_lat polls its buffer the same way; loopback has no second host to
 * bounce it back, so this is one way, not RTT/2). Its CQE is reaped after
 * the clock stops, before the next post. @dst is this sender's slot.
 */
int pt_lat_loop(const struct pt_opts *o, struct pt_port *pt, const struct pt_req *tmpl,
                struct pt_result *res, double *samples, uint8_t *src,
                volatile uint8_t *dst, uint32_t size)
{
	struct pt_req r = *tmpl;
	unsigned spins;
	uint64_t i;

	res->t0 = pt_now();
	for (i = 0; i < o->iters; i++) {
		uint8_t v = (uint8_t)(i % 255 + 1);
		struct pt_lane *ln;
		double t0;

		ln = lat_post(pt, &r, i, src, size, v, &t0);
		if (!ln)
			return -1;
		/* A4: the device's write of the byte; nothing after it is read. */
		for (spins = 0; __atomic_load_n(&dst[size - 1], __ATOMIC_RELAXED) != v;)
			if (lat_spin(pt, &spins, t0, i,
			             "WRITE %llu never reached the destination"))
				return -1;
		if (lat_sample(pt, ln, i, t0, samples))
			return -1;
	}
	return lat_end(o, res);
}

/*
 * The loop of ssq_read_lat and ssq_atomic_lat: one READ (atomic)
 * outstanding, timed from just before its post until its completion is
 * polled: the requester's CQE is written only once the response is back
 * in memory (the answer of a READ or an atomic is the response), so this
 * is perftest's run_iter_lat for READ and ATOMIC, a round trip reported
 * whole (perftest's print_report_lat: rtt_factor 1 for READ and ATOMIC).
 */
int pt_cqe_lat_loop(const struct pt_opts *o, struct pt_port *pt,
                    const struct pt_req *tmpl, struct pt_result *res, double *samples,
                    uint8_t *src, uint32_t size)
{
	struct pt_req r = *tmpl;
	unsigned spins;
	uint64_t i;

	res->t0 = pt_now();
	for (i = 0; i < o->iters; i++) {
		struct pt_lane *ln;
		double t0;

		ln = lat_post(pt, &r, i, src, size, (uint8_t)(i % 255 + 1), &t0);
		if (!ln)
			return -1;
		for (spins = 0;;) {
			if (pt_port_poll(pt))
				return -1;
			if (ln->completed >= ln->posted)
				break;
			if (lat_spin(pt, &spins, t0, i, "no completion for %llu"))
				return -1;
		}
		if (lat_sample(pt, ln, i, t0, samples))
			return -1;
	}
	return lat_end(o, res);
}

/*
 * Is log entry @k of @rq this sender's SEND carrying @v? 1 yes, 0 another
 * sender's, -1 gone (-ESTALE: the window moved past it) or not arrived.
 */
static int my_send(struct ssq_queue *rq, uint64_t k, uint32_t idx, uint32_t size,
                   uint8_t v)
{
	struct ssq_recv_msg m;
	const volatile uint8_t *d;
	int mine;

	if (ssq_recv_peek(rq, k, &m))
		return -1;
	d = m.data;
	mine = m.status == IBV_WC_SUCCESS && d && m.byte_len == size &&
	       d[size - 1] == v && (size < 2 || d[0] == (uint8_t)(idx + 1));
	return ssq_recv_check(rq, k) ? -1 : mine;
}

/*
 * -e: sleep in ssq_recv_wait until message @k of @rq has arrived, looking
 * every WAKE_SLICE_NS whether the run stopped or stalled (as lat_spin
 * does every 1024 spins). Returns 0, or -1 (pt->why says why).
 */
static int recv_sleep(struct pt_port *pt, struct ssq_queue *rq, uint64_t k, double t0,
                      uint64_t i)
{
	int rc;

	while ((rc = ssq_recv_wait(rq, k, WAKE_SLICE_NS)) == -ETIMEDOUT) {
		if (pt_stopped(pt->sh) || pt_port_poll(pt))
			return -1;
		if (pt_now() - t0 > PT_STALL_S) {
			snprintf(pt->why, pt->why_len, "SEND %llu never arrived",
			         (unsigned long long)i);
			return -1;
		}
	}
	if (rc)
		snprintf(pt->why, pt->why_len, "ssq_recv_wait: %s", strerror(-rc));
	return rc ? -1 : 0;
}

/*
 * The loop of ssq_send_lat: one message outstanding, timed from posting the
 * SEND until the receive pool's log (ssq_recv_peek) shows it: spinning on
 * ssq_recv_arrived, or with -e asleep in ssq_recv_wait. Each SEND's
 * payload says whose (first byte: sender + 1) and which (last byte, as in
 * write_lat); other senders' messages on the same queue are skipped. The
 * CQE is reaped after the clock stops. @rq: each lane's queue as its
 * receiver sees it, @next: where each lane's log is read from.
 */
int pt_send_lat_loop(const struct pt_opts *o, struct pt_port *pt,
                     const struct pt_req *tmpl, struct pt_result *res, double *samples,
                     uint8_t *src, uint32_t idx, uint32_t size, struct ssq_queue **rq,
                     uint64_t *next)
{
	struct pt_req r = *tmpl;
	unsigned spins;
	uint64_t i;
	int mine;

	res->t0 = pt_now();
	for (i = 0; i < o->iters; i++) {
		uint32_t li = (uint32_t)(i % pt->nlanes);
		uint8_t v = (uint8_t)(i % 255 + 1);
		struct pt_lane *ln;
		double t0;

		ln = lat_post(pt, &r, i, src, size, v, &t0);
		if (!ln)
			return -1;
		for (spins = 0, mine = 0; !mine; next[li]++) {
			if (o->events && recv_sleep(pt, rq[li], next[li], t0, i))
				return -1;
			while (ssq_recv_arrived(rq[li]) <= next[li])
				if (lat_spin(pt, &spins, t0, i,
				             "SEND %llu never arrived"))
					return -1;
			mine = my_send(rq[li], next[li], idx, size, v);
			if (mine < 0) {
				snprintf(
				    pt->why, pt->why_len,
				    "receive log entry %llu overwritten before it was "
				    "read",
				    (unsigned long long)next[li]);
				return -1;
			}
		}
		if (lat_sample(pt, ln, i, t0, samples))
			return -1;
	}
	return lat_end(o, res);
}
