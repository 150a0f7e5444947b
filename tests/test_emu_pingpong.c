/* SPDX-License-Identifier: MIT */
/*
 * rc_pingpong on the emulated device: two RC QPs on its two ports move real
 * data with every RC opcode, with WQEs from ssq's builders and from
 * mlx5dv.h's own helpers, and the CQEs carry what a ConnectX puts there.
 */
#include "helpers.h"
#include "emu/testbed_pvt.h"

static int poll1(struct emu_tb *tb, struct ssq_cq *cq, struct ssq_cqe *c)
{
	return emu_tb_poll(tb, cq, c, 1);
}

/* Nothing more is waiting on @cq. */
static int cq_empty(struct emu_tb *tb, struct ssq_cq *cq)
{
	struct ssq_cqe c;

	emu_process(tb->dev, 1024);
	return ssq_cq_poll(cq, &c, 1) == 0;
}

static void post_recvs(struct emu_tb *tb, int side, int n, uint32_t off, uint32_t len)
{
	struct emu_tb_side *s = &tb->s[side];
	int i;

	for (i = 0; i < n; i++) {
		struct ibv_sge sge = { s->iova + off + (uint64_t)i * len, len, s->key };

		CHECK(ssq_rq_post_recv(&s->rq, &sge, 1) == 0, "post recv %d", i);
	}
	ssq_rq_ring(&s->rq);
}

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

static void check_req(struct ssq_cqe *c, uint16_t idx, uint32_t qpn, uint32_t bytes,
                      const char *what)
{
	CHECK(c->opcode == MLX5_CQE_REQ, "%s: opcode %u", what, c->opcode);
	CHECK(c->status == IBV_WC_SUCCESS, "%s: status %d", what, c->status);
	CHECK(c->wqe_counter == idx, "%s: wqe_counter %u, want %u", what, c->wqe_counter,
	      idx);
	CHECK(c->qpn == qpn, "%s: qpn 0x%x, want 0x%x", what, c->qpn, qpn);
	CHECK(c->byte_len == bytes, "%s: byte_cnt %u, want %u", what, c->byte_len, bytes);
}

static void check_resp(struct ssq_cqe *c, uint8_t op, uint16_t idx, uint32_t qpn,
                       uint32_t bytes, __be32 imm, const char *what)
{
	CHECK(c->opcode == op, "%s: opcode %u, want %u", what, c->opcode, op);
	CHECK(c->status == IBV_WC_SUCCESS, "%s: status %d", what, c->status);
	CHECK(c->wqe_counter == idx, "%s: wqe_counter %u, want %u", what, c->wqe_counter,
	      idx);
	CHECK(c->qpn == qpn, "%s: qpn 0x%x, want 0x%x", what, c->qpn, qpn);
	CHECK(c->byte_len == bytes, "%s: byte_cnt %u, want %u", what, c->byte_len, bytes);
	CHECK(c->imm == imm, "%s: imm 0x%x, want 0x%x", what, be32toh(c->imm),
	      be32toh(imm));
}

