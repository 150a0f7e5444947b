/* SPDX-License-Identifier: MIT */
/*
 * ssq_wait's wake crosses processes: against ssqd on the emulated device,
 * client B (this process) holds the queue's CQ lease for 300 ms while
 * client A (a child) posts a signaled WRITE and waits for it in ssq_wait.
 * A cannot route it itself meanwhile; once B lets go and routes (or ssqd,
 * the router of last resort), A must wake within a few milliseconds of it,
 * having slept: its CPU time a small part of the wait.
 */
#include "stall_flow.h"

#define HOLD_MS 300

struct report {
	int rc;
	double took, cpu, woke; /* woke: now_s(), one clock for every process */
};

static double cpu_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A: post, say so, wait; report through @fd. */
static void waiter(int go, int fd)
{
	struct report r = { -1, 0, 0, 0 };
	struct conn k;
	char b = 0;
	double t0, c0;

	if (conn_open(&k) || read(go, &b, 1) != 1 ||
	    ssq_post_write(k.p, k.src.iova, k.src.lkey, 64, k.dst.remote_addr, k.dst.rkey,
	                   7, SSQ_WQE_SIGNALED))
		_exit(3);
	t0 = now_s();
	c0 = cpu_s();
	r.rc = ssq_wait(k.p, 1, 10000000000ull);
	r.woke = now_s();
	r.took = r.woke - t0;
	r.cpu = cpu_s() - c0;
	(void)!write(fd, &r, sizeof(r));
	_exit(0);
}

int main(void)
{
	struct report r = { -1, 0, 0, 0 };
	int go[2], rep[2], status;
	uint32_t zero = 0;
	struct conn b;
	double t0, held, let_go;
	pid_t d, a;

	d = stall_ssqd_up("wait");
	if (d < 0)
		return 1;
	if (conn_open(&b) || pipe(go) || pipe(rep)) {
		fprintf(stderr, "setup failed; ssqd's log: %s\n", log_path);
		kill(d, SIGKILL);
		return 1;
	}
	a = fork();
	if (a == 0)
		waiter(go[0], rep[1]);
	close(rep[1]);
	CHECK(__atomic_compare_exchange_n(&b.p->ctl->cq_lease, &zero, b.p->id + 1, 0,
	                                  __ATOMIC_ACQUIRE, __ATOMIC_RELAXED),
	      "B takes the CQ lease");
	t0 = now_s();
	(void)!write(go[1], "g", 1);
	usleep(HOLD_MS * 1000);
	let_go = now_s();
	held = let_go - t0;
	__atomic_store_n(&b.p->ctl->cq_lease, 0, __ATOMIC_RELEASE);
	(void)ssq_progress(b.p);
	CHECK(read(rep[0], &r, sizeof(r)) == sizeof(r), "A's report");
	waitpid(a, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "A exited 0x%x", status);
	CHECK(r.rc == 1, "A's ssq_wait: %d, want 1", r.rc);
	/* Only once B let go could A's completion be routed, and it woke then. */
	CHECK(r.woke >= let_go, "A woke %.3f ms before B let go of the CQ lease",
	      (let_go - r.woke) * 1e3);
	CHECK(r.cpu < r.took / 4, "A used %.1f ms of CPU in %.1f ms (spinning?)",
	      r.cpu * 1e3, r.took * 1e3);
	printf("ssq_wait across processes: A waited %.1f ms behind B's %.1f ms hold, "
	       "woke %.1f ms after it, using %.2f ms of CPU\n",
	       r.took * 1e3, held * 1e3, (r.woke - let_go) * 1e3, r.cpu * 1e3);
	ssq_client_close(b.c);
	stall_ssqd_down(d);
	return test_exit("ctrl_wait");
}
