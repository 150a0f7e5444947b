/* SPDX-License-Identifier: MIT */
/*
 * Every error the emulated device reports, provoked one by one (keys of
 * another PD among them): the exact
 * mlx5 syndrome in an error CQE naming the failed WQE, the QP in ERR, and
 * each later WQE flushed with WR_FLUSH_ERR; doorbell-record device errors;
 * CQ overrun.
 */
#include <unistd.h>
#include "helpers.h"
#include "emu/testbed_pvt.h"

static int setup(struct emu_tb *tb, const struct emu_tb_opts *o)
{
	int ret = emu_tb_init(tb, o);

	CHECK(ret == 0, "testbed: %d", ret);
	return ret;
}

static void expect_err(struct emu_tb *tb, struct ssq_cq *cq, uint8_t cqe_op, uint8_t synd,
                       uint16_t idx, uint8_t wqe_op, uint32_t qpn, const char *what)
{
	struct ssq_cqe c;

	if (emu_tb_poll(tb, cq, &c, 1) != 1) {
		CHECK(0, "%s: no CQE", what);
		return;
	}
	CHECK(c.opcode == cqe_op, "%s: CQE opcode %u, want %u", what, c.opcode, cqe_op);
	CHECK(c.syndrome == synd, "%s: syndrome 0x%x, want 0x%x", what, c.syndrome, synd);
	CHECK(c.wqe_counter == idx, "%s: wqe_counter %u, want %u", what, c.wqe_counter,
	      idx);
	CHECK(c.qpn == qpn, "%s: qpn 0x%x, want 0x%x", what, c.qpn, qpn);
	if (cqe_op == MLX5_CQE_REQ_ERR)
		CHECK(c.s_wqe_opcode == wqe_op, "%s: s_wqe_opcode 0x%x, want 0x%x", what,
		      c.s_wqe_opcode, wqe_op);
	CHECK(c.status == ssq_cqe_status(synd), "%s: status %d", what, c.status);
}

static int cq_empty(struct emu_tb *tb, struct ssq_cq *cq)
{
	struct ssq_cqe c;

	emu_process(tb->dev, 1024);
	return ssq_cq_poll(cq, &c, 1) == 0;
}

/* Post two more WQEs (one unsignaled) after the bad one at @bad_pi, ring,
 * and check: the error CQE for it, then one flush CQE each for the rest. */
static void fail_and_flush(struct emu_tb *tb, uint32_t bad_pi, uint8_t bad_op,
                           uint8_t synd, const char *what)
{
	struct emu_tb_side *a = &tb->s[0], *b = &tb->s[1];
	uint32_t p1, p2;
	char buf[128];

	p1 = a->sq.pi;
	a->sq.pi +=
	    ssq_prep_rdma_write(&a->sq, p1, a->iova, a->key, 8, b->iova, b->key, 0);
	p2 = a->sq.pi;
	a->sq.pi += ssq_prep_rdma_write(&a->sq, p2, a->iova, a->key, 8, b->iova, b->key,
	                                SSQ_WQE_SIGNALED);
	emu_tb_ring(tb, 0, p2);
	expect_err(tb, &a->scq_v, MLX5_CQE_REQ_ERR, synd, (uint16_t)bad_pi, bad_op,
	           a->qpn, what);
	snprintf(buf, sizeof(buf), "%s: flush 1 (unsignaled)", what);
	expect_err(tb, &a->scq_v, MLX5_CQE_REQ_ERR, MLX5_CQE_SYNDROME_WR_FLUSH_ERR,
	           (uint16_t)p1, MLX5_OPCODE_RDMA_WRITE, a->qpn, buf);
	snprintf(buf, sizeof(buf), "%s: flush 2", what);
	expect_err(tb, &a->scq_v, MLX5_CQE_REQ_ERR, MLX5_CQE_SYNDROME_WR_FLUSH_ERR,
	           (uint16_t)p2, MLX5_OPCODE_RDMA_WRITE, a->qpn, buf);
	CHECK(emu_qp_state(a->qp) == IBV_QPS_ERR, "%s: QP state %d", what,
	      emu_qp_state(a->qp));
	/* Posted in ERR: flushed too. */
	p1 = a->sq.pi;
	a->sq.pi += ssq_prep_nop(&a->sq, p1, 0);
	emu_tb_ring(tb, 0, p1);
	snprintf(buf, sizeof(buf), "%s: flush after ERR", what);
	expect_err(tb, &a->scq_v, MLX5_CQE_REQ_ERR, MLX5_CQE_SYNDROME_WR_FLUSH_ERR,
	           (uint16_t)p1, MLX5_OPCODE_NOP, a->qpn, buf);
	CHECK(cq_empty(tb, &a->scq_v), "%s: nothing more", what);
}

