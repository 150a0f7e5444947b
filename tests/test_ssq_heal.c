/* SPDX-License-Identifier: MIT */
/*
 * ssq_ctl_heal always hands ssqd's thread back: it returns within its
 * deadline (plus slack) whatever the queue looks like, and it finishes the
 * job when the job can be finished. ssqd heals on its only thread, so a
 * heal that does not return is a daemon that answers nobody, SIGTERM
 * included.
 *
 * Part 1, states built step by step on a 16-WQEBB ring:
 *  - two deaths: a hole at position 0, and a producer that died waiting
 *    for room past the ring (it passed the room check before the others
 *    filled the ring). The second NOP needs room only the first one makes:
 *    the heal must submit its NOPs before it waits for room, or every
 *    retry times out and the queue stays stuck;
 *  - a slot holding a later pass's sequence word while `published` stays
 *    below it (a state flow control rules out, left by a reset under a
 *    late publisher): the walk must time out, not restart forever;
 *  - a published slot whose length reads 0 (a slot cleared under a late
 *    publisher): the submit's scan must step over it, not spin.
 * Part 2, against live traffic: worker threads attach (a record claimed by
 * the main thread, which plays ssqd), post batches of 1- and 2-WQEBB WQEs
 * through a 64-WQEBB ring, and detach (record marked DEAD and healed while
 * the others post) or "die" at a fault hook - after the fetch-add, after
 * recording it, before a publish. Every heal returns in time, the living
 * get their completions in order, and the queue is published to the end.
 */
#define SSQ_FAULT_HOOKS 1
#include <pthread.h>
#include <setjmp.h>
#include "dv/ctl.h"
#include "ssq_flow.h"
#include "emu/testbed_pvt.h"

#define RING      64u
#define NWORK     3u
#define HEALER_ID (SSQ_MAX_PRODUCERS - 1)
#define HEAL_MS   20u
#define RUN_S     1.5
#define HANG_S    10.0 /* a heal this long is a hang: dump the queue and fail */

/* Both parts: the main thread's record, playing ssqd, and its testbed. */
static struct ssq_producer healer;
static struct ssq_ctl *heal_bed(struct emu_tb *tb, struct emu_tb_opts *o, uint32_t ring,
                                uint32_t signal_every);

/* ------------------------------------------------------------- part 1 */

#define SRING 16u

static void on_alarm(int sig)
{
	static const char msg[] = "ssq_heal: a heal or its submit did not return: hang\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(1);
}

/* A producer record as ssqd hands it out. */
static uint32_t attach(struct ssq_ctl *ctl, struct emu_tb *tb, struct ssq_producer *p)
{
	int id = ssq_ctl_claim(ctl, (uint32_t)getpid(), HEALER_ID);

	CHECK(id >= 0 && ssq_producer_bind(p, ctl, (uint32_t)id, &tb->s[0].sq,
	                                   &tb->s[0].scq_v) == 0,
	      "attach: %d", id);
	return id < 0 ? 0 : (uint32_t)id;
}

/* Reserve, build and publish @n one-WQEBB NOPs; submit. */
static void post_nops(struct ssq_producer *p, unsigned n)
{
	uint64_t pos = 0, i;

	CHECK(ssq_reserve(p, n, &pos) == 0, "reserve %u", n);
	for (i = pos; i < pos + n; i++) {
		ssq_prep_nop(ssq_producer_sq(p), (uint32_t)i, ssq_wqe_flags(p, i, 1, 0));
		ssq_publish(p, i, 1, i, 0);
	}
	ssq_submit(p);
}

/* As ssqd does for a dead or detached client: mark @id dead (ssqd_queue_mark_dead), heal.
 */
static int mark_dead_heal(struct ssq_ctl *ctl, uint32_t id, unsigned ms)
{
	__atomic_store_n(&ctl->producers[id].state, SSQ_PROD_DEAD, __ATOMIC_SEQ_CST);
	return ssq_ctl_heal(&healer, ms);
}

