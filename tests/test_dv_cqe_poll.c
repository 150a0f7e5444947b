/* SPDX-License-Identifier: MIT */
/*
 * CQ polling: CQEs written per struct mlx5_cqe64 / struct mlx5_err_cqe, the
 * way the NIC writes them (body first, owner bit of the pass last), decode
 * to the right opcode, wqe_counter, byte count, immediate, QPN and status,
 * over several passes of the ring; stale-owner and INVALID slots are not
 * returned; the consumer index reaches dbrec[0] masked to 24 bits; every
 * syndrome maps to the ibv_wc_status libmlx5 gives it.
 */
#include <ssq/ssq.h>
#include "helpers.h"

#define CQES 8u

static struct mlx5_cqe64 ring[CQES] __attribute__((aligned(64)));

static const struct {
	uint8_t syndrome;
	enum ibv_wc_status status;
} status_map[] = {
	{ MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR, IBV_WC_LOC_LEN_ERR },
	{ MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, IBV_WC_LOC_QP_OP_ERR },
	{ MLX5_CQE_SYNDROME_LOCAL_PROT_ERR, IBV_WC_LOC_PROT_ERR },
	{ MLX5_CQE_SYNDROME_WR_FLUSH_ERR, IBV_WC_WR_FLUSH_ERR },
	{ MLX5_CQE_SYNDROME_MW_BIND_ERR, IBV_WC_MW_BIND_ERR },
	{ MLX5_CQE_SYNDROME_BAD_RESP_ERR, IBV_WC_BAD_RESP_ERR },
	{ MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR, IBV_WC_LOC_ACCESS_ERR },
	{ MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, IBV_WC_REM_INV_REQ_ERR },
	{ MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR, IBV_WC_REM_ACCESS_ERR },
	{ MLX5_CQE_SYNDROME_REMOTE_OP_ERR, IBV_WC_REM_OP_ERR },
	{ MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR, IBV_WC_RETRY_EXC_ERR },
	{ MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR, IBV_WC_RNR_RETRY_EXC_ERR },
	{ MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR, IBV_WC_REM_ABORT_ERR },
};

/* The NIC's side: CQE number @n goes to slot n % CQES with owner (n / CQES) & 1. */
static void nic_write(uint32_t n, uint8_t opcode, uint16_t wqe_counter, uint32_t qpn,
                      uint32_t byte_cnt, uint32_t imm, uint8_t syndrome)
{
	struct mlx5_cqe64 *cqe = &ring[n % CQES];
	uint8_t owner = (n / CQES) & 1;

	memset(cqe, 0xee, sizeof(*cqe)); /* reserved bytes are not zero on hardware */
	if (opcode == MLX5_CQE_REQ_ERR || opcode == MLX5_CQE_RESP_ERR) {
		struct mlx5_err_cqe *e = (struct mlx5_err_cqe *)cqe;

		e->syndrome = syndrome;
		e->vendor_err_synd = (uint8_t)(0x80 | syndrome);
		e->s_wqe_opcode_qpn =
		    htobe32((uint32_t)MLX5_OPCODE_RDMA_WRITE << 24 | qpn);
		e->wqe_counter = htobe16(wqe_counter);
	} else {
		cqe->wqe_counter = htobe16(wqe_counter);
		cqe->sop_drop_qpn =
		    htobe32(0xab000000u | qpn); /* top byte is not the QPN */
		cqe->byte_cnt = htobe32(byte_cnt);
		cqe->imm_inval_pkey = htobe32(imm);
	}
	cqe->op_own = (uint8_t)(opcode << 4 | owner);
}

