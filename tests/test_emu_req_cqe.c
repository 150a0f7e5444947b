/* SPDX-License-Identifier: MIT */
/*
 * A requester's successful CQE, read the way libmlx5 reads it: the WQE
 * opcode in sop_drop_qpn[31:24] (providers/mlx5/cq.c, handle_good_req:
 * be32toh(cqe->sop_drop_qpn) >> 24, which picks the work completion's
 * opcode and IMM flag), the byte count of an RDMA READ from byte_cnt (the
 * same function), and byte_cnt as the length of anything else read through
 * the extended CQ (mlx5_cq_read_wc_byte_len: 8 for atomics). Each RC
 * opcode, signaled, with a peer on this device and with one over the wire.
 */
#include "helpers.h"
#include "tb_flow.h"

enum { READ_LEN = 300, SEND_LEN = 48, WRITE_LEN = 100 };

/* What libmlx5's handle_good_req makes of a REQ CQE, as a verbs WC. */
struct lib_wc {
	int opcode; /* IBV_WC_*, or -1 for an opcode it leaves to wr_data */
	int with_imm;
	uint32_t byte_len; /* READ: byte_cnt; atomics: 8; else unset (0) */
	uint32_t qpn;
};

static void lib_decode(const struct mlx5_cqe64 *cqe, struct lib_wc *wc)
{
	memset(wc, 0, sizeof(*wc));
	wc->opcode = -1;
	wc->qpn = be32toh(cqe->sop_drop_qpn) & 0xffffff;
	switch (be32toh(cqe->sop_drop_qpn) >> 24) {
	case MLX5_OPCODE_RDMA_WRITE_IMM:
		wc->with_imm = 1;
		/* fall through */
	case MLX5_OPCODE_RDMA_WRITE:
		wc->opcode = IBV_WC_RDMA_WRITE;
		break;
	case MLX5_OPCODE_SEND_IMM:
		wc->with_imm = 1;
		/* fall through */
	case MLX5_OPCODE_SEND:
		wc->opcode = IBV_WC_SEND;
		break;
	case MLX5_OPCODE_RDMA_READ:
		wc->opcode = IBV_WC_RDMA_READ;
		wc->byte_len = be32toh(cqe->byte_cnt);
		break;
	case MLX5_OPCODE_ATOMIC_CS:
		wc->opcode = IBV_WC_COMP_SWAP;
		wc->byte_len = 8;
		break;
	case MLX5_OPCODE_ATOMIC_FA:
		wc->opcode = IBV_WC_FETCH_ADD;
		wc->byte_len = 8;
		break;
	}
}

struct expect {
	uint8_t wqe_opcode;
	int wc_opcode, with_imm;
	uint32_t byte_len;
	const char *name;
};

static const struct expect expected[] = {
	{ MLX5_OPCODE_RDMA_WRITE, IBV_WC_RDMA_WRITE, 0, 0, "RDMA_WRITE" },
	{ MLX5_OPCODE_RDMA_WRITE_IMM, IBV_WC_RDMA_WRITE, 1, 0, "RDMA_WRITE_IMM" },
	{ MLX5_OPCODE_SEND, IBV_WC_SEND, 0, 0, "SEND" },
	{ MLX5_OPCODE_SEND_IMM, IBV_WC_SEND, 1, 0, "SEND_IMM" },
	{ MLX5_OPCODE_RDMA_READ, IBV_WC_RDMA_READ, 0, READ_LEN, "RDMA_READ" },
	{ MLX5_OPCODE_ATOMIC_CS, IBV_WC_COMP_SWAP, 0, 8, "ATOMIC_CS" },
	{ MLX5_OPCODE_ATOMIC_FA, IBV_WC_FETCH_ADD, 0, 8, "ATOMIC_FA" },
	{ MLX5_OPCODE_NOP, -1, 0, 0, "NOP" },
};

#define NOPS (sizeof(expected) / sizeof(expected[0]))