static void states(void)
{
	struct emu_tb_opts o = { 0 };
	struct emu_tb tb;
	struct ssq_ctl *ctl;
	struct ssq_producer d1, live, d2, d3, d4;
	struct ssq_ctl_producer *r;
	struct ssq_ctl_slot *slot;
	uint32_t id1, id2, id3, id4;
	uint64_t pos = 0, stale;
	double t;
	int rc;

	o.cq_cnt = 64;
	ctl = heal_bed(&tb, &o, SRING, 4);
	if (!ctl)
		return;
	signal(SIGALRM, on_alarm);
	alarm(60);

	/* Two deaths: d1 holds position 0 and never publishes it. */
	id1 = attach(ctl, &tb, &d1);
	CHECK(ssq_reserve(&d1, 1, &pos) == 0 && pos == 0, "d1 at 0");
	/* d2 passed the room check, then the live producer filled the ring
	 * (1..15), then d2's fetch-add gave it 16: it records that and waits
	 * for the device to complete position 0 - and dies there. */
	id2 = attach(ctl, &tb, &d2);
	attach(ctl, &tb, &live);
	post_nops(&live, 8);
	post_nops(&live, 7);
	r = &ctl->producers[id2];
	r->resv_gen++;
	r->state = SSQ_PROD_RESERVING;
	r->pos = __atomic_fetch_add(&ctl->reserve, 1, __ATOMIC_SEQ_CST);
	r->len = 1;
	r->state = SSQ_PROD_BUILDING;
	r->resv_gen++;
	CHECK(r->pos == SRING && ctl->published == 0, "d2 at %llu, published %llu",
	      (unsigned long long)r->pos, (unsigned long long)ctl->published);
	/*
	 * ssqd sees d2's death first: its NOP at 16 needs the device to
	 * complete position 0, which d1 - alive as far as ssqd knows - holds:
	 * that heal times out. Then d1's: a NOP at 0, and the one at 16, which
	 * now needs only the first - a NOP of this very heal, which the device
	 * sees only once it is submitted.
	 */
	rc = mark_dead_heal(ctl, id2, 50);
	CHECK(rc == -ETIMEDOUT, "d2 alone: heal %d", rc);
	rc = mark_dead_heal(ctl, id1, 2000);
	CHECK(rc == 2,
	      "two deaths: heal %d, not 2 NOPs (-ETIMEDOUT: it waited for room "
	      "only its own unsubmitted NOP could make)",
	      rc);
	if (rc != 2) /* as ssqd's progress() would, once more */
		CHECK((rc = ssq_ctl_heal(&healer, 2000)) >= 0, "two deaths, retried: %d",
		      rc);
	CHECK(ctl->published == SRING + 1 && ctl->reserve == SRING + 1,
	      "two deaths: published %llu of %llu", (unsigned long long)ctl->published,
	      (unsigned long long)ctl->reserve);

	/* A later pass's sequence word at the hole `published` stops at. */
	id3 = attach(ctl, &tb, &d3);
	CHECK(ssq_reserve(&d3, 1, &pos) == 0 && pos == SRING + 1, "d3 at %llu",
	      (unsigned long long)pos);
	slot = ssq__slot(&healer, pos);
	stale = slot->seq;
	slot->seq = pos + SRING + 1;
	t = now_s();
	rc = mark_dead_heal(ctl, id3, 50);
	t = now_s() - t;
	CHECK(rc == -ETIMEDOUT && t < 5.0, "later pass at the hole: heal %d after %.3f s",
	      rc, t);
	slot->seq = stale; /* as it was: now the hole heals */
	rc = ssq_ctl_heal(&healer, 2000);
	CHECK(rc == 1 && ctl->published == pos + 1, "hole after the later pass: %d", rc);

	/* A published slot whose length reads 0, at `published`. */
	id4 = attach(ctl, &tb, &d4);
	CHECK(ssq_reserve(&d4, 1, &pos) == 0, "d4");
	ssq_prep_nop(ssq_producer_sq(&d4), (uint32_t)pos, ssq_wqe_flags(&d4, pos, 1, 0));
	slot = ssq__slot(&d4, pos);
	slot->owner = id4;
	slot->len = 0;
	__atomic_store_n(&slot->seq, pos + 1, __ATOMIC_RELEASE);
	rc = mark_dead_heal(ctl, id4, 2000);
	CHECK(rc == 0 && ctl->published == pos + 1, "length 0: heal %d, published %llu",
	      rc, (unsigned long long)ctl->published);

	alarm(0);
	emu_stop(tb.dev);
	emu_tb_fini(&tb);
	free(ctl);
	memset(&healer, 0, sizeof(healer));
}

