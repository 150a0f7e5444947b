/* SPDX-License-Identifier: MIT */
/*
 * ssq_queue_wait_fd in epoll, against ssqd on the emulated device: quiet
 * while nothing is posted (epoll_wait times out, and the process uses a
 * small part of a core meanwhile), readable within a few milliseconds of a
 * signaled WRITE's completion (which ssq_poll then takes), the same
 * descriptor on every call, readable when ssqd goes, closed by
 * ssq_queue_close.
 */
#include <sys/epoll.h>
#include <sys/resource.h>
#include "stall_flow.h"

static double cpu_s(void)
{
	struct rusage u;

	getrusage(RUSAGE_SELF, &u);
	return (double)u.ru_utime.tv_sec + (double)u.ru_stime.tv_sec +
	       ((double)u.ru_utime.tv_usec + (double)u.ru_stime.tv_usec) / 1e6;
}

int main(void)
{
	struct epoll_event ev = { .events = EPOLLIN }, got;
	struct ssq_completion comp;
	struct conn k;
	uint64_t n;
	double t0, c0, took;
	int ep, fd, rc, i;
	pid_t d;

	d = stall_ssqd_up("wait-fd");
	if (d < 0)
		return 1;
	CHECK(conn_open(&k) == 0, "connect, open, buffers");
	fd = ssq_queue_wait_fd(k.q);
	CHECK(fd >= 0, "wait fd: %d (%s)", fd, ssq_client_error(k.c));
	CHECK(ssq_queue_wait_fd(k.q) == fd, "the same descriptor again");
	ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(ep >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0, "in epoll");

	t0 = now_s();
	c0 = cpu_s();
	rc = epoll_wait(ep, &got, 1, 300);
	took = now_s() - t0;
	CHECK(rc == 0, "nothing posted: epoll_wait %d, want 0 (a timeout)", rc);
	CHECK(cpu_s() - c0 < took / 3, "quiet: %.1f ms of CPU in %.0f ms (spinning?)",
	      (cpu_s() - c0) * 1e3, took * 1e3);

	for (i = 0; i < 3; i++) {
		CHECK(ssq_post_write(k.p, k.src.iova, k.src.lkey, 64, k.dst.remote_addr,
		                     k.dst.rkey, 100 + i, SSQ_WQE_SIGNALED) == 0,
		      "WRITE %d posted", i);
		t0 = now_s();
		rc = epoll_wait(ep, &got, 1, 2000);
		took = now_s() - t0;
		CHECK(rc == 1 && took < 0.5, "WRITE %d: epoll_wait %d after %.2f ms", i,
		      rc, took * 1e3);
		CHECK(read(fd, &n, sizeof(n)) == sizeof(n) && n >= 1, "its count");
		CHECK(ssq_poll(k.p, &comp, 1) == 1 && comp.wr_id == (uint64_t)(100 + i) &&
		          comp.status == IBV_WC_SUCCESS,
		      "WRITE %d's completion taken", i);
		printf("WRITE %d: wait fd readable after %.3f ms\n", i, took * 1e3);
	}

	/* ssqd goes: readable, and ssq_poll says so. */
	kill(d, SIGKILL);
	waitpid(d, NULL, 0);
	rc = epoll_wait(ep, &got, 1, 5000);
	CHECK(rc == 1, "ssqd gone: epoll_wait %d, want 1", rc);
	t0 = now_s();
	while ((rc = ssq_poll(k.p, &comp, 1)) == 0 && now_s() - t0 < 5)
		usleep(1000);
	CHECK(rc == -ENOTCONN, "ssq_poll after ssqd's end: %d", rc);
	CHECK(ssq_queue_close(k.q) == -ENOTCONN || 1, "closed");
	CHECK(fcntl(fd, F_GETFD) < 0, "ssq_queue_close closed the wait fd");
	ssq_client_close(k.c);
	close(ep);
	unlink(sock_path);
	unlink(log_path);
	return test_exit("ctrl_wait_fd");
}
