/* SPDX-License-Identifier: MIT */
/*
 * run.c - one process's part of a benchmark run: a sender (bandwidth or
 * latency loop) in any --mode, and the proxy process of --mode proxy.
 *
 * Every mode posts through the same builder, post_batch(): reserve the
 * WQEBBs of n requests with one fetch-add, build and publish each, one
 * submit. The modes differ only in who calls it and around what:
 *   lockfree        each sender, on the shared queues q0..q<N-1> (-q N)
 *   spinlock        each sender, on those, inside the queue's one
 *                   process-shared spinlock (every post and every poll)
 *   qp-per-process  sender i, on its own queues q<i*N>..q<i*N+N-1> (it is
 *                   their only producer)
 *   proxy           senders put requests into their own SPSC ring; one
 *                   proxy process drains the rings and posts them on q0..
 * A sender's batches go round-robin over its N queues ("lanes"), each lane
 * with its own in-flight window and signaling.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <ssq/ssq.h>
#include <ssq/client.h>
#include "run.h"

#define PROXY_TAKE    16u      /* requests the proxy takes from one ring at a time */
#define STALL_S       60.0     /* no progress for this long: give up */
#define WAKE_SLICE_NS 10000000 /* -e: look at the run this often while asleep */

/* One of the -q queues a sender round-robins over. */
struct lane {
	struct ssq_producer *prod; /* NULL in proxy mode */
	pthread_spinlock_t *lock;  /* spinlock mode: this queue's */
	uint64_t posted;           /* this sender's messages on it */
	uint64_t completed; /* known complete (a signaled one covers earlier ones) */
	uint64_t raddr;     /* where its RDMA goes (--peers: its peer's arena) */
	uint32_t rkey;
};

/* How a sender reaches its queues. */
struct port {
	enum pt_mode mode;
	uint32_t nlanes;
	struct lane lane[PT_MAX_LANES];
	struct pt_ring *ring; /* proxy mode */
	struct pt_shared *sh;
	struct pt_samples *smp; /* bandwidth tests: completion samples */
	uint64_t *live;         /* --run_infinitely: completed, for the parent */
	uint64_t completed;     /* over every lane */
	int events;             /* -e: wait for completions in ssq_wait */
	char *why;
	size_t why_len;
};

/*
 * Reserve, build, publish and submit @n requests on @p. Returns 0,
 * -EAGAIN (no room: nothing reserved; poll and retry), -EIO or -EINVAL.
 */
static int post_batch(struct ssq_producer *p, const struct pt_req *r, unsigned n)
{
	struct ssq_sq *sq = ssq_producer_sq(p);
	unsigned i, total = 0;
	uint64_t pos;
	int rc;

	for (i = 0; i < n; i++)
		total += r[i].wqebbs;
	rc = ssq_reserve(p, total, &pos);
	if (rc)
		return rc;
	for (i = 0; i < n; i++) {
		unsigned fl = ssq_wqe_flags(p, pos, r[i].wqebbs, r[i].flags);

		if (r[i].inl) {
			struct ibv_sge sge = { .addr = r[i].laddr,
				               .length = r[i].len,
				               .lkey = r[i].lkey };
			struct ssq_wr wr = { .opcode = r[i].opcode,
				             .flags = (uint8_t)fl,
				             .inline_data = 1,
				             .num_sge = 1,
				             .sg_list = &sge,
				             .raddr = r[i].raddr,
				             .rkey = r[i].rkey };

			/* laddr is a local virtual address here: inline copies it. */
			rc = ssq_wqe_build(sq, (uint32_t)pos, &wr);
		} else if (r[i].opcode == MLX5_OPCODE_SEND) {
			rc = ssq_prep_send(sq, (uint32_t)pos, MLX5_OPCODE_SEND,
			                   r[i].laddr, r[i].lkey, r[i].len, 0, fl);
		} else if (r[i].opcode == MLX5_OPCODE_ATOMIC_FA ||
		           r[i].opcode == MLX5_OPCODE_ATOMIC_CS) {
			/* FA adds 1; CS (-A CMP_AND_SWAP) swaps 0 for 0: the word stays.
			 */
			rc = ssq_prep_atomic(sq, (uint32_t)pos, r[i].opcode, r[i].laddr,
			                     r[i].lkey, r[i].raddr, r[i].rkey,
			                     r[i].opcode == MLX5_OPCODE_ATOMIC_FA, 0, fl);
		} else if (r[i].opcode == MLX5_OPCODE_RDMA_READ) {
			rc = ssq_prep_rdma_read(sq, (uint32_t)pos, r[i].laddr, r[i].lkey,
			                        r[i].len, r[i].raddr, r[i].rkey, fl);
		} else {
			rc = ssq_prep_rdma_write(sq, (uint32_t)pos, r[i].laddr, r[i].lkey,
			                         r[i].len, r[i].raddr, r[i].rkey, fl);
		}
		if (rc != r[i].wqebbs)
			/* Sizes and inline limits are checked before the run. */
			abort();
		(void)ssq_publish(p, pos, r[i].wqebbs, r[i].wr_id, r[i].flags);
		pos += r[i].wqebbs;
	}
	ssq_submit(p);
	return 0;
}

