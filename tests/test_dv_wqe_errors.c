/* SPDX-License-Identifier: MIT */
/*
 * Refused work requests: each bad argument gets its negative errno, a
 * sentence from ssq_wr_strerror() naming the bad field, and leaves every
 * byte of the ring as it was. The preps refuse bad flags, opcodes and
 * unaligned atomics the same way.
 */
#include <ssq/ssq.h>
#include "helpers.h"

#define RING_WQEBBS 4u
#define RING_BYTES  (RING_WQEBBS * MLX5_SEND_WQE_BB)

static uint8_t ring[RING_BYTES] __attribute__((aligned(64)));
static uint8_t snapshot[RING_BYTES];
static uint8_t payload[2048];

static void expect_refused(struct ssq_sq *sq, const struct ssq_wr *wr, int err,
                           const char *needle, const char *what)
{
	char msg[256];
	int rc;

	memset(ring, 0x5a, RING_BYTES);
	memcpy(snapshot, ring, RING_BYTES);
	rc = ssq_wqe_build(sq, RING_WQEBBS - 1, wr);
	CHECK(rc == err, "%s: returned %d, expected %d", what, rc, err);
	CHECK(!memcmp(ring, snapshot, RING_BYTES), "%s: the ring was written", what);
	ssq_wr_strerror(sq, wr, msg, sizeof(msg));
	CHECK(strstr(msg, needle) != NULL, "%s: message \"%s\" does not name \"%s\"",
	      what, msg, needle);
}