/* Local QP operation errors: the WQE itself is malformed. */
static void test_local_qp_op(void)
{
	struct emu_tb tb;
	struct emu_tb_side *a;
	struct mlx5_wqe_ctrl_seg *ctrl;
	uint32_t pi;
	int which;

	for (which = 0; which < 5; which++) {
		static const char *const names[] = { "unknown opcode", "WRITE ds 1",
			                             "atomic ds 3", "wrong WQE index",
			                             "wrong QPN" };
		uint8_t op = MLX5_OPCODE_RDMA_WRITE;

		if (setup(&tb, NULL))
			return;
		a = &tb.s[0];
		/* Some good WQEs first, so the bad one is not at index 0. */
		pi = a->sq.pi;
		a->sq.pi += ssq_prep_nop(&a->sq, pi, 0);
		a->sq.pi += ssq_prep_nop(&a->sq, a->sq.pi, 0);
		pi = a->sq.pi;
		ctrl = ssq_sq_wqebb(&a->sq, pi);
		switch (which) {
		case 0:
			op = 0x07;
			mlx5dv_set_ctrl_seg(ctrl, (uint16_t)pi, op, 0, a->qpn, 0, 1, 0,
			                    0);
			break;
		case 1:
			mlx5dv_set_ctrl_seg(ctrl, (uint16_t)pi, op, 0, a->qpn,
			                    MLX5_WQE_CTRL_CQ_UPDATE, 1, 0, 0);
			break;
		case 2:
			op = MLX5_OPCODE_ATOMIC_FA;
			ssq_prep_atomic(&a->sq, pi, op, a->iova, a->key, tb.s[1].iova,
			                tb.s[1].key, 1, 0, 0);
			ctrl->qpn_ds = htobe32((a->qpn << 8) | 3);
			break;
		case 3:
			ssq_prep_rdma_write(&a->sq, pi + 5, a->iova, a->key, 8,
			                    tb.s[1].iova, tb.s[1].key, 0);
			memcpy(ctrl, ssq_sq_wqebb(&a->sq, pi + 5), 64);
			break;
		case 4:
			ssq_prep_rdma_write(&a->sq, pi, a->iova, a->key, 8, tb.s[1].iova,
			                    tb.s[1].key, 0);
			ctrl->qpn_ds = htobe32(((a->qpn + 1) << 8) | 3);
			break;
		}
		a->sq.pi++;
		fail_and_flush(&tb, pi, op, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR,
		               names[which]);
		emu_tb_fini(&tb);
	}
}

/* One bad WRITE / READ per case; local protection or remote access. */
/*
 * @key with another variant: a key no MR has (its slot's MR has @key).
 * Not a neighbouring slot's: keys carry random variants, so slot +-1 with
 * the same variant is another MR's key once in 255.
 */
static uint32_t other_variant(uint32_t key)
{
	return (key & ~0xffu) | (uint8_t)((key & 0xff) % 255 + 1);
}