/* Completions of @l: the newest signaled wr_id + 1 in l->completed. 0 or -1. */
static int reap(struct lane *l, char *why, size_t len)
{
	struct ssq_completion comp[32];
	int n = ssq_poll(l->prod, comp, 32), k;

	for (k = 0; k < n; k++) {
		if (comp[k].status != IBV_WC_SUCCESS) {
			snprintf(why, len, "request %llu: %s (syndrome 0x%x)",
			         (unsigned long long)comp[k].wr_id,
			         ibv_wc_status_str((enum ibv_wc_status)comp[k].status),
			         comp[k].syndrome);
			return -1;
		}
		l->completed = comp[k].wr_id + 1;
	}
	return 0;
}

/* Take a sample of the completion count if it is due (full: halve them). */
static void sample(struct pt_samples *s, uint64_t m, double t)
{
	uint32_t i;

	if (s->n == PT_SAMPLES) {
		for (i = 0; i < PT_SAMPLES / 2; i++) {
			s->t[i] = s->t[2 * i];
			s->m[i] = s->m[2 * i];
		}
		s->n = PT_SAMPLES / 2;
		s->every *= 2;
	}
	s->t[s->n] = t;
	s->m[s->n++] = m;
	s->next = m + s->every;
}

/* Collect completions on every lane of @pt. Returns 0 or -1 (why in pt->why). */
static int port_poll(struct port *pt)
{
	uint64_t total = 0;
	uint32_t i;
	int rc = 0;

	for (i = 0; i < pt->nlanes && !rc; i++) {
		struct lane *l = &pt->lane[i];

		switch (pt->mode) {
		case PT_SPINLOCK:
			pthread_spin_lock(l->lock);
			rc = reap(l, pt->why, pt->why_len);
			pthread_spin_unlock(l->lock);
			break;
		case PT_PROXY:
			/* A1: pairs with the proxy's release of done (R1). */
			l->completed =
			    __atomic_load_n(&pt->ring->done[i], __ATOMIC_ACQUIRE);
			break;
		default:
			rc = reap(l, pt->why, pt->why_len);
		}
		total += l->completed;
	}
	pt->completed = total;
	if (pt->live)
		__atomic_store_n(pt->live, total, __ATOMIC_RELAXED);
	if (pt->smp && total >= pt->smp->next)
		sample(pt->smp, total, pt_now());
	return rc ? -1 : 0;
}

/*
 * --mode combine: one single-WQEBB request through <ssq/combine.h> (a
 * READ is not combined: posted as post_batch would).
 */
static int post_combined(struct ssq_producer *p, const struct pt_req *r)
{
	switch (r->opcode) {
	case MLX5_OPCODE_SEND:
		return ssq_post_send_combined(p, MLX5_OPCODE_SEND, r->laddr, r->lkey,
		                              r->len, 0, r->wr_id, r->flags);
	case MLX5_OPCODE_ATOMIC_FA:
		return ssq_post_fetch_add_combined(p, r->laddr, r->lkey, r->raddr,
		                                   r->rkey, 1, r->wr_id, r->flags);
	case MLX5_OPCODE_RDMA_WRITE:
		return ssq_post_write_combined(p, r->laddr, r->lkey, r->len, r->raddr,
		                               r->rkey, r->wr_id, r->flags);
	default:
		/* Direct: after our last request handed over, not before it. */
		return ssq_combine_flush(p) ?: post_batch(p, r, 1);
	}
}

