/* SPDX-License-Identifier: MIT */
/*
 * A producer that waits for room behind a WQE reserved and not yet
 * published gives its core up (sched_yield) now and then, so that on a
 * machine with more posters than cores the one it waits for can run; one
 * that waits for the device (every WQE published, the ring full) does not.
 * The test's own sched_yield counts the calls: the library's waits are
 * inline in this program, so they call this one.
 */
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <unistd.h>
#include "dv/ctl.h"
#include "tb_flow.h"

#define RING 64u

static unsigned long yields;

int sched_yield(void)
{
	yields++;
	return (int)syscall(SYS_sched_yield);
}

/* One signaled 64-byte WRITE by @p: ssq_post_write's answer. */
static int post(struct emu_tb *tb, struct ssq_producer *p, uint64_t id)
{
	return ssq_post_write(p, tb->s[0].iova, tb->s[0].key, 64, tb->s[1].iova,
	                      tb->s[1].key, id, SSQ_WQE_SIGNALED);
}

int main(void)
{
	struct emu_tb_opts o = { .sq_cnt = RING, .mem_len = 1 << 16 };
	struct ssq_producer a, b;
	struct ssq_completion comp[RING];
	struct ssq_ctl *ctl;
	struct emu_tb tb;
	unsigned posted = 0, got = 0, i;
	uint64_t pos = ~0ull;
	unsigned long before;
	int rc;

	ctl = tb_ctl_up(&tb, &o, RING, 16);
	TB_PRODUCERS(ctl, &tb, &a, &b);

	/* A holds position 0, reserved and not published: nothing after it runs. */
	rc = ssq_reserve(&a, 1, &pos);
	CHECK(rc == 0 && pos == 0, "A's reservation: %d at %llu", rc,
	      (unsigned long long)pos);
	while (posted < RING && (rc = post(&tb, &b, posted)) == 0) {
		posted++;
		emu_process(tb.dev, 64);
	}
	CHECK(
	    rc == -EAGAIN && posted == RING - 1,
	    "B fills the ring behind A's WQE: %u posts, then %d (want %u, then -EAGAIN)",
	    posted, rc, RING - 1);
	before = yields;
	rc = post(&tb, &b, posted);
	CHECK(rc == -EAGAIN, "B's post while A holds the head: %d, want -EAGAIN", rc);
	CHECK(yields - before >= SSQ_RESERVE_SPINS / SSQ_YIELD_SPINS / 2,
	      "B, waiting %u turns behind A's unpublished WQE, yielded %lu times (want "
	      "at least %u)",
	      SSQ_RESERVE_SPINS, yields - before,
	      SSQ_RESERVE_SPINS / SSQ_YIELD_SPINS / 2);

	/* A publishes: now every WQE is published and only the device is awaited. */
	ssq_prep_rdma_write(ssq_producer_sq(&a), (uint32_t)pos, tb.s[0].iova, tb.s[0].key,
	                    64, tb.s[1].iova, tb.s[1].key,
	                    ssq_wqe_flags(&a, pos, 1, SSQ_WQE_SIGNALED));
	CHECK(ssq_publish(&a, pos, 1, 1000, SSQ_WQE_SIGNALED) == 0 && ssq_submit(&a) == 0,
	      "A publishes and rings");
	before = yields;
	rc = post(&tb, &b, posted);
	CHECK(rc == -EAGAIN, "B's post with the ring full of published WQEs: %d", rc);
	CHECK(yields == before,
	      "B, waiting for the device with every WQE published, yielded %lu times "
	      "(want 0: posters keep their core while the NIC drains)",
	      yields - before);

	/* The device runs: everything completes, exactly once, and B posts again. */
	for (i = 0; i < 1000 && got < RING; i++) {
		emu_process(tb.dev, 64);
		ssq_progress(&b);
		rc = ssq_poll(&b, comp, (int)RING);
		got += rc > 0 ? (unsigned)rc : 0;
		rc = ssq_poll(&a, comp, (int)RING);
		got += rc > 0 ? (unsigned)rc : 0;
	}
	CHECK(got == RING, "completions after the device ran: %u, want %u", got, RING);
	rc = post(&tb, &b, posted);
	CHECK(rc == 0, "B posts once there is room: %d", rc);

	free(ctl);
	emu_tb_fini(&tb);
	return test_exit("ssq_wait_yield");
}