/* Every opcode once, side 0 -> side 1, each checked at both ends. */
static void test_opcodes(void)
{
	struct emu_tb tb;
	struct emu_tb_side *a, *b;
	struct ssq_cqe c;
	uint32_t pi;
	uint64_t v;
	int ret;

	ret = emu_tb_init(&tb, NULL);
	CHECK(ret == 0, "testbed: %d", ret);
	if (ret)
		return;
	a = &tb.s[0];
	b = &tb.s[1];
	CHECK(a->qpn != b->qpn, "distinct QPNs");
	post_recvs(&tb, 1, 8, 0x1000, 256);
	fill(a->mem, 4096, 1);

	/* SEND, ssq_prep_send. */
	pi = a->sq.pi;
	a->sq.pi += ssq_prep_send(&a->sq, pi, MLX5_OPCODE_SEND, a->iova + 0, a->key, 100,
	                          0, SSQ_WQE_SIGNALED);
	emu_tb_ring(&tb, 0, pi);
	CHECK(poll1(&tb, &a->scq_v, &c) == 1, "SEND: requester CQE");
	check_req(&c, 0, a->qpn, 0, "SEND req");
	CHECK(poll1(&tb, &b->rcq_v, &c) == 1, "SEND: responder CQE");
	check_resp(&c, MLX5_CQE_RESP_SEND, 0, b->qpn, 100, 0, "SEND resp");
	CHECK(!memcmp(b->mem + 0x1000, a->mem, 100), "SEND: bytes");

	/* SEND_IMM, ssq_wqe_build, two inline SGEs (host pointers). */
	{
		struct ibv_sge sg[2] = { { (uintptr_t)(a->mem + 200), 30, 0 },
			                 { (uintptr_t)(a->mem + 300), 50, 0 } };
		struct ssq_wr wr = { .opcode = MLX5_OPCODE_SEND_IMM,
			             .flags = SSQ_WQE_SIGNALED,
			             .inline_data = 1,
			             .imm = htobe32(0x12345678),
			             .num_sge = 2,
			             .sg_list = sg };

		pi = a->sq.pi;
		ret = ssq_wqe_build(&a->sq, pi, &wr);
		CHECK(ret == 2, "inline SEND_IMM WQEBBs %d", ret);
		a->sq.pi += ret;
		emu_tb_ring(&tb, 0, pi);
		CHECK(poll1(&tb, &a->scq_v, &c) == 1, "SEND_IMM: requester CQE");
		check_req(&c, (uint16_t)pi, a->qpn, 0, "SEND_IMM req");
		CHECK(poll1(&tb, &b->rcq_v, &c) == 1, "SEND_IMM: responder CQE");
		check_resp(&c, MLX5_CQE_RESP_SEND_IMM, 1, b->qpn, 80, htobe32(0x12345678),
		           "SEND_IMM resp");
		CHECK(!memcmp(b->mem + 0x1100, a->mem + 200, 30) &&
		          !memcmp(b->mem + 0x1100 + 30, a->mem + 300, 50),
		      "SEND_IMM: bytes");
	}

	/* RDMA_WRITE with mlx5dv.h's helpers and a hand-made raddr segment. */
	{
		struct mlx5_wqe_ctrl_seg *ctrl = ssq_sq_wqebb(&a->sq, a->sq.pi);
		struct mlx5_wqe_raddr_seg *r = (struct mlx5_wqe_raddr_seg *)(ctrl + 1);

		pi = a->sq.pi;
		mlx5dv_set_ctrl_seg(ctrl, (uint16_t)pi, MLX5_OPCODE_RDMA_WRITE, 0, a->qpn,
		                    MLX5_WQE_CTRL_CQ_UPDATE, 3, 0, 0);
		r->raddr = htobe64(b->iova + 0x4000);
		r->rkey = htobe32(b->key);
		r->reserved = 0;
		mlx5dv_set_data_seg((struct mlx5_wqe_data_seg *)(r + 1), 1000, a->key,
		                    a->iova + 1024);
		a->sq.pi++;
		emu_tb_ring(&tb, 0, pi);
		CHECK(poll1(&tb, &a->scq_v, &c) == 1, "WRITE (mlx5dv): CQE");
		check_req(&c, (uint16_t)pi, a->qpn, 0, "WRITE (mlx5dv)");
		CHECK(!memcmp(b->mem + 0x4000, a->mem + 1024, 1000), "WRITE: bytes");
		CHECK(cq_empty(&tb, &b->rcq_v), "WRITE: no responder CQE");
	}

	/* SEND_IMM and ATOMIC_FA with mlx5dv.h's helpers and structs only. */
	{
		struct mlx5_wqe_ctrl_seg *ctrl = ssq_sq_wqebb(&a->sq, a->sq.pi);
		struct mlx5_wqe_raddr_seg *r;
		struct mlx5_wqe_atomic_seg *at;

		pi = a->sq.pi;
		mlx5dv_set_ctrl_seg(ctrl, (uint16_t)pi, MLX5_OPCODE_SEND_IMM, 0, a->qpn,
		                    MLX5_WQE_CTRL_CQ_UPDATE, 2, 0, htobe32(0x0badcafe));
		mlx5dv_set_data_seg((struct mlx5_wqe_data_seg *)(ctrl + 1), 48, a->key,
		                    a->iova + 512);
		a->sq.pi++;
		memset(b->mem + 0x7100, 0, 8);
		b->mem[0x7100] = 40;
		ctrl = ssq_sq_wqebb(&a->sq, a->sq.pi);
		r = (struct mlx5_wqe_raddr_seg *)(ctrl + 1);
		at = (struct mlx5_wqe_atomic_seg *)(r + 1);
		mlx5dv_set_ctrl_seg(ctrl, (uint16_t)a->sq.pi, MLX5_OPCODE_ATOMIC_FA, 0,
		                    a->qpn, MLX5_WQE_CTRL_CQ_UPDATE, 4, 0, 0);
		r->raddr = htobe64(b->iova + 0x7100);
		r->rkey = htobe32(b->key);
		r->reserved = 0;
		at->swap_add = htobe64(2);
		at->compare = 0;
		mlx5dv_set_data_seg((struct mlx5_wqe_data_seg *)(at + 1), 8, a->key,
		                    a->iova + 0x9100);
		a->sq.pi++;
		emu_tb_ring(&tb, 0, a->sq.pi - 1);
		CHECK(poll1(&tb, &a->scq_v, &c) == 1, "SEND_IMM (mlx5dv): CQE");
		check_req(&c, (uint16_t)pi, a->qpn, 0, "SEND_IMM (mlx5dv)");
		CHECK(poll1(&tb, &a->scq_v, &c) == 1, "ATOMIC_FA (mlx5dv): CQE");
		check_req(&c, (uint16_t)(pi + 1), a->qpn, 8, "ATOMIC_FA (mlx5dv)");
		CHECK(poll1(&tb, &b->rcq_v, &c) == 1, "SEND_IMM (mlx5dv): responder CQE");
		check_resp(&c, MLX5_CQE_RESP_SEND_IMM, 2, b->qpn, 48, htobe32(0x0badcafe),
		           "SEND_IMM (mlx5dv) resp");
		CHECK(!memcmp(b->mem + 0x1200, a->mem + 512, 48),
		      "SEND_IMM (mlx5dv): bytes");
		memcpy(&v, b->mem + 0x7100, 8);
		CHECK(v == 42, "ATOMIC_FA (mlx5dv): target %llu", (unsigned long long)v);
		memcpy(&v, a->mem + 0x9100, 8);
		CHECK(v == 40, "ATOMIC_FA (mlx5dv): old value %llu (host order)",
		      (unsigned long long)v);
	}

	/* RDMA_WRITE_IMM consumes a receive WQE; no data in it. */
	pi = a->sq.pi;
	a->sq.pi += ssq_prep_rdma_write_imm(&a->sq, pi, a->iova + 2048, a->key, 64,
	                                    b->iova + 0x5000, b->key, htobe32(0xabcdef01),
	                                    SSQ_WQE_SIGNALED);
	emu_tb_ring(&tb, 0, pi);
	CHECK(poll1(&tb, &a->scq_v, &c) == 1, "WRITE_IMM: requester CQE");
	check_req(&c, (uint16_t)pi, a->qpn, 0, "WRITE_IMM req");
	CHECK(poll1(&tb, &b->rcq_v, &c) == 1, "WRITE_IMM: responder CQE");
	check_resp(&c, MLX5_CQE_RESP_WR_IMM, 3, b->qpn, 64, htobe32(0xabcdef01),
	           "WRITE_IMM");
	CHECK(!memcmp(b->mem + 0x5000, a->mem + 2048, 64), "WRITE_IMM: bytes");

	/* RDMA_READ: byte_cnt in the requester CQE. */
	fill(b->mem + 0x6000, 512, 99);
	pi = a->sq.pi;
	a->sq.pi += ssq_prep_rdma_read(&a->sq, pi, a->iova + 0x8000, a->key, 512,
	                               b->iova + 0x6000, b->key, SSQ_WQE_SIGNALED);
	emu_tb_ring(&tb, 0, pi);
	CHECK(poll1(&tb, &a->scq_v, &c) == 1, "READ: CQE");
	check_req(&c, (uint16_t)pi, a->qpn, 512, "READ");
	CHECK(!memcmp(a->mem + 0x8000, b->mem + 0x6000, 512), "READ: bytes");

	/* ATOMIC_FA then ATOMIC_CS (hit and miss); the target is a native
	 * integer and the old values land in host order (test_emu_atomic). */
	v = 100;
	memcpy(b->mem + 0x7000, &v, 8);
	pi = a->sq.pi;
	a->sq.pi +=
	    ssq_prep_atomic(&a->sq, pi, MLX5_OPCODE_ATOMIC_FA, a->iova + 0x9000, a->key,
	                    b->iova + 0x7000, b->key, 5, 0, SSQ_WQE_SIGNALED);
	a->sq.pi +=
	    ssq_prep_atomic(&a->sq, a->sq.pi, MLX5_OPCODE_ATOMIC_CS, a->iova + 0x9008,
	                    a->key, b->iova + 0x7000, b->key, 105, 7, SSQ_WQE_SIGNALED);
	a->sq.pi +=
	    ssq_prep_atomic(&a->sq, a->sq.pi, MLX5_OPCODE_ATOMIC_CS, a->iova + 0x9010,
	                    a->key, b->iova + 0x7000, b->key, 1, 9, SSQ_WQE_SIGNALED);
	emu_tb_ring(&tb, 0, a->sq.pi - 1);
	CHECK(poll1(&tb, &a->scq_v, &c) == 1, "FA: CQE");
	check_req(&c, (uint16_t)pi, a->qpn, 8, "ATOMIC_FA");
	CHECK(poll1(&tb, &a->scq_v, &c) == 1, "CS: CQE");
	check_req(&c, (uint16_t)(pi + 1), a->qpn, 8, "ATOMIC_CS");
	CHECK(poll1(&tb, &a->scq_v, &c) == 1, "CS miss: CQE");
	check_req(&c, (uint16_t)(pi + 2), a->qpn, 8, "ATOMIC_CS miss");
	memcpy(&v, a->mem + 0x9000, 8);
	CHECK(v == 100, "FA old value %llu", (unsigned long long)v);
	memcpy(&v, a->mem + 0x9008, 8);
	CHECK(v == 105, "CS old value %llu", (unsigned long long)v);
	memcpy(&v, a->mem + 0x9010, 8);
	CHECK(v == 7, "CS miss old value %llu", (unsigned long long)v);
	memcpy(&v, b->mem + 0x7000, 8);
	CHECK(v == 7, "target after FA+CS %llu, want 7", (unsigned long long)v);

	/* Unsignaled WRITEs covered by one signaled: one CQE, its index. */
	{
		int k;

		for (k = 0; k < 4; k++)
			a->sq.pi += ssq_prep_rdma_write(
			    &a->sq, a->sq.pi, a->iova + 0x100 * k, a->key, 0x100,
			    b->iova + 0xa000 + 0x100 * k, b->key,
			    k == 3 ? SSQ_WQE_SIGNALED : 0);
		emu_tb_ring(&tb, 0, a->sq.pi - 1);
		CHECK(poll1(&tb, &a->scq_v, &c) == 1, "batch: CQE");
		check_req(&c, (uint16_t)(a->sq.pi - 1), a->qpn, 0, "batch");
		CHECK(cq_empty(&tb, &a->scq_v), "batch: only the signaled one");
		CHECK(!memcmp(b->mem + 0xa000, a->mem, 0x400), "batch: bytes");
	}

	/* Reverse direction: 3-SGE SEND into a 2-SGE receive. */
	{
		struct ibv_sge rs[2] = { { a->iova + 0xc000, 40, a->key },
			                 { a->iova + 0xd000, 100, a->key } };
		struct ibv_sge ss[3] = { { b->iova + 0, 20, b->key },
			                 { b->iova + 100, 30, b->key },
			                 { b->iova + 200, 40, b->key } };
		struct ssq_wr wr = { .opcode = MLX5_OPCODE_SEND,
			             .flags = SSQ_WQE_SIGNALED,
			             .num_sge = 3,
			             .sg_list = ss };
		uint8_t want[90];

		CHECK(ssq_rq_post_recv(&a->rq, rs, 2) == 0, "post 2-SGE recv");
		ssq_rq_ring(&a->rq);
		fill(b->mem, 300, 42);
		memcpy(want, b->mem, 20);
		memcpy(want + 20, b->mem + 100, 30);
		memcpy(want + 50, b->mem + 200, 40);
		pi = b->sq.pi;
		ret = ssq_wqe_build(&b->sq, pi, &wr);
		CHECK(ret == 1, "3-SGE SEND WQEBBs %d", ret);
		b->sq.pi += ret;
		/* BlueFlame doorbell this time. */
		ssq_sq_ring_bf(&b->sq, pi, (unsigned)ret);
		CHECK(poll1(&tb, &b->scq_v, &c) == 1, "reverse SEND: CQE");
		check_req(&c, (uint16_t)pi, b->qpn, 0, "reverse SEND");
		CHECK(poll1(&tb, &a->rcq_v, &c) == 1, "reverse SEND: responder CQE");
		check_resp(&c, MLX5_CQE_RESP_SEND, 0, a->qpn, 90, 0, "reverse SEND resp");
		CHECK(!memcmp(a->mem + 0xc000, want, 40) &&
		          !memcmp(a->mem + 0xd000, want + 40, 50),
		      "reverse SEND: scattered bytes");
	}
	emu_tb_fini(&tb);
}

