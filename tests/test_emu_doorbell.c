/* SPDX-License-Identifier: MIT */
/*
 * Only a UAR doorbell starts the send queue. A ConnectX is woken by the
 * 8-byte write to its UAR/BlueFlame register, which carries the first 8
 * bytes of the last posted WQE's control segment (its WQE index in
 * opmod_idx_opcode, its QPN in qpn_ds): rdma-core's post_send_db
 * (providers/mlx5/qp.c) stores the doorbell record, then mmio_write64_be()
 * of *(__be64 *)ctrl (or the BlueFlame copy) to bf->reg + bf->offset. The
 * doorbell record only says how far the NIC may read once woken. So WQEs
 * whose doorbell record moved but whose doorbell never came are not
 * executed (the producer hangs, as on hardware); the doorbell then starts
 * them, up to the WQE it names. Checked with emu_process() calls, with the
 * device thread, over the wire, for the flush of a QP in ERR, and across a
 * RESET (a doorbell with the same bytes as one before the reset rings).
 */
#include <time.h>
#include "helpers.h"
#include "tb_flow.h"

enum { QUIET_MS = 50, NWQE = 3 };

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* Run the devices of @n testbeds (NULL: a device thread runs them). */
static void run(struct emu_tb *tb, int n)
{
	int i;

	for (i = 0; tb && i < n; i++)
		emu_process(tb[i].dev, 64);
}

/* CQEs on @cq within @ms, the devices run meanwhile; stops at @max. */
static int cqes_within(struct emu_tb *tb, int ntb, struct ssq_cq *cq, struct ssq_cqe *c,
                       int max, double ms)
{
	double end = now_ms() + ms;
	int n = 0;

	do {
		n += ssq_cq_poll(cq, c + n, max - n);
		if (n < max)
			run(tb, ntb);
	} while (n < max && now_ms() < end);
	return n;
}

/* NWQE signaled WRITEs of 8 bytes, word k to @b's word k; returns the first index. */
static uint32_t post_writes(struct emu_tb_side *a, const struct emu_tb_side *b)
{
	uint32_t pi = a->sq.pi, k;

	for (k = 0; k < NWQE; k++) {
		uint64_t v = 0x1111111111111111ull * (k + 1);

		memcpy(a->mem + 8 * k, &v, 8);
		a->sq.pi += ssq_prep_rdma_write(&a->sq, a->sq.pi, a->iova + 8 * k, a->key,
		                                8, b->iova + 0x4000 + 8 * k, b->key,
		                                SSQ_WQE_SIGNALED);
	}
	return pi;
}

/* Words of @b's target that the WRITEs have filled. */
static int written(const struct emu_tb_side *b)
{
	int k, n = 0;

	for (k = 0; k < NWQE; k++) {
		uint64_t v;

		memcpy(&v, b->mem + 0x4000 + 8 * k, 8);
		n += v == 0x1111111111111111ull * (uint64_t)(k + 1);
	}
	return n;
}

/* The 8-byte doorbell naming the WQE at @wqe (with the DBR at sq.pi again). */
static void ring_at(struct emu_tb_side *a, uint32_t wqe)
{
	ssq_sq_ring_db(&a->sq, a->sq.pi,
	               (const struct mlx5_wqe_ctrl_seg *)ssq_sq_wqebb(&a->sq, wqe));
}

/*
 * DBR moved, no UAR write: nothing for QUIET_MS. Then a doorbell naming the
 * first WQE: that one only. Then one naming the last: the rest.
 */
static void test_dbr_alone(struct emu_tb *tb, int ntb, struct emu_tb_side *a,
                           struct emu_tb_side *b, const char *what)
{
	struct ssq_cqe c[NWQE];
	uint32_t first = post_writes(a, b);
	int n;

	ssq_sq_update_dbr(&a->sq, a->sq.pi);
	n = cqes_within(tb, ntb, &a->scq_v, c, NWQE, QUIET_MS);
	CHECK(n == 0, "%s: %d CQEs within %d ms of a DBR update without a doorbell", what,
	      n, QUIET_MS);
	CHECK(written(b) == 0, "%s: %d WRITEs executed without a doorbell", what,
	      written(b));

	ring_at(a, first);
	n = cqes_within(tb, ntb, &a->scq_v, c, NWQE, 5000);
	CHECK(n >= 1 && c[0].status == IBV_WC_SUCCESS &&
	          c[0].wqe_counter == (uint16_t)first,
	      "%s: the doorbell for WQE %u executed it (%d CQEs)", what, first, n);
	n += cqes_within(tb, ntb, &a->scq_v, c + n, NWQE - n, QUIET_MS);
	CHECK(n == 1, "%s: a doorbell naming WQE %u completed %d WQEs", what, first, n);

