/* SPDX-License-Identifier: MIT */
/*
 * emu_resize_cq, as a ConnectX resizes a CQ (mlx5_ib_resize_cq,
 * drivers/infiniband/hw/mlx5/cq.c): a RESIZE_CQ CQE at the producer index
 * of the old buffer, the next CQE at the next index of the new one. A CQ
 * resized before its first CQE, polled from index 0 of the new buffer,
 * finds nothing there: the first CQE is at index 1 (libmlx5 steps its own
 * consumer index past the resize CQE, mlx5_cq_resize_copy_cqes; a
 * consumer polling through mlx5dv must do the same). Bad arguments are
 * -EINVAL, the CQ untouched.
 */
#include <stdlib.h>
#include "helpers.h"
#include "emu/testbed_pvt.h"

static void send_one(struct emu_tb *tb)
{
	struct emu_tb_side *a = &tb->s[0];
	uint32_t pi = a->sq.pi;

	a->sq.pi += ssq_prep_send(&a->sq, pi, MLX5_OPCODE_SEND, a->iova, a->key, 64, 0,
	                          SSQ_WQE_SIGNALED);
	emu_tb_ring(tb, 0, pi);
	emu_process(tb->dev, 1024);
}

int main(void)
{
	struct emu_dev_attr attr = { .ignore_env = 1 };
	struct emu_tb_opts o = { .dev_attr = &attr };
	struct ibv_sge sge;
	struct mlx5dv_cq dv;
	struct mlx5_cqe64 *old, *nb;
	struct emu_tb tb;
	struct ssq_cq cq;
	uint32_t cnt, i;
	int ok = 1;

	if (emu_tb_init(&tb, &o)) {
		CHECK(0, "testbed");
		return test_exit("emu_cq_resize");
	}
	sge = (struct ibv_sge){ tb.s[1].iova + 0x1000, 256, tb.s[1].key };
	ssq_rq_post_recv(&tb.s[1].rq, &sge, 1);
	ssq_rq_ring(&tb.s[1].rq);
	cnt = tb.s[0].scq_v.cqe_cnt * 2;
	old = (struct mlx5_cqe64 *)tb.s[0].scq_v.buf;
	nb = aligned_alloc(64, (size_t)cnt * 64);
	/* What mlx5dv_init_obj gave before; the resize changes buf and cqe_cnt. */
	memset(&dv, 0, sizeof(dv));
	dv.dbrec = tb.s[0].scq_v.dbrec;
	dv.cqe_size = 64;
	dv.cqn = tb.s[0].scq_v.cqn;
	CHECK(emu_resize_cq(NULL, nb, cnt, &dv) == -EINVAL, "NULL CQ");
	CHECK(emu_resize_cq(tb.s[0].scq, (uint8_t *)nb + 8, cnt, &dv) == -EINVAL,
	      "a buffer not 64-byte aligned");
	CHECK(emu_resize_cq(tb.s[0].scq, nb, cnt - 1, &dv) == -EINVAL,
	      "a count not a power of two");
	CHECK(old[0].op_own >> 4 == MLX5_CQE_INVALID, "a refused resize wrote a CQE");
	CHECK(emu_resize_cq(tb.s[0].scq, nb, cnt, &dv) == 0, "resize to %u", cnt);
	CHECK(dv.buf == nb && dv.cqe_cnt == cnt, "the new buffer and count in dv");
	CHECK(old[0].op_own == MLX5_CQE_RESIZE_CQ << 4,
	      "old slot 0: op_own 0x%x, want the RESIZE_CQ CQE, owner 0", old[0].op_own);
	for (i = 0; i < cnt; i++)
		ok &= nb[i].op_own == MLX5_CQE_INVALID << 4;
	CHECK(ok, "the new buffer is not all MLX5_CQE_INVALID");
	send_one(&tb);
	CHECK(nb[0].op_own == MLX5_CQE_INVALID << 4,
	      "the first CQE after the resize in new slot 0 (op_own 0x%x)", nb[0].op_own);
	CHECK(nb[1].op_own >> 4 == MLX5_CQE_REQ && !(nb[1].op_own & 1),
	      "the first CQE after the resize not in new slot 1 (op_own 0x%x)",
	      nb[1].op_own);
	CHECK(ssq_cq_init(&cq, &dv) == 0, "ssq_cq over the new buffer");
	CHECK(ssq_cq_peek(&cq) == NULL, "a CQE at consumer index 0 after the resize");
	cq.ci = 1;
	CHECK(ssq_cq_peek(&cq) == &nb[1], "no CQE at consumer index 1");
	emu_tb_fini(&tb);
	free(nb);
	return test_exit("emu_cq_resize");
}
