/* SPDX-License-Identifier: MIT */
/*
 * The device thread: started, fed from this thread through the rings and
 * doorbells only (as a producer in another process would), its completions
 * polled, then stopped cleanly; start/stop misuse is refused. The same
 * stream again with the longest stream_poll_ns: a device that waits between
 * looks still executes every WQE, in order.
 */
#include <time.h>
#include "helpers.h"
#include "emu/testbed_pvt.h"

#define STALL_S 10 /* a stream with no completion this long has hung */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/*
 * Batches of @batch WRITEs, the last signaled, each writing its number,
 * through the running device thread, @window WQEs in flight at most (a
 * small window: each look finds fewer WQEs than a backlog, and a streaming
 * device waits after it). Every WQE must complete, however slowly a loaded
 * machine lets the device's waits go by: the stream fails only once no
 * completion came for STALL_S.
 */
static void stream(struct emu_tb *tb, uint32_t batch, uint32_t window, const char *what)
{
	struct emu_tb_side *a = &tb->s[0], *b = &tb->s[1];
	struct ssq_cqe c[16];
	uint32_t done = 0, posted = 0, k;
	const uint32_t total = 20000;
	int bad = 0, n;
	double deadline;

	memset(b->mem + 0x4000, 0, 4096);
	for (k = 0; k < 1024; k++)
		memcpy(a->mem + 8 * k, &k, 4);
	deadline = now() + STALL_S;
	while (done < total && now() < deadline) {
		if (posted - done + batch <= window && posted < total) {
			uint32_t first = a->sq.pi;

			for (k = 0; k < batch; k++, posted++)
				a->sq.pi += ssq_prep_rdma_write(
				    &a->sq, a->sq.pi, a->iova + 8 * (posted % 1024),
				    a->key, 4, b->iova + 0x4000 + 4 * (posted % 1024),
				    b->key, k == batch - 1 ? SSQ_WQE_SIGNALED : 0);
			emu_tb_ring(tb, 0, first + batch - 1);
		}
		n = ssq_cq_poll(&a->scq_v, c, 16);
		for (k = 0; k < (uint32_t)n; k++) {
			if (c[k].status != IBV_WC_SUCCESS ||
			    c[k].wqe_counter != (uint16_t)(done + batch - 1))
				bad++;
			done += batch;
		}
		if (n > 0)
			deadline = now() + STALL_S;
	}
	CHECK(done == total, "%s: %u of %u completed, then none for %d s", what, done,
	      total, STALL_S);
	CHECK(bad == 0, "%s: %d bad CQEs", what, bad);
	for (k = 0, n = 0; k < 1024; k++) {
		uint32_t v;

		memcpy(&v, b->mem + 0x4000 + 4 * k, 4);
		n += v != k;
	}
	CHECK(n == 0, "%s: %d target words wrong", what, n);
}

int main(void)
{
	struct emu_dev_attr slow = { .ignore_env = 1,
		                     .stream_poll_ns = SSQ_EMU_STREAM_POLL_NS_MAX };
	struct emu_tb_opts o = { .sq_cnt = 64, .cq_cnt = 64 };
	struct emu_tb tb;
	struct emu_tb_side *a;
	struct ssq_cqe c[16];
	int ret, n;
	double deadline;

	ret = emu_tb_init(&tb, &o);
	CHECK(ret == 0, "testbed: %d", ret);
	if (ret)
		return test_exit("emu_thread");
	a = &tb.s[0];
	CHECK(emu_stop(tb.dev) == -EINVAL, "stop before start");
	CHECK(emu_start(tb.dev) == 0, "start");
	CHECK(emu_start(tb.dev) == -EBUSY, "second start refused");
	CHECK(emu_process(tb.dev, 1) == -EBUSY, "process while the thread runs");
	stream(&tb, 16, 48, "no stream wait");
	CHECK(emu_stop(tb.dev) == 0, "stop");
	CHECK(emu_stop(tb.dev) == -EINVAL, "second stop refused");

	/* Stopped: nothing moves until process() or a new thread. */
	a->sq.pi += ssq_prep_nop(&a->sq, a->sq.pi, SSQ_WQE_SIGNALED);
	emu_tb_ring(&tb, 0, a->sq.pi - 1);
	CHECK(ssq_cq_poll(&a->scq_v, c, 1) == 0, "no CQE while stopped");
	CHECK(emu_start(tb.dev) == 0, "restart");
	deadline = now() + 5;
	while ((n = ssq_cq_poll(&a->scq_v, c, 1)) == 0 && now() < deadline)
		;
	CHECK(n == 1 && c[0].status == IBV_WC_SUCCESS,
	      "restarted thread completes the NOP");
	/* Close with the thread running stops it first. */
	emu_tb_fini(&tb);

	o.dev_attr = &slow;
	ret = emu_tb_init(&tb, &o);
	CHECK(ret == 0, "testbed with stream_poll_ns %u: %d", slow.stream_poll_ns, ret);
	if (ret)
		return test_exit("emu_thread");
	CHECK(emu_start(tb.dev) == 0, "start, waiting while streaming");
	stream(&tb, 4, 8, "100 us stream wait");
	emu_tb_fini(&tb);
	return test_exit("emu_thread");
}