static void test_keys(void)
{
	struct emu_tb tb;
	struct emu_tb_side *a, *b;
	int which;

	for (which = 0; which < 11; which++) {
		static const char *const names[] = {
			"bad lkey",
			"local out of bounds",
			"READ into read-only MR",
			"bad rkey",
			"remote out of bounds",
			"MR without REMOTE_WRITE",
			"QP without REMOTE_READ",
			"misaligned atomic",
			"atomic on MR without it",
			"lkey of another PD",
			"rkey of another PD",
		};
		struct emu_tb_opts o = { 0 };
		uint8_t op = MLX5_OPCODE_RDMA_WRITE,
		        synd = MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
		struct emu_mr *mr2;
		struct emu_pd *pd2;
		uint32_t key2 = 0, pi;
		int remote = 1;

		if (which == 6)
			o.qp_access = IBV_ACCESS_REMOTE_WRITE;
		if (setup(&tb, &o))
			return;
		a = &tb.s[0];
		b = &tb.s[1];
		pi = a->sq.pi;
		switch (which) {
		case 0:
			ssq_prep_rdma_write(&a->sq, pi, a->iova, other_variant(a->key), 8,
			                    b->iova, b->key, 0);
			synd = MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
			remote = 0;
			break;
		case 1:
			ssq_prep_rdma_write(&a->sq, pi, a->iova + tb.o.mem_len - 4,
			                    a->key, 8, b->iova, b->key, 0);
			synd = MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
			remote = 0;
			break;
		case 2:
			CHECK(emu_reg_mr(tb.pd, a->mem, 4096, 0x7000000, 0, &mr2,
			                 &key2) == 0,
			      "read-only MR");
			op = MLX5_OPCODE_RDMA_READ;
			ssq_prep_rdma_read(&a->sq, pi, 0x7000000, key2, 8, b->iova,
			                   b->key, 0);
			synd = MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
			remote = 0;
			break;
		case 3:
			ssq_prep_rdma_write(&a->sq, pi, a->iova, a->key, 8, b->iova,
			                    other_variant(b->key), 0);
			break;
		case 4:
			ssq_prep_rdma_write(&a->sq, pi, a->iova, a->key, 64,
			                    b->iova + tb.o.mem_len - 63, b->key, 0);
			break;
		case 5:
			CHECK(emu_reg_mr(tb.pd, b->mem, 4096, 0x8000000,
			                 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ,
			                 &mr2, &key2) == 0,
			      "no-remote-write MR");
			ssq_prep_rdma_write(&a->sq, pi, a->iova, a->key, 8, 0x8000000,
			                    key2, 0);
			break;
		case 6:
			op = MLX5_OPCODE_RDMA_READ;
			ssq_prep_rdma_read(&a->sq, pi, a->iova, a->key, 8, b->iova,
			                   b->key, 0);
			break;
		case 7: {
			/* ssq_prep_atomic refuses it: write the raddr by hand. */
			struct mlx5_wqe_raddr_seg *r;

			op = MLX5_OPCODE_ATOMIC_FA;
			ssq_prep_atomic(&a->sq, pi, op, a->iova, a->key, b->iova, b->key,
			                1, 0, 0);
			r = (struct mlx5_wqe_raddr_seg *)((uint8_t *)ssq_sq_wqebb(&a->sq,
			                                                          pi) +
			                                  16);
			r->raddr = htobe64(b->iova + 4);
			synd = MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR;
			break;
		}
		case 8:
			CHECK(emu_reg_mr(tb.pd, b->mem, 4096, 0x9000000,
			                 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
			                 &mr2, &key2) == 0,
			      "no-atomic MR");
			op = MLX5_OPCODE_ATOMIC_CS;
			ssq_prep_atomic(&a->sq, pi, op, a->iova, a->key, 0x9000000, key2,
			                0, 1, 0);
			break;
		case 9:
			/*
			 * An MR of another PD is no MR to this QP (rxe's lookup_mr;
			 * a ConnectX's mkey context carries its pd): what keeps a
			 * tenant (ssqd --tenants) from naming another's keys.
			 */
			CHECK(emu_alloc_pd(tb.dev, &pd2) == 0 &&
			          emu_reg_mr(pd2, a->mem, 4096, 0xa000000,
			                     IBV_ACCESS_LOCAL_WRITE, &mr2, &key2) == 0,
			      "MR of a second PD");
			ssq_prep_rdma_write(&a->sq, pi, 0xa000000, key2, 8, b->iova,
			                    b->key, 0);
			synd = MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
			remote = 0;
			break;
		case 10:
			CHECK(emu_alloc_pd(tb.dev, &pd2) == 0 &&
			          emu_reg_mr(pd2, b->mem, 4096, 0xb000000,
			                     IBV_ACCESS_LOCAL_WRITE |
			                         IBV_ACCESS_REMOTE_WRITE,
			                     &mr2, &key2) == 0,
			      "MR of a second PD");
			ssq_prep_rdma_write(&a->sq, pi, a->iova, a->key, 8, 0xb000000,
			                    key2, 0);
			break;
		}
		a->sq.pi++;
		fail_and_flush(&tb, pi, op, synd, names[which]);
		/* A remote error moves the responder to ERR as well. */
		CHECK(emu_qp_state(b->qp) == (remote ? IBV_QPS_ERR : IBV_QPS_RTS),
		      "%s: responder state %d", names[which], emu_qp_state(b->qp));
		emu_tb_fini(&tb);
	}
}

