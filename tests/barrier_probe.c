/* SPDX-License-Identifier: MIT */
/*
 * Compiled (not run) by test_dv_barrier_insns.sh for x86-64 and aarch64:
 * each function is one fast-path sequence whose barrier instructions the
 * test reads back from the object code, in order.
 */
#include <ssq/ssq.h>

void probe_ring_db(struct ssq_sq *sq, uint32_t pi, const struct mlx5_wqe_ctrl_seg *ctrl)
{
	ssq_sq_ring_db(sq, pi, ctrl);
}

void probe_ring_bf(struct ssq_sq *sq, uint32_t pi)
{
	ssq_sq_ring_bf(sq, pi, 1);
}

struct mlx5_cqe64 *probe_cq_peek(struct ssq_cq *cq)
{
	return ssq_cq_peek(cq);
}

void probe_rq_ring(struct ssq_rq *rq)
{
	ssq_rq_ring(rq);
}

int probe_publish(struct ssq_producer *p, uint64_t pos)
{
	return ssq_publish(p, pos, 1, 0, 0);
}
