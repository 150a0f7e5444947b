/* SPDX-License-Identifier: MIT */
/*
 * Adversary, per-buffer keys (ssqd's default): "nothing else changes".  A client posts
 * WRITEs whose source is its own ssq_buf_alloc buffer (through the
 * buffer's own lkey) and frees the buffer before they complete - a client
 * bug that cost nothing with the arena-wide key (the bytes were read from
 * arena memory that was still there).  With keys per buffer ssqd deregisters
 * the buffer's MR at once (FREE has no -EBUSY, unlike ssq_mem_dereg), the
 * device meets a dead lkey: LOC_PROT_ERR puts the shared QP in error, and
 * another client's WRITE on the same queue is flushed and its next post
 * gets -EIO until somebody recovers the queue.
 * The WRITEs are published and the doorbell rung after the FREE, to lose
 * the race every time; on a slow link a FREE overtakes the device as well.
 * Fails while a FREE can put a shared queue in error.
 */
#include "stall_flow.h"

#define BIG (1u << 20)
#define N   32

int main(void)
{
	struct ssq_completion comp;
	struct ssq_buf big, far;
	struct conn a, v;
	int i, rc, fr, bad = 0, got = 0;
	double t0;
	pid_t d;

	d = stall_ssqd_bufs("adv-keys-free", &a, &v, &big, &a, &far, BIG);
	if (d < 0)
		return 1;
	/* Published, the doorbell not yet rung: then the FREE, then the ring. */
	i = stall_publish_writes(&a, &big, &far, BIG, N);
	fr = ssq_buf_free(a.c, &big);
	ssq_submit(a.p);
	fprintf(stderr, "posted %d WRITEs of 1 MiB from the buffer, then freed it: %d\n",
	        i, fr);
	t0 = now_s();
	while (now_s() - t0 < 3.0 && !got)
		if (ssq_poll(a.p, &comp, 1) == 1) {
			got = 1;
			bad = comp.status != IBV_WC_SUCCESS;
			fprintf(stderr, "A's completion: wr %llu status %d\n",
			        (unsigned long long)comp.wr_id, comp.status);
		}
	rc = ssq_post_write(v.p, v.src.iova, v.src.lkey, 64, v.dst.remote_addr,
	                    v.dst.rkey, 7, SSQ_WQE_SIGNALED);
	fprintf(stderr, "another client's post after it: %d\n", rc);
	if (!rc) {
		t0 = now_s();
		while (now_s() - t0 < 3.0)
			if (ssq_poll(v.p, &comp, 1) == 1) {
				fprintf(stderr, "its completion: status %d\n",
				        comp.status);
				rc = comp.status;
				break;
			}
	}
	CHECK(!bad && rc == 0,
	      "a client's FREE of its own in-flight source put the shared queue in "
	      "error (its completion bad %d; another client's WRITE: %d)",
	      bad, rc);
	ssq_client_close(v.c);
	ssq_client_close(a.c);
	stall_ssqd_down(d);
	return test_exit("ctrl_adv_keys_free_inflight");
}
