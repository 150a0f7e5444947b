/* SPDX-License-Identifier: MIT */
/*
 * post_insns: one producer on a shared queue (<ssq/queue.h>) posting 64-byte
 * RDMA WRITEs, 32 per reservation and per doorbell, the last one signaled,
 * and reaping their completions; for callgrind to count the host's
 * instructions per WQE: reserve, build, publish, submit (scan, CAS, lease,
 * DBR, 8-byte doorbell) in bench_post_batch32(), CQ lease, routing and the
 * completion ring in bench_reap(). The device is a stand-in outside both:
 * after each batch it writes the one success CQE64 a NIC would. Run by
 * scripts/wqe-insns.sh --post:
 *
 *   valgrind --tool=callgrind --toggle-collect=bench_post_batch32 \
 *       --toggle-collect=bench_reap post_insns BATCHES
 *
 * (--post-wr: bench_post_wr32, argument "wr"; --post-combined:
 * bench_post_combined32, argument "combined"; --post-single:
 * bench_post_single32, argument "single".)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ssq/ssq.h>
#include "dv/ctl.h"

#define RING_WQEBBS 1024
#define CQES        256
#define BATCH       32

static uint8_t sq_ring[RING_WQEBBS * MLX5_SEND_WQE_BB] __attribute__((aligned(4096)));
static struct mlx5_cqe64 cq_ring[CQES] __attribute__((aligned(4096)));
static uint8_t uar[4096]
    __attribute__((aligned(4096))); /* the doorbell register's stand-in */
static __be32 qp_dbrec[2], cq_dbrec[2];

__attribute__((noinline)) int bench_post_batch32(struct ssq_producer *p, uint64_t laddr,
                                                 uint32_t lkey, uint64_t raddr,
                                                 uint32_t rkey)
{
	uint64_t pos;
	uint32_t k;
	int rc = ssq_reserve(p, BATCH, &pos);

	if (rc)
		return rc;
	for (k = 0; k < BATCH; k++) {
		unsigned f = k == BATCH - 1 ? SSQ_WQE_SIGNALED : 0;
		uint64_t off = ((pos + k) & 255) * 64;

		ssq_prep_rdma_write(ssq_producer_sq(p), (uint32_t)(pos + k), laddr + off,
		                    lkey, 64, raddr + off, rkey,
		                    ssq_wqe_flags(p, pos + k, 1, f));
		ssq_publish(p, pos + k, 1, pos + k, f);
	}
	ssq_submit(p);
	return 0;
}

/*
 * The same 32 WRITEs as a verbs list through ssq_post_wr (scripts/wqe-insns.sh
 * --post-wr): the list is the caller's, filled once, as a verbs sender's
 * would be; what is counted is the translation, checks, build and post.
 */
__attribute__((noinline)) int bench_post_wr32(struct ssq_producer *p,
                                              struct ibv_send_wr *list)
{
	struct ibv_send_wr *bad;

	return ssq_post_wr(p, list, &bad);
}

/*
 * The same 32 WRITEs one by one through ssq_post_write, one reservation
 * and one doorbell each (scripts/wqe-insns.sh --post-single): what a lone
 * combined post (below) is measured against.
 */
