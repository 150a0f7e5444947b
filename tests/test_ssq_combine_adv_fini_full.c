/* SPDX-License-Identifier: MIT */
/*
 * Adversary (h-adv5c): ssq_producer_fini with a combined request still
 * handed over and no room in the ring (<ssq/combine.h>, src/dv
 * queue_setup.c). One thread, the emulated device stepped by hand (a
 * 64-WQEBB ring, producers A and C of one queue, FETCH_ADDs of +1 on a
 * counter per request). C holds the role (a combiner preempted); A's
 * combined FETCH_ADD is handed over (0: accepted). The ring is full of
 * C's WQEs the device has not run yet (a slow peer, a holder ssqd has not
 * killed yet). A retires: ssq_producer_fini flushes first ("post it before
 * retiring"), its own post finds no room within SSQ_RESERVE_SPINS and the
 * error is dropped ((void)ssq_combine_flush), the record goes DEAD with
 * the request taken back (hand_owed lives in A's handle only). The ring
 * drains: A's request must have run once (a direct post before fini
 * would have: it was in the ring). It never ran. Now fini polls up to
 * SSQ_SETTLE_MS for room and, finding none (nothing here runs the
 * device meanwhile), says -EAGAIN and retires nothing; A calls it again
 * once the ring drained, and its request runs then, once.
 */
#include <ssq/combine.h>
#include "dv/ctl.h"
#include "ssq_flow.h"
#include "tb_flow.h"

#define RING  64u
#define EVERY 16u

static struct emu_tb tb;
static struct ssq_ctl *ctl;
static struct ssq_producer a, c;

static uint64_t counter(unsigned cell)
{
	return tb_cell(&tb, cell);
}

int main(void)
{
	struct emu_tb_opts o = { .sq_cnt = RING };
	struct ssq_completion comp[16];
	uint64_t q = 0, pos;
	unsigned i;
	int rc;

	ctl = tb_ctl_up(&tb, &o, RING, EVERY);
	CHECK(tb_producer(&a, ctl, 0, &tb) == 0 && tb_producer(&c, ctl, 2, &tb) == 0,
	      "producers");
	__atomic_store_n(&ctl->comb_role, c.id + 1, __ATOMIC_SEQ_CST);
	rc = ssq_post_fetch_add_combined(&a, tb.s[0].iova, tb.s[0].key, tb.s[1].iova,
	                                 tb.s[1].key, 1, 1, SSQ_WQE_SIGNALED);
	CHECK(rc == 0 && (a.me->hand.word & 3) == SSQ_HAND_POSTED,
	      "A's request not handed over: %d", rc);
	for (i = 0; i < 2; i++) {
		CHECK(ssq_reserve(&c, RING / 2, &q) == 0, "C's reservation %u", i);
		for (pos = q; pos < q + RING / 2; pos++) {
			ssq_prep_nop(ssq_producer_sq(&c), (uint32_t)pos,
			             ssq_wqe_flags(&c, pos, 1, 0));
			CHECK(ssq_publish(&c, pos, 1, pos, 0) == 0, "C's publish");
		}
	}
	ssq_submit(&c);
	rc = ssq_producer_fini(&a);
	printf("after ssq_producer_fini (%d): A's handle still owes its request: %d\n",
	       rc, a.hand_owed);
	CHECK(rc == -EAGAIN && a.me && a.hand_owed,
	      "ssq_producer_fini with no room: %d, A %s, owes %d (want -EAGAIN, still "
	      "bound, owed)",
	      rc, a.me ? "bound" : "retired", a.hand_owed);
	__atomic_store_n(&ctl->comb_role, 0, __ATOMIC_SEQ_CST);
	for (i = 0; i < 64; i++) {
		ssq_submit(&c);
		emu_process(tb.dev, 64);
		ssq_progress(&c);
		(void)ssq_poll(&c, comp, 16);
	}
	/* Told: A calls it again once the ring drained. */
	if (a.me) {
		rc = ssq_producer_fini(&a);
		CHECK(rc == 0 && !a.me, "ssq_producer_fini again: %d", rc);
	}
	for (i = 0; i < 64; i++) {
		ssq_submit(&c);
		emu_process(tb.dev, 64);
		ssq_progress(&c);
		(void)ssq_poll(&c, comp, 16);
	}
	printf(
	    "A's combined request after ssq_producer_fini and a drained ring: ran %llu "
	    "times\n",
	    (unsigned long long)counter(0));
	CHECK(counter(0) == 1,
	      "A's combined request, accepted (0), ran %llu times: ssq_producer_fini "
	      "found no room, dropped the error and retired the record",
	      (unsigned long long)counter(0));
	ssq_producer_fini(&c);
	emu_tb_fini(&tb);
	free(ctl);
	return test_exit("ssq_combine_adv_fini_full");
}
