/* SPDX-License-Identifier: MIT */
/*
 * ssq_ctl_check raises no false alarm: ssqd resets a queue whose control
 * block it finds inconsistent, so every invariant it checks must hold at
 * every instant of a correct run. Four producer threads post messages
 * (ssq_flow.h: batches of two WQEs, every eighth signaled) through a
 * 64-WQEBB queue on the emulated device - the ring wraps hundreds of
 * times, flow control and the routers race - while the main thread, as
 * ssqd does, checks the block in a loop and routes now and then. Every
 * check must pass, and every message arrive exactly once.
 */
#include <pthread.h>
#include "dv/ctl.h"
#include "ssq_flow.h"
#include "tb_flow.h"

#define T     4u
#define M     1504u /* a multiple of SIGNAL_EVERY */
#define RING  64u
#define OWNER (SSQ_MAX_PRODUCERS - 1)

int main(void)
{
	struct emu_tb_opts o = { 0 };
	struct ssq_producer owner;
	struct emu_tb tb;
	struct msg_area a = { 0 };
	struct msg_worker w[T];
	struct ssq_ctl *ctl;
	size_t src_bytes = T * 64 * (CELL + 8);
	unsigned t, bad, running;
	uint64_t checks = 0, alarms = 0;
	char why[200], first[200] = "";
	int rc;

	o.sq_cnt = RING;
	o.mem_len = T * M * (CELL + 8) + src_bytes;
	ctl = tb_ctl_up(&tb, &o, RING, 16);
	CHECK(tb_producer(&owner, ctl, OWNER, &tb) == 0, "owner's record");
	msg_area_local(&a, tb.s[1].iova, tb.s[1].key, tb.s[1].mem, T, M);
	CHECK(emu_start(tb.dev) == 0, "device thread");
	for (t = 0; t < T; t++) {
		tb_worker_bind(&w[t], ctl, &tb, &a, t, M, OWNER);
		pthread_create(&w[t].tid, NULL, msg_worker_run, &w[t]);
	}
	do {
		if (ssq_ctl_check(&owner, 0, why, sizeof(why)) && !alarms++)
			snprintf(first, sizeof(first), "%s", why);
		if (++checks % 64 == 0)
			ssq_progress(&owner);
		running = 0;
		for (t = 0; t < T; t++)
			running += !__atomic_load_n(&w[t].done, __ATOMIC_ACQUIRE);
	} while (running);
	for (t = 0; t < T; t++) {
		pthread_join(w[t].tid, NULL);
		CHECK(w[t].rc == 0, "thread %u failed", t);
	}
	CHECK(alarms == 0, "%llu of %llu checks under traffic failed, first: %s",
	      (unsigned long long)alarms, (unsigned long long)checks, first);
	CHECK(ssq_ctl_check(&owner, 0, why, sizeof(why)) == 0, "after the run: %s", why);
	/*
	 * A producer stopped between its publish word and counting it
	 * (ssq_publish), whose WQE another rang and a router counted done:
	 * done is one ahead of posted, in a correct run; a batch of combined
	 * requests published for it and not settled yet (<ssq/combine.h>),
	 * up to SSQ_HAND_REQS ahead. One more is not.
	 */
	{
		struct ssq_ctl_producer *r = &ctl->producers[w[0].id];
		uint64_t posted = r->posted;

		r->posted = r->done - 1;
		rc = ssq_ctl_check(&owner, 0, why, sizeof(why));
		CHECK(rc == 0,
		      "done one past posted (a producer between publish and "
		      "count) raised: %s",
		      why);
		r->posted = r->done - SSQ_HAND_REQS;
		rc = ssq_ctl_check(&owner, 0, why, sizeof(why));
		CHECK(rc == 0, "done a batch past posted (unsettled) raised: %s", why);
		r->posted = r->done - SSQ_HAND_REQS - 1;
		CHECK(ssq_ctl_check(&owner, 0, why, sizeof(why)) == -EUCLEAN,
		      "done a batch and one past posted passed");
		r->posted = posted;
	}
	/* A FREE record mid-reservation: nobody's, and a healer would wait on it. */
	{
		struct ssq_ctl_producer *r = &ctl->producers[OWNER - 1];

		CHECK(r->state == SSQ_PROD_FREE, "record %u is free", OWNER - 1);
		r->resv_gen |= 1;
		CHECK(ssq_ctl_check(&owner, 0, why, sizeof(why)) == -EUCLEAN,
		      "a free record with an odd generation passed");
		r->resv_gen &= ~1u;
	}
	bad = 0;
	for (t = 0; t < T; t++)
		bad += check_msgs(&a, t, M, 1);
	CHECK(bad == 0, "%u messages wrong", bad);
	printf(
	    "%u threads, %u messages each, %llu checks of the control block meanwhile\n",
	    T, M, (unsigned long long)checks);
	emu_stop(tb.dev);
	emu_tb_fini(&tb);
	free(ctl);
	return test_exit("ssq_ctl_check");
}
