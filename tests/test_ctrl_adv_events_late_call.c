/* SPDX-License-Identifier: MIT */
/*
 * Adversary, completion events: emu_cq_set_event(cq, NULL) promises no
 * more calls of the old handler once it returns, so that its owner may
 * free the handler's argument (and emu_destroy_cq, that the CQ's handler
 * is done with). The device takes the due handlers under its lock and
 * calls them after dropping it; a pass that wrote CQEs into two CQs calls
 * them one after the other. Here the first handler of such a pass holds
 * on while another thread clears the second CQ's handler: that call must
 * not return until the pass's calls are done, or the second handler runs
 * after it returned, on an argument its owner may have freed. Before, it
 * returned at once and the stale handler ran after it.
 */
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include "helpers.h"
#include "emu/testbed_pvt.h"

struct late {
	struct emu_tb *tb;
	struct emu_cq *cq[2]; /* side 0's send CQ, side 1's receive CQ */
	int first;            /* atomic: index of the first handler called, -1 none */
	int release;          /* atomic: the first handler may return */
	int cleared;          /* atomic: emu_cq_set_event(NULL) returned */
	int late;             /* atomic: calls after it returned */
	int calls[2];         /* atomic */
};

struct handler_arg {
	struct late *l;
	int i;
};

static void on_event(void *arg, unsigned cqes)
{
	struct handler_arg *h = arg;
	struct late *l = h->l;
	int none = -1;

	(void)cqes;
	__atomic_fetch_add(&l->calls[h->i], 1, __ATOMIC_RELAXED);
	if (__atomic_load_n(&l->cleared, __ATOMIC_ACQUIRE))
		__atomic_fetch_add(&l->late, 1, __ATOMIC_RELAXED);
	if (__atomic_compare_exchange_n(&l->first, &none, h->i, 0, __ATOMIC_ACQ_REL,
	                                __ATOMIC_ACQUIRE))
		while (!__atomic_load_n(&l->release, __ATOMIC_ACQUIRE))
			usleep(1000);
}

static void *run_pass(void *arg)
{
	struct late *l = arg;

	emu_process(l->tb->dev, 1024);
	return NULL;
}

struct clear_arg {
	struct late *l;
	struct emu_cq *cq;
	int rc;
};

static void *clear(void *arg)
{
	struct clear_arg *c = arg;

	c->rc = emu_cq_set_event(c->cq, NULL, NULL);
	__atomic_store_n(&c->l->cleared, 1, __ATOMIC_RELEASE);
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(void)
{
	struct emu_tb tb;
	struct late l = { .tb = &tb, .first = -1 };
	struct handler_arg h[2] = { { &l, 0 }, { &l, 1 } };
	struct clear_arg c = { .l = &l };
	struct emu_tb_side *a, *b;
	pthread_t pass, clearer;
	double deadline;
	int i, first;

	if (emu_tb_init(&tb, NULL)) {
		CHECK(0, "testbed");
		return test_exit("ctrl_adv_events_late_call");
	}
	a = &tb.s[0];
	b = &tb.s[1];
	l.cq[0] = a->scq;
	l.cq[1] = b->rcq;
	for (i = 0; i < 2; i++)
		CHECK(emu_cq_set_event(l.cq[i], on_event, &h[i]) == 0, "handler %d", i);
	{
		struct ibv_sge sge = { b->iova + 0x1000, 256, b->key };

		CHECK(ssq_rq_post_recv(&b->rq, &sge, 1) == 0, "post a receive");
		ssq_rq_ring(&b->rq);
	}
	/* One signaled SEND: a receive CQE and a send CQE in one pass. */
	a->sq.pi += ssq_prep_send(&a->sq, a->sq.pi, MLX5_OPCODE_SEND, a->iova, a->key, 64,
	                          0, SSQ_WQE_SIGNALED);
	emu_tb_ring(&tb, 0, a->sq.pi - 1);
	CHECK(pthread_create(&pass, NULL, run_pass, &l) == 0, "the pass's thread");

	deadline = now() + 5;
	while ((first = __atomic_load_n(&l.first, __ATOMIC_ACQUIRE)) < 0 &&
	       now() < deadline)
		usleep(1000);
	CHECK(first >= 0, "a handler was called within 5 s");
	if (first >= 0) {
		/* Clear the other handler while the pass still calls the first. */
		c.cq = l.cq[!first];
		CHECK(pthread_create(&clearer, NULL, clear, &c) == 0, "the clearer");
		usleep(200 * 1000);
		__atomic_store_n(&l.release, 1, __ATOMIC_RELEASE);
		pthread_join(clearer, NULL);
		CHECK(c.rc == 0, "emu_cq_set_event(NULL): %d", c.rc);
	}
	__atomic_store_n(&l.release, 1, __ATOMIC_RELEASE);
	pthread_join(pass, NULL);
	CHECK(l.calls[0] == 1 && l.calls[1] == 1,
	      "one pass wrote a CQE into each CQ: %d and %d calls, want 1 each",
	      l.calls[0], l.calls[1]);
	CHECK(l.late == 0,
	      "the handler cleared by emu_cq_set_event(NULL) ran %d times after it "
	      "returned",
	      l.late);
	emu_tb_fini(&tb);
	return test_exit("ctrl_adv_events_late_call");
}
