/* SPDX-License-Identifier: MIT */
/*
 * The emulated device shares itself between QPs as a ConnectX's send
 * scheduler does: a long RDMA WRITE or READ moves EMU_SEG_BYTES per turn
 * of its QP, so a small WRITE on another QP of the same device completes
 * after a few segments, not after the whole long message (issue 28, item
 * 4: a 512 MiB WRITE held a bystander's 64-byte WRITE for 4.6 s). Each
 * step is one emu_process() call, so what is checked is the order of
 * events, never a time: the bystander's CQE comes while the long message
 * is still half-moved (its CQE absent, its tail not written), the long
 * message still lands whole and completes, a WQE behind it on its own QP
 * waits for it, a READ moves the same way, and a QP sent to ERR mid-message
 * flushes it and, reset, starts its next message from byte 0.
 */
#include "helpers.h"
#include "emu/emu_pvt.h"
#include "emu/testbed_pvt.h"

#define MEM_LEN   (8u << 20)
#define BIG_LEN   (4u << 20)
#define SMALL_OFF (6u << 20) /* outside both sides' long-message ranges */
#define SMALL_LEN 64u
#define SEGS      (BIG_LEN / EMU_SEG_BYTES)

static void fill(uint8_t *p, size_t len, unsigned seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 7 + seed + (i >> 12));
}

static int post_write(struct emu_tb *tb, int i, uint64_t loff, uint64_t roff,
                      uint32_t len)
{
	struct emu_tb_side *s = &tb->s[i], *o = &tb->s[!i];
	uint32_t pi = s->sq.pi;
	int n = ssq_prep_rdma_write(&s->sq, pi, s->iova + loff, s->key, len,
	                            o->iova + roff, o->key, SSQ_WQE_SIGNALED);

	if (n <= 0)
		return n;
	s->sq.pi += (uint32_t)n;
	emu_tb_ring(tb, i, pi);
	return 0;
}

/* One device step, then side @i's next CQE if one came: 1, else 0. */
static int step(struct emu_tb *tb, int i, struct ssq_cqe *c)
{
	emu_process(tb->dev, 1024);
	return ssq_cq_poll(&tb->s[i].scq_v, c, 1);
}

/* Steps until side @i's next CQE; 1, or 0 after more than a long message's worth. */
static int step_until(struct emu_tb *tb, int i, struct ssq_cqe *c)
{
	unsigned k;

	for (k = 0; k < 4 * SEGS; k++)
		if (step(tb, i, c))
			return 1;
	return 0;
}

static void test_bystander(void)
{
	struct emu_tb_opts o = { .mem_len = MEM_LEN };
	struct emu_tb tb;
	struct ssq_cqe c;
	unsigned k;
	int ret = emu_tb_init(&tb, &o), got = 0;

	CHECK(ret == 0, "testbed: %d", ret);
	if (ret)
		return;
	fill(tb.s[0].mem, BIG_LEN, 1);
	fill(tb.s[1].mem + SMALL_OFF, SMALL_LEN, 2);
	CHECK(post_write(&tb, 0, 0, 0, BIG_LEN) == 0, "post the long WRITE");
	CHECK(!step(&tb, 0, &c),
	      "the %u MiB WRITE completed in one device step: the device copies a "
	      "whole message at once",
	      BIG_LEN >> 20);
	CHECK(memcmp(tb.s[1].mem, tb.s[0].mem, EMU_SEG_BYTES) == 0,
	      "the long WRITE's first segment has not landed after its first turn");
	CHECK(tb.s[1].mem[BIG_LEN - 1] == 0, "the long WRITE's tail landed already");

	/* A bystander on the other QP of this device. */
	CHECK(post_write(&tb, 1, SMALL_OFF, SMALL_OFF, SMALL_LEN) == 0,
	      "post the small one");
	for (k = 0; k < 2 && !got; k++)
		got = step(&tb, 1, &c);
	CHECK(got && c.opcode == MLX5_CQE_REQ,
	      "the small WRITE on the other QP did not complete within 2 steps (%d, "
	      "opcode 0x%x)",
	      got, got ? c.opcode : 0);
	CHECK(memcmp(tb.s[0].mem + SMALL_OFF, tb.s[1].mem + SMALL_OFF, SMALL_LEN) == 0,
	      "the small WRITE's data did not land");
	CHECK(ssq_cq_poll(&tb.s[0].scq_v, &c, 1) == 0,
	      "the long WRITE completed before the bystander: no arbitration");
	CHECK(tb.s[1].mem[BIG_LEN - 1] == 0,
	      "the long WRITE was whole when the bystander completed");

	got = step_until(&tb, 0, &c);
	CHECK(got && c.opcode == MLX5_CQE_REQ && c.wqe_counter == 0,
	      "the long WRITE did not complete (%d, opcode 0x%x)", got,
	      got ? c.opcode : 0);
	CHECK(memcmp(tb.s[1].mem, tb.s[0].mem, BIG_LEN) == 0,
	      "the long WRITE's data differs at the far end");
	emu_tb_fini(&tb);
}