/* ------------------------------------------------------------- part 2 */

enum { REQ_NONE, REQ_ATTACH, REQ_DETACH, REQ_DIED, REQ_EXIT };

struct worker {
	pthread_t tid;
	struct ssq_producer prod;
	struct emu_tb *tb;
	struct ssq_ctl *ctl;
	uint32_t idx;
	uint32_t id;
	int req; /* to the main thread, which answers REQ_NONE */
	unsigned seed;
	uint64_t batches, deaths, detaches;
	int fail;
};

static int stop;
static uint64_t heal_started_ms; /* 0: no heal running */

static __thread jmp_buf *die_jmp;
static __thread int die_where;

/* This build's fault hooks: "die" (leave the protocol where it is). */
void ssq_fault_hook(int where)
{
	if (die_jmp && where == die_where)
		longjmp(*die_jmp, 1);
}

static void request(struct worker *w, int req)
{
	__atomic_store_n(&w->req, req, __ATOMIC_RELEASE);
	while (__atomic_load_n(&w->req, __ATOMIC_ACQUIRE) != REQ_NONE)
		usleep(50);
}

/* One batch of 1..3 WQEs (1 or 2 WQEBBs each), the last signaled with @wr_id. */
static int post_batch(struct worker *w, uint64_t wr_id)
{
	struct ssq_producer *p = &w->prod;
	struct ssq_sq *sq = ssq_producer_sq(p);
	unsigned n = 1 + rand_r(&w->seed) % 3, len[3], total = 0, i;
	uint64_t pos;
	int rc;

	for (i = 0; i < n; i++)
		total += len[i] = 1 + rand_r(&w->seed) % 2;
	rc = ssq_reserve(p, total, &pos);
	if (rc)
		return rc;
	for (i = 0; i < n; i++) {
		unsigned user = i == n - 1 ? SSQ_WQE_SIGNALED : 0;
		uint64_t dst =
		    w->tb->s[1].iova + (uint64_t)w->idx * 4096 + (wr_id % 32) * 64;
		struct ibv_sge sge = { .addr = (uint64_t)(uintptr_t)w->tb->s[0].mem,
			               .length = 40,
			               .lkey = w->tb->s[0].key };
		struct ssq_wr wr = { .opcode = MLX5_OPCODE_RDMA_WRITE,
			             .inline_data = 1,
			             .num_sge = 1,
			             .sg_list = &sge,
			             .raddr = dst,
			             .rkey = w->tb->s[1].key };

		wr.flags = (uint8_t)ssq_wqe_flags(p, pos, len[i], user);
		if (len[i] == 1)
			rc = ssq_prep_rdma_write(sq, (uint32_t)pos, w->tb->s[0].iova,
			                         w->tb->s[0].key, 8, dst, w->tb->s[1].key,
			                         wr.flags);
		else
			rc = ssq_wqe_build(sq, (uint32_t)pos, &wr);
		if (rc != (int)len[i]) {
			fprintf(stderr, "worker %u: WQE of %u WQEBBs built as %d\n",
			        w->idx, len[i], rc);
			abort();
		}
		ssq_publish(p, pos, len[i], wr_id, user);
		pos += len[i];
	}
	ssq_submit(p);
	return 0;
}

static int reap_batches(struct worker *w, uint64_t *got)
{
	struct ssq_completion c[16];
	int n = ssq_poll(&w->prod, c, 16), k;

	for (k = 0; k < n; k++, (*got)++)
		if (c[k].status != IBV_WC_SUCCESS || c[k].wr_id != *got) {
			fprintf(stderr,
			        "worker %u: completion %llu: status %d wr_id %llu\n",
			        w->idx, (unsigned long long)*got, c[k].status,
			        (unsigned long long)c[k].wr_id);
			return -1;
		}
	return n;
}

