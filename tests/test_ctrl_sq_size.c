/* SPDX-License-Identifier: MIT */
/*
 * ssqd --device emu sizes its queues exactly as libmlx5 44 would on a
 * ConnectX for the same request (issue 15, item 1): for several --sq-size,
 * the ring a client maps has the wqe_cnt and max_inline that
 * tests/libmlx5_sizing.h (written from rdma-core's source) computes for
 * what ssqd asks - the ops ssq builds, 4 SGEs, 204 inline bytes,
 * --sq-size * 64 / 256 WRs - which is --sq-size WQEBBs; and the send CQ
 * holds a CQE for every WR that ring can have outstanding, whatever
 * --cq-size says (issue 15, item 2).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <ssq/ssq.h>
#include <ssq/client.h>
#include "helpers.h"
#include "lib/tlib.h"
#include "libmlx5_sizing.h"

#define SSQD_SEND_OPS_FOR_TEST                                                           \
	(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |                            \
	 IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |                \
	 IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |                  \
	 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)

static char sock_path[108];

static pid_t start(const char *sq, const char *cq)
{
	const char *ssqd = getenv("SSQD");
	pid_t pid = fork();

	if (pid == 0) {
		execl(ssqd, ssqd, "--device", "emu", "--socket", sock_path,
		      "--hugepages=off", "--data-mib", "8", "--sq-size", sq, "--cq-size",
		      cq, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static struct ssq_client *connect_retry(pid_t d)
{
	struct ssq_client *c = NULL;
	int i, status;

	for (i = 0; i < 400; i++) {
		if (ssq_client_connect(sock_path, &c) == 0)
			return c;
		if (waitpid(d, &status, WNOHANG) == d)
			return NULL;
		usleep(50 * 1000);
	}
	return NULL;
}

static void one(uint32_t sq_size, uint32_t cq_size)
{
	char sq[16], cq[16];
	struct ssq_client *c;
	struct ssq_queue *q;
	struct expect e =
	    libmlx5_44(SSQD_SEND_OPS_FOR_TEST, 1, sq_size * 64 / 256, 4, 204);
	pid_t d;

	snprintf(sq, sizeof(sq), "%u", sq_size);
	snprintf(cq, sizeof(cq), "%u", cq_size);
	d = start(sq, cq);
	c = connect_retry(d);
	CHECK(c, "--sq-size %u --cq-size %u: ssqd did not come up", sq_size, cq_size);
	if (c) {
		int rc = ssq_queue_open(c, "q0", &q);

		CHECK(rc == 0, "open: %s", ssq_client_error(c));
		if (!rc) {
			const struct ssq_sq *s = ssq_queue_sq(q);
			const struct ssq_cq *k = ssq_queue_cq(q);

			printf(
			    "--sq-size %u --cq-size %u: wqe_cnt %u max_inline %u max_sge "
			    "%u send CQ %u CQEs (libmlx5 44: %u, %u)\n",
			    sq_size, cq_size, s->wqe_cnt, s->max_inline, s->max_sge,
			    k->cqe_cnt, e.wqe_cnt, e.max_inline);
			CHECK(e.rc == 0 && s->wqe_cnt == e.wqe_cnt &&
			          s->wqe_cnt == sq_size,
			      "wqe_cnt %u, libmlx5 44 %u, --sq-size %u", s->wqe_cnt,
			      e.wqe_cnt, sq_size);
			CHECK(s->max_inline == e.max_inline && s->max_sge == 4,
			      "max_inline %u max_sge %u, libmlx5 44 %u 4", s->max_inline,
			      s->max_sge, e.max_inline);
			CHECK(k->cqe_cnt >= 2 * s->wqe_cnt && k->cqe_cnt >= cq_size,
			      "send CQ of %u CQEs for %u WQEBBs (--cq-size %u)",
			      k->cqe_cnt, s->wqe_cnt, cq_size);
			ssq_queue_close(q);
		}
		ssq_client_close(c);
	}
	t_ssqd_stop(d, NULL, NULL);
}

int main(void)
{
	snprintf(sock_path, sizeof(sock_path), "/tmp/ssq-sqsize-%d.sock", getpid());
	one(64, 64);
	one(256, 64);
	one(1024, 4096);
	one(4096, 64);
	return test_exit("ctrl_sq_size");
}
