/* SPDX-License-Identifier: MIT */
/*
 * wqe_insns: build 1-SGE RDMA WRITE WQEs in a send queue ring, one per call
 * of bench_build_write_1sge(), so callgrind can count the instructions of
 * exactly that: taking the producer index, the ctrl, raddr and data
 * segments, and advancing the index. No doorbell. Run by
 * scripts/wqe-insns.sh:
 *
 *   valgrind --tool=callgrind --toggle-collect=bench_build_write_1sge \
 *       wqe_insns CALLS
 *
 * Arguments stay runtime values (flags included) so nothing folds away.
 */
#include <stdio.h>
#include <stdlib.h>
#include <ssq/ssq.h>

#define RING_WQEBBS 256

__attribute__((noinline)) int bench_build_write_1sge(struct ssq_sq *sq, uint64_t laddr,
                                                     uint32_t lkey, uint32_t len,
                                                     uint64_t raddr, uint32_t rkey,
                                                     unsigned flags)
{
	uint32_t pi = sq->pi;
	int n = ssq_prep_rdma_write(sq, pi, laddr, lkey, len, raddr, rkey, flags);

	if (n > 0)
		sq->pi = pi + (uint32_t)n;
	return n;
}

int main(int argc, char **argv)
{
	static uint8_t ring[RING_WQEBBS * MLX5_SEND_WQE_BB] __attribute__((aligned(64)));
	static __be32 dbrec[2];
	struct mlx5dv_qp dv = { 0 };
	struct ssq_sq sq;
	long calls = argc > 1 ? strtol(argv[1], NULL, 0) : 1000, i;

	if (calls <= 0) {
		fprintf(stderr, "usage: wqe_insns [CALLS > 0]\n");
		return 2;
	}
	dv.dbrec = dbrec;
	dv.sq.buf = ring;
	dv.sq.wqe_cnt = RING_WQEBBS;
	dv.sq.stride = MLX5_SEND_WQE_BB;
	if (ssq_sq_init(&sq, &dv, 0x123, 64, 4))
		return 1;
	for (i = 0; i < calls; i++)
		if (bench_build_write_1sge(&sq, 0x100000 + (uint64_t)i * 64, 0x11, 64,
		                           0x200000 + (uint64_t)i * 64, 0x22,
		                           (i & 31) == 31 ? SSQ_WQE_SIGNALED : 0) != 1)
			return 1;
	printf("%ld WQEs built, pi %u\n", calls, sq.pi);
	return 0;
}
