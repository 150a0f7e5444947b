/* SPDX-License-Identifier: MIT */
/*
 * Adversary, freeing a buffer with keys of its own: "-EBUSY: a WQE of this
 * client carrying its key has not completed yet (poll, then free again)".
 * A client posts one unsignaled WRITE from its buffer (the queue forces a
 * CQE on one WQE in signal_every, 64) and frees the buffer once the WRITE
 * is on the wire. `completed` moves only with a CQE, so on a queue that
 * is then quiet the WRITE never counts as completed: the client polls
 * (nothing comes) and frees again, -EBUSY, for as long as nobody posts -
 * the advice in the message cannot be followed, and the buffer cannot be
 * freed.
 * Fails while such a free is refused past 2 s.
 */
#include "stall_flow.h"

int main(void)
{
	struct ssq_completion comp;
	struct conn w;
	double t0;
	int rc = -1, tries = 0;
	pid_t d;

	d = stall_ssqd_up("adv-mem-unsig");
	if (d < 0)
		return 1;
	if (conn_open(&w)) {
		CHECK(0, "client: %s", ssq_client_error(w.c));
		goto out;
	}
	rc = ssq_post_write(w.p, w.src.iova, w.src.lkey, 64, w.dst.remote_addr,
	                    w.dst.rkey, 1, 0);
	CHECK(rc == 0, "an unsignaled WRITE: %d", rc);
	usleep(50 * 1000); /* the device has done it */
	for (t0 = now_s(); now_s() - t0 < 2.0; usleep(20 * 1000)) {
		while (ssq_poll(w.p, &comp, 1) > 0)
			;
		tries++;
		rc = ssq_buf_free(w.c, &w.src);
		if (rc != -EBUSY)
			break;
	}
	fprintf(stderr, "after %.2f s and %d tries: free %d (%s)\n", now_s() - t0, tries,
	        rc, rc ? ssq_client_error(w.c) : "ok");
	CHECK(rc == 0, "the buffer of an unsignaled WRITE is freed on a quiet queue");
	ssq_client_close(w.c);
out:
	stall_ssqd_down(d);
	return test_exit("ctrl_adv_mem_free_unsignaled");
}