/*
 * Receiver not ready: rnr_retry retries, each after the responder's RNR
 * NAK timer (min_rnr_timer 12: 0.64 ms); passes inside the timer retry
 * nothing.
 */
static void test_rnr(void)
{
	static const uint8_t retries[] = { 0, 1, 3, 7 };
	unsigned t;

	for (t = 0; t < sizeof(retries); t++) {
		struct emu_tb_opts o = { .rnr_retry = retries[t] };
		struct emu_tb tb;
		struct emu_tb_side *a, *b;
		struct ssq_cqe c;
		uint32_t pi;
		int pass, got = -1;

		if (setup(&tb, &o))
			return;
		a = &tb.s[0];
		b = &tb.s[1];
		pi = a->sq.pi;
		a->sq.pi += ssq_prep_send(&a->sq, pi, MLX5_OPCODE_SEND, a->iova, a->key,
		                          16, 0, SSQ_WQE_SIGNALED);
		emu_tb_ring(&tb, 0, pi);
		emu_process(tb.dev, 16); /* the first attempt: RNR NAK */
		if (retries[t] > 0 && retries[t] < 7) {
			int fast;

			/* Inside the 0.64 ms timer: no retry is spent, no CQE. */
			for (fast = 0; fast < 50; fast++)
				emu_process(tb.dev, 16);
			CHECK(ssq_cq_poll(&a->scq_v, &c, 1) == 0,
			      "rnr_retry %u: retries spent inside the RNR timer",
			      retries[t]);
		}
		if (ssq_cq_poll(&a->scq_v, &c, 1) == 1)
			got = 1;
		for (pass = 2; pass <= 20 && got < 0; pass++) {
			usleep(1000); /* past the RNR NAK timer */
			emu_process(tb.dev, 16);
			if (ssq_cq_poll(&a->scq_v, &c, 1) == 1)
				got = pass;
		}
		if (retries[t] == 7) {
			struct ibv_sge rs = { b->iova, 64, b->key };

			CHECK(got < 0,
			      "rnr_retry 7: no error after 20 passes (got one at %d)",
			      got);
			/* A receive arrives: the SEND goes through. */
			ssq_rq_post_recv(&b->rq, &rs, 1);
			ssq_rq_ring(&b->rq);
			usleep(1000); /* the retry comes after the RNR NAK timer */
			CHECK(emu_tb_poll(&tb, &a->scq_v, &c, 1) == 1 &&
			          c.status == IBV_WC_SUCCESS,
			      "rnr_retry 7: SEND completes once a receive is posted");
		} else {
			CHECK(got == retries[t] + 1,
			      "rnr_retry %u: error on pass %d, want %d", retries[t], got,
			      retries[t] + 1);
			CHECK(c.syndrome == MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR &&
			          c.wqe_counter == (uint16_t)pi &&
			          c.status == IBV_WC_RNR_RETRY_EXC_ERR,
			      "rnr_retry %u: syndrome 0x%x", retries[t], c.syndrome);
			CHECK(emu_qp_state(b->qp) == IBV_QPS_RTS,
			      "RNR leaves the responder be");
		}
		emu_tb_fini(&tb);
	}
}

/* A receive WQE too small: LOCAL_LENGTH_ERR at the responder, which goes
 * to ERR and flushes its other receives; the requester sees the NAK. */
