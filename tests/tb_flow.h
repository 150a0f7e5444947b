/* SPDX-License-Identifier: MIT */
/*
 * A shared queue's control block on the emulated device's two-sided
 * testbed (src/emu/testbed_pvt.h), for the ssq tests that drive the queue
 * without ssqd: the testbed up, the control block made, producers bound to
 * side 0's send queue, and a wait for completions.
 */
#ifndef SSQ_TEST_TB_FLOW_H
#define SSQ_TEST_TB_FLOW_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <ssq/ssq.h>
#include "dv/ctl.h"
#include "helpers.h"
#include "ssq_flow.h"
#include "emu/testbed_pvt.h"

/*
 * @tb up with @o (the test skips, 77, without a testbed) and a control
 * block for a ring of @ring WQEBBs signaled every @every, made (a failed
 * CHECK otherwise). The block, to free(), or NULL.
 */
static inline struct ssq_ctl *tb_ctl_up(struct emu_tb *tb, struct emu_tb_opts *o,
                                        uint32_t ring, uint32_t every)
{
	struct ssq_ctl *ctl;
	int rc = emu_tb_init(tb, o);

	if (rc)
		SKIP("emulated device testbed: %d", rc);
	ctl = aligned_alloc(64, (ssq_ctl_size(ring) + 63) & ~(size_t)63);
	CHECK(ctl && ssq_ctl_init(ctl, ring, every) == 0, "ssq_ctl_init");
	return ctl;
}

/*
 * Two testbeds @h linked over the emulated wire (UDP on loopback): 0, or
 * -1 after a failed CHECK; the test skips (77) where no UDP socket may be
 * had.
 */
static inline int tb_wire_up(struct emu_tb h[2])
{
	int ret = emu_tb_wire_init(h);

	if (ret == -EPERM || ret == -EACCES)
		SKIP("no UDP socket on loopback (%d)", ret);
	CHECK(ret == 0, "wire setup: %d", ret);
	return ret ? -1 : 0;
}

/* @tb up with the testbed's defaults: 0, or -1 after a failed CHECK. */
static inline int tb_local_up(struct emu_tb *tb)
{
	int ret = emu_tb_init(tb, NULL);

	CHECK(ret == 0, "testbed: %d", ret);
	return ret ? -1 : 0;
}

static inline void tb_wire_down(struct emu_tb h[2])
{
	emu_tb_fini(&h[0]);
	emu_tb_fini(&h[1]);
}

/* A pass of the device of testbed @arg, or of both of wire pair @arg. */
static inline void tb_run_one(void *arg)
{
	emu_process(((struct emu_tb *)arg)->dev, 64);
}

static inline void tb_run_two(void *arg)
{
	struct emu_tb *h = arg;

	emu_process(h[0].dev, 64);
	emu_process(h[1].dev, 64);
}

/* @p bound to @ctl as producer @id on @tb's side 0, as this process. */
static inline int tb_producer(struct ssq_producer *p, struct ssq_ctl *ctl, uint32_t id,
                              struct emu_tb *tb)
{
	return ssq_producer_init(p, ctl, id, &tb->s[0].sq, &tb->s[0].scq_v,
	                         (uint32_t)getpid());
}

/*
 * Producers @ps[0..n-1] bound as ids 0..n-1 (tb_producer), each CHECKed:
 * 0, or -1 after a failed CHECK. TB_PRODUCERS(ctl, tb, &a, &b, ...).
 */
static inline int tb_producers_n(struct ssq_ctl *ctl, struct emu_tb *tb,
                                 struct ssq_producer *const *ps, unsigned n)
{
	unsigned i;
	int rc, bad = 0;

	for (i = 0; i < n; i++) {
		rc = tb_producer(ps[i], ctl, i, tb);
		CHECK(rc == 0, "producer %u: %d", i, rc);
		bad |= rc != 0;
	}
	return bad ? -1 : 0;
}
#define TB_PRODUCERS(ctl, tb, ...)                                                       \
	tb_producers_n((ctl), (tb), (struct ssq_producer *const[]){ __VA_ARGS__ },       \
	               sizeof((struct ssq_producer *const[]){ __VA_ARGS__ }) /           \
	                   sizeof(struct ssq_producer *))

/*
 * The simplest bench: a 64 KiB testbed, a ring of @ring WQEBBs signaled
 * every @every, @p its producer 0, the device thread running. The control
 * block, for tb_one_down.
 */