/* Multi-WQEBB WQEs wrapping a 16-WQEBB ring, many times over. */
static void test_wrap(void)
{
	struct emu_tb_opts o = { .sq_cnt = 16, .rq_cnt = 16 };
	struct emu_tb tb;
	struct emu_tb_side *a, *b;
	struct ssq_cqe c;
	int ret, k, bad = 0;

	ret = emu_tb_init(&tb, &o);
	CHECK(ret == 0, "testbed: %d", ret);
	if (ret)
		return;
	a = &tb.s[0];
	b = &tb.s[1];
	for (k = 0; k < 40; k++) {
		struct ibv_sge sg = { (uintptr_t)(a->mem + k), 200, 0 };
		struct ssq_wr wr = { .opcode = MLX5_OPCODE_SEND,
			             .flags = SSQ_WQE_SIGNALED,
			             .inline_data = 1,
			             .num_sge = 1,
			             .sg_list = &sg };
		struct ibv_sge rs = { b->iova + 0x1000, 256, b->key };
		uint32_t pi = a->sq.pi;

		fill(a->mem + k, 200, (uint8_t)k);
		ssq_rq_post_recv(&b->rq, &rs, 1);
		ssq_rq_ring(&b->rq);
		ret = ssq_wqe_build(&a->sq, pi, &wr);
		if (ret != 4) {
			bad++;
			break;
		}
		a->sq.pi += ret;
		emu_tb_ring(&tb, 0, pi);
		if (poll1(&tb, &a->scq_v, &c) != 1 || c.status != IBV_WC_SUCCESS ||
		    c.wqe_counter != (uint16_t)pi)
			bad++;
		if (poll1(&tb, &b->rcq_v, &c) != 1 || c.byte_len != 200 ||
		    memcmp(b->mem + 0x1000, a->mem + k, 200))
			bad++;
	}
	CHECK(bad == 0, "wrapped inline SENDs: %d bad", bad);
	emu_tb_fini(&tb);
}