/* Hand @n requests to lane @li. Returns 0, -EAGAIN (poll and retry), -errno. */
static int port_post(struct port *pt, uint32_t li, const struct pt_req *r, unsigned n)
{
	struct pt_ring *ring = pt->ring;
	struct lane *l = &pt->lane[li];
	uint64_t h;
	unsigned i;
	int rc;

	switch (pt->mode) {
	case PT_SPINLOCK:
		pthread_spin_lock(l->lock);
		rc = post_batch(l->prod, r, n);
		pthread_spin_unlock(l->lock);
		return rc;
	case PT_PROXY:
		h = ring->head;
		/* A2: pairs with the proxy's release of tail (R2): slots free. */
		if (h + n - __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE) > PT_RING)
			return -EAGAIN;
		for (i = 0; i < n; i++) {
			ring->req[(h + i) % PT_RING] = r[i];
			ring->req[(h + i) % PT_RING].lane = (uint8_t)li;
		}
		/* R3: records before head; pairs with the proxy's acquire (A3). */
		__atomic_store_n(&ring->head, h + n, __ATOMIC_RELEASE);
		return 0;
	case PT_COMBINE:
		if (n == 1 && !r->inl && r->wqebbs == 1)
			return post_combined(l->prod, r);
		return ssq_combine_flush(l->prod) ?: post_batch(l->prod, r, n);
	default:
		return post_batch(l->prod, r, n);
	}
}

/*
 * A waiting process (window full, ring full, nothing to drain) spins a
 * little, then yields: with more busy processes than cores (the point of
 * -P 4 on 2 cores) a pure spinner would hold its core for a whole time slice
 * while the process it waits for cannot run. Every mode waits this way.
 */
static void backoff(unsigned *spins)
{
	if (++*spins < 64)
		ssq_cpu_relax();
	else
		sched_yield();
}

/*
 * Wait for a completion of lane @ln: with -e asleep in ssq_wait (woken by
 * whoever routes the queue's CQ, or on the emulated device by the device
 * as the CQE lands), for at most WAIT_NS so that the caller's stall and
 * abort checks still run; else backoff().
 */
#define WAIT_NS (10 * SSQ_WAIT_SLICE_NS)
static void idle_wait(struct port *pt, struct lane *ln, unsigned *spins)
{
	uint32_t i;

	/*
	 * --mode combine: what we wait for may still be handed over, its
	 * combiner gone or done with its passes (<ssq/combine.h>): post it.
	 */
	if (pt->mode == PT_COMBINE)
		for (i = 0; i < pt->nlanes; i++)
			(void)ssq_combine_flush(pt->lane[i].prod);
	if (!pt->events) {
		backoff(spins);
		return;
	}
	++*spins;
	(void)ssq_wait(ln->prod, 1, WAIT_NS);
}

/* A lane with completions still to come (the first), else NULL. */
static struct lane *owed_lane(struct port *pt)
{
	uint32_t i;

	for (i = 0; i < pt->nlanes; i++)
		if (pt->lane[i].completed < pt->lane[i].posted)
			return &pt->lane[i];
	return NULL;
}

static int stopped(const struct pt_shared *sh)
{
	return __atomic_load_n(&sh->abort, __ATOMIC_RELAXED) != 0;
}

/* Say ready, then wait for the parent's go (everyone connected first). */
static void start_line(struct pt_shared *sh)
{
	__atomic_fetch_add(&sh->ready, 1, __ATOMIC_ACQ_REL);
	while (!__atomic_load_n(&sh->go, __ATOMIC_ACQUIRE) && !stopped(sh))
		usleep(100);
}