static void *work(void *arg)
{
	struct worker *w = arg;

	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE) && !w->fail) {
		volatile uint64_t b, got = 0;
		volatile uint64_t nb = 1 + rand_r(&w->seed) % 300, die_at = ~0ull;
		uint64_t g;
		jmp_buf jb;
		double t0;

		request(w, REQ_ATTACH);
		if (ssq_producer_bind(&w->prod, w->ctl, w->id, &w->tb->s[0].sq,
		                      &w->tb->s[0].scq_v)) {
			w->fail = 1;
			break;
		}
		if (rand_r(&w->seed) % 3 == 0) {
			die_at = rand_r(&w->seed) % nb;
			die_where = 1 + rand_r(&w->seed) % 3;
		}
		for (b = 0; b < nb; b++) {
			int rc;

			if (b == die_at) {
				die_jmp = &jb;
				if (setjmp(jb)) {
					die_jmp = NULL;
					w->deaths++;
					request(w, REQ_DIED);
					goto next;
				}
			}
			t0 = now_s();
			while ((rc = post_batch(w, b)) == -EAGAIN) {
				g = got;
				if (reap_batches(w, &g) < 0)
					w->fail = 1;
				got = g;
				if (w->fail)
					break;
				if (now_s() - t0 > 10) {
					fprintf(stderr, "worker %u: no room for 10 s\n",
					        w->idx);
					dump_ctl(&w->prod);
					w->fail = 1;
					break;
				}
			}
			die_jmp = NULL;
			if (rc) {
				fprintf(stderr, "worker %u: post: %d\n", w->idx, rc);
				w->fail = 1;
				break;
			}
			g = got;
			if (reap_batches(w, &g) < 0)
				w->fail = 1;
			got = g;
		}
		t0 = now_s();
		while (!w->fail && got < nb) {
			g = got;
			if (reap_batches(w, &g) < 0)
				w->fail = 1;
			got = g;
			if (now_s() - t0 > 10) {
				fprintf(stderr, "worker %u: %llu of %llu completions\n",
				        w->idx, (unsigned long long)got,
				        (unsigned long long)nb);
				dump_ctl(&w->prod);
				w->fail = 1;
			}
		}
		w->batches += nb;
		w->detaches++;
		request(w, REQ_DETACH);
	next:;
	}
	__atomic_store_n(&w->req, REQ_EXIT, __ATOMIC_RELEASE);
	return NULL;
}

static void *watchdog(void *arg)
{
	(void)arg;
	for (;;) {
		uint64_t t = __atomic_load_n(&heal_started_ms, __ATOMIC_ACQUIRE);

		if (!t && __atomic_load_n(&stop, __ATOMIC_ACQUIRE) == 2)
			break;
		if (t && now_s() * 1e3 - (double)t > HANG_S * 1e3) {
			fprintf(stderr, "ssq_ctl_heal has not returned after %.0f s:\n",
			        HANG_S);
			dump_ctl(&healer);
			fflush(stderr);
			_exit(1);
		}
		usleep(10000);
	}
	return NULL;
}

static double max_heal_s;
static unsigned heals, timeouts;

/*
 * A testbed whose QP 0 sends on a shared queue of @ring WQEBBs forcing a
 * CQE every @signal_every, the healer's record attached, and the device
 * thread running. Returns the control block (free() it after
 * emu_tb_fini), or NULL after failing a check.
 */
static struct ssq_ctl *heal_bed(struct emu_tb *tb, struct emu_tb_opts *o, uint32_t ring,
                                uint32_t signal_every)
{
	struct ssq_ctl *ctl;
	int rc;

	o->sq_cnt = ring;
	rc = emu_tb_init(tb, o);
	CHECK(rc == 0, "testbed: %d", rc);
	if (rc)
		return NULL;
	ctl = aligned_alloc(64, (ssq_ctl_size(ring) + 63) & ~(size_t)63);
	CHECK(ssq_ctl_init(ctl, ring, signal_every) == 0, "ssq_ctl_init");
	CHECK(ssq_producer_init(&healer, ctl, HEALER_ID, &tb->s[0].sq, &tb->s[0].scq_v,
	                        (uint32_t)getpid()) == 0,
	      "healer record");
	CHECK(emu_start(tb->dev) == 0, "device thread");
	return ctl;
}

static int heal(void)
{
	double t = now_s();
	int rc;

	__atomic_store_n(&heal_started_ms, (uint64_t)(t * 1e3), __ATOMIC_RELEASE);
	rc = ssq_ctl_heal(&healer, HEAL_MS);
	__atomic_store_n(&heal_started_ms, 0, __ATOMIC_RELEASE);
	t = now_s() - t;
	if (t > max_heal_s)
		max_heal_s = t;
	heals++;
	timeouts += rc == -ETIMEDOUT;
	return rc;
}

