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
 * ring fills with signaled WRITEs, then runs and fills the CQ exactly; then
 * one thread routes that full CQ while another posts into every WQEBB the
 * router frees (draining its own completions), the device thread running.
 * The CQ must never overrun, and every completion must come back.
 * (Whether a WR lands inside the first routing pass is up to the
 * scheduler: on a 2-core host it rarely does, so this checks the boundary
 * case - a CQ exactly as big as the ring - more than it catches the old
 * order; it prints how many did.)
 */
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include "helpers.h"
#include "emu/testbed_pvt.h"

#define RING 1024u
#define WRS  (3 * RING)

struct poster {
	struct ssq_producer prod;
	struct emu_tb *tb;
	struct emu_cq *cq;
	uint64_t done;
	uint64_t during; /* posted while the first routing pass ran */
	int rc;
};

static volatile int stop_router;
static int first_pass_done;
static int first_pass_n;
static int poster_spinning; /* the router starts once the poster is ready */

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

static void *route_thread(void *arg)
{
	struct ssq_producer *p = arg;

	while (!__atomic_load_n(&poster_spinning, __ATOMIC_ACQUIRE))
		;
	first_pass_n = ssq_progress(p);
	__atomic_store_n(&first_pass_done, 1, __ATOMIC_RELEASE);
	while (!stop_router)
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
	pthread_t pt, rt;
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
	pthread_create(&pt, NULL, post_thread, &w);
	pthread_create(&rt, NULL, route_thread, &router);
	pthread_join(pt, NULL);
	stop_router = 1;
	pthread_join(rt, NULL);
	emu_stop(tb.dev);
	printf("%llu of %u signaled WRITEs completed through a %u-CQE CQ in front of a "
	       "%u-WQEBB ring; CQ %s\n",
	       (unsigned long long)w.done, WRS, RING, RING,
	       emu_cq_error(tb.s[0].scq) ? "OVERRAN" : "sound");
	printf("first routing pass: %d CQEs; %llu WRs posted meanwhile\n", first_pass_n,
	       (unsigned long long)w.during);
	CHECK(emu_cq_error(tb.s[0].scq) == 0, "the CQ overran");
	CHECK(w.done == WRS && w.rc == 0, "%llu of %u completed, rc %d",
	      (unsigned long long)w.done, WRS, w.rc);
	ssq_producer_fini(&w.prod);
	ssq_producer_fini(&router);
	emu_tb_fini(&tb);
	free(ctl);
	return test_exit("ssq_cq_ci");
}
