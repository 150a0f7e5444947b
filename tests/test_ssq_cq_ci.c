/* SPDX-License-Identifier: MIT */
/*
 * The router gives a CQE's slot back to the device (the CQ's consumer-index
 * record) before it gives the WQEBBs behind it back to the producers
 * (`completed`), CQE by CQE (issue 15, item 2). Otherwise a producer could
 * post into WQEBBs whose CQE the device still counts as unconsumed, and a
 * send CQ exactly as big as the ring - which holds every WR the ring can
 * have outstanding - overruns while a router works through a full CQ.
 *
 * Here the ring and its CQ are both RING: the device is stalled while the
 * ring fills with signaled one-WQEBB WRITEs, then runs and fills the CQ
 * exactly; then one thread routes while another posts into every WQEBB
 * freed (draining its own completions), the device thread running, and an
 * observer checks the invariant itself all along: `completed` never passes
 * a WQE whose CQE the consumer-index record does not count yet (the old
 * order - the record written once per pass - broke it in every run on a
 * 2-core host). The CQ must never overrun, and every completion must come
 * back.
 */
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include "dv/ctl.h"
#include "helpers.h"
#include "emu/testbed_pvt.h"

#define RING 1024u
#define WRS  (16 * RING)

struct poster {
	struct ssq_producer prod;
	struct emu_tb *tb;
	struct emu_cq *cq;
	uint64_t done;
	uint64_t during; /* posted while the first routing pass ran */
	int rc;
};

static int stop_router;
static int first_pass_done;
static int first_pass_n;
static int poster_spinning; /* the router starts once the poster is ready */
static int observer_on;     /* ... and the observer */

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *post_thread(void *arg)
{
	struct poster *w = arg;
	struct emu_tb_side *a = &w->tb->s[0], *b = &w->tb->s[1];
	struct ssq_completion c[64];
	uint64_t posted = RING; /* the first ring, posted while stalled */
	double t0 = now_s();
	int n, k;

	__atomic_store_n(&poster_spinning, 1, __ATOMIC_RELEASE);
	while (w->done < WRS && !emu_cq_error(w->cq) && now_s() - t0 < 30) {
		if (posted < WRS &&
		    ssq_post_write(&w->prod, a->iova, a->key, 8, b->iova, b->key, posted,
		                   SSQ_WQE_SIGNALED) == 0) {
			posted++;
			if (!__atomic_load_n(&first_pass_done, __ATOMIC_ACQUIRE))
				w->during++;
			continue;
		}
		n = ssq_poll(&w->prod, c, 64);
		for (k = 0; k < n; k++)
			if (c[k].status != IBV_WC_SUCCESS)
				w->rc = -1;
		if (n > 0)
			w->done += (uint64_t)n;
	}
	return NULL;
}

/*
 * Watch the invariant itself: a `completed` that has passed WQE w means the
 * consumer-index record already counts w's CQE. Every WR is one WQEBB and
 * signaled, so CQE i completes position i: CI read after `completed` must
 * be at least it.
 */
struct observer {
	struct ssq_ctl *ctl;
	const __be32 *dbrec;
	uint64_t samples, moved, bad;
	uint64_t bad_completed;
	uint32_t bad_ci;
};

static void *observe_thread(void *arg)
{
	struct observer *o = arg;
	uint64_t last = 0;

	__atomic_store_n(&observer_on, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&stop_router, __ATOMIC_ACQUIRE)) {
		uint64_t c = ssq_ctl_completed(o->ctl);
		uint32_t ci =
		    be32toh(__atomic_load_n(&o->dbrec[SSQ_CQ_SET_CI], __ATOMIC_ACQUIRE)) &
		    0xffffff;

		o->samples++;
		if (c != last)
			o->moved++;
		last = c;
		if ((uint32_t)(c & 0xffffff) != ci &&
		    (int32_t)((ci - (uint32_t)c) << 8) < 0) {
			if (!o->bad++) {
				o->bad_completed = c;
				o->bad_ci = ci;
			}
		}
	}
	return NULL;
}

static void *route_thread(void *arg)
{
	struct ssq_producer *p = arg;

	while (!__atomic_load_n(&poster_spinning, __ATOMIC_ACQUIRE) ||
	       !__atomic_load_n(&observer_on, __ATOMIC_ACQUIRE))
		;
	first_pass_n = ssq_progress(p);
	__atomic_store_n(&first_pass_done, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&stop_router, __ATOMIC_ACQUIRE))
		ssq_progress(p);
	return NULL;
}

