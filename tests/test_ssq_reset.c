/* SPDX-License-Identifier: MIT */
/*
 * ssq_ctl_reset keeps its contract, on a 16-WQEBB shared queue over the
 * emulated device:
 *  - it refuses (-EINVAL) a queue that is not in error, and changes
 *    nothing;
 *  - it refuses (-EBUSY, after its timeout) while a lease is held or a
 *    record is mid-post, and changes nothing;
 *  - after the QP's own reset, it restarts the counters at 0, bumps the
 *    epoch and makes the queue READY: posts work again, past a wrap of the
 *    ring, and the completion counts a producer kept go on.
 * Along the way: ssq_ctl_set_error makes ssq_reserve return -EIO,
 * ssq_ctl_drained, ssq_ctl_reserved and ssq_ctl_completed say what the
 * queue holds, and ssq_ctl_mark_dead makes the router drop a record's
 * completions.
 */
#include "dv/ctl.h"
#include "ssq_flow.h"
#include "tb_flow.h"

#define RING      16u
#define HEALER_ID (SSQ_MAX_PRODUCERS - 1)
#define WAIT_S    5.0

static struct ssq_producer owner, prod;

/* Take the completions there are; each must be the next in order. */
static int take(uint64_t first_wr, unsigned *got)
{
	struct ssq_completion c;

	while (ssq_poll(&prod, &c, 1) == 1) {
		if (c.status != IBV_WC_SUCCESS || c.wr_id != first_wr + *got) {
			fprintf(stderr, "completion %u: status %d wr_id %llu\n", *got,
			        c.status, (unsigned long long)c.wr_id);
			return -1;
		}
		(*got)++;
	}
	return 0;
}

/* Post @n signaled 64-byte WRITEs and take their completions. Returns 0 or -1. */
static int post_and_reap(struct emu_tb *tb, unsigned n, uint64_t first_wr)
{
	struct emu_tb_side *a = &tb->s[0], *b = &tb->s[1];
	unsigned i = 0, got = 0;
	double t0 = now_s();

	while (got < n && now_s() - t0 < WAIT_S) {
		if (i < n) {
			int rc = ssq_post_write(&prod, a->iova, a->key, 64,
			                        b->iova + 64 * (i % 8), b->key,
			                        first_wr + i, SSQ_WQE_SIGNALED);

			if (rc && rc != -EAGAIN) {
				fprintf(stderr, "post %u: %d\n", i, rc);
				return -1;
			}
			i += rc == 0;
		}
		if (take(first_wr, &got))
			return -1;
	}
	return got == n ? 0 : -1;
}

