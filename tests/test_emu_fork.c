/* SPDX-License-Identifier: MIT */
/*
 * The emulated device across processes: every ring, doorbell record, UAR
 * page and data buffer is MAP_SHARED, the device thread runs in this
 * process, and two fork()ed children post and poll through them with the
 * fast path alone (no emu call), each on its own QP, at the same time.
 */
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include "helpers.h"
#include "emu/testbed_pvt.h"

#define TOTAL 20000u
#define BATCH 16u

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/*
 * In the child: TOTAL 4-byte WRITEs from side @i to the other side, each
 * carrying its sequence number, BATCH per doorbell, the last signaled.
 * Returns the exit status: 0, or 1 for a bad or missing CQE.
 */
static int producer(struct emu_tb *tb, int i)
{
	struct emu_tb_side *s = &tb->s[i], *peer = &tb->s[!i];
	uint32_t posted = 0, done = 0, k;
	struct ssq_cqe c[8];
	double deadline = now() + 15;
	int n;

	for (k = 0; k < 1024; k++)
		memcpy(s->mem + 8 * k, &k, 4);
	while (done < TOTAL && now() < deadline) {
		if (posted - done <= tb->o.sq_cnt - BATCH && posted < TOTAL) {
			uint32_t first = s->sq.pi;

			for (k = 0; k < BATCH; k++, posted++)
				s->sq.pi += ssq_prep_rdma_write(
				    &s->sq, s->sq.pi, s->iova + 8 * (posted % 1024),
				    s->key, 4, peer->iova + 0x4000 + 4 * (posted % 1024),
				    peer->key, k == BATCH - 1 ? SSQ_WQE_SIGNALED : 0);
			ssq_sq_ring_db(&s->sq, s->sq.pi,
			               (const struct mlx5_wqe_ctrl_seg *)ssq_sq_wqebb(
			                   &s->sq, first + BATCH - 1));
		}
		n = ssq_cq_poll(&s->scq_v, c, 8);
		for (k = 0; k < (uint32_t)n; k++) {
			if (c[k].status != IBV_WC_SUCCESS ||
			    c[k].wqe_counter != (uint16_t)(done + BATCH - 1)) {
				fprintf(stderr,
				        "child %d: CQE status %d wqe_counter %u at %u\n",
				        i, c[k].status, c[k].wqe_counter, done);
				return 1;
			}
			done += BATCH;
		}
	}
	if (done != TOTAL)
		fprintf(stderr, "child %d: %u of %u completed\n", i, done, TOTAL);
	return done == TOTAL ? 0 : 1;
}

int main(void)
{
	struct emu_tb_opts o = { .sq_cnt = 64, .cq_cnt = 64, .shared = 1 };
	struct emu_tb tb;
	pid_t pid[2];
	int i, ret, st, wrong = 0;
	uint32_t k, v;

	ret = emu_tb_init(&tb, &o);
	CHECK(ret == 0, "shared testbed: %d", ret);
	if (ret)
		return test_exit("emu_fork");
	CHECK(emu_start(tb.dev) == 0, "device thread");
	fflush(NULL);
	for (i = 0; i < 2; i++) {
		pid[i] = fork();
		if (pid[i] == 0)
			_exit(producer(&tb, i));
		CHECK(pid[i] > 0, "fork %d", i);
	}
	for (i = 0; i < 2; i++) {
		if (pid[i] <= 0)
			continue;
		CHECK(waitpid(pid[i], &st, 0) == pid[i], "wait %d", i);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %d status 0x%x", i,
		      st);
	}
	CHECK(emu_stop(tb.dev) == 0, "stop");
	for (i = 0; i < 2; i++)
		for (k = 0; k < 1024; k++) {
			memcpy(&v, tb.s[i].mem + 0x4000 + 4 * k, 4);
			wrong += v != k;
		}
	CHECK(wrong == 0, "%d target words wrong", wrong);
	CHECK(emu_dev_errors(tb.dev) == 0, "no device errors");
	emu_tb_fini(&tb);
	return test_exit("emu_fork");
}
