/* SPDX-License-Identifier: MIT */
/*
 * Adversary, a dead client's buffers on a quiet queue: "a freed buffer's
 * key reaches nothing; nothing is left half-done". A client that leaves
 * has its buffers (each an MR of its own, its rkey perhaps with a peer)
 * go back once every queue has completed what was reserved at its death.
 * `completed` moves only with a CQE, and a queue signals one WQE in
 * signal_every (64): another client's unsignaled WRITE, or the NOP a heal
 * publishes for a dead producer's WQEBB, completes on the wire and says
 * so to nobody until the next signaled WQE. On a queue that then goes
 * quiet, every client that leaves keeps its buffers, and their keys,
 * for as long as nothing else is posted - here, a client with a buffer
 * that never attached a queue, after one unsignaled WRITE of another.
 * Fails while a quiet queue holds a dead client's buffers past 2 s.
 */
#include "stall_flow.h"

int main(void)
{
	struct ssq_client *v;
	struct ssq_buf b;
	struct conn w;
	double t0;
	int rc, n = 0;
	pid_t d;

	d = stall_ssqd_up("adv-mem-quiet");
	if (d < 0)
		return 1;
	if (conn_open(&w)) {
		CHECK(0, "client w: %s", ssq_client_error(w.c));
		goto out;
	}
	rc = ssq_post_write(w.p, w.src.iova, w.src.lkey, 64, w.dst.remote_addr,
	                    w.dst.rkey, 1, 0);
	CHECK(rc == 0, "an unsignaled WRITE: %d", rc);
	usleep(50 * 1000); /* the device has done it */
	rc = ssq_client_connect(sock_path, &v);
	CHECK(rc == 0 && ssq_buf_alloc(v, 4096, &b) == 0, "client v and its buffer");
	if (!rc)
		ssq_client_close(v);
	for (t0 = now_s(); now_s() - t0 < 2.0; usleep(20 * 1000))
		if ((n = log_count("data buffers returned", NULL)) > 0)
			break;
	fprintf(stderr, "after %.2f s: %d \"buffers returned\" lines\n", now_s() - t0, n);
	CHECK(n == 1, "the buffer of a client gone goes back on a quiet queue");
	ssq_client_close(w.c);
out:
	stall_ssqd_down(d);
	return test_exit("ctrl_adv_mem_grave_quiet_queue");
}
