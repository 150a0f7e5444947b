/* SPDX-License-Identifier: MIT */
/*
 * ssqd as a lab starts it, with no size option (--sq-size 1024 and
 * --cq-size 1024, the defaults: a send CQ of shm_scq_cqes(1024, 1024) =
 * 2048 CQEs), on test_device(): a WRITE's completion is polled, another's
 * is waited for with ssq_wait, and their bytes land.
 *
 * Hardware review 2026-11-28 N1: backend_mlx5.c made the send CQ with
 * --cq-size CQEs and grew it with ibv_resize_cq once the SQ existed.
 * libmlx5 then steps its consumer index past the RESIZE CQE the device
 * writes (providers/mlx5/verbs.c mlx5_resize_cq, cq.c
 * mlx5_cq_resize_copy_cqes), so the first send CQE lands in slot 1 and
 * ssq, polling slot 0, never saw one: on a ConnectX (or the model of
 * libmlx5) both checks below timed out. The emulated backend creates the
 * CQ at its final size and never showed it.
 */
#include "ctrl_flow.h"

#define LEN 4096

static pid_t start_default(void)
{
	const char *ssqd = getenv("SSQD");
	pid_t pid = fork();

	if (pid == 0) {
		/* Only where and how to serve: every size is ssqd's default. */
		execl(ssqd, ssqd, "--device", test_device(), "--socket", sock_path,
		      "--hugepages=off", (char *)NULL);
		perror("exec ssqd");
		_exit(127);
	}
	return pid;
}

static int landed(const struct ssq_buf *dst, uint8_t v)
{
	const uint8_t *p = dst->addr;

	return p[0] == v && p[LEN - 1] == v;
}

int main(void)
{
	struct ssq_buf src = { 0 }, dst = { 0 };
	struct ssq_completion comp = { 0 };
	struct ssq_client *c;
	struct ssq_queue *q = NULL;
	struct ssq_producer *p;
	double t0;
	int rc, got = 0;
	pid_t d;

	t_need_ssqd();
	snprintf(sock_path, sizeof(sock_path), "/tmp/ssq-defsz-%d.sock", getpid());
	d = start_default();
	c = connect_retry(d);
	CHECK(c != NULL, "ssqd with default sizes on %s serves a client", test_device());
	if (!c) {
		kill(d, SIGKILL);
		waitpid(d, NULL, 0);
		return test_exit("ctrl_default_sizes");
	}
	CHECK(ssq_queue_open(c, "q0", &q) == 0 && ssq_buf_alloc(c, LEN, &src) == 0 &&
	          ssq_buf_alloc(c, LEN, &dst) == 0,
	      "setup: %s", ssq_client_error(c));
	if (!q || !src.addr || !dst.addr)
		goto out;
	p = ssq_queue_producer(q);
	printf("default sizes on %s: SQ of %u WQEBBs\n", test_device(), p->sq.wqe_cnt);

	/* 1. polled */
	memset(src.addr, 0x31, LEN);
	rc = ssq_post_write(p, src.iova, src.lkey, LEN, dst.remote_addr, dst.rkey, 1,
	                    SSQ_WQE_SIGNALED);
	CHECK(rc == 0, "post 1: %d", rc);
	for (t0 = now_s(); !got && now_s() - t0 < 10;) {
		got = ssq_poll(p, &comp, 1);
		if (!got)
			usleep(100);
	}
	CHECK(got == 1 && comp.wr_id == 1 && comp.status == IBV_WC_SUCCESS,
	      "the first WRITE's completion polled within 10 s (got %d, wr_id %llu, "
	      "status %d)",
	      got, (unsigned long long)comp.wr_id, comp.status);
	CHECK(landed(&dst, 0x31), "the first WRITE's bytes landed");

	/* 2. waited for */
	memset(src.addr, 0x32, LEN);
	rc = ssq_post_write(p, src.iova, src.lkey, LEN, dst.remote_addr, dst.rkey, 2,
	                    SSQ_WQE_SIGNALED);
	CHECK(rc == 0, "post 2: %d", rc);
	rc = ssq_wait(p, 1, 10000000000ull);
	CHECK(rc == 1, "ssq_wait for the second WRITE: %d, want 1", rc);
	CHECK(ssq_poll(p, &comp, 1) == 1 && comp.wr_id == 2 &&
	          comp.status == IBV_WC_SUCCESS,
	      "the second WRITE's completion (wr_id %llu, status %d)",
	      (unsigned long long)comp.wr_id, comp.status);
	CHECK(landed(&dst, 0x32), "the second WRITE's bytes landed");
out:
	ssq_client_close(c);
	t_ssqd_stop(d, NULL, sock_path);
	return test_exit("ctrl_default_sizes");
}