static inline struct ssq_ctl *tb_one_up(struct emu_tb *tb, struct ssq_producer *p,
                                        uint32_t ring, uint32_t every)
{
	struct emu_tb_opts o = { .sq_cnt = ring, .mem_len = 64 * 1024 };
	struct ssq_ctl *ctl = tb_ctl_up(tb, &o, ring, every);

	CHECK(tb_producer(p, ctl, 0, tb) == 0, "producer");
	CHECK(emu_start(tb->dev) == 0, "device thread");
	return ctl;
}

static inline void tb_one_down(struct emu_tb *tb, struct ssq_ctl *ctl)
{
	emu_stop(tb->dev);
	emu_tb_fini(tb);
	free(ctl);
}

/* Cell @cell of @tb's side 1, the 8-byte target of tb_fa_combined: its count. */
static inline uint64_t tb_cell(const struct emu_tb *tb, unsigned cell)
{
	return __atomic_load_n((uint64_t *)(tb->s[1].mem + 8 * cell), __ATOMIC_ACQUIRE);
}

/*
 * A signaled FETCH_ADD of 1 to cell @cell (old value to the same cell of
 * side 0), posted and rung by @p itself (no combining). 0 or the error of
 * its reserve or publish.
 */
static inline int tb_fa(struct emu_tb *tb, struct ssq_producer *p, unsigned cell,
                        uint64_t wr_id)
{
	uint64_t pos;
	int rc = ssq_reserve(p, 1, &pos);

	if (rc)
		return rc;
	ssq_prep_atomic(ssq_producer_sq(p), (uint32_t)pos, MLX5_OPCODE_ATOMIC_FA,
	                tb->s[0].iova + 8 * cell, tb->s[0].key, tb->s[1].iova + 8 * cell,
	                tb->s[1].key, 1, 0, ssq_wqe_flags(p, pos, 1, SSQ_WQE_SIGNALED));
	rc = ssq_publish(p, pos, 1, wr_id, SSQ_WQE_SIGNALED);
	ssq_submit(p);
	return rc;
}

/*
 * A signaled FETCH_ADD of 1 to cell @cell (old value to the same cell of
 * side 0), handed over through whoever combines (<ssq/combine.h>), as @p.
 */
static inline int tb_fa_combined(struct emu_tb *tb, struct ssq_producer *p, unsigned cell,
                                 uint64_t wr_id)
{
	return ssq_post_fetch_add_combined(p, tb->s[0].iova + 8 * cell, tb->s[0].key,
	                                   tb->s[1].iova + 8 * cell, tb->s[1].key, 1,
	                                   wr_id, SSQ_WQE_SIGNALED);
}

/*
 * One step without a device thread: @p rings, the device runs a pass, @p
 * routes, and @c's completions are dropped (@c: the producer that watches).
 */
static inline void tb_step(struct emu_tb *tb, struct ssq_producer *p,
                           struct ssq_producer *c)
{
	struct ssq_completion comp[16];

	ssq_submit(p);
	emu_process(tb->dev, 64);
	ssq_progress(p);
	(void)ssq_poll(c, comp, 16);
}

/* Everything published completed: 64 of @c's steps. */
static inline void tb_drain(struct emu_tb *tb, struct ssq_producer *c)
{
	unsigned i;

	for (i = 0; i < 64; i++)
		tb_step(tb, c, c);
}

/* Up to @n completions of @p into @out, waiting @limit_s at most: how many came. */
static inline int tb_wait_comps(struct ssq_producer *p, struct ssq_completion *out, int n,
                                double limit_s)
{
	struct timespec t0, t;
	int got = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (got < n) {
		int k = ssq_poll(p, out + got, n - got);

		if (k < 0)
			break;
		got += k;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 >
		    limit_s)
			break;
	}
	return got;
}

/*
 * The threads' bench: a testbed for @maxt producer threads of @m messages
 * each (a 1024-WQEBB ring signaled every 64, a 1024-CQE CQ; side 0 their
 * sources, side 1 room for their messages), the control block made. The
 * block, or NULL after a failed CHECK (no testbed).
 */
static inline struct ssq_ctl *tb_threads_up(struct emu_tb *tb, uint32_t maxt, uint32_t m)
{
	struct emu_tb_opts o = { .sq_cnt = 1024,
		                 .cq_cnt = 1024,
		                 .mem_len = (size_t)maxt * (m + 64) * (CELL + 8) };
	struct ssq_ctl *ctl;
	int rc = emu_tb_init(tb, &o);

	CHECK(rc == 0, "testbed: %d", rc);
	if (rc)
		return NULL;
	ctl = aligned_alloc(64, (ssq_ctl_size(1024) + 63) & ~(size_t)63);
	CHECK(ctl && ssq_ctl_init(ctl, 1024, 64) == 0, "ssq_ctl_init");
	return ctl;
}