int main(void)
{
	struct emu_tb_opts o = { .sq_cnt = RING };
	struct emu_tb tb;
	struct ssq_ctl *ctl;
	uint64_t r;
	uint32_t saved;

	ctl = tb_ctl_up(&tb, &o, RING, 4);
	CHECK(tb_producer(&owner, ctl, HEALER_ID, &tb) == 0, "owner's record");
	CHECK(tb_producer(&prod, ctl, 0, &tb) == 0, "producer's record");
	CHECK(emu_start(tb.dev) == 0, "device thread");

	CHECK(post_and_reap(&tb, 12, 100) == 0, "posts before the reset");
	r = ssq_ctl_reserved(ctl);
	CHECK(r == 12 && ssq_ctl_completed(ctl) == r, "reserved %llu completed %llu",
	      (unsigned long long)r, (unsigned long long)ssq_ctl_completed(ctl));
	CHECK(ssq_ctl_drained(ctl), "drained after every completion");

	/* Not in error: refused, nothing changed. */
	CHECK(ssq_ctl_reset(NULL, 0) == -EINVAL, "reset of no queue");
	CHECK(ssq_ctl_reset(&owner, 0) == -EINVAL, "reset of a READY queue");
	CHECK(ssq_ctl_reserved(ctl) == r && ssq_ctl_epoch(ctl) == 0,
	      "a refused reset changed the queue");

	ssq_ctl_set_error(ctl);
	CHECK(ssq_ctl_in_error(ctl), "in error after ssq_ctl_set_error");
	CHECK(ssq_post_write(&prod, tb.s[0].iova, tb.s[0].key, 64, tb.s[1].iova,
	                     tb.s[1].key, 1, 0) == -EIO,
	      "a post into a queue in error");

	/* A router holding the CQ lease: -EBUSY once the timeout passes. */
	saved = __atomic_exchange_n(&ctl->cq_lease, 1, __ATOMIC_SEQ_CST);
	CHECK(ssq_ctl_reset(&owner, 5) == -EBUSY, "reset under a held CQ lease");
	__atomic_store_n(&ctl->cq_lease, saved, __ATOMIC_SEQ_CST);
	/* The same for the doorbell lease. */
	saved = __atomic_exchange_n(&ctl->db_lease, 1, __ATOMIC_SEQ_CST);
	CHECK(ssq_ctl_reset(&owner, 5) == -EBUSY, "reset under a held doorbell lease");
	__atomic_store_n(&ctl->db_lease, saved, __ATOMIC_SEQ_CST);
	/* A producer caught mid-post (BUILDING): not drained. */
	__atomic_store_n(&prod.me->state, SSQ_PROD_BUILDING, __ATOMIC_SEQ_CST);
	CHECK(!ssq_ctl_drained(ctl), "drained with a record BUILDING");
	CHECK(ssq_ctl_reset(&owner, 5) == -EBUSY, "reset with a record BUILDING");
	__atomic_store_n(&prod.me->state, SSQ_PROD_IDLE, __ATOMIC_SEQ_CST);
	CHECK(ssq_ctl_in_error(ctl) && ssq_ctl_reserved(ctl) == r &&
	          ssq_ctl_epoch(ctl) == 0 && ctl->cq_lease == 0 && ctl->db_lease == 0,
	      "a refused reset changed the queue or kept a lease");

	/* The QP first, then the shared queue: READY, from 0, epoch 1. */
	CHECK(tb_reset_qp(&tb) == 0, "QP through RESET to RTS");
	CHECK(ssq_ctl_reset(&owner, 100) == 0, "reset of a drained queue in error");
	CHECK(!ssq_ctl_in_error(ctl) && ssq_ctl_epoch(ctl) == 1, "READY, epoch 1");
	CHECK(ssq_ctl_reserved(ctl) == 0 && ssq_ctl_completed(ctl) == 0,
	      "counters restarted: reserved %llu completed %llu",
	      (unsigned long long)ssq_ctl_reserved(ctl),
	      (unsigned long long)ssq_ctl_completed(ctl));
	CHECK(ctl->cq_lease == 0 && ctl->db_lease == 0, "leases left held");
	/* More than a ring's worth: the positions wrap over the cleared slots. */
	CHECK(post_and_reap(&tb, 3 * RING, 200) == 0, "posts after the reset");
	CHECK(ssq_ctl_reserved(ctl) == 3 * RING && ssq_ctl_completed(ctl) == 3 * RING,
	      "counted from 0: reserved %llu completed %llu",
	      (unsigned long long)ssq_ctl_reserved(ctl),
	      (unsigned long long)ssq_ctl_completed(ctl));

	/* A record marked dead: its completions are dropped, not delivered. */
	CHECK(ssq_ctl_mark_dead(ctl, SSQ_MAX_PRODUCERS) == -EINVAL, "id out of range");
	{
		struct ssq_completion c;
		uint64_t pos = 0;

		CHECK(ssq_reserve(&prod, 1, &pos) == 0, "reserve");
		ssq_prep_rdma_write(ssq_producer_sq(&prod), (uint32_t)pos, tb.s[0].iova,
		                    tb.s[0].key, 64, tb.s[1].iova, tb.s[1].key,
		                    ssq_wqe_flags(&prod, pos, 1, SSQ_WQE_SIGNALED));
		CHECK(ssq_publish(&prod, pos, 1, 7, SSQ_WQE_SIGNALED) == 0, "publish");
		CHECK(ssq_ctl_mark_dead(ctl, prod.id) == 0, "mark dead");
		ssq_submit(&prod);
		{
			double t0 = now_s();

			while (ssq_ctl_completed(ctl) < pos + 1 && now_s() - t0 < WAIT_S)
				ssq_progress(&owner);
		}
		CHECK(ssq_ctl_completed(ctl) == pos + 1, "the dead's WQE completed");
		CHECK(ssq_poll(&prod, &c, 1) == 0, "a dead record got a completion");
	}

	emu_tb_fini(&tb);
	free(ctl);
	return test_exit("ssq_reset");
}