/* The request template of this test: opcode, WQEBBs, inline. */
static void req_template(const struct pt_opts *o, uint32_t size, struct pt_req *t)
{
	memset(t, 0, sizeof(*t));
	t->len = size;
	t->wqebbs = 1;
	if (pt_is_read(o)) {
		t->opcode = MLX5_OPCODE_RDMA_READ;
	} else if (pt_is_atomic(o)) {
		t->opcode = o->atomic_cas ? MLX5_OPCODE_ATOMIC_CS : MLX5_OPCODE_ATOMIC_FA;
		t->len = 8;
		/* ctrl, raddr, atomic, data: 4 DS of 16 bytes, one WQEBB. */
	} else {
		int send = o->test == PT_SEND_BW || o->test == PT_SEND_LAT;

		t->opcode = send ? MLX5_OPCODE_SEND : MLX5_OPCODE_RDMA_WRITE;
		if (size <= o->inline_size) {
			t->inl = 1;
			/* ctrl, raddr (not SEND), the 4-byte count + data padded to DS.
			 */
			t->wqebbs =
			    (uint8_t)(((send ? 16 : 32) + ((4 + size + 15) & ~15u) + 63) /
			              64);
		}
	}
}

/* Post @k requests from @r on lane @li, polling while there is no room. */
static int post_wait(struct port *pt, uint32_t li, const struct pt_req *r, unsigned k)
{
	unsigned spins;
	int rc;

	/* Poll, and wait only if that made no room (a wait after would oversleep). */
	for (spins = 0; (rc = port_post(pt, li, r, k)) == -EAGAIN;) {
		if (port_poll(pt) || stopped(pt->sh))
			return -1;
		if ((rc = port_post(pt, li, r, k)) != -EAGAIN)
			break;
		idle_wait(pt, &pt->lane[li], &spins);
	}
	if (rc) {
		snprintf(pt->why, pt->why_len, "post: %s", strerror(-rc));
		return -1;
	}
	return 0;
}

/*
 * The loop of a bandwidth test: batches of -l requests, round-robin over
 * the lanes, at most -t in flight per lane, every -Q-th of a lane's
 * messages signaled and its last one too. Returns 0 or -1 (why in pt->why).
 */