static void test_recv_too_small(void)
{
	struct emu_tb tb;
	struct emu_tb_side *a, *b;
	uint32_t pi;
	int k;

	if (setup(&tb, NULL))
		return;
	a = &tb.s[0];
	b = &tb.s[1];
	for (k = 0; k < 3; k++) {
		struct ibv_sge rs = { b->iova + 0x100 * k, 32, b->key };

		ssq_rq_post_recv(&b->rq, &rs, 1);
	}
	ssq_rq_ring(&b->rq);
	pi = a->sq.pi;
	a->sq.pi +=
	    ssq_prep_send(&a->sq, pi, MLX5_OPCODE_SEND, a->iova, a->key, 64, 0, 0);
	emu_tb_ring(&tb, 0, pi);
	expect_err(&tb, &b->rcq_v, MLX5_CQE_RESP_ERR, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR,
	           0, 0, b->qpn, "recv too small: responder");
	expect_err(&tb, &b->rcq_v, MLX5_CQE_RESP_ERR, MLX5_CQE_SYNDROME_WR_FLUSH_ERR, 1,
	           0, b->qpn, "recv flush 1");
	expect_err(&tb, &b->rcq_v, MLX5_CQE_RESP_ERR, MLX5_CQE_SYNDROME_WR_FLUSH_ERR, 2,
	           0, b->qpn, "recv flush 2");
	expect_err(&tb, &a->scq_v, MLX5_CQE_REQ_ERR,
	           MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, (uint16_t)pi, MLX5_OPCODE_SEND,
	           a->qpn, "recv too small: requester");
	CHECK(emu_qp_state(b->qp) == IBV_QPS_ERR, "responder in ERR");
	CHECK(cq_empty(&tb, &b->rcq_v), "no more receive CQEs");
	emu_tb_fini(&tb);
}

/* Doorbell record backwards or past the ring, or a UAR doorbell of another
 * QP or beyond the DBR: device error, QP to ERR, a message with the WQE on
 * stderr, and no CQE (nothing can be trusted). */
static void test_bad_dbr(void)
{
	static const char *const want[] = { "moved backwards", "past consumer",
		                            "UAR doorbell carries QPN",
		                            "UAR doorbell names WQE index 7" };
	int which;

	for (which = 0; which < 4; which++) {
		struct emu_tb_opts o = { .sq_cnt = 16 };
		struct emu_tb tb;
		struct emu_tb_side *a;
		struct mlx5_wqe_ctrl_seg fake;
		char path[] = "/tmp/ssq_emu_errXXXXXX", log[4096];
		int fd, saved, k;
		ssize_t len;

		if (setup(&tb, &o))
			return;
		a = &tb.s[0];
		for (k = 0; k < 4; k++)
			a->sq.pi += ssq_prep_nop(&a->sq, a->sq.pi, 0);
		emu_tb_ring(&tb, 0, a->sq.pi - 1);
		CHECK(emu_process(tb.dev, 64) == 4, "4 NOPs executed");
		a->sq.pi += ssq_prep_nop(&a->sq, a->sq.pi, SSQ_WQE_SIGNALED);
		fd = mkstemp(path);
		saved = dup(2);
		dup2(fd, 2);
		switch (which) {
		/* A bad DBR is found when a doorbell wakes the device. */
		case 0: /* backwards: 2 after 4 */
			ssq_sq_ring_db(&a->sq, 2, ssq_sq_wqebb(&a->sq, 4));
			break;
		case 1: /* too far: 4 + 17 on a 16-WQEBB ring */
			ssq_sq_ring_db(&a->sq, 4 + 17, ssq_sq_wqebb(&a->sq, 4));
			break;
		case 2: /* the doorbell of another QP through this one's UAR */
			ssq_wqe_set_ctrl(&fake, 4, MLX5_OPCODE_NOP, a->qpn + 1, 1, 0, 0);
			ssq_sq_ring_db(&a->sq, a->sq.pi, &fake);
			break;
		case 3: /* a doorbell naming a WQE the DBR does not post */
			ssq_wqe_set_ctrl(&fake, 7, MLX5_OPCODE_NOP, a->qpn, 1, 0, 0);
			ssq_sq_ring_db(&a->sq, a->sq.pi, &fake);
			break;
		}
		emu_process(tb.dev, 64);
		fflush(stderr);
		dup2(saved, 2);
		close(saved);
		len = pread(fd, log, sizeof(log) - 1, 0);
		close(fd);
		unlink(path);
		log[len > 0 ? len : 0] = '\0';
		CHECK(strstr(log, want[which]) != NULL, "device error message '%s': %s",
		      want[which], log);
		CHECK(strstr(log, "ctrl") != NULL && strstr(log, "wqe_index=4") != NULL,
		      "the WQE at the consumer is dumped: %s", log);
		CHECK(emu_dev_errors(tb.dev) == 1, "one device error, not %u",
		      emu_dev_errors(tb.dev));
		CHECK(emu_qp_state(a->qp) == IBV_QPS_ERR, "QP in ERR");
		CHECK(cq_empty(&tb, &a->scq_v), "no CQE from a bad doorbell");
		emu_tb_fini(&tb);
	}
}

