/* SPDX-License-Identifier: MIT */
/*
 * The emulated device sizes an RC QP's send queue exactly as libmlx5 of
 * rdma-core 44 does on a ConnectX (issue 15, item 1): the expected values
 * come from tests/libmlx5_sizing.h, written from rdma-core v44.0's source
 * independently of src/emu.
 * It also checks the emulated backend's create_queue reports these values,
 * and sizes the send CQ for every WR the ring can hold.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "helpers.h"
#include "libmlx5_sizing.h"
#include "emu/emu.h"
#include "ctrl/backend/backend.h"

static const uint64_t op_sets[] = {
	SSQD_SEND_OPS,
	IBV_QP_EX_WITH_SEND,
	IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND,
	IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_LOCAL_INV,
	SSQD_SEND_OPS | IBV_QP_EX_WITH_BIND_MW,
};

/* Every combination against the formula above. */
static void grid(void)
{
	static const uint32_t wrs[] = {
		0, 1, 3, 64, 100, 512, 1024, 4096, 16384, 3000000
	};
	static const uint32_t sges[] = { 0, 1, 4, 16, 30, 61, 62, 63 };
	static const uint32_t inls[] = { 0, 1, 12, 28, 64, 124, 256, 900, 1020, 2000 };
	unsigned o, w, g, i, n = 0;

	for (o = 0; o <= sizeof(op_sets) / sizeof(op_sets[0]); o++)
		for (w = 0; w < sizeof(wrs) / sizeof(wrs[0]); w++)
			for (g = 0; g < sizeof(sges) / sizeof(sges[0]); g++)
				for (i = 0; i < sizeof(inls) / sizeof(inls[0]); i++) {
					struct emu_qp_cap cap;
					struct emu_qp_size sz;
					struct expect e;
					int rc;

					memset(&cap, 0, sizeof(cap));
					/* o == count: no send ops named (ibv_create_qp)
					 */
					cap.has_send_ops =
					    o < sizeof(op_sets) / sizeof(op_sets[0]);
					cap.send_ops_flags =
					    cap.has_send_ops ? op_sets[o] : 0;
					cap.max_send_wr = wrs[w];
					cap.max_send_sge = sges[g];
					cap.max_inline_data = inls[i];
					cap.max_recv_wr = 1;
					cap.max_recv_sge = 1;
					e = libmlx5_44(cap.send_ops_flags,
					               cap.has_send_ops, wrs[w], sges[g],
					               inls[i]);
					rc = emu_qp_size(&cap, &sz);
					n++;
					if (!e.rc) {
						/*
						 * ssqd's prediction for
						 * backend_mlx5.c's send CQ
						 * (hardware review N1).
						 */
						struct ssqd_sq_request r = {
							wrs[w], sges[g], inls[i],
							cap.send_ops_flags
						};
						uint32_t cnt = 0;
						int prc = ssqd_sq_predict(&r, &cnt);

						CHECK(prc == 0 && cnt == e.wqe_cnt,
						      "ssqd_sq_predict(%u WRs, %u SGEs, "
						      "%u inline, ops 0x%llx): %d, %u "
						      "WQEBBs; libmlx5 44 %u",
						      wrs[w], sges[g], inls[i],
						      (unsigned long long)r.send_ops, prc,
						      cnt, e.wqe_cnt);
					}
					CHECK(rc == e.rc &&
					          (rc ||
					           (sz.sq_wqe_cnt == e.wqe_cnt &&
					            sz.max_inline_data == e.max_inline &&
					            sz.max_send_wr == e.max_post)),
					      "ops 0x%llx (%s), %u WRs, %u SGEs, %u "
					      "inline: emu rc "
					      "%d wqe_cnt %u max_inline %u max_post %u, "
					      "libmlx5 44 rc "
					      "%d wqe_cnt %u max_inline %u max_post %u",
					      (unsigned long long)cap.send_ops_flags,
					      cap.has_send_ops ? "named" : "defaults",
					      wrs[w], sges[g], inls[i], rc, sz.sq_wqe_cnt,
					      sz.max_inline_data, sz.max_send_wr, e.rc,
					      e.wqe_cnt, e.max_inline, e.max_post);
				}
	printf("%u combinations match libmlx5 44's sizing\n", n);
}

