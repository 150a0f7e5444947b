/* SPDX-License-Identifier: MIT */
/*
 * ssq_wqe_demo - build one WQE of every RC send opcode into a small send
 * queue ring, the last one wrapping past the ring end, and print each
 * decoded field by field; then decode a few CQEs as the NIC would write
 * them. No device needed: this shows the bytes ssq hands a ConnectX.
 *
 *   ssq_wqe_demo [-V | --version | -h | --help]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ssq/ssq.h>
#include "ssq_version.h"

#define RING_WQEBBS 16

static uint64_t ring[RING_WQEBBS * MLX5_SEND_WQE_BB / 8];
static __be32 dbrec[2];

static int build_and_show(struct ssq_sq *sq, const struct ssq_wr *wr)
{
	char why[160];
	int n = ssq_wqe_build(sq, sq->pi, wr);

	if (n < 0) {
		fprintf(stderr, "ssq_wqe_demo: %s\n",
		        ssq_wr_strerror(sq, wr, why, sizeof(why)));
		return n;
	}
	printf("\n");
	ssq_wqe_dump(stdout, sq, sq->pi);
	sq->pi += (uint32_t)n;
	return 0;
}

static void put_cqe(struct mlx5_cqe64 *cqe, uint8_t opcode, uint8_t owner,
                    uint16_t wqe_counter, uint32_t qpn, uint32_t byte_cnt, uint32_t imm)
{
	memset(cqe, 0, sizeof(*cqe));
	cqe->wqe_counter = htobe16(wqe_counter);
	cqe->sop_drop_qpn = htobe32(qpn);
	cqe->byte_cnt = htobe32(byte_cnt);
	cqe->imm_inval_pkey = htobe32(imm);
	cqe->op_own = (uint8_t)(opcode << 4 | owner);
}

static void usage(FILE *out)
{
	fprintf(out, "Usage: ssq_wqe_demo [-V|--version] [-h|--help]\n"
	             "Builds one WQE of every RC send opcode in a 16-WQEBB ring and "
	             "prints each\n"
	             "field by field, then decodes sample CQEs; no device or ssqd "
	             "needed.\n");
}

int main(int argc, char **argv)
{
	static uint8_t local[256], payload[100];
	struct mlx5dv_qp dv = { 0 };
	struct ssq_sq sq;
	struct ibv_sge sge[3];
	struct ssq_wr wr;
	struct mlx5_cqe64 cqes[4];
	int i, rc;

	if (argc > 1) {
		if (argc == 2 &&
		    (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version"))) {
			printf("ssq_wqe_demo %s (git %s)\n", SSQ_VERSION_STRING,
			       SSQ_GIT_REVISION);
			return 0;
		}
		if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
			usage(stdout);
			return 0;
		}
		fprintf(stderr, "ssq_wqe_demo: unexpected argument '%s'\n", argv[1]);
		usage(stderr);
		return 2;
	}
	for (i = 0; i < (int)sizeof(payload); i++)
		payload[i] = (uint8_t)i;
	dv.dbrec = dbrec;
	dv.sq.buf = ring;
	dv.sq.wqe_cnt = RING_WQEBBS;
	dv.sq.stride = MLX5_SEND_WQE_BB;
	rc = ssq_sq_init(&sq, &dv, 0x1234, 256, 8);
	if (rc) {
		fprintf(stderr, "ssq_wqe_demo: ssq_sq_init: %d\n", rc);
		return 1;
	}
	printf("ssq WQE demo: RC send queue of %u WQEBBs, QPN 0x%x, max_inline %u, "
	       "max_sge %u\n",
	       sq.wqe_cnt, sq.qpn, sq.max_inline, sq.max_sge);

	sge[0] = (struct ibv_sge){ (uintptr_t)local, 64, 0x1111 };
	sge[1] = (struct ibv_sge){ (uintptr_t)local + 64, 32, 0x1111 };
	sge[2] = (struct ibv_sge){ (uintptr_t)payload, sizeof(payload), 0 };

	struct ssq_wr wrs[] = {
		{ .opcode = MLX5_OPCODE_NOP, .flags = SSQ_WQE_SIGNALED },
		{ .opcode = MLX5_OPCODE_SEND,
		  .flags = SSQ_WQE_SIGNALED | SSQ_WQE_SOLICITED,
		  .num_sge = 2,
		  .sg_list = sge },
		{ .opcode = MLX5_OPCODE_SEND_IMM,
		  .imm = htobe32(0xc0ffee),
		  .num_sge = 1,
		  .sg_list = sge },
		{ .opcode = MLX5_OPCODE_RDMA_WRITE,
		  .num_sge = 1,
		  .sg_list = sge,
		  .raddr = 0x7f0000001000,
		  .rkey = 0x2222 },
		{ .opcode = MLX5_OPCODE_RDMA_WRITE_IMM,
		  .flags = SSQ_WQE_SIGNALED,
		  .imm = htobe32(42),
		  .num_sge = 1,
		  .sg_list = sge,
		  .raddr = 0x7f0000002000,
		  .rkey = 0x2222 },
		{ .opcode = MLX5_OPCODE_RDMA_READ,
		  .flags = SSQ_WQE_FENCE_SMALL_AND_FENCE,
		  .num_sge = 1,
		  .sg_list = sge,
		  .raddr = 0x7f0000003000,
		  .rkey = 0x2222 },
		{ .opcode = MLX5_OPCODE_ATOMIC_CS,
		  .flags = SSQ_WQE_SIGNALED,
		  .num_sge = 1,
		  .sg_list = (struct ibv_sge[]){ { (uintptr_t)local + 128, 8, 0x1111 } },
		  .raddr = 0x7f0000004000,
		  .rkey = 0x2222,
		  .compare_add = 5,
		  .swap = 6 },
		{ .opcode = MLX5_OPCODE_ATOMIC_FA,
		  .flags = SSQ_WQE_SIGNALED,
		  .num_sge = 1,
		  .sg_list = (struct ibv_sge[]){ { (uintptr_t)local + 136, 8, 0x1111 } },
		  .raddr = 0x7f0000004008,
		  .rkey = 0x2222,
		  .compare_add = 1 },
		/* Inline WRITE of 100 bytes: 2 WQEBBs, placed to wrap the ring end. */
		{ .opcode = MLX5_OPCODE_RDMA_WRITE,
		  .flags = SSQ_WQE_SIGNALED,
		  .inline_data = 1,
		  .num_sge = 1,
		  .sg_list = &sge[2],
		  .raddr = 0x7f0000005000,
		  .rkey = 0x2222 },
	};
	for (i = 0; i < (int)(sizeof(wrs) / sizeof(wrs[0])); i++) {
		if (i == (int)(sizeof(wrs) / sizeof(wrs[0])) - 1) {
			printf(
			    "\n(skipping to pi %u so the next WQE wraps the ring end)\n",
			    RING_WQEBBS - 1);
			sq.pi = RING_WQEBBS - 1;
		}
		if (build_and_show(&sq, &wrs[i]))
			return 1;
	}

	/* A refused work request: too many SGEs. The ring is left as it was. */
	wr = (struct ssq_wr){ .opcode = MLX5_OPCODE_SEND, .num_sge = 9, .sg_list = sge };
	{
		char why[160];

		printf("\nrefused: ssq_wqe_build -> %d: %s\n",
		       ssq_wqe_build(&sq, sq.pi, &wr),
		       ssq_wr_strerror(&sq, &wr, why, sizeof(why)));
	}

	printf("\nCQEs as the NIC writes them, decoded:\n");
	put_cqe(&cqes[0], MLX5_CQE_REQ, 0, 4, 0x1234, 0, 0);
	put_cqe(&cqes[1], MLX5_CQE_RESP_SEND_IMM, 0, 0, 0x1235, 64, 0xc0ffee);
	put_cqe(&cqes[2], MLX5_CQE_RESP_WR_IMM, 0, 1, 0x1235, 64, 42);
	{
		struct mlx5_err_cqe *e = (struct mlx5_err_cqe *)&cqes[3];

		memset(e, 0, sizeof(*e));
		e->syndrome = MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
		e->vendor_err_synd = 0x88;
		e->s_wqe_opcode_qpn =
		    htobe32((uint32_t)MLX5_OPCODE_RDMA_WRITE << 24 | 0x1234);
		e->wqe_counter = htobe16(5);
		e->op_own = MLX5_CQE_REQ_ERR << 4;
	}
	for (i = 0; i < 4; i++)
		ssq_cqe_dump(stdout, &cqes[i]);
	return 0;
}
