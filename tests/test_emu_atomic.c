/* SPDX-License-Identifier: MIT */
/*
 * The value an atomic fetches lands in the requester's buffer in host byte
 * order, with a local peer and with a remote one over the emulated wire.
 *
 * mlx5_core sets the requester's 8-byte atomic endianness mode to host
 * order when the device supports it (drivers/net/ethernet/mellanox/mlx5/
 * core/main.c, handle_hca_cap_atomic: atomic_req_8B_endianness_mode =
 * MLX5_ATOMIC_REQ_MODE_HOST_ENDIANNESS), and mlx5_ib advertises atomics
 * (IB_ATOMIC_HCA) only in that mode (drivers/infiniband/hw/mlx5/main.c,
 * get_atomic_caps). So on every ConnectX that runs atomics through verbs
 * the original value is written in host order, whatever the wire carries
 * (the AtomicAckETH is big-endian). Values here have eight different bytes,
 * so a byte-swapped result cannot pass.
 */
#include "helpers.h"
#include "tb_flow.h"

enum {
	TARGET_OFF = 0x7000, /* the responder's 8 bytes */
	RESULT_OFF = 0x9000, /* the requester's landing slots, 8 bytes apart */
};

static const uint64_t v0 = 0x0102030405060708ull;

/* Post ATOMIC_FA (@add) and two ATOMIC_CS (hit, miss) from @a to @b's target. */
static void post_three(struct emu_tb_side *a, const struct emu_tb_side *b, uint64_t add,
                       uint64_t swap)
{
	uint32_t pi = a->sq.pi;

	a->sq.pi += ssq_prep_atomic(&a->sq, a->sq.pi, MLX5_OPCODE_ATOMIC_FA,
	                            a->iova + RESULT_OFF, a->key, b->iova + TARGET_OFF,
	                            b->key, add, 0, SSQ_WQE_SIGNALED);
	/* Hits: the target is v0 + add by then. */
	a->sq.pi += ssq_prep_atomic(
	    &a->sq, a->sq.pi, MLX5_OPCODE_ATOMIC_CS, a->iova + RESULT_OFF + 8, a->key,
	    b->iova + TARGET_OFF, b->key, v0 + add, swap, SSQ_WQE_SIGNALED);
	/* Misses: the target is swap now. */
	a->sq.pi += ssq_prep_atomic(&a->sq, a->sq.pi, MLX5_OPCODE_ATOMIC_CS,
	                            a->iova + RESULT_OFF + 16, a->key,
	                            b->iova + TARGET_OFF, b->key, 1, 2, SSQ_WQE_SIGNALED);
	ssq_sq_ring_db(&a->sq, a->sq.pi,
	               (const struct mlx5_wqe_ctrl_seg *)ssq_sq_wqebb(&a->sq, pi + 2));
}

/* The three results and the target, in host order. */
static void check_three(const struct emu_tb_side *a, const struct emu_tb_side *b,
                        uint64_t add, uint64_t swap, const char *what)
{
	uint64_t got[3], target;

	memcpy(got, a->mem + RESULT_OFF, sizeof(got));
	memcpy(&target, b->mem + TARGET_OFF, 8);
	CHECK(got[0] == v0,
	      "%s: FETCH_ADD fetched 0x%016llx, want 0x%016llx (host order)", what,
	      (unsigned long long)got[0], (unsigned long long)v0);
	CHECK(got[1] == v0 + add, "%s: CMP_SWAP hit fetched 0x%016llx, want 0x%016llx",
	      what, (unsigned long long)got[1], (unsigned long long)(v0 + add));
	CHECK(got[2] == swap, "%s: CMP_SWAP miss fetched 0x%016llx, want 0x%016llx", what,
	      (unsigned long long)got[2], (unsigned long long)swap);
	CHECK(target == swap, "%s: target 0x%016llx, want 0x%016llx", what,
	      (unsigned long long)target, (unsigned long long)swap);
}

/* Three requester CQEs, in order, successful, byte_len 8. */
static int reap_three(struct ssq_cq *cq, void (*run)(void *), void *arg, const char *what)
{
	struct ssq_cqe c;
	int n = 0, tries;

	for (tries = 0; tries < 200000 && n < 3; tries++) {
		if (ssq_cq_poll(cq, &c, 1) == 1) {
			CHECK(c.status == IBV_WC_SUCCESS && c.byte_len == 8,
			      "%s: CQE %d status %d byte_len %u", what, n, c.status,
			      c.byte_len);
			n++;
		} else {
			run(arg);
		}
	}
	CHECK(n == 3, "%s: %d of 3 CQEs", what, n);
	return n == 3 ? 0 : -1;
}

static void test_local(void)
{
	struct emu_tb tb;

	if (tb_local_up(&tb))
		return;
	memcpy(tb.s[1].mem + TARGET_OFF, &v0, 8);
	post_three(&tb.s[0], &tb.s[1], 0x10, 0x1111222233334444ull);
	if (!reap_three(&tb.s[0].scq_v, tb_run_one, &tb, "local"))
		check_three(&tb.s[0], &tb.s[1], 0x10, 0x1111222233334444ull, "local");
	emu_tb_fini(&tb);
}

/* ---- the same over the wire: two devices in this process ---- */

static void test_wire(void)
{
	struct emu_tb h[2];

	if (tb_wire_up(h))
		return;
	memcpy(h[1].s[0].mem + TARGET_OFF, &v0, 8);
	post_three(&h[0].s[0], &h[1].s[0], 0x20, 0x5555666677778888ull);
	if (!reap_three(&h[0].s[0].scq_v, tb_run_two, h, "wire"))
		check_three(&h[0].s[0], &h[1].s[0], 0x20, 0x5555666677778888ull, "wire");
	tb_wire_down(h);
}

int main(void)
{
	test_local();
	test_wire();
	return test_exit("emu_atomic");
}
