/* SPDX-License-Identifier: MIT */
/*
 * run.c - one process's part of a benchmark run: a sender (bandwidth or
 * latency loop) in any --mode, and the proxy process of --mode proxy.
 *
 * Every mode posts through the same builder, post_batch(): reserve the
 * WQEBBs of n requests with one fetch-add, build and publish each, one
 * submit. The modes differ only in who calls it and around what:
 *   lockfree        each sender, on the shared queue q0
 *   spinlock        each sender, on q0, inside one process-shared spinlock
 *                   (every post and every poll)
 *   qp-per-process  sender i, on its own queue q<i> (it is the only producer)
 *   proxy           senders put requests into their own SPSC ring; one
 *                   proxy process drains the rings and posts them on q0
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
#include "engine.h"

#define WINDOW     4096u /* messages per peak-rate sample */
#define PROXY_TAKE 16u   /* requests the proxy takes from one ring at a time */
#define STALL_S    60.0  /* no progress for this long: give up */

/* How a sender reaches the queue. */
struct port {
	enum pt_mode mode;
	struct ssq_producer *prod; /* NULL in proxy mode */
	pthread_spinlock_t *lock;  /* spinlock mode */
	struct pt_ring *ring;      /* proxy mode */
	struct pt_shared *sh;
	uint64_t completed; /* messages known complete (signaled ones cover earlier) */
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
		} else if (r[i].opcode == MLX5_OPCODE_ATOMIC_FA) {
			rc = ssq_prep_atomic(sq, (uint32_t)pos, MLX5_OPCODE_ATOMIC_FA,
			                     r[i].laddr, r[i].lkey, r[i].raddr, r[i].rkey,
			                     1, 0, fl);
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

/* Completions of @p: the newest signaled wr_id + 1 in *@done. Returns 0 or -1. */
static int reap(struct ssq_producer *p, uint64_t *done, char *why, size_t len)
{
	struct ssq_completion comp[32];
	int n = ssq_poll(p, comp, 32), k;

	for (k = 0; k < n; k++) {
		if (comp[k].status != IBV_WC_SUCCESS) {
			snprintf(why, len, "request %llu: %s (syndrome 0x%x)",
			         (unsigned long long)comp[k].wr_id,
			         ibv_wc_status_str((enum ibv_wc_status)comp[k].status),
			         comp[k].syndrome);
			return -1;
		}
		*done = comp[k].wr_id + 1;
	}
	return 0;
}

static int port_poll(struct port *pt)
{
	int rc;

	switch (pt->mode) {
	case PT_SPINLOCK:
		pthread_spin_lock(pt->lock);
		rc = reap(pt->prod, &pt->completed, pt->why, pt->why_len);
		pthread_spin_unlock(pt->lock);
		return rc;
	case PT_PROXY:
		/* A1: pairs with the proxy's release of done (R1). */
		pt->completed = __atomic_load_n(&pt->ring->done, __ATOMIC_ACQUIRE);
		return 0;
	default:
		return reap(pt->prod, &pt->completed, pt->why, pt->why_len);
	}
}

/* Hand @n requests to the queue. Returns 0, -EAGAIN (poll and retry), -errno. */
static int port_post(struct port *pt, const struct pt_req *r, unsigned n)
{
	struct pt_ring *ring = pt->ring;
	uint64_t h;
	unsigned i;
	int rc;

	switch (pt->mode) {
	case PT_SPINLOCK:
		pthread_spin_lock(pt->lock);
		rc = post_batch(pt->prod, r, n);
		pthread_spin_unlock(pt->lock);
		return rc;
	case PT_PROXY:
		h = ring->head;
		/* A2: pairs with the proxy's release of tail (R2): slots free. */
		if (h + n - __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE) > PT_RING)
			return -EAGAIN;
		for (i = 0; i < n; i++)
			ring->req[(h + i) % PT_RING] = r[i];
		/* R3: records before head; pairs with the proxy's acquire (A3). */
		__atomic_store_n(&ring->head, h + n, __ATOMIC_RELEASE);
		return 0;
	default:
		return post_batch(pt->prod, r, n);
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
		ssq__cpu_relax();
	else
		sched_yield();
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
	if (o->test == PT_READ_BW) {
		t->opcode = MLX5_OPCODE_RDMA_READ;
	} else if (o->test == PT_ATOMIC_BW) {
		t->opcode = MLX5_OPCODE_ATOMIC_FA;
		t->len = 8;
		/* ctrl, raddr, atomic, data: 4 DS of 16 bytes, one WQEBB. */
	} else {
		t->opcode = MLX5_OPCODE_RDMA_WRITE;
		if (size <= o->inline_size) {
			t->inl = 1;
			/* ctrl, raddr, then the 4-byte count + data padded to DS. */
			t->wqebbs = (uint8_t)((32 + ((4 + size + 15) & ~15u) + 63) / 64);
		}
	}
}

/* The loop of a bandwidth test. Returns 0 or -1 (why in pt->why). */
static int bw_loop(const struct pt_opts *o, struct port *pt, const struct pt_req *tmpl,
                   struct pt_result *res)
{
	uint64_t n = o->duration > 0 ? UINT64_MAX : o->iters, posted = 0, win = 0;
	uint32_t l = o->post_list, q = o->cq_mod, batches = 0;
	unsigned spins = 0;
	double end = 0, tw, last = 0;
	struct pt_req r[64];
	unsigned j, k;
	int rc;

	res->t0 = tw = pt_now();
	if (o->duration > 0)
		end = res->t0 + o->duration;
	while (posted < n) {
		k = (unsigned)(n - posted < l ? n - posted : l);
		if (end && (++batches & 63) == 0 && pt_now() >= end)
			n = posted + k; /* this batch is the last: its end is signaled */
		for (spins = 0; posted + k - pt->completed > o->tx_depth;
		     backoff(&spins)) {
			if (port_poll(pt) || stopped(pt->sh))
				return -1;
			if (pt_now() - tw > STALL_S) {
				snprintf(pt->why, pt->why_len, "completions stopped");
				return -1;
			}
		}
		for (j = 0; j < k; j++) {
			uint64_t i = posted + j;

			r[j] = *tmpl;
			r[j].wr_id = i;
			r[j].flags =
			    ((i + 1) % q == 0 || i + 1 == n) ? SSQ_WQE_SIGNALED : 0;
		}
		for (spins = 0; (rc = port_post(pt, r, k)) == -EAGAIN; backoff(&spins))
			if (port_poll(pt) || stopped(pt->sh))
				return -1;
		if (rc) {
			snprintf(pt->why, pt->why_len, "post: %s", strerror(-rc));
			return -1;
		}
		posted += k;
		win += k;
		if (win >= WINDOW) {
			double t = pt_now();

			if (win / (t - tw) > res->peak_mps)
				res->peak_mps = win / (t - tw);
			tw = t;
			win = 0;
		}
	}
	last = pt_now();
	for (spins = 0; pt->completed < posted; backoff(&spins)) {
		if (port_poll(pt) || stopped(pt->sh))
			return -1;
		if (pt_now() - last > STALL_S) {
			snprintf(pt->why, pt->why_len, "%llu of %llu completions",
			         (unsigned long long)pt->completed,
			         (unsigned long long)posted);
			return -1;
		}
	}
	res->t1 = pt_now();
	res->msgs = posted;
	return 0;
}

/* The loop of a latency test: each message signaled, waited for, timed. */
static int lat_loop(const struct pt_opts *o, struct port *pt, const struct pt_req *tmpl,
                    struct pt_result *res, double *samples)
{
	struct pt_req r = *tmpl;
	unsigned spins;
	uint64_t i;
	int rc;

	res->t0 = pt_now();
	for (i = 0; i < o->iters; i++) {
		double t0 = pt_now();

		r.wr_id = i;
		r.flags = SSQ_WQE_SIGNALED;
		for (spins = 0; (rc = port_post(pt, &r, 1)) == -EAGAIN; backoff(&spins))
			if (port_poll(pt) || stopped(pt->sh))
				return -1;
		if (rc) {
			snprintf(pt->why, pt->why_len, "post: %s", strerror(-rc));
			return -1;
		}
		for (spins = 0; pt->completed <= i; backoff(&spins)) {
			if (port_poll(pt) || stopped(pt->sh))
				return -1;
			if (pt_now() - t0 > STALL_S) {
				snprintf(pt->why, pt->why_len, "no completion for %llu",
				         (unsigned long long)i);
				return -1;
			}
		}
		samples[i] = (pt_now() - t0) * 1e9;
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
	struct ssq_client *c = NULL;
	struct ssq_queue *q = NULL;
	struct port pt = {
		.mode = o->mode, .sh = sh, .why = res->why, .why_len = sizeof(res->why)
	};
	struct ssq_buf src, dst;
	struct pt_req tmpl;
	char name[16];
	int rc;

	res->rc = 1;
	if (ssq_client_connect(e->socket, &c)) {
		snprintf(res->why, sizeof(res->why), "%s", ssq_client_strerror_last());
		goto fail;
	}
	snprintf(name, sizeof(name), "q%u", o->mode == PT_QP_PER_PROCESS ? idx : 0);
	if ((o->mode != PT_PROXY && ssq_queue_open(c, name, &q)) ||
	    ssq_buf_alloc(c, size < 8 ? 8 : size, &src) ||
	    ssq_buf_at(c, e->dst_off, e->dst_len, &dst)) {
		snprintf(res->why, sizeof(res->why), "%s", ssq_client_error(c));
		goto fail;
	}
	memset(src.addr, 0x5a, src.len);
	if (q)
		pt.prod = ssq_queue_producer(q);
	pt.lock = &sh->lock;
	pt.ring = &sh->rings[idx];
	req_template(o, size, &tmpl);
	/*
	 * Inline data is copied by whoever builds the WQE, from where it sees
	 * the source: here, or (proxy) the proxy, which maps the arena
	 * elsewhere and translates the IOVA itself.
	 */
	tmpl.laddr =
	    tmpl.inl && o->mode != PT_PROXY ? (uint64_t)(uintptr_t)src.addr : src.iova;
	tmpl.lkey = src.lkey;
	/* Loopback: the peer's data arena is this arena, dst in it. */
	tmpl.raddr = dst.iova;
	tmpl.rkey = dst.lkey;
	start_line(sh);
	if (o->test == PT_WRITE_LAT)
		rc = lat_loop(o, &pt, &tmpl, res, e->lat + (size_t)idx * o->iters);
	else
		rc = bw_loop(o, &pt, &tmpl, res);
	if (o->mode == PT_PROXY)
		__atomic_store_n(&pt.ring->fin, 1, __ATOMIC_RELEASE);
	if (rc)
		goto fail;
	res->rc = 0;
	ssq_client_close(c);
	return 0;
fail:
	__atomic_store_n(&sh->abort, 1, __ATOMIC_RELAXED);
	if (o->mode == PT_PROXY)
		__atomic_store_n(&sh->rings[idx].fin, 1, __ATOMIC_RELEASE);
	__atomic_fetch_add(&sh->ready, 1, __ATOMIC_ACQ_REL); /* don't hold the start */
	if (c)
		ssq_client_close(c);
	return 1;
}

/*
 * The proxy: drain every sender's ring in turn (up to PROXY_TAKE records a
 * visit, posted as one batch), route completions back through each ring's
 * done counter, until every sender has said fin. wr_id carries the sender
 * (bits 48..) and its message index.
 */
int pt_proxy(const struct pt_opts *o, const struct pt_env *e)
{
	struct pt_shared *sh = e->sh;
	struct pt_result *res = &sh->res[o->procs]; /* the slot after the senders */
	struct ssq_client *c = NULL;
	struct ssq_queue *q;
	struct ssq_producer *p;
	struct ssq_buf b;
	uint64_t iova_to_va; /* add to an arena IOVA: our address of it */
	struct ssq_completion comp[64];
	struct pt_req r[PROXY_TAKE];
	uint32_t s, fin = 0;
	unsigned spins = 0;
	double idle = 0;
	int rc, k, n;

	res->rc = 1;
	if (ssq_client_connect(e->socket, &c) || ssq_queue_open(c, "q0", &q) ||
	    ssq_buf_alloc(c, 64, &b)) {
		snprintf(res->why, sizeof(res->why), "%s",
		         c ? ssq_client_error(c) : ssq_client_strerror_last());
		goto fail;
	}
	p = ssq_queue_producer(q);
	iova_to_va = (uint64_t)(uintptr_t)b.addr - b.iova;
	start_line(sh);
	while (fin < o->procs && !stopped(sh)) {
		int moved = 0;

		fin = 0;
		for (s = 0; s < o->procs; s++) {
			struct pt_ring *ring = &sh->rings[s];
			uint64_t t = ring->tail, h;
			unsigned i, take;

			/* A3: pairs with the sender's release of head (R3). */
			h = __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE);
			if (h == t) {
				fin += __atomic_load_n(&ring->fin, __ATOMIC_ACQUIRE);
				continue;
			}
			take = (unsigned)(h - t < PROXY_TAKE ? h - t : PROXY_TAKE);
			for (i = 0; i < take; i++) {
				r[i] = ring->req[(t + i) % PT_RING];
				r[i].wr_id |= (uint64_t)s << 48;
				if (r[i].inl)
					r[i].laddr += iova_to_va;
			}
			while ((rc = post_batch(p, r, take)) == -EAGAIN) {
				n = ssq_poll(p, comp, 64);
				for (k = 0; k < n; k++)
					if (comp[k].status != IBV_WC_SUCCESS)
						goto bad;
					else
						__atomic_store_n(
						    &sh->rings[comp[k].wr_id >> 48].done,
						    (comp[k].wr_id & 0xffffffffffffull) +
						        1,
						    __ATOMIC_RELEASE);
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
		n = ssq_poll(p, comp, 64);
		for (k = 0; k < n; k++) {
			if (comp[k].status != IBV_WC_SUCCESS)
				goto bad;
			/* R1: pairs with the sender's acquire of done (A1). */
			__atomic_store_n(&sh->rings[comp[k].wr_id >> 48].done,
			                 (comp[k].wr_id & 0xffffffffffffull) + 1,
			                 __ATOMIC_RELEASE);
		}
		if (moved || n) {
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
	         (unsigned long long)(comp[k].wr_id & 0xffffffffffffull),
	         (unsigned long long)(comp[k].wr_id >> 48),
	         ibv_wc_status_str((enum ibv_wc_status)comp[k].status));
fail:
	__atomic_store_n(&sh->abort, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&sh->ready, 1, __ATOMIC_ACQ_REL);
	if (c)
		ssq_client_close(c);
	return 1;
}