static int bw_loop(const struct pt_opts *o, struct port *pt, const struct pt_req *tmpl,
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

	res->t0 = pt_now();
	sample(pt->smp, 0, res->t0);
	if (timed)
		end = res->t0 + o->duration;
	while (posted < n) {
		struct lane *ln = &pt->lane[li];

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
		     idle_wait(pt, ln, &spins)) {
			if (port_poll(pt) || stopped(pt->sh))
				return -1;
			/* Room now: wait no more (a wait here would oversleep). */
			if (ln->posted + k - ln->completed <= o->tx_depth)
				break;
			if (!spins)
				tw = pt_now(); /* not on the fast path: only when waiting
				                */
			else if (pt_now() - tw > STALL_S) {
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
		if (post_wait(pt, li, r, k))
			return -1;
		ln->posted += k;
		posted += k;
		li = li + 1 == nl ? 0 : li + 1;
	}
	last = pt_now();
	for (spins = 0; pt->completed < posted;) {
		if (port_poll(pt) || stopped(pt->sh))
			return -1;
		if (pt_now() - last > STALL_S) {
			snprintf(pt->why, pt->why_len, "%llu of %llu completions",
			         (unsigned long long)pt->completed,
			         (unsigned long long)posted);
			return -1;
		}
		if (pt->completed < posted) {
			struct lane *ln = owed_lane(pt);

			if (ln)
				idle_wait(pt, ln, &spins);
			else
				backoff(&spins);
		}
	}
	res->t1 = pt_now();
	res->msgs = posted;
	sample(pt->smp, posted, res->t1);
	return 0;
}

/*
 * A latency loop's message @i on lane @ln, timed already (the clock stopped
 * at @t1): wait for its completion, so that the next one starts alone.
 * Returns 0 or -1 (why in pt->why).
 */
static int reap_lane(struct port *pt, struct lane *ln, uint64_t i, double t1)
{
	unsigned spins;

	for (spins = 0; ln->completed < ln->posted; backoff(&spins)) {
		if (port_poll(pt) || stopped(pt->sh))
			return -1;
		if (pt_now() - t1 > STALL_S) {
			snprintf(pt->why, pt->why_len, "no completion for %llu",
			         (unsigned long long)i);
			return -1;
		}
	}
	return 0;
}

/*
 * A latency loop's message @i: its last source byte set to @v (1..255,
 * never the one before), posted signaled on its lane, *@t0 taken just
 * before the post. Returns the lane, or NULL (why in pt->why).
 */
static struct lane *lat_post(struct port *pt, struct pt_req *r, uint64_t i, uint8_t *src,
                             uint32_t size, uint8_t v, double *t0)
{
	uint32_t li = (uint32_t)(i % pt->nlanes);
	struct lane *ln = &pt->lane[li];

	src[size - 1] = v;    /* inline copies it when built; DMA reads it later */
	r->raddr = ln->raddr; /* each lane's own key: a grant is per queue */
	r->rkey = ln->rkey;
	r->wr_id = ln->posted;
	r->flags = SSQ_WQE_SIGNALED;
	*t0 = pt_now();
	if (post_wait(pt, li, r, 1))
		return NULL;
	ln->posted++;
	return ln;
}

/*
 * One spin of a latency loop's wait for message @i, posted at @t0; every
 * 1024th: give up if the run stopped or a completion failed, or with
 * @never ("%llu": the message) after STALL_S, else yield the core (the
 * device thread may need it). Returns 0 or -1 (why in pt->why).
 */
static int lat_spin(struct port *pt, unsigned *spins, double t0, uint64_t i,
                    const char *never)
{
	ssq_cpu_relax();
	if ((++*spins & 1023) != 0)
		return 0;
	if (stopped(pt->sh) || port_poll(pt))
		return -1;
	if (pt_now() - t0 > STALL_S) {
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
static int lat_loop(const struct pt_opts *o, struct port *pt, const struct pt_req *tmpl,
                    struct pt_result *res, double *samples, uint8_t *src,
                    volatile uint8_t *dst, uint32_t size)
{
	struct pt_req r = *tmpl;
	unsigned spins;
	uint64_t i;

	res->t0 = pt_now();
	for (i = 0; i < o->iters; i++) {
		uint8_t v = (uint8_t)(i % 255 + 1);
		struct lane *ln;
		double t0, t1;

		ln = lat_post(pt, &r, i, src, size, v, &t0);
		if (!ln)
			return -1;
		/* A4: the device's write of the byte; nothing after it is read. */
		for (spins = 0; __atomic_load_n(&dst[size - 1], __ATOMIC_RELAXED) != v;)
			if (lat_spin(pt, &spins, t0, i,
			             "WRITE %llu never reached the destination"))
				return -1;
		t1 = pt_now();
		samples[i] = (t1 - t0) * 1e9;
		if (reap_lane(pt, ln, i, t1))
			return -1;
	}
	res->t1 = pt_now();
	res->msgs = o->iters;
	return 0;
}

/*
 * The loop of ssq_read_lat and ssq_atomic_lat: one READ (atomic)
 * outstanding, timed from just before its post until its completion is
 * polled: the requester's CQE is written only once the response is back
 * in memory (the answer of a READ or an atomic is the response), so this
 * is perftest's run_iter_lat for READ and ATOMIC, a round trip reported
 * whole (perftest's print_report_lat: rtt_factor 1 for READ and ATOMIC).
 */
static int cqe_lat_loop(const struct pt_opts *o, struct port *pt,
                        const struct pt_req *tmpl, struct pt_result *res, double *samples,
                        uint8_t *src, uint32_t size)
{
	struct pt_req r = *tmpl;
	unsigned spins;
	uint64_t i;

	res->t0 = pt_now();
	for (i = 0; i < o->iters; i++) {
		struct lane *ln;
		double t0;

		ln = lat_post(pt, &r, i, src, size, (uint8_t)(i % 255 + 1), &t0);
		if (!ln)
			return -1;
		for (spins = 0;;) {
			if (port_poll(pt))
				return -1;
			if (ln->completed >= ln->posted)
				break;
			if (lat_spin(pt, &spins, t0, i, "no completion for %llu"))
				return -1;
		}
		samples[i] = (pt_now() - t0) * 1e9;
	}
	res->t1 = pt_now();
	res->msgs = o->iters;
	return 0;
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
static int recv_sleep(struct port *pt, struct ssq_queue *rq, uint64_t k, double t0,
                      uint64_t i)
{
	int rc;

	while ((rc = ssq_recv_wait(rq, k, WAKE_SLICE_NS)) == -ETIMEDOUT) {
		if (stopped(pt->sh) || port_poll(pt))
			return -1;
		if (pt_now() - t0 > STALL_S) {
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
static int send_lat_loop(const struct pt_opts *o, struct port *pt,
                         const struct pt_req *tmpl, struct pt_result *res,
                         double *samples, uint8_t *src, uint32_t idx, uint32_t size,
                         struct ssq_queue **rq, uint64_t *next)
{
	struct pt_req r = *tmpl;
	unsigned spins;
	uint64_t i;
	int mine;

	res->t0 = pt_now();
	for (i = 0; i < o->iters; i++) {
		uint32_t li = (uint32_t)(i % pt->nlanes);
		uint8_t v = (uint8_t)(i % 255 + 1);
		struct lane *ln;
		double t0, t1;

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
		t1 = pt_now();
		samples[i] = (t1 - t0) * 1e9;
		if (reap_lane(pt, ln, i, t1))
			return -1;
	}
	res->t1 = pt_now();
	res->msgs = o->iters;
	return 0;
}

int pt_sender(const struct pt_opts *o, const struct pt_env *e, uint32_t idx,
              uint32_t size)
{
	struct pt_shared *sh = e->sh;
	struct pt_result *res = &sh->res[idx];
	struct ssq_client *c = NULL, *cd = NULL;
	struct ssq_queue *q;
	struct port pt = { .mode = o->mode,
		           .nlanes = pt_lanes(o),
		           .events = o->events && !pt_is_lat(o),
		           .sh = sh,
		           .why = res->why,
		           .why_len = sizeof(res->why) };
	struct ssq_buf src, dst;
	struct ssq_queue *rq[PT_MAX_LANES] = { NULL };
	uint64_t next[PT_MAX_LANES];
	struct pt_req tmpl;
	char name[32];
	uint32_t i;
	int rc;

	res->rc = 1;
	if (ssq_client_connect(e->socket, &c)) {
		snprintf(res->why, sizeof(res->why), "%s", ssq_client_strerror_last());
		goto fail;
	}
	for (i = 0; i < pt.nlanes && o->mode != PT_PROXY; i++) {
		pt_queue_name(o, idx, i, name, sizeof(name));
		if (ssq_queue_open(c, name, &q)) {
			snprintf(res->why, sizeof(res->why), "%s", ssq_client_error(c));
			goto fail;
		}
		pt.lane[i].prod = ssq_queue_producer(q);
		pt.lane[i].lock = &sh->lock[i];
		rq[i] = q;
	}
	if (ssq_buf_alloc(c, size < 8 ? 8 : size, &src)) {
		snprintf(res->why, sizeof(res->why), "%s", ssq_client_error(c));
		goto fail;
	}
	memset(src.addr, 0x5a, src.len);
	if ((o->test == PT_SEND_BW || o->test == PT_SEND_LAT) && size >= 2)
		((uint8_t *)src.addr)[0] = (uint8_t)(idx + 1); /* whose SEND */
	pt.ring = &sh->rings[idx];
	pt.smp = &sh->smp[idx];
	pt.smp->every = 256;
	pt.live = o->run_inf ? &res->live : NULL;
	req_template(o, size, &tmpl);
	/*
	 * Inline data is copied by whoever builds the WQE, from where it sees
	 * the source: here, or (proxy) the proxy, which maps the arena
	 * elsewhere and translates the IOVA itself.
	 */
	tmpl.laddr =
	    tmpl.inl && o->mode != PT_PROXY ? (uint64_t)(uintptr_t)src.addr : src.iova;
	tmpl.lkey = src.lkey;
	/* The destination buffer at its remote descriptor, this sender's slot in it. */
	tmpl.raddr = e->dst_iova + (uint64_t)idx * e->slot;
	tmpl.rkey = e->rkey;
	if (o->test == PT_SEND_BW || o->test == PT_SEND_LAT)
		tmpl.raddr = tmpl.rkey = 0;
	for (i = 0; i < pt.nlanes; i++) {
		uint32_t peer = i % (o->npeers ? o->npeers : 1);
		const struct pt_peer_dst *pd = &e->peer_dst[peer];

		pt.lane[i].raddr = o->npeers ? pd->iova : tmpl.raddr;
		pt.lane[i].rkey = o->npeers ? pd->rkey : tmpl.rkey;
		/* A server's grant reaches its destination through one queue. */
		if (e->qgrants && !pt_is_send(o))
			pt.lane[i].rkey = e->qrkey[peer][pt_queue_index(o, idx, i)];
	}
	if (o->test == PT_WRITE_LAT || o->test == PT_SEND_LAT) {
		/*
		 * Watch the destination (send_lat: the receive log) where it is:
		 * over the wire, in the other ssqd.
		 */
		if (strcmp(e->dst_socket, e->socket) &&
		    ssq_client_connect(e->dst_socket, &cd)) {
			snprintf(res->why, sizeof(res->why), "%s",
			         ssq_client_strerror_last());
			goto fail;
		}
		if (ssq_buf_at(cd ? cd : c, e->dst_off, e->dst_len, &dst)) {
			snprintf(res->why, sizeof(res->why),
			         "destination not in the arena");
			goto fail;
		}
	}
	/*
	 * send_lat reads each queue's receive log where its receiver keeps it:
	 * loopback, the queue itself (already open unless proxy); over the
	 * wire, the listening ssqd's queue of the same name.
	 */
	for (i = 0; i < o->qps && o->test == PT_SEND_LAT; i++) {
		pt_queue_name(o, idx, i, name, sizeof(name));
		if (cd || !rq[i]) {
			rq[i] = NULL;
			if (ssq_queue_open(cd ? cd : c, name, &rq[i])) {
				snprintf(res->why, sizeof(res->why), "%s",
				         ssq_client_error(cd ? cd : c));
				goto fail;
			}
		}
		/* Nothing is sent before go: everything after this is this run's. */
		next[i] = ssq_recv_arrived(rq[i]);
	}
	start_line(sh);
	if (o->test == PT_WRITE_LAT)
		rc =
		    lat_loop(o, &pt, &tmpl, res, e->lat + (size_t)idx * o->iters,
		             src.addr, (uint8_t *)dst.addr + (size_t)idx * e->slot, size);
	else if (pt_is_cqe_lat(o))
		rc = cqe_lat_loop(o, &pt, &tmpl, res, e->lat + (size_t)idx * o->iters,
		                  src.addr, size);
	else if (o->test == PT_SEND_LAT)
		rc = send_lat_loop(o, &pt, &tmpl, res, e->lat + (size_t)idx * o->iters,
		                   src.addr, idx, size, rq, next);
	else
		rc = bw_loop(o, &pt, &tmpl, res);
	if (o->mode == PT_PROXY)
		__atomic_store_n(&pt.ring->fin, 1, __ATOMIC_RELEASE);
	if (rc)
		goto fail;
	/* Lane i goes to peer i % peers (pt_queue_name). */
	for (i = 0; o->npeers && i < pt.nlanes; i++)
		res->peer_msgs[i % o->npeers] += pt.lane[i].posted;
	res->rc = 0;
	if (cd)
		ssq_client_close(cd);
	ssq_client_close(c);
	return 0;
fail:
	__atomic_store_n(&sh->abort, 1, __ATOMIC_RELAXED);
	if (o->mode == PT_PROXY)
		__atomic_store_n(&sh->rings[idx].fin, 1, __ATOMIC_RELEASE);
	__atomic_fetch_add(&sh->ready, 1, __ATOMIC_ACQ_REL); /* don't hold the start */
	if (cd)
		ssq_client_close(cd);
	if (c)
		ssq_client_close(c);
	return 1;
}

/* wr_id of a proxied request: sender (bits 48..), lane (40..47), its index. */
#define PX_SEQ_MASK 0xffffffffffull

/* Route @n completions back to their senders' rings. Returns 0 or the bad one + 1. */
static int proxy_route(struct pt_shared *sh, const struct ssq_completion *comp, int n)
{
	int k;

	for (k = 0; k < n; k++) {
		uint64_t w = comp[k].wr_id;

		if (comp[k].status != IBV_WC_SUCCESS)
			return k + 1;
		/* R1: pairs with the sender's acquire of done (A1). */
		__atomic_store_n(&sh->rings[w >> 48].done[(w >> 40) & 0xff],
		                 (w & PX_SEQ_MASK) + 1, __ATOMIC_RELEASE);
	}
	return 0;
}

/*
 * The proxy: drain every sender's ring in turn (up to PROXY_TAKE records a
 * visit, those for one queue, posted as one batch on it), route
 * completions back through each ring's done counters, until every sender
 * has said fin.
 */
int pt_proxy(const struct pt_opts *o, const struct pt_env *e)
{
	struct pt_shared *sh = e->sh;
	struct pt_result *res = &sh->res[o->procs]; /* the slot after the senders */
	struct ssq_client *c = NULL;
	struct ssq_queue *q;
	struct ssq_producer *p[PT_MAX_LANES];
	struct ssq_buf b;
	uint64_t iova_to_va; /* add to an arena IOVA: our address of it */
	struct ssq_completion comp[64];
	struct pt_req r[PROXY_TAKE];
	uint32_t s, fin = 0, li;
	unsigned spins = 0;
	double idle = 0;
	int rc, bad = 0, n;
	char name[32];

	res->rc = 1;
	if (ssq_client_connect(e->socket, &c) || ssq_buf_alloc(c, 64, &b)) {
		snprintf(res->why, sizeof(res->why), "%s",
		         c ? ssq_client_error(c) : ssq_client_strerror_last());
		goto fail;
	}
	for (li = 0; li < pt_lanes(o); li++) {
		pt_queue_name(o, 0, li, name, sizeof(name));
		if (ssq_queue_open(c, name, &q)) {
			snprintf(res->why, sizeof(res->why), "%s", ssq_client_error(c));
			goto fail;
		}
		p[li] = ssq_queue_producer(q);
	}
	iova_to_va = (uint64_t)(uintptr_t)b.addr - b.iova;
	start_line(sh);
	while (fin < o->procs && !stopped(sh)) {
		int moved = 0, got = 0;

		fin = 0;
		for (s = 0; s < o->procs; s++) {
			struct pt_ring *ring = &sh->rings[s];
			uint64_t t = ring->tail, h;
			unsigned take;

			/* A3: pairs with the sender's release of head (R3). */
			h = __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE);
			if (h == t) {
				fin += __atomic_load_n(&ring->fin, __ATOMIC_ACQUIRE);
				continue;
			}
			li = ring->req[t % PT_RING].lane;
			for (take = 0; take < PROXY_TAKE && t + take < h &&
			               ring->req[(t + take) % PT_RING].lane == li;
			     take++) {
				r[take] = ring->req[(t + take) % PT_RING];
				r[take].wr_id |= (uint64_t)s << 48 | (uint64_t)li << 40;
				if (r[take].inl)
					r[take].laddr += iova_to_va;
			}
			while ((rc = post_batch(p[li], r, take)) == -EAGAIN) {
				n = ssq_poll(p[li], comp, 64);
				if ((bad = proxy_route(sh, comp, n)) != 0)
					goto bad;
			}
			if (rc) {
				snprintf(res->why, sizeof(res->why), "proxy post: %s",
				         strerror(-rc));
				goto fail;
			}
			/* R2: the records are copied out; the sender may reuse them. */
			__atomic_store_n(&ring->tail, t + take, __ATOMIC_RELEASE);
			moved = 1;
		}
		for (li = 0; li < pt_lanes(o); li++) {
			n = ssq_poll(p[li], comp, 64);
			if ((bad = proxy_route(sh, comp, n)) != 0)
				goto bad;
			got += n;
		}
		if (moved || got) {
			idle = 0;
			spins = 0;
			continue;
		}
		backoff(&spins);
		if (!idle)
			idle = pt_now();
		else if (pt_now() - idle > STALL_S) {
			snprintf(res->why, sizeof(res->why), "proxy: senders went quiet");
			goto fail;
		}
	}
	res->rc = 0;
	ssq_client_close(c);
	return 0;
bad:
	snprintf(res->why, sizeof(res->why), "proxy: request %llu of sender %llu: %s",
	         (unsigned long long)(comp[bad - 1].wr_id & PX_SEQ_MASK),
	         (unsigned long long)(comp[bad - 1].wr_id >> 48),
	         ibv_wc_status_str((enum ibv_wc_status)comp[bad - 1].status));
fail:
	__atomic_store_n(&sh->abort, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&sh->ready, 1, __ATOMIC_ACQ_REL);
	if (c)
		ssq_client_close(c);
	return 1;
}