int main(void)
{
	struct ibv_sge sge[16];
	struct mlx5dv_qp dv = { 0 };
	struct ssq_sq sq;
	__be32 dbrec[2];
	struct ssq_wr wr;
	unsigned i, f, ok = 0;
	int rc;

	dv.dbrec = dbrec;
	dv.sq.buf = ring;
	dv.sq.wqe_cnt = RING_WQEBBS;
	dv.sq.stride = MLX5_SEND_WQE_BB;
	CHECK(ssq_sq_init(&sq, &dv, 0x42, 512, 30) == 0, "init");
	for (i = 0; i < 16; i++)
		sge[i] = (struct ibv_sge){ (uintptr_t)payload + 64 * i, 64, 7 };

	wr = (struct ssq_wr){ .opcode = MLX5_OPCODE_SEND, .num_sge = 16, .sg_list = sge };
	sq.max_sge = 15;
	expect_refused(&sq, &wr, -E2BIG, "max_send_sge 15", "16 SGEs on a 15-SGE QP");
	sq.max_sge = 30;

	wr = (struct ssq_wr){ .opcode = MLX5_OPCODE_SEND,
		              .inline_data = 1,
		              .num_sge = 2,
		              .sg_list =
		                  (struct ibv_sge[]){ { (uintptr_t)payload, 300, 0 },
		                                      { (uintptr_t)payload, 213, 0 } } };
	expect_refused(&sq, &wr, -EMSGSIZE, "513 bytes", "513 inline bytes, max 512");

	wr = (struct ssq_wr){ .opcode = MLX5_OPCODE_RDMA_WRITE,
		              .num_sge = 15,
		              .sg_list = sge };
	expect_refused(&sq, &wr, -ENOSPC, "ring", "a 17-DS WQE in a 4-WQEBB ring");

	wr = (struct ssq_wr){ .opcode = MLX5_OPCODE_ATOMIC_FA,
		              .num_sge = 1,
		              .sg_list =
		                  (struct ibv_sge[]){ { (uintptr_t)payload, 0, 7 } },
		              .raddr = 0x1000 };
	expect_refused(&sq, &wr, -EINVAL, "length is 0", "zero-length atomic");

	wr.sg_list = (struct ibv_sge[]){ { (uintptr_t)payload, 4, 7 } };
	expect_refused(&sq, &wr, -EINVAL, "8 bytes", "4-byte atomic");

	wr = (struct ssq_wr){ .opcode = MLX5_OPCODE_ATOMIC_CS,
		              .num_sge = 1,
		              .sg_list =
		                  (struct ibv_sge[]){ { (uintptr_t)payload, 8, 7 } },
		              .raddr = 0x1004 };
	expect_refused(&sq, &wr, -EINVAL, "not 8-byte aligned", "unaligned atomic raddr");

	wr.raddr = 0x1000;
	wr.num_sge = 2;
	wr.sg_list = sge;
	expect_refused(&sq, &wr, -EINVAL, "exactly one SGE", "atomic with two SGEs");

	wr = (struct ssq_wr){ .opcode = MLX5_OPCODE_RDMA_READ,
		              .inline_data = 1,
		              .num_sge = 1,
		              .sg_list = sge };
	expect_refused(&sq, &wr, -EINVAL, "inline_data is not allowed", "inline READ");

	wr = (struct ssq_wr){ .opcode = MLX5_OPCODE_ATOMIC_CS,
		              .inline_data = 1,
		              .num_sge = 1,
		              .sg_list = sge };
	expect_refused(&sq, &wr, -EINVAL, "inline_data is not allowed", "inline atomic");

	wr = (struct ssq_wr){ .opcode = MLX5_OPCODE_NOP, .num_sge = 1, .sg_list = sge };
	expect_refused(&sq, &wr, -EINVAL, "NOP carries no data", "NOP with an SGE");

	wr = (struct ssq_wr){ .opcode = MLX5_OPCODE_SEND, .num_sge = 1, .sg_list = NULL };
	expect_refused(&sq, &wr, -EINVAL, "NULL sg_list", "NULL gather list");

	wr = (struct ssq_wr){ .opcode = MLX5_OPCODE_UMR };
	expect_refused(&sq, &wr, -EINVAL, "opcode 0x25", "UMR opcode");
	wr.opcode = 0xff;
	expect_refused(&sq, &wr, -EINVAL, "opcode 0xff", "opcode 0xff");

	/* Every flag byte: accepted exactly when it is a valid fm_ce_se. */
	for (f = 0; f < 256; f++) {
		int valid = !(f & ~0xeau) && (f >> 5) <= 4;

		wr = (struct ssq_wr){ .opcode = MLX5_OPCODE_SEND, .flags = (uint8_t)f };
		if (valid) {
			rc = ssq_wqe_build(&sq, 0, &wr);
			CHECK(rc == 1, "flags 0x%02x refused (%d)", f, rc);
			ok++;
		} else {
			expect_refused(&sq, &wr, -EINVAL, "flags", "bad flags");
		}
		CHECK(ssq_wqe_flags_valid(f) == valid, "ssq_wqe_flags_valid(0x%x)", f);
	}
	CHECK(ok == 5 * 4, "%u valid flag bytes, expected 20", ok);
	/* Bits above the byte are never valid, whatever the low byte. */
	CHECK(!ssq_wqe_flags_valid(0x100) && !ssq_wqe_flags_valid(0x200) &&
	          !ssq_wqe_flags_valid(0xffffffa0u) && !ssq_wqe_flags_valid(0x80000008u),
	      "flags above bit 7 accepted");

	/* The preps: bad flags, opcodes and alignment write nothing. */
	memset(ring, 0x5a, RING_BYTES);
	memcpy(snapshot, ring, RING_BYTES);
	CHECK(ssq_prep_rdma_write(&sq, 0, 0, 1, 8, 0, 2, 0xa0) == -EINVAL,
	      "write fence 5");
	CHECK(ssq_prep_rdma_read(&sq, 0, 0, 1, 8, 0, 2, 0x01) == -EINVAL, "read bit 0");
	CHECK(ssq_prep_rdma_write_imm(&sq, 0, 0, 1, 8, 0, 2, 0, 0x104) == -EINVAL,
	      "bit 8");
	CHECK(ssq_prep_send(&sq, 0, MLX5_OPCODE_RDMA_WRITE, 0, 1, 8, 0, 0) == -EINVAL,
	      "send prep with a WRITE opcode");
	CHECK(ssq_prep_atomic(&sq, 0, MLX5_OPCODE_ATOMIC_FA, 0, 1, 0x1001, 2, 1, 0, 0) ==
	          -EINVAL,
	      "unaligned FA");
	CHECK(ssq_prep_atomic(&sq, 0, MLX5_OPCODE_SEND, 0, 1, 0x1000, 2, 1, 0, 0) ==
	          -EINVAL,
	      "atomic prep with SEND");
	CHECK(ssq_prep_nop(&sq, 0, 0x10) == -EINVAL, "nop bit 4");
	CHECK(!memcmp(ring, snapshot, RING_BYTES), "a refused prep wrote the ring");

	/* Bad queue descriptions. */
	dv.sq.stride = 128;
	CHECK(ssq_sq_init(&sq, &dv, 1, 0, 1) == -EINVAL, "stride 128 accepted");
	dv.sq.stride = 64;
	dv.sq.wqe_cnt = 6;
	CHECK(ssq_sq_init(&sq, &dv, 1, 0, 1) == -EINVAL, "6 WQEBBs accepted");
	dv.sq.wqe_cnt = 4;
	CHECK(ssq_sq_init(&sq, &dv, 1 << 24, 0, 1) == -EINVAL, "25-bit QPN accepted");
	dv.sq.buf = NULL;
	CHECK(ssq_sq_init(&sq, &dv, 1, 0, 1) == -EINVAL, "NULL buffer accepted");
	return test_exit("dv_wqe_errors");
}