/*
 * Worker @w as producer thread @t of @n messages to @a: its 64 source slots
 * in side 0's memory (the t-th stretch), its producer a record that
 * ssq_ctl_claim hands out (past @skip_id), as ssqd would, then bound (a
 * failed CHECK otherwise).
 */
static inline void tb_worker_bind(struct msg_worker *w, struct ssq_ctl *ctl,
                                  struct emu_tb *tb, const struct msg_area *a, uint32_t t,
                                  uint32_t n, uint32_t skip_id)
{
	int rc;

	w->a = a;
	w->id = t;
	w->n = n;
	w->done = 0;
	w->src = tb->s[0].mem + (size_t)t * 64 * (CELL + 8);
	w->src_iova = tb->s[0].iova + (uint64_t)t * 64 * (CELL + 8);
	w->lkey = tb->s[0].key;
	rc = ssq_ctl_claim(ctl, (uint32_t)getpid(), skip_id);
	CHECK(rc >= 0 && ssq_producer_bind(&w->prod, ctl, (uint32_t)rc, &tb->s[0].sq,
	                                   &tb->s[0].scq_v) == 0,
	      "producer %u: claim %d", t, rc);
}

/*
 * Side 0's QP through RESET and connected again, its doorbell record
 * zeroed, as ssqd does before it rebuilds the queue (ssq_ctl_rebuild,
 * ssq_ctl_reset): 0 or the error of emu_modify_qp / emu_tb_connect_qp.
 */
static inline int tb_reset_qp(struct emu_tb *tb)
{
	struct ibv_qp_attr attr;
	int rc;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RESET;
	rc = emu_modify_qp(tb->s[0].qp, &attr, IBV_QP_STATE);
	if (rc)
		return rc;
	__atomic_store_n(tb->s[0].sq.dbrec, 0, __ATOMIC_RELEASE);
	return emu_tb_connect_qp(tb->s[0].qp, 1, tb->s[1].qpn, tb->o.qp_access,
	                         tb->o.rnr_retry);
}

/* A thread's body: producer @arg combines once (a hook gate may stop it). */
static inline void *tb_combines(void *arg)
{
	(void)ssq__combine((struct ssq_producer *)arg);
	return NULL;
}

/* @p's completions reaped: how many, each wr_id below @nseen counted in @seen. */
static inline unsigned tb_reap_ids(struct ssq_producer *p, unsigned *seen, unsigned nseen)
{
	struct ssq_completion comp[16];
	unsigned n = 0;
	int got, k;

	ssq_progress(p);
	while ((got = ssq_poll(p, comp, 16)) > 0)
		for (k = 0; k < got; k++, n++)
			if (comp[k].wr_id < nseen)
				seen[comp[k].wr_id]++;
	return n;
}

/*
 * The end of the rebuild adversaries (test_adv8b_rebuild_*.c): @a, its
 * requests 0-2 settled after the rebuild, posts request 3 (FETCH_ADD to
 * @cell) alone and everything drains (@c watching); then each of the 4
 * completed to @a exactly once (@seen, 8 counters, added to), @a's record
 * says nothing in flight (posted == done), and, @a retired, ssq_ctl_claim
 * reuses its record (0).
 */
static inline void tb_rebuild_ends(struct emu_tb *tb, struct ssq_ctl *ctl,
                                   struct ssq_producer *a, struct ssq_producer *c,
                                   unsigned cell, unsigned seen[8])
{
	unsigned i;
	int id;

	CHECK(tb_fa_combined(tb, a, cell, 3) == 0 && ssq_combine_flush(a) == 0,
	      "4: A's post after the rebuild");
	tb_drain(tb, c);
	(void)tb_reap_ids(a, seen, 8);
	for (i = 0; i < 4; i++)
		CHECK(seen[i] == 1, "A's request %u completed %u times (want 1)", i,
		      seen[i]);
	CHECK(a->me->posted == a->me->done,
	      "A has nothing in flight, yet its record says posted %llu, done %llu: "
	      "its room short by %lld for good",
	      (unsigned long long)a->me->posted, (unsigned long long)a->me->done,
	      (long long)(a->me->posted - a->me->done));
	CHECK(ssq_producer_fini(a) == 0, "A's fini");
	id = ssq_ctl_claim(ctl, 4242, c->id);
	CHECK(id == 0, "ssq_ctl_claim after A retired: %d (want A's record, 0)", id);
}

#endif
