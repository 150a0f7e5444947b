/* SPDX-License-Identifier: MIT */
/*
 * Receive WQEs: RQ WQEs are data segments ended by an invalid-lkey
 * segment when shorter than the stride; SRQ WQEs are a next segment plus
 * data segments, taken from and returned to the free list through
 * next_wqe_index, as libmlx5 does. Doorbell records carry the counters.
 */
#include <ssq/ssq.h>
#include "helpers.h"

static uint8_t rq_buf[8 * 64] __attribute__((aligned(64)));
static uint8_t srq_buf[4 * 64] __attribute__((aligned(64)));

static void check_dseg(const struct mlx5_wqe_data_seg *d, uint32_t len, uint32_t lkey,
                       uint64_t addr, const char *what)
{
	CHECK(be32toh(d->byte_count) == len && be32toh(d->lkey) == lkey &&
	          be64toh(d->addr) == addr,
	      "%s: got (%u, 0x%x, 0x%llx), expected (%u, 0x%x, 0x%llx)", what,
	      be32toh(d->byte_count), be32toh(d->lkey),
	      (unsigned long long)be64toh(d->addr), len, lkey, (unsigned long long)addr);
}

int main(void)
{
	struct ibv_sge sg[4] = { { 0x1000, 100, 5 },
		                 { 0x2000, 0, 5 },
		                 { 0x3000, 300, 6 },
		                 { 0x4000, 400, 7 } };
	struct mlx5dv_qp qdv = { 0 };
	struct mlx5dv_srq sdv = { 0 };
	struct ssq_rq rq;
	struct ssq_srq srq;
	__be32 qp_dbrec[2] = { 0, 0 }, srq_dbrec = 0;
	const struct mlx5_wqe_data_seg *d;
	int idx, i, posted = 0;

	/* RQ: 8 WQEs of 64 bytes, 4 data segments each. */
	memset(rq_buf, 0xcc, sizeof(rq_buf));
	qdv.dbrec = qp_dbrec;
	qdv.rq.buf = rq_buf;
	qdv.rq.wqe_cnt = 8;
	qdv.rq.stride = 64;
	CHECK(ssq_rq_init(&rq, &qdv) == 0 && rq.max_sge == 4, "rq init");

	/* Three SGEs, one empty: two segments, then the terminator. */
	CHECK(ssq_rq_post_recv(&rq, sg, 3) == 0, "post 3");
	d = (const struct mlx5_wqe_data_seg *)rq_buf;
	check_dseg(&d[0], 100, 5, 0x1000, "rq seg 0");
	check_dseg(&d[1], 300, 6, 0x3000, "rq seg 1 (empty SGE skipped)");
	check_dseg(&d[2], 0, MLX5_INVALID_LKEY, 0, "rq terminator");
	CHECK(rq_buf[63] == 0xcc, "bytes after the terminator written");

	/* Four non-empty SGEs fill the stride: no terminator. */
	sg[1].length = 200;
	CHECK(ssq_rq_post_recv(&rq, sg, 4) == 0, "post 4");
	d = (const struct mlx5_wqe_data_seg *)(rq_buf + 64);
	check_dseg(&d[3], 400, 7, 0x4000, "rq full stride, last seg");
	CHECK(ssq_rq_post_recv(&rq, sg, 5) == -E2BIG,
	      "5 SGEs in a 4-SGE stride accepted");
	CHECK(ssq_rq_post_recv(&rq, NULL, 1) == -EINVAL, "NULL SGEs accepted");
	CHECK(rq.head == 2, "head %u after two posts and two refusals", rq.head);
	CHECK(qp_dbrec[MLX5_RCV_DBR] == 0, "DBR written before ring");
	ssq_rq_ring(&rq);
	CHECK(be32toh(qp_dbrec[MLX5_RCV_DBR]) == 2, "RQ DBR %u",
	      be32toh(qp_dbrec[MLX5_RCV_DBR]));
	CHECK(qp_dbrec[MLX5_SND_DBR] == 0, "RQ ring touched the send DBR");
	/* Wrap: WQE 10 lands in slot 2, and the DBR is 16 bits. */
	rq.head = 0xfffa;
	CHECK(ssq_rq_post_recv(&rq, sg, 1) == 0, "post at 0xfffa");
	check_dseg((const struct mlx5_wqe_data_seg *)(rq_buf + (0xfffa % 8) * 64), 100, 5,
	           0x1000, "rq slot of 0xfffa");
	rq.head = 0x1fffe;
	ssq_rq_ring(&rq);
	CHECK(be32toh(qp_dbrec[MLX5_RCV_DBR]) == 0xfffe, "RQ DBR not masked to 16 bits");

	/* SRQ: 4 WQEs of 64 bytes: next segment + 3 data segments. */
	memset(srq_buf, 0xcc, sizeof(srq_buf));
	sdv.buf = srq_buf;
	sdv.dbrec = &srq_dbrec;
	sdv.stride = 64;
	CHECK(ssq_srq_init(&srq, &sdv, 4) == 0 && srq.max_sge == 3, "srq init");
	ssq_srq_link_free_list(&srq);
	for (i = 0; i < 4; i++)
		CHECK(be16toh(ssq_srq_wqe(&srq, i)->next_wqe_index) == (i + 1) % 4,
		      "link %d", i);
	CHECK(srq.head == 0 && srq.tail == 3, "free list %u..%u", srq.head, srq.tail);

	/* n WQEs hold n - 1 receives: the list always keeps one. */
	for (i = 0; i < 3; i++) {
		idx = ssq_srq_post_recv(&srq, &sg[i + 1], 1);
		CHECK(idx == i, "post %d used WQE %d", i, idx);
		posted++;
	}
	CHECK(ssq_srq_post_recv(&srq, sg, 1) == -ENOMEM, "a full SRQ took a 4th receive");
	d = (const struct mlx5_wqe_data_seg *)(srq_buf + 64 + 16);
	check_dseg(&d[0], 300, 6, 0x3000, "srq WQE 1 seg 0");
	check_dseg(&d[1], 0, MLX5_INVALID_LKEY, 0, "srq WQE 1 terminator");
	ssq_srq_ring(&srq);
	CHECK(be32toh(srq_dbrec) == (uint32_t)posted, "SRQ DBR %u", be32toh(srq_dbrec));

	/* Completions free WQEs out of order; posts reuse them in free order. */
	ssq_srq_free_wqe(&srq, 2);
	ssq_srq_free_wqe(&srq, 0);
	idx = ssq_srq_post_recv(&srq, sg, 1);
	CHECK(idx == 3, "after freeing 2 and 0, post used %d, expected 3", idx);
	idx = ssq_srq_post_recv(&srq, sg, 1);
	CHECK(idx == 2, "then %d, expected 2", idx);
	CHECK(ssq_srq_post_recv(&srq, sg, 1) == -ENOMEM, "list keeps WQE 0 as its tail");
	CHECK(ssq_srq_post_recv(&srq, sg, 4) == -E2BIG, "4 SGEs in a 3-SGE SRQ");

	sdv.stride = 16;
	CHECK(ssq_srq_init(&srq, &sdv, 4) == -EINVAL, "16-byte SRQ stride accepted");
	qdv.rq.stride = 48;
	CHECK(ssq_rq_init(&rq, &qdv) == -EINVAL, "48-byte RQ stride accepted");
	return test_exit("dv_recv_wqe");
}