/* Post one signaled WQE of each opcode from @a to @b; one doorbell. */
static void post_all(struct emu_tb_side *a, const struct emu_tb_side *b)
{
	uint32_t last = 0;
	unsigned i;

	for (i = 0; i < NOPS; i++) {
		uint32_t pi = a->sq.pi;
		int n = 0;

		switch (expected[i].wqe_opcode) {
		case MLX5_OPCODE_RDMA_WRITE:
			n = ssq_prep_rdma_write(&a->sq, pi, a->iova, a->key, WRITE_LEN,
			                        b->iova + 0x4000, b->key,
			                        SSQ_WQE_SIGNALED);
			break;
		case MLX5_OPCODE_RDMA_WRITE_IMM:
			n = ssq_prep_rdma_write_imm(&a->sq, pi, a->iova, a->key,
			                            WRITE_LEN, b->iova + 0x4000, b->key,
			                            htobe32(0x1234), SSQ_WQE_SIGNALED);
			break;
		case MLX5_OPCODE_SEND:
		case MLX5_OPCODE_SEND_IMM:
			n = ssq_prep_send(&a->sq, pi, expected[i].wqe_opcode, a->iova,
			                  a->key, SEND_LEN, htobe32(0x5678),
			                  SSQ_WQE_SIGNALED);
			break;
		case MLX5_OPCODE_RDMA_READ:
			n = ssq_prep_rdma_read(&a->sq, pi, a->iova + 0x2000, a->key,
			                       READ_LEN, b->iova + 0x4000, b->key,
			                       SSQ_WQE_SIGNALED);
			break;
		case MLX5_OPCODE_ATOMIC_CS:
		case MLX5_OPCODE_ATOMIC_FA:
			n = ssq_prep_atomic(
			    &a->sq, pi, expected[i].wqe_opcode, a->iova + 0x3000 + i * 8,
			    a->key, b->iova + 0x7000, b->key, 1, 0, SSQ_WQE_SIGNALED);
			break;
		default:
			n = ssq_prep_nop(&a->sq, pi, SSQ_WQE_SIGNALED);
			break;
		}
		CHECK(n > 0, "prep %s: %d", expected[i].name, n);
		if (n <= 0)
			return;
		last = pi;
		a->sq.pi += (uint32_t)n;
	}
	ssq_sq_ring_db(&a->sq, a->sq.pi,
	               (const struct mlx5_wqe_ctrl_seg *)ssq_sq_wqebb(&a->sq, last));
}

/* The next raw CQE of @cq, copied out and consumed; runs @run between looks. */
static int next_raw(struct ssq_cq *cq, struct mlx5_cqe64 *out, void (*run)(void *),
                    void *arg)
{
	int tries;

	for (tries = 0; tries < 200000; tries++) {
		struct mlx5_cqe64 *cqe = ssq_cq_peek(cq);

		if (cqe) {
			memcpy(out, cqe, sizeof(*out));
			cq->ci++;
			ssq_cq_update_ci(cq);
			return 0;
		}
		run(arg);
	}
	return -1;
}

static void check_all(struct emu_tb_side *a, void (*run)(void *), void *arg,
                      const char *where)
{
	unsigned i;

	for (i = 0; i < NOPS; i++) {
		const struct expect *e = &expected[i];
		struct mlx5_cqe64 cqe;
		struct lib_wc wc;

		if (next_raw(&a->scq_v, &cqe, run, arg)) {
			CHECK(0, "%s %s: no CQE", where, e->name);
			return;
		}
		CHECK(mlx5dv_get_cqe_opcode(&cqe) == MLX5_CQE_REQ, "%s %s: CQE opcode %u",
		      where, e->name, mlx5dv_get_cqe_opcode(&cqe));
		lib_decode(&cqe, &wc);
		CHECK((be32toh(cqe.sop_drop_qpn) >> 24) == e->wqe_opcode,
		      "%s %s: sop_drop_qpn[31:24] 0x%02x, want the WQE opcode 0x%02x",
		      where, e->name, be32toh(cqe.sop_drop_qpn) >> 24, e->wqe_opcode);
		CHECK(wc.opcode == e->wc_opcode && wc.with_imm == e->with_imm,
		      "%s %s: libmlx5 would report wc opcode %d imm %d, want %d imm %d",
		      where, e->name, wc.opcode, wc.with_imm, e->wc_opcode, e->with_imm);
		CHECK(wc.byte_len == e->byte_len, "%s %s: libmlx5 byte_len %u, want %u",
		      where, e->name, wc.byte_len, e->byte_len);
		/* The extended CQ reads byte_cnt for every opcode. */
		CHECK(be32toh(cqe.byte_cnt) == e->byte_len, "%s %s: byte_cnt %u, want %u",
		      where, e->name, be32toh(cqe.byte_cnt), e->byte_len);
		CHECK(wc.qpn == a->qpn, "%s %s: qpn 0x%x, want 0x%x", where, e->name,
		      wc.qpn, a->qpn);
	}
}

static void post_recvs(struct emu_tb_side *s, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		struct ibv_sge sge = { s->iova + 0x8000 + (uint64_t)i * 256, 256,
			               s->key };

		CHECK(ssq_rq_post_recv(&s->rq, &sge, 1) == 0, "post recv %d", i);
	}
	ssq_rq_ring(&s->rq);
}

static void test_local(void)
{
	struct emu_tb tb;

	if (tb_local_up(&tb))
		return;
	post_recvs(&tb.s[1], 4);
	post_all(&tb.s[0], &tb.s[1]);
	check_all(&tb.s[0], tb_run_one, &tb, "local");
	emu_tb_fini(&tb);
}

static void test_wire(void)
{
	struct emu_tb h[2];

	if (tb_wire_up(h))
		return;
	post_recvs(&h[1].s[0], 4);
	post_all(&h[0].s[0], &h[1].s[0]);
	check_all(&h[0].s[0], tb_run_two, h, "wire");
	tb_wire_down(h);
}

int main(void)
{
	test_local();
	test_wire();
	return test_exit("emu_req_cqe");
}
