/* SPDX-License-Identifier: MIT */
/*
 * A combined request still POSTED in its owner's hand-over slot holds the
 * keys it names (<ssq/combine.h>; ssqd on the emulated device). Owner A
 * registers two memfds and hands a FETCH_ADD whose local word is in the
 * first over to B, who holds the combiner role and has not taken it yet.
 * A's ssq_mem_dereg of the first is refused -EBUSY (any combiner may take
 * the request and write it with that key at any time); of the second it is
 * not. B then combines: the request runs once and the queue stays ready.
 * Before, the first deregistration went through, and the WQE B wrote met a
 * dead lkey (LOC_PROT_ERR): the queue went to error for every client.
 * Once the request completed, A's deregistration goes through.
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <ssq/combine.h>
#include "dv/ctl.h"
#include "dereg_flow.h"

int main(void)
{
	struct ssq_completion comp = { 0 };
	struct ssq_mr held, other;
	volatile uint64_t *cnt;
	struct conn a, b;
	struct ssq_ctl *ctl;
	uint64_t w;
	pid_t d;
	int rc;

	d = stall_ssqd_up("comb-posted-dereg");
	if (d < 0)
		return 1;
	if (conn_open(&b) || conn_open(&a)) {
		t_ssqd_kill(d, sock_path);
		return 1;
	}
	cnt = b.dst.addr;
	*cnt = 0;
	ctl = b.p->ctl;
	CHECK(stall_reg_memfd(&a, "posted-dereg", &held) == 0 &&
	          stall_reg_memfd(&a, "posted-dereg", &other) == 0,
	      "A's two registrations: %s", ssq_client_error(a.c));
	if (test_failures)
		goto out;

	/* B holds the role: A's post hands its request over, and it waits. */
	__atomic_store_n(&ctl->comb_role, b.p->id + 1, __ATOMIC_SEQ_CST);
	rc = ssq_post_fetch_add_combined(a.p, held.iova, held.lkey, b.dst.remote_addr,
	                                 b.dst.rkey, 1, 7, SSQ_WQE_SIGNALED);
	w = __atomic_load_n(&a.p->me->hand.word, __ATOMIC_ACQUIRE);
	CHECK(rc == 0 && (w & 3) == SSQ_HAND_POSTED,
	      "A's combined FETCH_ADD: %d, its slot's word %llx (want POSTED)", rc,
	      (unsigned long long)w);
	if (test_failures)
		goto out;

	rc = ssq_mem_dereg(a.c, &held);
	printf("A's dereg of the key its POSTED request names: %d\n", rc);
	CHECK(rc == -EBUSY, "A's dereg of the key in its POSTED request: %d, want -EBUSY",
	      rc);
	rc = ssq_mem_dereg(a.c, &other);
	CHECK(rc == 0, "A's dereg of a key no request names: %d (%s)", rc,
	      ssq_client_error(a.c));

	/* B combines: A's request written with A's key, which is still there. */
	(void)ssq__combine(b.p);
	ran_once_wait(ctl, &b, cnt, "after B combined");
	CHECK(!ssq_ctl_in_error(ctl),
	      "the queue went to error: A's request ran with a deregistered key");
	CHECK(*cnt == 1, "A's request ran %llu times, want once",
	      (unsigned long long)*cnt);

	/* A's completion, then its deregistration goes through. */
	rc = flushed_comp(&a, &comp, ~0ull);
	CHECK(rc == 1 && comp.wr_id == 7 && comp.status == IBV_WC_SUCCESS,
	      "A's completion: %d, wr_id %llu status %d", rc,
	      (unsigned long long)comp.wr_id, rc == 1 ? comp.status : -1);
	rc = dereg_when_free(&a, &held);
	CHECK(rc == 0, "A's dereg once its request completed: %d (%s)", rc,
	      ssq_client_error(a.c));
out:
	ssq_client_close(a.c);
	ssq_client_close(b.c);
	t_ssqd_kill(d, sock_path);
	return test_exit("ssq_combine_posted_dereg");
}
