/* SPDX-License-Identifier: MIT */
/*
 * A heal that cannot finish must not stop ssqd's progress watch (ssqd
 * --stall-ms 0, the emulated device). Client Z's record is left
 * mid-reservation (an odd resv_gen: a producer stopped between R9a and its
 * fetch-add, which nothing ends under --stall-ms 0); client Y detaches, so
 * the heal after it waits on Z (H2) and stays pending. Client X then posts
 * one WRITE that asks for no completion: `completed` moves only with a
 * CQE, so ssqd's quiet watch posts a signaled NOP of its own behind it
 * (ask_completion), and X's free of the buffer that WRITE carries, refused
 * -EBUSY while it is in flight, goes through. Before, the stall watch
 * counted the pending heal as progress (progress_moved): its clock
 * restarted at every look, no NOP came for as long as the heal waited, and
 * the free stayed -EBUSY. Z's record set right again, the heal finishes.
 */
#include "dv/ctl.h"
#include "stall_flow.h"

int main(void)
{
	struct conn x, y, z;
	struct ssq_ctl *ctl;
	uint32_t gen;
	double t0, t;
	int n, rc;
	pid_t d;

	setenv("SSQ_TEST_STALL_OPT", "--stall-ms=0", 1);
	d = stall_ssqd_up("stall-heal-pending");
	if (d < 0)
		return 1;
	if (conn_open(&x) || conn_open(&y) || conn_open(&z)) {
		t_ssqd_kill(d, sock_path);
		return 1;
	}
	ctl = x.p->ctl;

	/* Z "stopped mid-reservation"; Y's detach: a heal that waits on Z. */
	gen = __atomic_load_n(&ctl->producers[z.p->id].resv_gen, __ATOMIC_SEQ_CST);
	__atomic_store_n(&ctl->producers[z.p->id].resv_gen, gen | 1, __ATOMIC_SEQ_CST);
	CHECK(ssq_queue_close(y.q) == 0, "Y's close");
	n = log_count_wait("healing after a death held up", NULL, 1, 20);
	printf("Y detached, the heal waiting on Z: %d \"held up\" line(s)\n", n);
	CHECK(n == 1, "the heal is not held up by Z (the test's premise)");

	/* X: one WRITE with no completion asked, then frees its source. */
	memset(x.src.addr, 0x5a, 64);
	rc = ssq_post_write(x.p, x.src.iova, x.src.lkey, 64, x.dst.remote_addr,
	                    x.dst.rkey, 1, 0);
	CHECK(rc == 0, "X's WRITE: %d", rc);
	/*
	 * Not checked: that the WRITE is still uncompleted here. It is, unless
	 * the quiet watch's NOP already came (a test stopped for 100 ms on a
	 * loaded machine); before the fix none ever came (the free below).
	 */
	printf("X's WRITE posted: reserved %llu completed %llu\n",
	       (unsigned long long)ssq_ctl_reserved(ctl),
	       (unsigned long long)ssq_ctl_completed(ctl));
	for (t0 = now_s();
	     (rc = ssq_buf_free(x.c, &x.src)) == -EBUSY && now_s() - t0 < 5;)
		usleep(10000);
	t = now_s() - t0;
	printf("X's free of the WRITE's source, the heal pending: %d after %.2f s "
	       "(reserved %llu completed %llu)\n",
	       rc, t, (unsigned long long)ssq_ctl_reserved(ctl),
	       (unsigned long long)ssq_ctl_completed(ctl));
	CHECK(rc == 0,
	      "X's free still %d after %.1f s: no completion asked for while the heal "
	      "waits (the stall watch took the pending heal for progress)",
	      rc, t);

	/* Z set right: the heal finishes, and the queue serves. */
	__atomic_store_n(&ctl->producers[z.p->id].resv_gen, (gen | 1) + 1,
	                 __ATOMIC_SEQ_CST);
	rc = write_status(&z, z.src.iova, z.src.lkey, z.dst.remote_addr, z.dst.rkey, 7);
	printf("Z's WRITE after: status %d\n", rc);
	CHECK(rc == IBV_WC_SUCCESS, "Z's WRITE: status %d", rc);
	ssq_client_close(x.c);
	ssq_client_close(y.c);
	ssq_client_close(z.c);
	stall_ssqd_down(d);
	return test_exit("ctrl_stall_heal_pending");
}