	ring_at(a, first + NWQE - 1);
	n = cqes_within(tb, ntb, &a->scq_v, c, NWQE - 1, 5000);
	CHECK(n == NWQE - 1 && c[NWQE - 2].status == IBV_WC_SUCCESS,
	      "%s: the second doorbell completed %d of %d", what, n, NWQE - 1);
	CHECK(written(b) == NWQE, "%s: %d of %d WRITEs landed", what, written(b), NWQE);
	memset(b->mem + 0x4000, 0, 8 * NWQE);
}

static void test_local(void)
{
	struct emu_tb tb;

	if (tb_local_up(&tb))
		return;
	test_dbr_alone(&tb, 1, &tb.s[0], &tb.s[1], "process");
	/* Again, past the first: the device's doorbell state moves on. */
	test_dbr_alone(&tb, 1, &tb.s[0], &tb.s[1], "process, again");
	CHECK(emu_dev_errors(tb.dev) == 0, "no device errors: %u",
	      emu_dev_errors(tb.dev));
	emu_tb_fini(&tb);
}

static void test_thread(void)
{
	struct emu_tb tb;

	if (tb_local_up(&tb))
		return;
	CHECK(emu_start(tb.dev) == 0, "device thread");
	test_dbr_alone(NULL, 0, &tb.s[0], &tb.s[1], "thread");
	emu_tb_fini(&tb);
}

static void test_wire(void)
{
	struct emu_tb h[2];

	if (tb_wire_up(h))
		return;
	test_dbr_alone(h, 2, &h[0].s[0], &h[1].s[0], "wire");
	tb_wire_down(h);
}

/* A QP in ERR flushes what a doorbell covered, not what the DBR alone posted. */
static void test_flush(void)
{
	struct emu_tb tb;
	struct emu_tb_side *a;
	struct ibv_qp_attr attr;
	struct ssq_cqe c[NWQE];
	uint32_t first;
	int ret = emu_tb_init(&tb, NULL), n;

	CHECK(ret == 0, "testbed: %d", ret);
	if (ret)
		return;
	a = &tb.s[0];
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_ERR;
	CHECK(emu_modify_qp(a->qp, &attr, IBV_QP_STATE) == 0, "RTS -> ERR");
	first = post_writes(a, &tb.s[1]);
	ssq_sq_update_dbr(&a->sq, a->sq.pi);
	n = cqes_within(&tb, 1, &a->scq_v, c, NWQE, QUIET_MS);
	CHECK(n == 0, "ERR: %d flush CQEs without a doorbell", n);
	ring_at(a, first + NWQE - 1);
	n = cqes_within(&tb, 1, &a->scq_v, c, NWQE, 5000);
	CHECK(n == NWQE && c[0].status == IBV_WC_WR_FLUSH_ERR &&
	          c[NWQE - 1].wqe_counter == (uint16_t)(first + NWQE - 1),
	      "ERR: the doorbell flushed %d of %d", n, NWQE);
	emu_tb_fini(&tb);
}

/*
 * After RESET the producer starts again at index 0 and may ring the very
 * bytes it rang before (same index, opcode, QPN, UAR half): that is a new
 * doorbell all the same.
 */
static void test_reset(void)
{
	struct emu_tb tb;
	struct emu_tb_side *a;
	struct ibv_qp_attr attr;
	struct ssq_cqe c;
	int ret = emu_tb_init(&tb, NULL), round;

	CHECK(ret == 0, "testbed: %d", ret);
	if (ret)
		return;
	a = &tb.s[0];
	for (round = 0; round < 2; round++) {
		a->sq.pi = 0;
		a->sq.bf_offset = 0;
		a->sq.pi += ssq_prep_nop(&a->sq, 0, SSQ_WQE_SIGNALED);
		ring_at(a, 0);
		CHECK(cqes_within(&tb, 1, &a->scq_v, &c, 1, 5000) == 1 &&
		          c.status == IBV_WC_SUCCESS && c.wqe_counter == 0,
		      "round %d: the NOP at index 0 completed", round);
		memset(&attr, 0, sizeof(attr));
		attr.qp_state = IBV_QPS_RESET;
		CHECK(emu_modify_qp(a->qp, &attr, IBV_QP_STATE) == 0, "to RESET");
		CHECK(emu_tb_connect_qp(a->qp, 1, tb.s[1].qpn, tb.o.qp_access,
		                        tb.o.rnr_retry) == 0,
		      "back to RTS");
	}
	CHECK(emu_dev_errors(tb.dev) == 0, "no device errors: %u",
	      emu_dev_errors(tb.dev));
	emu_tb_fini(&tb);
}

int main(void)
{
	test_local();
	test_thread();
	test_flush();
	test_reset();
	test_wire();
	return test_exit("emu_doorbell");
}
