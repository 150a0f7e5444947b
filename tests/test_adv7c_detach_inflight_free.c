/* SPDX-License-Identifier: MIT */
/*
 * Adversary h-adv7c: a client's WQEs still in flight after it closed the
 * queue (ssq_queue_close does not wait for completions) keep its keys
 * alive, as its WQEs on a queue still open do (ssqd_key_in_flight).
 * DETACH cleared the record's bit from c->recs, and ssqd_key_in_flight
 * searched only c->recs (and, since aaebc36, c->hand_recs: a detached
 * record with a combined request out - not one with its own WQEs out),
 * so the FREE of a keyed buffer that those WQEs read from was answered 0:
 * its MR deregistered, the device met a dead lkey (LOC_PROT_ERR) and the
 * shared QP went to error for every client.
 * A (stays connected) publishes 32 WRITEs of 1 MiB from its own keyed
 * buffer, the doorbell not rung, closes q0 and frees the buffer; then
 * V posts on q0 (ringing the doorbell over A's WRITEs too).
 * Passes when the FREE says -EBUSY (or the WRITEs ran first) and V's
 * WRITE completes with status 0.
 */
#include "stall_flow.h"

#define BIG (1u << 20)
#define N   32

int main(void)
{
	struct ssq_buf big, far;
	struct conn a, v;
	int i, fr, cl, st;
	double t0;
	pid_t d;

	d = stall_ssqd_bufs("adv7c-detach", &a, &v, &big, &v, &far, BIG);
	if (d < 0)
		return 1;
	i = stall_publish_writes(&a, &big, &far, BIG, N);
	cl = ssq_queue_close(a.q);
	fr = ssq_buf_free(a.c, &big);
	fprintf(stderr,
	        "A published %d WRITEs of 1 MiB from its keyed buffer (not rung), "
	        "closed q0: %d, freed the buffer: %d\n",
	        i, cl, fr);
	CHECK(i == N && cl == 0, "A's posts %d close %d", i, cl);
	st = write_status(&v, v.src.iova, v.src.lkey, v.dst.remote_addr, v.dst.rkey, 7);
	fprintf(stderr, "V's WRITE on q0 after it: status %d\n", st);
	CHECK(st == 0,
	      "a client's FREE of the source of its WQEs still in flight after its "
	      "close was answered %d and put the shared queue in error (V's WRITE: %d)",
	      fr, st);
	if (fr == -EBUSY) {
		/* Once they completed, the FREE goes through (bounded). */
		t0 = now_s();
		while ((fr = ssq_buf_free(a.c, &big)) == -EBUSY && now_s() - t0 < 10.0)
			usleep(10000);
		fprintf(stderr, "A's FREE again, its WRITEs completed: %d\n", fr);
		CHECK(fr == 0, "A's FREE after its WRITEs completed: %d", fr);
	}
	ssq_client_close(v.c);
	ssq_client_close(a.c);
	stall_ssqd_down(d);
	return test_exit("adv7c_detach_inflight_free");
}
