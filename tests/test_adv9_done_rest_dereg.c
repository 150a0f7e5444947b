/* SPDX-License-Identifier: MIT */
/*
 * Adversary (h-adv9): the rest of a batch a combiner took a prefix of
 * holds the keys it names until its owner settles it (<ssq/combine.h>:
 * "fewer if half the ring is reached ... a prefix: the rest is its
 * owner's"; ssqd on the emulated device, --stall-ms 0). Owner A hands two
 * FETCH_ADDs over, the second (appended: POSTED(seq, 2)) with its local
 * word in a registration of its own; C, holding the combiner role and at
 * the end of its half ring, takes the first only (C10: TAKEN(pos, 1)),
 * publishes it in A's name and says DONE(pos, 1), as ssq__combine does.
 * It completes: the word says DONE at a position completed, and A has not
 * settled yet - when it does it posts the second itself, with its keys.
 * A's ssq_mem_dereg of the second's key in between must be refused
 * -EBUSY. Before, it went through (nothing looked at the requests of a
 * DONE slot), and A's flush wrote the WQE with a dead lkey: LOC_PROT_ERR,
 * the queue in error for every client.
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <ssq/combine.h>
#include "dv/ctl.h"
#include "dereg_flow.h"

int main(void)
{
	struct ssq_completion comp = { 0 };
	struct ssq_producer *cp;
	volatile uint64_t *cnt;
	struct ssq_ctl_hand_req h;
	struct ssq_mr held;
	struct ssq_ctl *ctl;
	struct conn a, c;
	uint64_t w, pos = 0;
	double t0;
	pid_t d;
	int rc, dereg = -1;

	setenv("SSQ_TEST_STALL_OPT", "--stall-ms=0", 1);
	d = stall_ssqd_up("adv9-done-rest");
	if (d < 0)
		return 1;
	if (conn_open(&c) || conn_open(&a)) {
		t_ssqd_kill(d, sock_path);
		return 1;
	}
	cp = c.p;
	ctl = cp->ctl;
	cnt = c.dst.addr;
	*cnt = 0;
	CHECK(stall_reg_memfd(&a, "done-rest-dereg", &held) == 0, "A's registration: %s",
	      ssq_client_error(a.c));
	if (test_failures)
		goto out;

	/* C holds the role: A's two requests are handed over, one batch. */
	__atomic_store_n(&ctl->comb_role, cp->id + 1, __ATOMIC_SEQ_CST);
	rc = ssq_post_fetch_add_combined(a.p, a.src.iova, a.src.lkey, c.dst.remote_addr,
	                                 c.dst.rkey, 1, 6, SSQ_WQE_SIGNALED);
	rc = rc
	         ?: ssq_post_fetch_add_combined(a.p, held.iova, held.lkey,
	                                        c.dst.remote_addr, c.dst.rkey, 1, 7,
	                                        SSQ_WQE_SIGNALED);
	w = __atomic_load_n(&a.p->me->hand.word, __ATOMIC_ACQUIRE);
	CHECK(rc == 0 && (w & 3) == SSQ_HAND_POSTED && ssq__hand_n(w) == 2,
	      "A's combined FETCH_ADDs: %d, its slot's word %llx (want POSTED, 2)", rc,
	      (unsigned long long)w);
	if (test_failures)
		goto out;
	/* C, at its half ring's end, takes the first and publishes it as A's. */
	CHECK(ssq__reserve(cp, 1, 0, &pos) == 0, "C's reservation");
	CHECK(!test_failures && ssq__combine_take(cp, a.p->id, w, pos, 1) == 1,
	      "C's take of A's first request");
	if (test_failures)
		goto out;
	__builtin_memcpy(&h, &ctl->producers[a.p->id].hand.req[0], sizeof(h));
	CHECK(ssq__combine_build(cp, &h, pos, a.p->id, 0) == 1,
	      "C's publish of A's first");
	w = ssq__hand_wordn(pos, 1, SSQ_HAND_TAKEN);
	CHECK(__atomic_compare_exchange_n(&ctl->producers[a.p->id].hand.word, &w,
	                                  ssq__hand_wordn(pos, 1, SSQ_HAND_DONE), 0,
	                                  __ATOMIC_RELEASE, __ATOMIC_RELAXED),
	      "C's DONE");
	ssq_submit(cp);
	for (t0 = now_s(); ssq_ctl_completed(ctl) <= pos && now_s() - t0 < 10;) {
		ssq_progress(cp);
		usleep(1000);
	}
	w = __atomic_load_n(&a.p->me->hand.word, __ATOMIC_ACQUIRE);
	printf("A's slot word %llx (DONE at %llu, 1), completed %llu\n",
	       (unsigned long long)w, (unsigned long long)pos,
	       (unsigned long long)ssq_ctl_completed(ctl));
	CHECK((w & 3) == SSQ_HAND_DONE && ssq_ctl_completed(ctl) > pos,
	      "A's first request did not complete");

	dereg = ssq_mem_dereg(a.c, &held);
	printf("A's dereg of the key its unsettled request names: %d\n", dereg);
	CHECK(dereg == -EBUSY,
	      "A's dereg of the key its unsettled request names: %d, want -EBUSY", dereg);

	/* The role free: A settles and posts its second itself. */
	__atomic_store_n(&ctl->comb_role, 0, __ATOMIC_SEQ_CST);
	rc = flushed_comp(&a, &comp, 6); /* past the first */
	usleep(200000);                  /* a second run would show by now */
	printf("A's second: completion %d status %d, ran %llu time(s), queue %s\n", rc,
	       rc == 1 ? comp.status : -1, (unsigned long long)*cnt,
	       ssq_ctl_in_error(ctl) ? "in ERROR" : "ready");
	CHECK(!ssq_ctl_in_error(ctl),
	      "the queue went to error: A's request ran with a deregistered key");
	CHECK(rc == 1 && comp.wr_id == 7 && comp.status == IBV_WC_SUCCESS,
	      "A's completion: %d, wr_id %llu status %d", rc,
	      (unsigned long long)comp.wr_id, rc == 1 ? comp.status : -1);
	CHECK(*cnt == 2, "A's requests ran %llu times in all, want 2",
	      (unsigned long long)*cnt);
	if (dereg == -EBUSY) {
		rc = dereg_when_free(&a, &held);
		CHECK(rc == 0, "A's dereg once its request completed: %d (%s)", rc,
		      ssq_client_error(a.c));
	}
out:
	ssq_client_close(a.c);
	ssq_client_close(c.c);
	t_ssqd_kill(d, sock_path);
	return test_exit("adv9_done_rest_dereg");
}
