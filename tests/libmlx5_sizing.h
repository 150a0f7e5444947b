/* SPDX-License-Identifier: MIT */
/*
 * libmlx5's send-queue sizing (rdma-core v44.0, providers/mlx5/verbs.c),
 * written here from its source, independently of src/emu, for the tests
 * that compare the emulated device and ssqd with it:
 *
 *   _sq_overhead:  size = ctrl (16); RDMA ops: ctrl + raddr (32); atomics:
 *                  ctrl + raddr + atomic (48); BIND_MW or LOCAL_INV: ctrl +
 *                  umr_ctrl (48) + mkey_context (64) + max(klm, 64) = 192;
 *                  the largest; RC adds nothing. No send_ops_flags: RC gets
 *                  SEND, SEND_WITH_INV, SEND_WITH_IMM, RDMA_WRITE(_WITH_IMM),
 *                  RDMA_READ, both atomics, LOCAL_INV and BIND_MW.
 *   mlx5_calc_send_wqe: inl = size + align(4 + max_inline_data, 16) (when
 *                  asked); max_gather = (max_sq_desc_sz - size) / 16, more
 *                  SGEs -> EINVAL; size += sge * 16; tot = max(size, inl);
 *                  tot > max_sq_desc_sz -> EINVAL; align(tot, 64).
 *   mlx5_calc_sq_size: max_inline = wqe - overhead - 4; max_send_wr >
 *                  0x7fffffff / max_sq_desc_sz -> EINVAL; wq =
 *                  roundup_pow_of_two(max_send_wr * wqe); wqe_cnt = wq / 64
 *                  > max_send_wqebb -> EINVAL; max_post = wq / wqe.
 *
 * with the limits the emulated ConnectX claims (mlx5_ib_alloc_ucontext:
 * max_sq_desc_sz = max_wqe_sz_sq = 1024, max_send_wqebb = 1 << 15).
 */
#ifndef SSQ_TEST_LIBMLX5_SIZING_H
#define SSQ_TEST_LIBMLX5_SIZING_H

#include <errno.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#define MAX_SQ_DESC_SZ 1024u
#define MAX_SEND_WQEBB 32768u

struct expect {
	int rc;
	uint32_t wqe_cnt, max_inline, max_post;
};

static inline uint32_t al(uint32_t v, uint32_t a)
{
	return (v + a - 1) / a * a;
}

static inline uint64_t rup2(uint64_t v)
{
	uint64_t p = 1;

	while (p < v)
		p *= 2;
	return p;
}

static inline uint32_t overhead(uint64_t ops)
{
	uint32_t size = 16, rdma = 0, atomic = 0, mw = 0;

	if (ops & (IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
	           IBV_QP_EX_WITH_RDMA_READ))
		rdma = 16 + 16;
	if (ops &
	    (IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD))
		atomic = 16 + 16 + 16;
	if (ops & (IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV))
		mw = 16 + 48 + 64 + 64;
	if (rdma > size)
		size = rdma;
	if (atomic > size)
		size = atomic;
	if (mw > size)
		size = mw;
	return size;
}

static inline struct expect libmlx5_44(uint64_t ops, int has_ops, uint32_t wr,
                                       uint32_t sge, uint32_t inline_data)
{
	struct expect e = { 0, 0, 0, 0 };
	uint32_t size, inl = 0, tot, wqe;
	uint64_t wq;

	/* mlx5_calc_sq_size: no WRs, no SQ (and nothing written back). */
	if (!wr)
		return e;

	if (!has_ops)
		ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_INV |
		      IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_WRITE |
		      IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |
		      IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
		      IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_LOCAL_INV |
		      IBV_QP_EX_WITH_BIND_MW;
	size = overhead(ops);
	if (inline_data)
		inl = size + al(4 + inline_data, 16);
	if (sge > (MAX_SQ_DESC_SZ - size) / 16) {
		e.rc = -EINVAL;
		return e;
	}
	size += sge * 16;
	tot = size > inl ? size : inl;
	if (tot > MAX_SQ_DESC_SZ) {
		e.rc = -EINVAL;
		return e;
	}
	wqe = al(tot, 64);
	e.max_inline = wqe - overhead(ops) - 4;
	if (wr > 0x7fffffffu / MAX_SQ_DESC_SZ) {
		e.rc = -EINVAL;
		return e;
	}
	wq = rup2((uint64_t)wr * wqe);
	if (wq / 64 > MAX_SEND_WQEBB) {
		e.rc = -EINVAL;
		return e;
	}
	e.wqe_cnt = (uint32_t)(wq / 64);
	e.max_post = (uint32_t)(wq / wqe);
	return e;
}

#endif /* SSQ_TEST_LIBMLX5_SIZING_H */
