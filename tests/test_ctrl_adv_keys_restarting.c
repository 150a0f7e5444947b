/* SPDX-License-Identifier: MIT */
/*
 * Adversary, the RESTARTING state: "a producer never spins for ever on
 * -EAGAIN; a client scribbling RESTARTING into the shared control block is
 * caught by ssq_ctl_check and the queue reset".  How long is "caught"?
 * Client A writes SSQ_CTL_RESTARTING into ctl->state, once per round, and
 * waits until client B's WRITE is taken again (B polls meanwhile).  Each
 * round is a single 4-byte store; ssqd paces restarts (a restart within 1 s
 * of the last doubles the gap, up to 1000 ms) and does not even look at the
 * control block before the gap is over, so after a few rounds one store
 * keeps every producer of the queue at -EAGAIN for up to a second, ten
 * times --stall-ms (100 ms here). The guard now sets such a store back
 * to READY at its next look (every 10 ms), paced or not.
 * Fails while one store of RESTARTING stops the queue longer than 200 ms.
 */
#include "stall_flow.h"

#define ROUNDS 10

int main(void)
{
	struct ssq_completion comp[16];
	struct conn a, b;
	double worst = 0, t0, dt;
	uint64_t wr = 0;
	int r, rc;
	pid_t d;

	d = stall_ssqd_conns("adv-keys-restarting", &a, &b);
	if (d < 0)
		return 1;
	for (r = 0; r < ROUNDS; r++) {
		__atomic_store_n(&a.p->ctl->state, SSQ_CTL_RESTARTING, __ATOMIC_SEQ_CST);
		t0 = now_s();
		for (;;) {
			rc = ssq_post_write(b.p, b.src.iova, b.src.lkey, 64,
			                    b.dst.remote_addr, b.dst.rkey, wr,
			                    SSQ_WQE_SIGNALED);
			ssq_poll(b.p, comp, 16);
			if (!rc) {
				wr++;
				break;
			}
			if (rc == -EIO && ssq_queue_recover(b.q)) {
				fprintf(stderr, "recover: %s\n", ssq_client_error(b.c));
				break;
			}
			if (rc != -EAGAIN && rc != -EIO) {
				fprintf(stderr, "post: %d\n", rc);
				break;
			}
			if (now_s() - t0 > 10.0)
				break;
			usleep(200);
		}
		dt = now_s() - t0;
		fprintf(stderr, "round %d: one store of RESTARTING, B waited %.0f ms\n",
		        r, dt * 1e3);
		if (dt > worst)
			worst = dt;
		/* Settle the completions, then the next store. */
		t0 = now_s();
		while (now_s() - t0 < 0.02)
			ssq_poll(b.p, comp, 16);
	}
	CHECK(worst < 0.2, "one store of RESTARTING stopped every producer for %.0f ms",
	      worst * 1e3);
	ssq_client_close(b.c);
	ssq_client_close(a.c);
	stall_ssqd_down(d);
	return test_exit("ctrl_adv_keys_restarting");
}
