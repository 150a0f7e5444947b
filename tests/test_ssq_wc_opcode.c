/* SPDX-License-Identifier: MIT */
/*
 * ssq_poll's completions read as a verbs program reads struct ibv_wc
 * (issue 30, newcomer review F3: `opcode` was the raw mlx5 CQE opcode, 0 =
 * MLX5_CQE_REQ = IBV_WC_SEND for every WRITE, READ and atomic). On the
 * emulated device, a verbs list of every opcode ssq builds - WRITE,
 * WRITE_WITH_IMM, SEND, SEND_WITH_IMM, READ, FETCH_ADD, CMP_AND_SWP - then a
 * NOP, all signaled, must complete with:
 *  - opcode: IBV_WC_RDMA_WRITE, _RDMA_WRITE, _SEND, _SEND, _RDMA_READ,
 *    _FETCH_ADD, _COMP_SWAP, SSQ_WC_NOP (libmlx5's handle_good_req map);
 *  - wc_flags IBV_WC_WITH_IMM and imm_data (network order) on the *_IMM;
 *  - byte_len: the READ's 24 bytes, 8 for each atomic;
 *  - qp_num: the queue's QP; mlx5_opcode MLX5_CQE_REQ.
 * Then a WRITE to a bad rkey fails with IBV_WC_REM_ACCESS_ERR and still
 * says IBV_WC_RDMA_WRITE, with mlx5_opcode MLX5_CQE_REQ_ERR.
 */
#include "ssq_flow.h"
#include "tb_flow.h"

#define RING  64u
#define EVERY 16u
#define NWR   7

static struct emu_tb tb;
static struct ssq_producer prod;

