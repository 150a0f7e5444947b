/* SPDX-License-Identifier: MIT */
/*
 * Doorbells into a UAR stand-in (ordinary memory): the DBR holds
 * htobe32(pi & 0xffff); the 8-byte doorbell is the first 8 bytes of the last
 * WQE's control segment at the current BlueFlame half, and the half toggles
 * (at the half given, untouched, with ssq_sq_ring_db_at);
 * BlueFlame copies the whole WQE, following the ring wrap, and falls back to
 * the 8-byte doorbell when the WQE does not fit a half or there is no
 * BlueFlame.
 */
#include <ssq/ssq.h>
#include "helpers.h"

#define RING_WQEBBS 8u
#define BF_SIZE     256u

static uint8_t ring[RING_WQEBBS * 64] __attribute__((aligned(64)));
static uint64_t uar[2 * BF_SIZE / 8] __attribute__((aligned(64)));
static uint8_t payload[256];

int main(void)
{
	struct mlx5dv_qp dv = { 0 };
	struct ssq_sq sq;
	__be32 dbrec[2] = { 0, 0 };
	struct ibv_sge sge = { (uintptr_t)payload, 0, 0 };
	struct ssq_wr wr = { .opcode = MLX5_OPCODE_SEND,
		             .inline_data = 1,
		             .num_sge = 1,
		             .sg_list = &sge };
	uint8_t expect[4 * 64];
	int n, i;

	for (i = 0; i < (int)sizeof(payload); i++)
		payload[i] = (uint8_t)(i + 1);
	dv.dbrec = dbrec;
	dv.sq.buf = ring;
	dv.sq.wqe_cnt = RING_WQEBBS;
	dv.sq.stride = 64;
	dv.bf.reg = uar;
	dv.bf.size = BF_SIZE;
	CHECK(ssq_sq_init(&sq, &dv, 0x77, 220, 4) == 0, "init");

	/* 8-byte doorbell, twice: halves alternate. */
	n = ssq_prep_rdma_write(&sq, 0x12345, 0x1000, 1, 64, 0x2000, 2, SSQ_WQE_SIGNALED);
	ssq_sq_ring_db(&sq, 0x12345 + n,
	               (const struct mlx5_wqe_ctrl_seg *)ssq_sq_wqebb(&sq, 0x12345));
	CHECK(be32toh(dbrec[MLX5_SND_DBR]) == 0x2346, "DBR 0x%x, expected 0x2346",
	      be32toh(dbrec[MLX5_SND_DBR]));
	CHECK(dbrec[MLX5_RCV_DBR] == 0, "send doorbell wrote the receive DBR");
	CHECK(!memcmp(&uar[0], ssq_sq_wqebb(&sq, 0x12345), 8),
	      "8-byte doorbell != ctrl[0..7]");
	CHECK(sq.bf_offset == BF_SIZE, "BF half did not toggle");
	n = ssq_prep_nop(&sq, 0x12346, 0);
	ssq_sq_ring_db(&sq, 0x12347,
	               (const struct mlx5_wqe_ctrl_seg *)ssq_sq_wqebb(&sq, 0x12346));
	CHECK(!memcmp(&uar[BF_SIZE / 8], ssq_sq_wqebb(&sq, 0x12346), 8), "second half");
	CHECK(sq.bf_offset == 0, "BF half did not toggle back");

	/* The sequence at a half the caller keeps (the shared queue's way). */
	memset(uar, 0, sizeof(uar));
	ssq_sq_ring_db_at(&sq, 0x12347,
	                  (const struct mlx5_wqe_ctrl_seg *)ssq_sq_wqebb(&sq, 0x12346),
	                  BF_SIZE);
	CHECK(!memcmp(&uar[BF_SIZE / 8], ssq_sq_wqebb(&sq, 0x12346), 8) && uar[0] == 0,
	      "ring_db_at did not use the half it was given");
	CHECK(be32toh(dbrec[MLX5_SND_DBR]) == 0x2347, "DBR 0x%x after ring_db_at",
	      be32toh(dbrec[MLX5_SND_DBR]));
	CHECK(sq.bf_offset == 0, "ring_db_at moved the half the struct keeps");

	/* BlueFlame of a 3-WQEBB inline SEND that wraps: pi 6 -> WQEBBs 6, 7, 0. */
	memset(uar, 0, sizeof(uar));
	sge.length = 150; /* 1 + ceil(154 / 16) = 11 DS = 3 WQEBBs */
	n = ssq_wqe_build(&sq, 6, &wr);
	CHECK(n == 3, "inline SEND of 150 took %d WQEBBs", n);
	memcpy(expect, ring + 6 * 64, 128);
	memcpy(expect + 128, ring, 64);
	ssq_sq_ring_bf(&sq, 6, (unsigned)n);
	CHECK(!memcmp(uar, expect, 3 * 64),
	      "BlueFlame copy differs from the wrapped WQE");
	CHECK(be32toh(dbrec[MLX5_SND_DBR]) == 9, "DBR %u after BF",
	      be32toh(dbrec[MLX5_SND_DBR]));
	CHECK(sq.bf_offset == BF_SIZE, "BF half did not toggle after BlueFlame");

	/* Too big for a half: 8-byte doorbell instead, at the current half. */
	memset(uar, 0, sizeof(uar));
	sge.length = 220; /* 1 + 14 = 15 DS = 4 WQEBBs = 256 bytes: fits exactly */
	n = ssq_wqe_build(&sq, 9, &wr);
	CHECK(n == 4, "inline 220 took %d", n);
	sq.bf_size = 192; /* pretend halves of 192 bytes */
	sq.bf_offset = 0;
	ssq_sq_ring_bf(&sq, 9, (unsigned)n);
	CHECK(!memcmp(uar, ssq_sq_wqebb(&sq, 9), 8), "fallback doorbell missing");
	CHECK(uar[1] == 0 && uar[2] == 0, "fallback copied more than 8 bytes");
	CHECK(be32toh(dbrec[MLX5_SND_DBR]) == 13, "DBR after fallback");

	/* No BlueFlame register: always the 8-byte doorbell, offset stays 0. */
	dv.bf.size = 0;
	CHECK(ssq_sq_init(&sq, &dv, 0x77, 220, 4) == 0, "init without BF");
	memset(uar, 0, sizeof(uar));
	ssq_sq_ring_bf(&sq, 9, 4);
	CHECK(!memcmp(uar, ssq_sq_wqebb(&sq, 9), 8) && uar[1] == 0, "no-BF doorbell");
	CHECK(sq.bf_offset == 0, "offset moved without BF");
	return test_exit("dv_doorbell");
}