/* A WQE behind a long one on the same QP waits for it, as RC ordering says. */
static void test_same_qp_order(void)
{
	struct emu_tb_opts o = { .mem_len = MEM_LEN };
	struct emu_tb tb;
	struct ssq_cqe c;
	int ret = emu_tb_init(&tb, &o), got;

	CHECK(ret == 0, "testbed: %d", ret);
	if (ret)
		return;
	fill(tb.s[0].mem, MEM_LEN, 3);
	CHECK(post_write(&tb, 0, 0, 0, BIG_LEN) == 0, "post the long WRITE");
	CHECK(post_write(&tb, 0, SMALL_OFF, SMALL_OFF, SMALL_LEN) == 0, "post the small");
	CHECK(!step(&tb, 0, &c), "a CQE after the first step");
	CHECK(!step(&tb, 0, &c), "a CQE after the second step");
	CHECK(tb.s[1].mem[SMALL_OFF] == 0 && tb.s[1].mem[SMALL_OFF + 1] == 0,
	      "the WQE behind the long WRITE ran before it finished");
	got = step_until(&tb, 0, &c);
	CHECK(got && c.wqe_counter == 0, "first CQE: %d, wqe_counter %u", got,
	      got ? c.wqe_counter : 0);
	got = step_until(&tb, 0, &c);
	CHECK(got && c.opcode == MLX5_CQE_REQ && c.wqe_counter != 0,
	      "second CQE: %d, wqe_counter %u", got, got ? c.wqe_counter : 0);
	CHECK(memcmp(tb.s[1].mem, tb.s[0].mem, BIG_LEN) == 0 &&
	          memcmp(tb.s[1].mem + SMALL_OFF, tb.s[0].mem + SMALL_OFF, SMALL_LEN) ==
	              0,
	      "data differs after both WRITEs");
	emu_tb_fini(&tb);
}

/* A long READ moves by segments too and reports its whole length. */
static void test_read(void)
{
	struct emu_tb_opts o = { .mem_len = MEM_LEN };
	struct emu_tb tb;
	struct emu_tb_side *s;
	struct ssq_cqe c;
	uint32_t pi;
	int ret = emu_tb_init(&tb, &o), n, got;

	CHECK(ret == 0, "testbed: %d", ret);
	if (ret)
		return;
	s = &tb.s[0];
	fill(tb.s[1].mem, BIG_LEN, 4);
	pi = s->sq.pi;
	n = ssq_prep_rdma_read(&s->sq, pi, s->iova, s->key, BIG_LEN, tb.s[1].iova,
	                       tb.s[1].key, SSQ_WQE_SIGNALED);
	CHECK(n > 0, "prep READ: %d", n);
	if (n > 0) {
		s->sq.pi += (uint32_t)n;
		emu_tb_ring(&tb, 0, pi);
	}
	CHECK(!step(&tb, 0, &c), "the long READ completed in one device step");
	CHECK(s->mem[BIG_LEN - 1] == 0, "the long READ's tail landed after one step");
	got = step_until(&tb, 0, &c);
	CHECK(got && c.opcode == MLX5_CQE_REQ && c.byte_len == BIG_LEN,
	      "READ: %d, opcode 0x%x, byte_len %u", got, got ? c.opcode : 0,
	      got ? c.byte_len : 0);
	CHECK(memcmp(s->mem, tb.s[1].mem, BIG_LEN) == 0, "READ data differs");
	emu_tb_fini(&tb);
}

/* ERR mid-message flushes the WQE; after RESET the next message starts at byte 0. */
static void test_err_mid_message(void)
{
	struct emu_tb_opts o = { .mem_len = MEM_LEN };
	struct ibv_qp_attr a;
	struct emu_tb tb;
	struct ssq_cqe c;
	int ret = emu_tb_init(&tb, &o), got;

	CHECK(ret == 0, "testbed: %d", ret);
	if (ret)
		return;
	fill(tb.s[0].mem, MEM_LEN, 5);
	CHECK(post_write(&tb, 0, 0, 0, BIG_LEN) == 0, "post the long WRITE");
	CHECK(!step(&tb, 0, &c), "the long WRITE completed in one device step");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_ERR;
	CHECK(emu_modify_qp(tb.s[0].qp, &a, IBV_QP_STATE) == 0, "to ERR");
	got = step_until(&tb, 0, &c);
	CHECK(got && c.opcode == MLX5_CQE_REQ_ERR &&
	          c.syndrome == MLX5_CQE_SYNDROME_WR_FLUSH_ERR && c.wqe_counter == 0,
	      "the cut message: %d, opcode 0x%x syndrome 0x%x", got, got ? c.opcode : 0,
	      got ? c.syndrome : 0);
	a.qp_state = IBV_QPS_RESET;
	CHECK(emu_modify_qp(tb.s[0].qp, &a, IBV_QP_STATE) == 0, "to RESET");
	tb.s[0].sq.pi = 0;
	CHECK(emu_tb_connect_qp(tb.s[0].qp, 1, tb.s[1].qpn, tb.o.qp_access, 0) == 0,
	      "back to RTS");
	memset(tb.s[1].mem + SMALL_OFF, 0, SMALL_LEN);
	CHECK(post_write(&tb, 0, SMALL_OFF, SMALL_OFF, SMALL_LEN) == 0, "post the small");
	got = step_until(&tb, 0, &c);
	CHECK(got && c.opcode == MLX5_CQE_REQ, "after RESET: %d, opcode 0x%x", got,
	      got ? c.opcode : 0);
	CHECK(memcmp(tb.s[1].mem + SMALL_OFF, tb.s[0].mem + SMALL_OFF, SMALL_LEN) == 0,
	      "after RESET the small WRITE's data differs");
	emu_tb_fini(&tb);
}

int main(void)
{
	test_bystander();
	test_same_qp_order();
	test_read();
	test_err_mid_message();
	return test_exit("emu_arbitration");
}
