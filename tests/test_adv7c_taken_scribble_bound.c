/* SPDX-License-Identifier: MIT */
/*
 * Adversary h-adv7c, what held: a client that writes TAKEN(pos) into its
 * own hand-over word (pos inside [completed, reserve): a WQE of its own it
 * published and did not ring) and exits makes ssqd keep its memory
 * registrations past its death (ssqd_hands_out: a combined request "out"),
 * but only until the queue completed what was reserved at its death (its
 * grave's fence): the scribble buys no unbounded pinning. The queue keeps
 * serving another client V meanwhile.
 * H, a child with its own connection, registers a memfd, publishes one
 * signaled WRITE (no doorbell), scribbles its word and _exits. Passes when
 * ssqd says it kept H's registrations, V's WRITE then completes with
 * status 0, and ssqd says H's registrations were dropped within 10 s.
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <sys/wait.h>
#include <ssq/combine.h>
#include "dv/ctl.h"
#include "stall_flow.h"

static int hostile(void)
{
	int fd = memfd_create("h-local", MFD_CLOEXEC);
	struct ssq_mr mr;
	struct conn h;
	uint64_t pos;

	if (fd < 0 || ftruncate(fd, 4096) || conn_open(&h) ||
	    ssq_mem_reg_fd(h.c, fd, 0, 4096, IBV_ACCESS_LOCAL_WRITE, &mr) ||
	    ssq_reserve(h.p, 1, &pos))
		return 1;
	ssq_prep_rdma_write(ssq_producer_sq(h.p), (uint32_t)pos, h.src.iova, h.src.lkey,
	                    64, h.dst.remote_addr, h.dst.rkey,
	                    ssq_wqe_flags(h.p, pos, 1, SSQ_WQE_SIGNALED));
	if (ssq_publish(h.p, pos, 1, 1, SSQ_WQE_SIGNALED))
		return 1;
	__atomic_store_n(&h.p->me->hand.word, ssq__hand_word(pos, SSQ_HAND_TAKEN),
	                 __ATOMIC_SEQ_CST);
	_exit(0); /* no close, no settle */
}

int main(void)
{
	char pid_s[32];
	int status = 0, kept, dropped, st;
	struct conn v;
	pid_t d, h;

	d = stall_ssqd_up("adv7c-scribble");
	if (d < 0)
		return 1;
	if (conn_open(&v)) {
		kill(d, SIGKILL);
		return 1;
	}
	h = fork();
	if (h == 0)
		_exit(hostile());
	CHECK(h > 0 && waitpid(h, &status, 0) == h && WIFEXITED(status) &&
	          WEXITSTATUS(status) == 0,
	      "H's setup: status 0x%x", status);
	snprintf(pid_s, sizeof(pid_s), "pid %d ", (int)h);
	kept = log_count_wait(pid_s, "registrations kept until", 1, 10.0);
	fprintf(stderr,
	        "H exited with its word TAKEN at its own WQE: ssqd kept its "
	        "registrations: %d line(s)\n",
	        kept);
	CHECK(kept == 1, "ssqd did not keep H's registrations (%d): premise", kept);
	st = write_status(&v, v.src.iova, v.src.lkey, v.dst.remote_addr, v.dst.rkey, 7);
	fprintf(stderr, "V's WRITE after it: status %d\n", st);
	CHECK(st == 0, "V's WRITE: %d", st);
	dropped = log_count_wait(pid_s, "memory registrations dropped", 1, 10.0);
	fprintf(stderr, "H's registrations dropped once the queue passed its death: %d\n",
	        dropped);
	CHECK(dropped == 1, "H's scribble kept its registrations past its grave's fence");
	ssq_client_close(v.c);
	stall_ssqd_down(d);
	return test_exit("adv7c_taken_scribble_bound");
}