__attribute__((noinline)) int bench_post_single32(struct ssq_producer *p, uint64_t laddr,
                                                  uint32_t lkey, uint64_t raddr,
                                                  uint32_t rkey, uint64_t base)
{
	uint32_t k;
	int rc;

	for (k = 0; k < BATCH; k++) {
		unsigned f = k == BATCH - 1 ? SSQ_WQE_SIGNALED : 0;
		uint64_t off = ((base + k) & 255) * 64;

		rc = ssq_post_write(p, laddr + off, lkey, 64, raddr + off, rkey, base + k,
		                    f);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * The same 32 WRITEs through ssq_post_write_combined by this one producer
 * (scripts/wqe-insns.sh --post-combined), then ssq_combine_flush, so that
 * each batch settles its last request: what a lone combining poster pays.
 */
__attribute__((noinline)) int bench_post_combined32(struct ssq_producer *p,
                                                    uint64_t laddr, uint32_t lkey,
                                                    uint64_t raddr, uint32_t rkey,
                                                    uint64_t base)
{
	uint32_t k;
	int rc;

	for (k = 0; k < BATCH; k++) {
		unsigned f = k == BATCH - 1 ? SSQ_WQE_SIGNALED : 0;
		uint64_t off = ((base + k) & 255) * 64;

		rc = ssq_post_write_combined(p, laddr + off, lkey, 64, raddr + off, rkey,
		                             base + k, f);
		if (rc)
			return rc;
	}
	return ssq_combine_flush(p);
}

__attribute__((noinline)) int bench_reap(struct ssq_producer *p)
{
	struct ssq_completion comp[8];

	return ssq_poll(p, comp, 8);
}

/* The NIC's part: one success CQE64 for the WQE at @wqe_counter. */
static void device_complete(uint32_t *pi, uint32_t qpn, uint16_t wqe_counter)
{
	struct mlx5_cqe64 *cqe = &cq_ring[*pi % CQES];
	uint8_t owner = (uint8_t)((*pi / CQES) & 1);

	memset(cqe, 0, sizeof(*cqe));
	cqe->sop_drop_qpn = htobe32(qpn);
	cqe->wqe_counter = htobe16(wqe_counter);
	__atomic_store_n(&cqe->op_own, (uint8_t)(MLX5_CQE_REQ << 4 | owner),
	                 __ATOMIC_RELEASE);
	(*pi)++;
}

int main(int argc, char **argv)
{
	static struct ssq_producer prod;
	struct mlx5dv_qp dq = { 0 };
	struct mlx5dv_cq dc = { 0 };
	struct ssq_sq sq;
	struct ssq_cq cq;
	struct ssq_ctl *ctl;
	long batches = argc > 1 ? strtol(argv[1], NULL, 0) : 1000, i;
	int verbs = argc > 2 && !strcmp(argv[2], "wr");
	int comb = argc > 2 && !strcmp(argv[2], "combined");
	int single = argc > 2 && !strcmp(argv[2], "single");
	static struct ibv_send_wr list[BATCH];
	static struct ibv_sge sge[BATCH];
	uint32_t cq_pi = 0, qpn = 0x123, k;
	uint64_t reaped = 0;

	if (batches <= 0 || (argc > 2 && !verbs && !comb && !single)) {
		fprintf(stderr, "usage: post_insns [BATCHES > 0 [wr|combined|single]]\n");
		return 2;
	}
	for (k = 0; k < BATCH; k++) {
		sge[k] = (struct ibv_sge){ 0x100000 + k * 64, 64, 0x11 };
		list[k].wr_id = k;
		list[k].sg_list = &sge[k];
		list[k].num_sge = 1;
		list[k].opcode = IBV_WR_RDMA_WRITE;
		list[k].send_flags = k == BATCH - 1 ? IBV_SEND_SIGNALED : 0;
		list[k].wr.rdma.remote_addr = 0x200000 + k * 64;
		list[k].wr.rdma.rkey = 0x22;
		list[k].next = k + 1 < BATCH ? &list[k + 1] : NULL;
	}
	for (i = 0; i < CQES; i++)
		cq_ring[i].op_own = MLX5_CQE_INVALID << 4 | 1;
	dq.dbrec = qp_dbrec;
	dq.sq.buf = sq_ring;
	dq.sq.wqe_cnt = RING_WQEBBS;
	dq.sq.stride = MLX5_SEND_WQE_BB;
	dq.bf.reg = uar;
	dq.bf.size = 256;
	dc.buf = cq_ring;
	dc.cqe_cnt = CQES;
	dc.cqe_size = 64;
	dc.dbrec = cq_dbrec;
	dc.cqn = 7;
	ctl = aligned_alloc(64, (ssq_ctl_size(RING_WQEBBS) + 63) & ~(size_t)63);
	if (!ctl || ssq_sq_init(&sq, &dq, qpn, 64, 4) || ssq_cq_init(&cq, &dc) ||
	    ssq_ctl_init(ctl, RING_WQEBBS, 64) ||
	    ssq_producer_init(&prod, ctl, 0, &sq, &cq, 1)) {
		fprintf(stderr, "post_insns: queue setup failed\n");
		return 1;
	}
	for (i = 0; i < batches; i++) {
		int rc;

		if (verbs)
			rc = bench_post_wr32(&prod, list);
		else if (comb)
			rc = bench_post_combined32(&prod, 0x100000, 0x11, 0x200000, 0x22,
			                           (uint64_t)i * BATCH);
		else if (single)
			rc = bench_post_single32(&prod, 0x100000, 0x11, 0x200000, 0x22,
			                         (uint64_t)i * BATCH);
		else
			rc = bench_post_batch32(&prod, 0x100000, 0x11, 0x200000, 0x22);

		if (rc) {
			fprintf(stderr, "post_insns: batch %ld: %s\n", i, strerror(-rc));
			return 1;
		}
		device_complete(&cq_pi, qpn, (uint16_t)((i + 1) * BATCH - 1));
		reaped += (uint64_t)bench_reap(&prod);
	}
	if (reaped != (uint64_t)batches) {
		fprintf(stderr, "post_insns: %llu completions for %ld batches\n",
		        (unsigned long long)reaped, batches);
		return 1;
	}
	printf("%ld WQEs posted, %llu completions\n", batches * BATCH,
	       (unsigned long long)reaped);
	free(ctl);
	return 0;
}
