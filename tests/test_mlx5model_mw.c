/* SPDX-License-Identifier: MIT */
/*
 * Type-2 memory windows through the libmlx5 model (tests/mlx5model/mw.c),
 * as ssqd's ConnectX backend would take them: an MR registered with
 * IBV_ACCESS_MW_BIND (in ib_check_mr_access's supported set), then
 * ibv_alloc_mw(pd, IBV_MW_TYPE_2) gives a window of that PD with a key of
 * its own, distinct from the MR's; the PD cannot go while it lives (the
 * kernel counts it among the PD's users); ibv_dealloc_mw frees it. What
 * the model does not check it refuses: type 1 (a type-2 window is bound
 * by a WQE, which ssq writes itself: <ssq/wqe_mw.h>).
 * Before: ibv_reg_mr with MW_BIND failed with EINVAL and ibv_alloc_mw with
 * EOPNOTSUPP (no ops.alloc_mw).
 * Runs only under the model (ctest sets LD_PRELOAD and SSQ_MLX5MODEL=1).
 */
#include <errno.h>
#include <string.h>
#include <infiniband/verbs.h>
#include "helpers.h"
#include "test_device.h"

int main(void)
{
	static uint8_t mem[65536] __attribute__((aligned(4096)));
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd = NULL;
	struct ibv_mr *mr = NULL;
	struct ibv_mw *mw = NULL, *mw1;
	int i, n = 0;

	if (!getenv("SSQ_MLX5MODEL"))
		SKIP("SSQ_MLX5MODEL not set: run through ctest (the model preloaded)");
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n && !ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), test_device()))
			ctx = ibv_open_device(list[i]);
	CHECK(ctx != NULL, "the model's device %s", test_device());
	if (!ctx)
		return test_exit("mlx5model_mw");
	pd = ibv_alloc_pd(ctx);
	CHECK(pd != NULL, "alloc_pd: %s", strerror(errno));
	mr = pd ? ibv_reg_mr(pd, mem, sizeof(mem),
	                     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND)
	        : NULL;
	CHECK(mr != NULL, "reg_mr with MW_BIND: %s", strerror(errno));
	mw = pd ? ibv_alloc_mw(pd, IBV_MW_TYPE_2) : NULL;
	CHECK(mw != NULL, "alloc_mw type 2: %s", strerror(errno));
	if (mw && mr) {
		CHECK(mw->type == IBV_MW_TYPE_2 && mw->pd == pd && mw->context == ctx,
		      "the window's fields");
		CHECK(mw->rkey != mr->rkey && mw->rkey != mr->lkey && (mw->rkey >> 8) &&
		          (mw->rkey >> 8) != (mr->lkey >> 8),
		      "window key 0x%x, MR key 0x%x: not a key of its own", mw->rkey,
		      mr->lkey);
	}
	errno = 0;
	mw1 = pd ? ibv_alloc_mw(pd, IBV_MW_TYPE_1) : NULL;
	CHECK(!mw1 && errno == EOPNOTSUPP, "type 1: %p, errno %d", (void *)mw1, errno);
	if (mw && mr) {
		CHECK(ibv_dereg_mr(mr) == 0, "dereg_mr under a free window");
		mr = NULL;
		CHECK(ibv_dealloc_pd(pd) == EBUSY, "dealloc_pd while a window lives");
		CHECK(ibv_dealloc_mw(mw) == 0, "dealloc_mw");
	}
	if (mr)
		ibv_dereg_mr(mr);
	CHECK(!pd || ibv_dealloc_pd(pd) == 0, "dealloc_pd once the window is gone");
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return test_exit("mlx5model_mw");
}