/* A CQ of 4 given 6 signaled NOPs without a poll: overrun. */
static void test_cq_overrun(void)
{
	struct emu_tb_opts o = { .cq_cnt = 4 };
	struct emu_tb tb;
	struct emu_tb_side *a;
	struct ssq_cqe c[8];
	int k, n;

	if (setup(&tb, &o))
		return;
	a = &tb.s[0];
	CHECK(emu_cq_error(a->scq) == 0, "fresh CQ sound");
	for (k = 0; k < 6; k++)
		a->sq.pi += ssq_prep_nop(&a->sq, a->sq.pi, SSQ_WQE_SIGNALED);
	emu_tb_ring(&tb, 0, a->sq.pi - 1);
	emu_process(tb.dev, 64);
	CHECK(emu_cq_error(a->scq) == -EOVERFLOW, "overrun reported: %d",
	      emu_cq_error(a->scq));
	CHECK(emu_qp_state(a->qp) == IBV_QPS_ERR, "QP of the CQ in ERR");
	n = ssq_cq_poll(&a->scq_v, c, 8);
	CHECK(n == 4, "the 4 CQEs before the overrun, got %d", n);
	for (k = 0; k < n; k++)
		CHECK(c[k].opcode == MLX5_CQE_REQ && c[k].wqe_counter == k, "CQE %d", k);
	/* Room again does not revive an overrun CQ. */
	emu_process(tb.dev, 64);
	CHECK(ssq_cq_poll(&a->scq_v, c, 8) == 0, "nothing after the overrun");

	/* Polled in time, the same ring never overruns. */
	emu_tb_fini(&tb);
	if (setup(&tb, &o))
		return;
	a = &tb.s[0];
	for (k = 0, n = 0; k < 40; k++) {
		a->sq.pi += ssq_prep_nop(&a->sq, a->sq.pi, SSQ_WQE_SIGNALED);
		emu_tb_ring(&tb, 0, a->sq.pi - 1);
		n += emu_tb_poll(&tb, &a->scq_v, c, 1);
	}
	CHECK(n == 40 && emu_cq_error(a->scq) == 0, "40 CQEs through a 4-CQE ring: %d",
	      n);
	emu_tb_fini(&tb);
}

/* After an error, RESET -> RTS brings the QP back, counters from 0. */
static void test_recover(void)
{
	struct emu_tb tb;
	struct emu_tb_side *a, *b;
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_RESET };
	struct ssq_cqe c;

	if (setup(&tb, NULL))
		return;
	a = &tb.s[0];
	b = &tb.s[1];
	a->sq.pi +=
	    ssq_prep_rdma_write(&a->sq, 0, a->iova, 0xdead00, 8, b->iova, b->key, 0);
	emu_tb_ring(&tb, 0, 0);
	CHECK(emu_tb_poll(&tb, &a->scq_v, &c, 1) == 1 &&
	          c.syndrome == MLX5_CQE_SYNDROME_LOCAL_PROT_ERR,
	      "error first");
	CHECK(emu_modify_qp(a->qp, &at, IBV_QP_STATE) == 0, "to RESET");
	CHECK(a->sq.dbrec[0] == 0, "RESET zeroes the send DBR");
	CHECK(emu_tb_connect_qp(a->qp, 1, b->qpn, tb.o.qp_access, 0) == 0, "back to RTS");
	a->sq.pi = 0;
	a->sq.pi += ssq_prep_rdma_write(&a->sq, 0, a->iova, a->key, 8, b->iova, b->key,
	                                SSQ_WQE_SIGNALED);
	emu_tb_ring(&tb, 0, 0);
	CHECK(emu_tb_poll(&tb, &a->scq_v, &c, 1) == 1 && c.status == IBV_WC_SUCCESS &&
	          c.wqe_counter == 0,
	      "works again from index 0: status %d", c.status);
	emu_tb_fini(&tb);
}

int main(void)
{
	test_local_qp_op();
	test_keys();
	test_rnr();
	test_recv_too_small();
	test_bad_dbr();
	test_cq_overrun();
	test_recover();
	return test_exit("emu_errors");
}