static void one_of_each(void)
{
	struct emu_tb_side *a = &tb.s[0], *b = &tb.s[1];
	static const enum ibv_wr_opcode wr_op[NWR] = {
		IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_WRITE_WITH_IMM,
		IBV_WR_SEND,
		IBV_WR_SEND_WITH_IMM,
		IBV_WR_RDMA_READ,
		IBV_WR_ATOMIC_FETCH_AND_ADD,
		IBV_WR_ATOMIC_CMP_AND_SWP,
	};
	static const enum ibv_wc_opcode wc_op[NWR] = {
		IBV_WC_RDMA_WRITE, IBV_WC_RDMA_WRITE, IBV_WC_SEND,      IBV_WC_SEND,
		IBV_WC_RDMA_READ,  IBV_WC_FETCH_ADD,  IBV_WC_COMP_SWAP,
	};
	static const uint32_t len[NWR] = { 16, 16, 16, 16, 24, 8, 8 };
	struct ibv_sge sge[NWR], rs[2];
	struct ibv_send_wr w[NWR], *bad = NULL;
	struct ssq_completion c[NWR + 1];
	uint64_t pos = 0;
	int i, n;

	/* Receives for the two SENDs and the WRITE_WITH_IMM. */
	for (i = 0; i < 2; i++) {
		rs[i] =
		    (struct ibv_sge){ b->iova + 4096 + (uint64_t)i * 256, 256, b->key };
		CHECK(ssq_rq_post_recv(&b->rq, &rs[i], 1) == 0, "recv %d", i);
	}
	CHECK(ssq_rq_post_recv(&b->rq, &rs[0], 1) == 0, "recv 2");
	ssq_rq_ring(&b->rq);
	memset(w, 0, sizeof(w));
	for (i = 0; i < NWR; i++) {
		sge[i] = (struct ibv_sge){ a->iova + (uint64_t)i * 64, len[i], a->key };
		w[i].wr_id = 100 + (uint64_t)i;
		w[i].sg_list = &sge[i];
		w[i].num_sge = 1;
		w[i].opcode = wr_op[i];
		w[i].send_flags = IBV_SEND_SIGNALED | (i >= 4 ? IBV_SEND_FENCE : 0);
		w[i].imm_data = htobe32(0xabc00000u + (uint32_t)i);
		if (i >= 5) {
			w[i].wr.atomic.remote_addr = b->iova + 512;
			w[i].wr.atomic.rkey = b->key;
		} else {
			w[i].wr.rdma.remote_addr = b->iova + (uint64_t)i * 64;
			w[i].wr.rdma.rkey = b->key;
		}
		if (i + 1 < NWR)
			w[i].next = &w[i + 1];
	}
	CHECK(ssq_post_wr(&prod, w, &bad) == 0 && bad == NULL, "list posted");
	CHECK(ssq_reserve(&prod, 1, &pos) == 0, "reserve the NOP");
	ssq_prep_nop(ssq_producer_sq(&prod), (uint32_t)pos,
	             ssq_wqe_flags(&prod, pos, 1, SSQ_WQE_SIGNALED));
	CHECK(ssq_publish(&prod, pos, 1, 200, SSQ_WQE_SIGNALED) == 0 &&
	          ssq_submit(&prod) == 0,
	      "NOP posted");
	n = tb_wait_comps(&prod, c, NWR + 1, 5.0);
	CHECK(n == NWR + 1, "%d of %d completions", n, NWR + 1);
	for (i = 0; i < n; i++) {
		int imm = wr_op[i % NWR] == IBV_WR_RDMA_WRITE_WITH_IMM ||
		          wr_op[i % NWR] == IBV_WR_SEND_WITH_IMM;
		enum ibv_wc_opcode want = i < NWR ? wc_op[i] : SSQ_WC_NOP;
		uint32_t want_len = i < NWR && i >= 4 ? len[i] : c[i].byte_len;

		if (i == NWR)
			imm = 0;
		CHECK(c[i].status == IBV_WC_SUCCESS && c[i].opcode == want &&
		          c[i].mlx5_opcode == MLX5_CQE_REQ,
		      "completion %d (wr_id %llu): status %d opcode %d, want %d; mlx5 %u",
		      i, (unsigned long long)c[i].wr_id, c[i].status, (int)c[i].opcode,
		      (int)want, c[i].mlx5_opcode);
		CHECK(c[i].byte_len == want_len, "completion %d: byte_len %u, want %u", i,
		      c[i].byte_len, want_len);
		CHECK(!!(c[i].wc_flags & IBV_WC_WITH_IMM) == imm &&
		          (!imm || c[i].imm_data == htobe32(0xabc00000u + (uint32_t)i)),
		      "completion %d: wc_flags 0x%x imm_data 0x%x", i, c[i].wc_flags,
		      be32toh(c[i].imm_data));
		CHECK(c[i].qp_num == a->sq.qpn, "completion %d: qp_num 0x%x, want 0x%x",
		      i, c[i].qp_num, a->sq.qpn);
	}
}

static void failed_write(void)
{
	struct emu_tb_side *a = &tb.s[0], *b = &tb.s[1];
	struct ssq_completion c;

	CHECK(ssq_post_write(&prod, a->iova, a->key, 8, b->iova, b->key ^ 0x5a00, 300,
	                     SSQ_WQE_SIGNALED) == 0,
	      "bad-rkey WRITE posted");
	CHECK(tb_wait_comps(&prod, &c, 1, 5.0) == 1, "bad-rkey WRITE completes");
	CHECK(c.status == IBV_WC_REM_ACCESS_ERR && c.opcode == IBV_WC_RDMA_WRITE &&
	          c.mlx5_opcode == MLX5_CQE_REQ_ERR && c.byte_len == 0 && c.wr_id == 300,
	      "bad-rkey WRITE: status %d (%s) opcode %d mlx5 %u byte_len %u", c.status,
	      ibv_wc_status_str((enum ibv_wc_status)c.status), (int)c.opcode,
	      c.mlx5_opcode, c.byte_len);
}

int main(void)
{
	struct ssq_ctl *ctl = tb_one_up(&tb, &prod, RING, EVERY);

	one_of_each();
	failed_write();
	tb_one_down(&tb, ctl);
	return test_exit("ssq_wc_opcode");
}