int main(void)
{
	struct emu_tb_opts o = { 0 };
	struct emu_tb tb;
	struct ssq_ctl *ctl;
	struct ssq_producer router;
	struct poster w;
	struct mlx5_cqe64 *last;
	struct observer ob;
	pthread_t pt, rt, ot;
	double t0;
	unsigned k;
	int rc, id;

	o.sq_cnt = RING;
	o.cq_cnt = RING; /* exactly the WRs the ring can hold */
	rc = emu_tb_init(&tb, &o);
	CHECK(rc == 0, "testbed: %d", rc);
	if (rc)
		return test_exit("ssq_cq_ci");
	ctl = aligned_alloc(64, (ssq_ctl_size(RING) + 63) & ~(size_t)63);
	CHECK(ssq_ctl_init(ctl, RING, 16) == 0, "ssq_ctl_init");
	memset(&w, 0, sizeof(w));
	w.tb = &tb;
	w.cq = tb.s[0].scq;
	id = ssq_ctl_claim(ctl, (uint32_t)getpid(), ~0u);
	CHECK(id >= 0 && ssq_producer_bind(&w.prod, ctl, (uint32_t)id, &tb.s[0].sq,
	                                   &tb.s[0].scq_v) == 0,
	      "poster: claim %d", id);
	id = ssq_ctl_claim(ctl, (uint32_t)getpid(), ~0u);
	CHECK(id >= 0 && ssq_producer_bind(&router, ctl, (uint32_t)id, &tb.s[0].sq,
	                                   &tb.s[0].scq_v) == 0,
	      "router: claim %d", id);
	if (test_failures)
		return test_exit("ssq_cq_ci");
	/* The first ring's worth, the device stalled: nothing completes yet. */
	emu_stall(tb.dev, 1);
	CHECK(emu_start(tb.dev) == 0, "device thread");
	for (k = 0; k < RING; k++)
		CHECK(ssq_post_write(&w.prod, tb.s[0].iova, tb.s[0].key, 8, tb.s[1].iova,
		                     tb.s[1].key, k, SSQ_WQE_SIGNALED) == 0,
		      "post %u", k);
	/* Released, the device fills the CQ to its last slot. */
	emu_stall(tb.dev, 0);
	last = (struct mlx5_cqe64 *)(tb.s[0].scq_v.buf + (size_t)(RING - 1) * 64);
	for (t0 = now_s();
	     now_s() - t0 < 10 &&
	     (__atomic_load_n(&last->op_own, __ATOMIC_ACQUIRE) >> 4) == MLX5_CQE_INVALID;)
		usleep(100);
	CHECK(!emu_cq_error(tb.s[0].scq), "the CQ overran before any routing");
	memset(&ob, 0, sizeof(ob));
	ob.ctl = ctl;
	ob.dbrec = tb.s[0].scq_v.dbrec;
	pthread_create(&ot, NULL, observe_thread, &ob);
	pthread_create(&pt, NULL, post_thread, &w);
	pthread_create(&rt, NULL, route_thread, &router);
	pthread_join(pt, NULL);
	__atomic_store_n(&stop_router, 1, __ATOMIC_RELEASE);
	pthread_join(rt, NULL);
	pthread_join(ot, NULL);
	emu_stop(tb.dev);
	printf("%llu of %u signaled WRITEs completed through a %u-CQE CQ in front of a "
	       "%u-WQEBB ring; CQ %s\n",
	       (unsigned long long)w.done, WRS, RING, RING,
	       emu_cq_error(tb.s[0].scq) ? "OVERRAN" : "sound");
	printf("first routing pass: %d CQEs; %llu WRs posted meanwhile\n", first_pass_n,
	       (unsigned long long)w.during);
	printf("observer: %llu samples, `completed` seen moving %llu times, %llu ahead "
	       "of the CQ's consumer index\n",
	       (unsigned long long)ob.samples, (unsigned long long)ob.moved,
	       (unsigned long long)ob.bad);
	CHECK(ob.bad == 0,
	      "`completed` %llu published before the consumer index (%u) covered its "
	      "CQE, %llu times",
	      (unsigned long long)ob.bad_completed, ob.bad_ci,
	      (unsigned long long)ob.bad);
	CHECK(emu_cq_error(tb.s[0].scq) == 0, "the CQ overran");
	CHECK(w.done == WRS && w.rc == 0, "%llu of %u completed, rc %d",
	      (unsigned long long)w.done, WRS, w.rc);
	ssq_producer_fini(&w.prod);
	ssq_producer_fini(&router);
	emu_tb_fini(&tb);
	free(ctl);
	return test_exit("ssq_cq_ci");
}