static void stress(void)
{
	struct emu_tb_opts o = { 0 };
	struct emu_tb tb;
	struct worker w[NWORK];
	struct ssq_ctl *ctl;
	pthread_t wd;
	unsigned i, live;
	int rc, pending = 0;
	double t0,
	    run_s = getenv("SSQ_HEAL_RUN_S") ? atof(getenv("SSQ_HEAL_RUN_S")) : RUN_S;
	unsigned seed =
	    getenv("SSQ_HEAL_SEED") ? (unsigned)atoi(getenv("SSQ_HEAL_SEED")) : 12345u;
	uint64_t deaths = 0, detaches = 0, batches = 0;

	o.cq_cnt = 256;
	o.mem_len = NWORK * 4096 + 4096;
	ctl = heal_bed(&tb, &o, RING, 16);
	if (!ctl)
		return;
	pthread_create(&wd, NULL, watchdog, NULL);
	for (i = 0; i < NWORK; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].tb = &tb;
		w[i].ctl = ctl;
		w[i].idx = i;
		w[i].seed = seed + i;
		pthread_create(&w[i].tid, NULL, work, &w[i]);
	}
	t0 = now_s();
	for (live = NWORK; live;) {
		if (now_s() - t0 > run_s)
			__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
		for (live = 0, i = 0; i < NWORK; i++) {
			int req = __atomic_load_n(&w[i].req, __ATOMIC_ACQUIRE);

			live += req != REQ_EXIT;
			if (req == REQ_ATTACH) {
				rc = ssq_ctl_claim(ctl, (uint32_t)getpid(), HEALER_ID);
				CHECK(rc >= 0, "claim: %d", rc);
				w[i].id = rc < 0 ? 0 : (uint32_t)rc;
				__atomic_store_n(&w[i].req, REQ_NONE, __ATOMIC_RELEASE);
			} else if (req == REQ_DETACH || req == REQ_DIED) {
				/* as ssqd: ssqd_queue_mark_dead, then a heal */
				__atomic_store_n(&ctl->producers[w[i].id].state,
				                 SSQ_PROD_DEAD, __ATOMIC_SEQ_CST);
				pending = heal() == -ETIMEDOUT;
				__atomic_store_n(&w[i].req, REQ_NONE, __ATOMIC_RELEASE);
			}
		}
		/* ssqd's progress() */
		if (pending)
			pending = heal() == -ETIMEDOUT;
		ssq_progress(&healer);
	}
	for (i = 0; i < NWORK; i++) {
		pthread_join(w[i].tid, NULL);
		CHECK(!w[i].fail, "worker %u failed", i);
		deaths += w[i].deaths;
		detaches += w[i].detaches;
		batches += w[i].batches;
	}
	/* Everyone is gone: one more heal, and the queue drains. */
	t0 = now_s();
	do {
		if (heal() >= 0)
			pending = 0;
		ssq_progress(&healer);
	} while ((pending || ctl->published != ctl->reserve ||
	          ctl->reserve - ctl->completed >= 16) &&
	         now_s() - t0 < 5);
	/* Unsignaled WQEs after the last forced CQE stay uncompleted: fewer than 16. */
	CHECK(ctl->published == ctl->reserve && ctl->reserve - ctl->completed < 16,
	      "queue not drained: reserve %llu published %llu completed %llu",
	      (unsigned long long)ctl->reserve, (unsigned long long)ctl->published,
	      (unsigned long long)ctl->completed);
	CHECK(max_heal_s < 5.0, "a heal took %.3f s (deadline %u ms)", max_heal_s,
	      HEAL_MS);
	printf("%llu batches, %llu detaches, %llu deaths; %u heals (%u timed out), "
	       "longest %.1f ms; %llu WQEBBs\n",
	       (unsigned long long)batches, (unsigned long long)detaches,
	       (unsigned long long)deaths, heals, timeouts, max_heal_s * 1e3,
	       (unsigned long long)ctl->reserve);
	__atomic_store_n(&stop, 2, __ATOMIC_RELEASE); /* the watchdog too */
	pthread_join(wd, NULL);
	emu_stop(tb.dev);
	emu_tb_fini(&tb);
	free(ctl);
}

int main(void)
{
	states();
	stress();
	return test_exit("ssq_heal");
}
