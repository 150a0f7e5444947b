/* SPDX-License-Identifier: MIT */
/*
 * emu_set_idle_nap: a device thread let nap up to a second while idle
 * runs a doorbell rung after the nap is shortened at once, not at the end
 * of the nap under way (the shortening wakes it); out-of-range naps are
 * refused. Each round idles the thread into its longest naps first.
 */
#include <time.h>
#include <unistd.h>
#include "helpers.h"
#include "emu/testbed_pvt.h"

#define LONG_NAP_NS 1000000000L
#define IDLE_S      1.5 /* past the short naps (about a second) */
#define PROMPT_S    0.1 /* a tenth of the long nap */
#define ROUNDS      2

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(void)
{
	struct emu_tb_opts o = { .sq_cnt = 64, .cq_cnt = 64 };
	struct emu_tb tb;
	struct emu_tb_side *a;
	struct ssq_cqe c;
	double t0, took;
	int ret, n, r;

	CHECK(emu_set_idle_nap(NULL, 0) == -EINVAL, "NULL device refused");
	ret = emu_tb_init(&tb, &o);
	CHECK(ret == 0, "testbed: %d", ret);
	if (ret)
		return test_exit("emu_idle_nap");
	a = &tb.s[0];
	CHECK(emu_set_idle_nap(tb.dev, 1000000) == -EINVAL, "1 ms (< 10 ms) refused");
	CHECK(emu_set_idle_nap(tb.dev, 2 * LONG_NAP_NS) == -EINVAL,
	      "2 s (> 1 s) refused");
	CHECK(emu_start(tb.dev) == 0, "start");
	for (r = 0; r < ROUNDS; r++) {
		CHECK(emu_set_idle_nap(tb.dev, LONG_NAP_NS) == 0, "a 1 s nap");
		usleep((unsigned)(IDLE_S * 1e6));
		CHECK(emu_set_idle_nap(tb.dev, 0) == 0, "back to 10 ms");
		t0 = now();
		a->sq.pi += ssq_prep_nop(&a->sq, a->sq.pi, SSQ_WQE_SIGNALED);
		emu_tb_ring(&tb, 0, a->sq.pi - 1);
		while ((n = ssq_cq_poll(&a->scq_v, &c, 1)) == 0 && now() - t0 < 5)
			usleep(100);
		took = now() - t0;
		printf("round %d: NOP completed %.1f ms after the doorbell\n", r,
		       took * 1e3);
		CHECK(n == 1 && c.status == IBV_WC_SUCCESS, "round %d: the NOP completes",
		      r);
		CHECK(took < PROMPT_S,
		      "round %d: the NOP took %.1f ms (want < %.0f ms: the nap is "
		      "woken)",
		      r, took * 1e3, PROMPT_S * 1e3);
	}
	emu_tb_fini(&tb);
	return test_exit("emu_idle_nap");
}