int main(void)
{
	struct mlx5dv_cq dv = { 0 };
	struct ssq_cq cq;
	struct ssq_cqe out[CQES];
	__be32 dbrec[2] = { 0, 0 };
	uint32_t n, i, produced = 0;
	int got;

	/* A fresh CQ, as libmlx5 leaves it: every slot INVALID, owner 0. */
	for (i = 0; i < CQES; i++)
		ring[i].op_own = MLX5_CQE_INVALID << 4;
	dv.buf = ring;
	dv.dbrec = dbrec;
	dv.cqe_cnt = CQES;
	dv.cqe_size = 64;
	dv.cqn = 9;
	CHECK(ssq_cq_init(&cq, &dv) == 0, "init");
	CHECK(ssq_cq_poll(&cq, out, CQES) == 0, "fresh CQ returned a CQE");
	CHECK(dbrec[0] == 0, "empty poll touched the doorbell record");

	/* Five passes; batches of 3 so batches straddle the pass boundary. */
	for (n = 0; n < 5 * CQES; n += 3) {
		for (i = 0; i < 3; i++) {
			uint32_t k = n + i;
			uint8_t op = k % 4 == 0   ? MLX5_CQE_REQ
			             : k % 4 == 1 ? MLX5_CQE_RESP_SEND_IMM
			             : k % 4 == 2 ? MLX5_CQE_RESP_WR_IMM
			                          : MLX5_CQE_RESP_SEND;

			nic_write(k, op, (uint16_t)(k * 3 + 65530), 0x1234 + k, 100 + k,
			          0xdead0000 + k, 0);
		}
		produced = n + 3;
		got = ssq_cq_poll(&cq, out, CQES);
		CHECK(got == 3, "pass %u: polled %d of 3", n / CQES, got);
		for (i = 0; i < (uint32_t)got; i++) {
			uint32_t k = n + i;

			CHECK(out[i].status == IBV_WC_SUCCESS, "cqe %u status %d", k,
			      out[i].status);
			CHECK(out[i].wqe_counter == (uint16_t)(k * 3 + 65530),
			      "cqe %u counter %u", k, out[i].wqe_counter);
			CHECK(out[i].qpn == 0x1234 + k, "cqe %u qpn 0x%x", k, out[i].qpn);
			CHECK(out[i].byte_len == 100 + k, "cqe %u byte_len %u", k,
			      out[i].byte_len);
			if (k % 4 == 1 || k % 4 == 2)
				CHECK(be32toh(out[i].imm) == 0xdead0000 + k,
				      "cqe %u imm 0x%x", k, be32toh(out[i].imm));
			else
				CHECK(out[i].imm == 0,
				      "cqe %u carries imm without IMM opcode", k);
		}
		CHECK(be32toh(dbrec[0]) == produced,
		      "consumer index %u in DBR, expected %u", be32toh(dbrec[0]),
		      produced);
		/* Nothing more: the next slot holds last pass's CQE (stale owner). */
		CHECK(ssq_cq_poll(&cq, out, CQES) == 0,
		      "a stale CQE was returned after %u", produced);
	}

	/* Error CQEs: every syndrome, and one nobody defined. */
	for (i = 0; i < sizeof(status_map) / sizeof(status_map[0]); i++) {
		nic_write(produced, i & 1 ? MLX5_CQE_RESP_ERR : MLX5_CQE_REQ_ERR,
		          (uint16_t)i, 77, 0, 0, status_map[i].syndrome);
		produced++;
		got = ssq_cq_poll(&cq, out, 1);
		CHECK(got == 1, "error CQE %u not polled", i);
		CHECK(out[0].status == status_map[i].status,
		      "syndrome 0x%02x -> %d, expected %d", status_map[i].syndrome,
		      out[0].status, status_map[i].status);
		CHECK(out[0].syndrome == status_map[i].syndrome, "syndrome kept");
		CHECK(out[0].vendor_err == (0x80 | status_map[i].syndrome),
		      "vendor syndrome %x", out[0].vendor_err);
		CHECK(out[0].qpn == 77 && out[0].wqe_counter == i,
		      "err qpn %u counter %u", out[0].qpn, out[0].wqe_counter);
		CHECK(out[0].s_wqe_opcode == MLX5_OPCODE_RDMA_WRITE,
		      "failed WQE opcode 0x%x", out[0].s_wqe_opcode);
		CHECK(ssq_cqe_status(status_map[i].syndrome) == status_map[i].status,
		      "map");
	}
	CHECK(ssq_cqe_status(0x03) == IBV_WC_GENERAL_ERR, "undefined syndrome 0x03");
	CHECK(ssq_cqe_status(0xff) == IBV_WC_GENERAL_ERR, "undefined syndrome 0xff");

	/* An INVALID opcode with the right owner is not a CQE. */
	ring[produced % CQES].op_own =
	    (uint8_t)(MLX5_CQE_INVALID << 4 | ((produced / CQES) & 1));
	CHECK(ssq_cq_poll(&cq, out, 1) == 0, "INVALID CQE returned");

	/* The consumer index is written masked to 24 bits. */
	cq.ci = 0x1fffffe;
	nic_write(cq.ci, MLX5_CQE_REQ, 1, 1, 0, 0, 0);
	CHECK(ssq_cq_poll(&cq, out, 1) == 1, "CQE at ci 0x1fffffe");
	CHECK(be32toh(dbrec[0]) == 0xffffff, "DBR 0x%x, expected 0xffffff",
	      be32toh(dbrec[0]));

	/* Bad descriptions. */
	dv.cqe_size = 128;
	CHECK(ssq_cq_init(&cq, &dv) == -EINVAL, "128-byte CQEs accepted");
	dv.cqe_size = 64;
	dv.cqe_cnt = 12;
	CHECK(ssq_cq_init(&cq, &dv) == -EINVAL, "12 CQEs accepted");
	return test_exit("dv_cqe_poll");
}
