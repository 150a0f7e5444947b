/* SPDX-License-Identifier: MIT */
/*
 * The queue forces its own signals whatever flags a producer builds with
 * (issue 16, item 2): a producer that builds every WQE with plain flags
 * (fm_ce_se 0) instead of ssq_wqe_flags() must not stop `completed`, or
 * after a ring's worth of its posts every producer, new ones too, gets
 * -EAGAIN for good. On a 64-WQEBB shared queue over the emulated device,
 * forcing a CQE every 16 WQEBBs:
 *  - producer A posts 10 rings' worth of 1-WQEBB WRITEs built with flags 0
 *    and published with flags 0, alone;
 *  - the WQE that crosses a multiple of 16 carries CQ_UPDATE in its
 *    control segment once published, though A built it without;
 *  - A keeps posting plain WQEs while producer B posts signaled ones and
 *    gets every completion, in order;
 *  - a producer attached afterwards (C) posts and completes too.
 */
#include "dv/ctl.h"
#include "ssq_flow.h"
#include "tb_flow.h"

#define RING   64u
#define EVERY  16u
#define WAIT_S 5.0

static struct ssq_producer a, b, c;
static unsigned a_plain; /* A's plain posts between the others' */

/* One 64-byte WRITE built and published with @flags exactly as given. */
static int post_raw(struct emu_tb *tb, struct ssq_producer *p, uint64_t wr_id,
                    unsigned flags)
{
	uint64_t pos;
	int rc = ssq_reserve(p, 1, &pos);

	if (rc)
		return rc;
	ssq_prep_rdma_write(ssq_producer_sq(p), (uint32_t)pos, tb->s[0].iova,
	                    tb->s[0].key, 64, tb->s[1].iova + 64 * (pos % 8),
	                    tb->s[1].key, flags);
	ssq_publish(p, pos, 1, wr_id, flags);
	ssq_submit(p);
	return 0;
}

/* Post @n plain-flag WQEs through @p, retrying -EAGAIN until WAIT_S. Returns posts done.
 */
static unsigned post_plain(struct emu_tb *tb, struct ssq_producer *p, unsigned n)
{
	double t0 = now_s();
	unsigned i = 0;

	while (i < n && now_s() - t0 < WAIT_S) {
		int rc = post_raw(tb, p, i, 0);

		if (rc && rc != -EAGAIN)
			break;
		i += rc == 0;
	}
	return i;
}

/*
 * @n signaled WQEs through @p with wr_id first.., every completion taken
 * in order; @plain_each tries at a plain post through A after each.
 */
static int post_signaled(struct emu_tb *tb, struct ssq_producer *p, unsigned n,
                         uint64_t first, unsigned plain_each, const char *who)
{
	double t0 = now_s();
	unsigned i = 0, got = 0, k;

	while (got < n && now_s() - t0 < WAIT_S) {
		struct ssq_completion comp;

		if (i < n) {
			int rc = post_raw(tb, p, first + i, SSQ_WQE_SIGNALED);

			if (rc && rc != -EAGAIN) {
				fprintf(stderr, "%s: post %u: %d\n", who, i, rc);
				return -1;
			}
			i += rc == 0;
			for (k = 0; k < plain_each; k++)
				a_plain += post_raw(tb, &a, 0, 0) == 0;
		}
		while (ssq_poll(p, &comp, 1) == 1) {
			if (comp.status != IBV_WC_SUCCESS || comp.wr_id != first + got) {
				fprintf(stderr,
				        "%s: completion %u: status %d wr_id %llu\n", who,
				        got, comp.status, (unsigned long long)comp.wr_id);
				return -1;
			}
			got++;
		}
	}
	if (got != n)
		fprintf(stderr, "%s: %u of %u posted, %u completions\n", who, i, n, got);
	return got == n ? 0 : -1;
}

int main(void)
{
	struct emu_tb_opts o = { .sq_cnt = RING };
	const struct mlx5_wqe_ctrl_seg *ctrl;
	struct emu_tb tb;
	struct ssq_ctl *ctl;
	unsigned n;

	ctl = tb_ctl_up(&tb, &o, RING, EVERY);
	CHECK(tb_producer(&a, ctl, 0, &tb) == 0 && tb_producer(&b, ctl, 1, &tb) == 0,
	      "records for A and B");

	/* Published but not submitted: what the device will read. */
	{
		uint64_t pos = 0;
		unsigned k;

		for (k = 0; k < EVERY; k++) {
			CHECK(ssq_reserve(&a, 1, &pos) == 0 && pos == k, "reserve %u", k);
			ssq_prep_rdma_write(ssq_producer_sq(&a), (uint32_t)pos,
			                    tb.s[0].iova, tb.s[0].key, 64, tb.s[1].iova,
			                    tb.s[1].key, 0);
			CHECK(ssq_publish(&a, pos, 1, k, 0) == 0, "publish %u", k);
		}
		ctrl = (const struct mlx5_wqe_ctrl_seg *)ssq_sq_wqebb(&a.sq, EVERY - 1);
		CHECK(ctrl->fm_ce_se & MLX5_WQE_CTRL_CQ_UPDATE,
		      "WQE %u (crosses a multiple of %u) built with flags 0 has fm_ce_se "
		      "0x%02x after its publish: no forced CQE",
		      EVERY - 1, EVERY, ctrl->fm_ce_se);
		ctrl = (const struct mlx5_wqe_ctrl_seg *)ssq_sq_wqebb(&a.sq, 3);
		CHECK(!(ctrl->fm_ce_se & MLX5_WQE_CTRL_CQ_UPDATE),
		      "WQE 3 (crosses nothing) was signaled: fm_ce_se 0x%02x",
		      ctrl->fm_ce_se);
		ssq_submit(&a);
	}
	CHECK(emu_start(tb.dev) == 0, "device thread");

	n = post_plain(&tb, &a, 10 * RING);
	CHECK(n == 10 * RING,
	      "producer A (plain flags) posted %u of %u: -EAGAIN from then on, "
	      "reserved %llu completed %llu (the queue forced no CQE)",
	      n, 10 * RING, (unsigned long long)ssq_ctl_reserved(ctl),
	      (unsigned long long)ssq_ctl_completed(ctl));
	CHECK(post_signaled(&tb, &b, 4 * RING, 1000, 1, "producer B") == 0,
	      "producer B (signaled) beside A's plain posts");
	CHECK(tb_producer(&c, ctl, 2, &tb) == 0, "record for C");
	CHECK(post_signaled(&tb, &c, 2 * RING, 5000, 2, "producer C (new)") == 0,
	      "a producer attached later");
	CHECK(a_plain >= 3 * RING, "A's plain posts between the others': %u", a_plain);

	emu_tb_fini(&tb);
	free(ctl);
	return test_exit("ssq_plain_flags");
}
