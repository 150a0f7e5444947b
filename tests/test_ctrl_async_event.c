/* SPDX-License-Identifier: MIT */
/*
 * ssqd reads the device's async events (issue 15, item 2). A UAR doorbell
 * naming a WQE ahead of the doorbell record is a device error: the QP goes
 * to ERR with no CQE and the device says so only with IBV_EVENT_QP_FATAL.
 * ssqd used to leave such a queue listed READY, so clients kept posting
 * into a dead QP. Now the event fences it - listed not ready, reservations
 * get -EIO - and a client's RECOVER brings it back to RTS, after which a
 * WRITE completes. (ssqd's CQs ignore overruns, so a consumer index set
 * back by hand no longer stops one: ctrl_adv_shm_cq_ci.)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <ssq/ssq.h>
#include <ssq/client.h>
#include "helpers.h"
#include "ctrl_flow.h"

static int listed_ready(struct ssq_client *c)
{
	struct ssq_queue_info info[4];
	int n = ssq_client_list(c, info, 4);

	return n > 0 && info[0].ready;
}

int main(void)
{
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_buf src, dst;
	struct mlx5_wqe_ctrl_seg ctrl;
	const struct ssq_sq *sq;
	uint64_t v, pos = 0;
	double t0;
	int ready = 1, rc = 0;
	unsigned k;
	pid_t d;

	c = flow_up("async", "off", &d);
	if (!c)
		return 1;
	CHECK(ssq_queue_open(c, "q0", &q) == 0, "open: %s", ssq_client_error(c));
	CHECK(ssq_buf_alloc(c, 4096, &src) == 0 && ssq_buf_alloc(c, 4096, &dst) == 0,
	      "alloc: %s", ssq_client_error(c));
	if (test_failures)
		goto out;
	CHECK(write_and_wait(q, &src, &dst, 64) == 0, "a WRITE before");

	/* The doorbell of WQE index 5 while the doorbell record says 1. */
	sq = ssq_queue_sq(q);
	memset(&ctrl, 0, sizeof(ctrl));
	ctrl.opmod_idx_opcode = htobe32(5u << 8 | MLX5_OPCODE_NOP);
	ctrl.qpn_ds = htobe32(ssq_queue_qpn(q) << 8 | 1);
	memcpy(&v, &ctrl, sizeof(v));
	__atomic_store_n((uint64_t *)sq->bf_reg, v, __ATOMIC_RELEASE);
	__atomic_store_n((uint64_t *)(sq->bf_reg + sq->bf_size), v, __ATOMIC_RELEASE);

	for (t0 = now_s(); now_s() - t0 < 5 && ready; usleep(1000))
		ready = listed_ready(c);
	printf("after the bad doorbell: q0 listed %s\n", ready ? "READY" : "not ready");
	CHECK(!ready, "q0 still listed READY 5 s after its QP failed");
	rc = ssq_reserve(ssq_queue_producer(q), 1, &pos);
	CHECK(rc == -EIO, "reserve on the failed queue: %d, want -EIO", rc);

	rc = ssq_queue_recover(q);
	CHECK(rc == 0, "recover: %d (%s)", rc, ssq_client_error(c));
	CHECK(listed_ready(c), "q0 listed READY after the recovery");
	CHECK(write_and_wait(q, &src, &dst, 64) == 0, "a WRITE after the recovery");

	/*
	 * The same with WQEs in flight: three WRITEs published and not rung
	 * when the SQ freezes. Nothing will complete or flush them, so the
	 * recovery cannot wait for a drain (it gave up after 2 s with -EBUSY,
	 * for ever): it rebuilds the queue, and they complete as flushed.
	 */
	for (k = 0; k < 3; k++) {
		struct ssq_producer *p = ssq_queue_producer(q);

		CHECK(ssq_reserve(p, 1, &pos) == 0, "reserve %u", k);
		ssq_prep_rdma_write(ssq_producer_sq(p), (uint32_t)pos, src.iova, src.lkey,
		                    64, dst.remote_addr, dst.rkey,
		                    ssq_wqe_flags(p, pos, 1, SSQ_WQE_SIGNALED));
		ssq_publish(p, pos, 1, 100 + k, SSQ_WQE_SIGNALED);
	}
	__atomic_store_n((uint64_t *)sq->bf_reg, v, __ATOMIC_RELEASE);
	__atomic_store_n((uint64_t *)(sq->bf_reg + sq->bf_size), v, __ATOMIC_RELEASE);
	for (ready = 1, t0 = now_s(); now_s() - t0 < 5 && ready; usleep(1000))
		ready = listed_ready(c);
	CHECK(!ready,
	      "q0 still listed READY 5 s after its QP failed with WQEs in flight");
	rc = ssq_queue_recover(q);
	printf("recover with WQEs in flight: %d (%s)\n", rc, ssq_client_error(c));
	CHECK(rc == 0, "recover with WQEs in flight: %d (%s)", rc, ssq_client_error(c));
	CHECK(listed_ready(c), "q0 listed READY after that recovery");
	{
		struct ssq_completion comp[4];
		int n = ssq_poll(ssq_queue_producer(q), comp, 4);

		CHECK(n == 3, "%d completions of the 3 WQEs in flight at the rebuild", n);
		for (k = 0; k < 3 && (int)k < n; k++)
			CHECK(comp[k].wr_id == 100 + k &&
			          comp[k].status == IBV_WC_WR_FLUSH_ERR,
			      "WQE in flight %u: wr_id %llu, %s; want %u, flushed", k,
			      (unsigned long long)comp[k].wr_id,
			      ibv_wc_status_str((enum ibv_wc_status)comp[k].status),
			      100 + k);
	}
	CHECK(write_and_wait(q, &src, &dst, 64) == 0, "a WRITE after that recovery");

out:
	ssq_client_close(c);
	t_ssqd_stop(d, NULL, NULL);
	return test_exit("ctrl_async_event");
}
