/* SPDX-License-Identifier: MIT */
/*
 * Adversary (h-adv9): a combined request a combiner took and did not
 * publish (it died, and the heal put a NOP in its place) holds the keys
 * it names until its owner settles it (<ssq/combine.h>; ssqd on the
 * emulated device, --stall-ms 0). Owner A hands a FETCH_ADD whose local
 * word is in a registration of its own over; C, holding the combiner role,
 * reserves, takes it (C10: TAKEN(pos, 1)) and publishes a NOP in nobody's
 * name at pos, as ssq_ctl_heal does over a dead combiner's reservation.
 * The NOP completes: the word says TAKEN at a position completed, and A
 * has not settled yet - when it does it learns the request was not
 * published and posts it itself, with its keys. A's ssq_mem_dereg of the
 * key it names in between must be refused -EBUSY. Before, it went
 * through (ssq_ctl_hand_out takes a TAKEN batch below `completed` as
 * done, ssq_ctl_hand_names looks at POSTED only), and A's flush wrote the
 * WQE with a dead lkey: LOC_PROT_ERR, the queue in error for every client.
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
	struct ssq_mr held;
	struct ssq_ctl *ctl;
	struct conn a, c;
	uint64_t w, pos = 0;
	double t0;
	pid_t d;
	int rc, dereg = -1;

	setenv("SSQ_TEST_STALL_OPT", "--stall-ms=0", 1);
	d = stall_ssqd_up("adv9-taken-nop");
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
	CHECK(stall_reg_memfd(&a, "taken-nop-dereg", &held) == 0, "A's registration: %s",
	      ssq_client_error(a.c));
	if (test_failures)
		goto out;

	/* C holds the role: A's request is handed over. */
	__atomic_store_n(&ctl->comb_role, cp->id + 1, __ATOMIC_SEQ_CST);
	rc = ssq_post_fetch_add_combined(a.p, held.iova, held.lkey, c.dst.remote_addr,
	                                 c.dst.rkey, 1, 7, SSQ_WQE_SIGNALED);
	w = __atomic_load_n(&a.p->me->hand.word, __ATOMIC_ACQUIRE);
	CHECK(rc == 0 && (w & 3) == SSQ_HAND_POSTED,
	      "A's combined FETCH_ADD: %d, its slot's word %llx (want POSTED)", rc,
	      (unsigned long long)w);
	if (test_failures)
		goto out;
	/* C takes it, and a NOP in nobody's name takes its place (a heal). */
	CHECK(ssq__reserve(cp, 1, 0, &pos) == 0, "C's reservation");
	CHECK(!test_failures && ssq__combine_take(cp, a.p->id, w, pos, 1) == 1,
	      "C's take of A's request");
	if (test_failures)
		goto out;
	CHECK(ssq__publish_nop(cp, pos) == 0, "the NOP at %llu", (unsigned long long)pos);
	ssq_submit(cp);
	for (t0 = now_s(); ssq_ctl_completed(ctl) <= pos && now_s() - t0 < 10;) {
		ssq_progress(cp);
		usleep(1000);
	}
	w = __atomic_load_n(&a.p->me->hand.word, __ATOMIC_ACQUIRE);
	printf("A's slot word %llx (TAKEN at %llu), completed %llu\n",
	       (unsigned long long)w, (unsigned long long)pos,
	       (unsigned long long)ssq_ctl_completed(ctl));
	CHECK((w & 3) == SSQ_HAND_TAKEN && ssq_ctl_completed(ctl) > pos,
	      "the NOP in A's request's place did not complete");

	dereg = ssq_mem_dereg(a.c, &held);
	printf("A's dereg of the key its unsettled request names: %d\n", dereg);
	CHECK(dereg == -EBUSY,
	      "A's dereg of the key its unsettled request names: %d, want -EBUSY", dereg);

	/* The role free: A settles, learns it was not published, posts it. */
	__atomic_store_n(&ctl->comb_role, 0, __ATOMIC_SEQ_CST);
	rc = flushed_comp(&a, &comp, ~0ull);
	usleep(200000); /* a second run would show by now */
	printf("A's request: completion %d status %d, ran %llu time(s), queue %s\n", rc,
	       rc == 1 ? comp.status : -1, (unsigned long long)*cnt,
	       ssq_ctl_in_error(ctl) ? "in ERROR" : "ready");
	CHECK(!ssq_ctl_in_error(ctl),
	      "the queue went to error: A's request ran with a deregistered key");
	CHECK(rc == 1 && comp.wr_id == 7 && comp.status == IBV_WC_SUCCESS,
	      "A's completion: %d, wr_id %llu status %d", rc,
	      (unsigned long long)comp.wr_id, rc == 1 ? comp.status : -1);
	CHECK(*cnt == 1, "A's request ran %llu times, want once",
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
	return test_exit("adv9_taken_nop_dereg");
}