/* The numbers: default ops, 4 SGEs, 64 inline, 1024 WRs. */
static void known_numbers(void)
{
	struct emu_qp_cap cap = { .max_send_wr = 1024,
		                  .max_recv_wr = 1,
		                  .max_send_sge = 4,
		                  .max_recv_sge = 1,
		                  .max_inline_data = 64 };
	struct emu_qp_size sz;

	CHECK(emu_qp_size(&cap, &sz) == 0 && sz.sq_wqe_cnt == 8192 &&
	          sz.max_inline_data == 124 && sz.sq_wqe_size == 320,
	      "ibv_create_qp defaults: wqe_cnt %u max_inline %u wqe %u, want 8192 124 "
	      "320",
	      sz.sq_wqe_cnt, sz.max_inline_data, sz.sq_wqe_size);
	cap.has_send_ops = 1;
	cap.send_ops_flags = SSQD_SEND_OPS;
	CHECK(emu_qp_size(&cap, &sz) == 0 && sz.sq_wqe_cnt == 2048 &&
	          sz.max_inline_data == 76 && sz.sq_wqe_size == 128,
	      "ssq's ops: wqe_cnt %u max_inline %u wqe %u, want 2048 76 128",
	      sz.sq_wqe_cnt, sz.max_inline_data, sz.sq_wqe_size);
	cap.send_ops_flags = IBV_QP_EX_WITH_TSO; /* not an RC op */
	CHECK(emu_qp_size(&cap, &sz) == -EOPNOTSUPP, "TSO on RC accepted");
	/* The receive side: libmlx5's RQ is at least one WQEBB. */
	cap.send_ops_flags = SSQD_SEND_OPS;
	cap.max_recv_wr = 1;
	CHECK(emu_qp_size(&cap, &sz) == 0 && sz.rq_wqe_cnt == 4 && sz.rq_stride == 16,
	      "1 receive WR of 1 SGE: %u WQEs of %u bytes, want 4 of 16", sz.rq_wqe_cnt,
	      sz.rq_stride);
	cap.max_recv_wr = 32769;
	CHECK(emu_qp_size(&cap, &sz) == -EINVAL, "32769 receive WRs accepted");
}

/* The emulated backend reports what the device made and sizes the CQ for it. */
static void backend(void)
{
	static const struct ssqd_sq_request reqs[] = {
		{ 128, 4, 64, SSQD_SEND_OPS },
		{ 1024, 4, 64, SSQD_SEND_OPS },
		{ 1024, 4, 64, 0 },
		{ 100, 1, 0, IBV_QP_EX_WITH_SEND },
		/*
		 * 131072 WQEBBs, over the device's 32768: cut to the largest
		 * ring it takes, 4096 WRs (ssqd_sq_clamp; review C2).
		 */
		{ 16384, 4, 64, 0 },
	};
	struct shm_arena arena;
	struct ssqd_backend *b = NULL;
	char why[256];
	unsigned k;
	int rc;

	rc = shm_arena_create(&arena, 64u << 20, SSQ_HUGEPAGES_OFF, "qpsize", why,
	                      sizeof(why));
	CHECK(rc == 0, "arena: %s", why);
	if (rc)
		return;
	rc = ssqd_backend_emu.open(&b, "emu", &arena, NULL, why, sizeof(why));
	CHECK(rc == 0, "open: %s", why);
	for (k = 0; !rc && k < sizeof(reqs) / sizeof(reqs[0]); k++) {
		const struct ssqd_sq_request *r = &reqs[k];
		uint32_t wr = r->max_send_wr;
		struct expect e = libmlx5_44(r->send_ops, r->send_ops != 0, wr,
		                             r->max_send_sge, r->max_inline_data);
		struct ssqd_bqueue q;
		int qrc;

		while (e.rc == -EINVAL && wr > 1 && (uint64_t)wr * 64 > MAX_SEND_WQEBB) {
			wr /= 2;
			e = libmlx5_44(r->send_ops, r->send_ops != 0, wr, r->max_send_sge,
			               r->max_inline_data);
		}
		qrc = ssqd_backend_emu.create_queue(b, r, 64, 0, 1, &q, why, sizeof(why));

		CHECK(qrc == e.rc,
		      "request %u: create_queue %d (%s), libmlx5 44 gives %d", k, qrc,
		      qrc ? why : "", e.rc);
		if (qrc || e.rc) {
			if (qrc)
				printf("request %u refused as on a ConnectX: %s\n", k,
				       why);
			continue;
		}
		CHECK(q.dv_qp.sq.wqe_cnt == e.wqe_cnt && q.max_inline == e.max_inline,
		      "request %u: wqe_cnt %u max_inline %u, libmlx5 44 gives %u %u", k,
		      q.dv_qp.sq.wqe_cnt, q.max_inline, e.wqe_cnt, e.max_inline);
		CHECK(q.dv_cq.cqe_cnt >= 2 * q.dv_qp.sq.wqe_cnt,
		      "request %u: send CQ of %u CQEs for %u WQEBBs", k, q.dv_cq.cqe_cnt,
		      q.dv_qp.sq.wqe_cnt);
	}
	if (b)
		ssqd_backend_emu.close(b);
	shm_arena_destroy(&arena);
}

int main(void)
{
	grid();
	known_numbers();
	backend();
	return test_exit("emu_qp_size");
}
