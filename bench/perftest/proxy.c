/* SPDX-License-Identifier: MIT */
/*
 * proxy.c - --mode proxy: senders put fixed-size request records into
 * their own SPSC rings in the run's shared page; this one process drains
 * them, posts them on q0.. (lanes.c) and routes completions back through
 * each ring's done counters.
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
#include "proxy.h"
#include "lanes.h"

#define PROXY_TAKE 16u /* requests the proxy takes from one ring at a time */

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
	pt_start_line(sh);
	while (fin < o->procs && !pt_stopped(sh)) {
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
			while ((rc = pt_post_batch(p[li], r, take)) == -EAGAIN) {
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
		pt_backoff(&spins);
		if (!idle)
			idle = pt_now();
		else if (pt_now() - idle > PT_STALL_S) {
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