/* SRQ-backed receiver: wqe_counter is the SRQ WQE index; WQEs recycle
 * through the free list many times. */
static void test_srq(void)
{
	struct emu_tb_opts o = { .srq = 1 };
	struct emu_tb tb;
	struct emu_tb_side *a, *b;
	struct ssq_cqe c;
	int ret, k, bad = 0;

	ret = emu_tb_init(&tb, &o);
	CHECK(ret == 0, "testbed: %d", ret);
	if (ret)
		return;
	a = &tb.s[0];
	b = &tb.s[1];
	for (k = 0; k < 200; k++) {
		struct ibv_sge rs = { b->iova + 0x100 * (k % 32), 0x100, b->key };
		int idx = ssq_srq_post_recv(&tb.srq_v, &rs, 1);
		uint32_t pi = a->sq.pi;

		if (idx < 0) {
			bad++;
			break;
		}
		ssq_srq_ring(&tb.srq_v);
		fill(a->mem, 64, (uint8_t)k);
		a->sq.pi += ssq_prep_send(
		    &a->sq, pi, k & 1 ? MLX5_OPCODE_SEND_IMM : MLX5_OPCODE_SEND, a->iova,
		    a->key, 64, htobe32((uint32_t)k), k % 5 == 4 ? SSQ_WQE_SIGNALED : 0);
		emu_tb_ring(&tb, 0, pi);
		if (poll1(&tb, &b->rcq_v, &c) != 1) {
			bad++;
			break;
		}
		if (c.wqe_counter != idx || c.qpn != b->qpn || c.byte_len != 64 ||
		    c.opcode != (k & 1 ? MLX5_CQE_RESP_SEND_IMM : MLX5_CQE_RESP_SEND) ||
		    (k & 1 && c.imm != htobe32((uint32_t)k)) ||
		    memcmp(b->mem + 0x100 * (k % 32), a->mem, 64))
			bad++;
		ssq_srq_free_wqe(&tb.srq_v, c.wqe_counter);
		if (k % 5 == 4 &&
		    (poll1(&tb, &a->scq_v, &c) != 1 || c.wqe_counter != (uint16_t)pi))
			bad++;
	}
	CHECK(bad == 0, "SRQ receives: %d bad", bad);
	CHECK(cq_empty(&tb, &a->scq_v), "SRQ: no extra requester CQEs");
	emu_tb_fini(&tb);
}

int main(void)
{
	test_opcodes();
	test_wrap();
	test_srq();
	return test_exit("emu_pingpong");
}
