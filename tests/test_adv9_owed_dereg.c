/* SPDX-License-Identifier: MIT */
/*
 * Adversary (h-adv9): a combined request its owner took back and still
 * owes holds the keys it names (<ssq/combine.h>; ssqd on the emulated
 * device, --stall-ms 0). Owner A hands a FETCH_ADD whose local word is in
 * a registration of its own over while C holds the combiner role; C and
 * E hold the whole ring reserved (a slow peer, holders not killed yet).
 * A's ssq_combine_flush, as ssq_mem_dereg(3) says to call, takes the
 * request back (the role is held) and finds no room to post it itself:
 * -EAGAIN, the request still A's to post, first, at its next settle; its
 * slot's word EMPTY. A's deregistration of the key it names must still be
 * refused -EBUSY. Before, it went through (ssqd looked at POSTED, TAKEN
 * and DONE words and the ring, and the request was in none of them), and
 * once the ring drained A's next flush wrote the WQE with the dead lkey:
 * LOC_PROT_ERR, the queue in error for every client.
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <ssq/combine.h>
#include "dv/ctl.h"
#include "dereg_flow.h"

int main(void)
{
	struct ssq_completion comp = { 0 };
	struct ssq_producer *cp, *hold[2];
	volatile uint64_t *cnt;
	uint64_t w, q[2], pos;
	struct ssq_mr held;
	struct conn a, c, e;
	struct ssq_ctl *ctl;
	unsigned ring, i;
	double t0;
	pid_t d;
	int rc, dereg = -1;

	/* No stall kill: C's reservation is this process's. */
	setenv("SSQ_TEST_STALL_OPT", "--stall-ms=0", 1);
	d = stall_ssqd_up("adv9-owed-dereg");
	if (d < 0)
		return 1;
	if (conn_open(&c) || conn_open(&e) || conn_open(&a)) {
		t_ssqd_kill(d, sock_path);
		return 1;
	}
	cp = c.p;
	hold[0] = c.p;
	hold[1] = e.p;
	ctl = cp->ctl;
	ring = cp->slot_mask + 1;
	cnt = c.dst.addr;
	*cnt = 0;
	CHECK(stall_reg_memfd(&a, "owed-dereg", &held) == 0, "A's registration: %s",
	      ssq_client_error(a.c));
	if (test_failures)
		goto out;

	/* C holds the role: A's request is handed over, and waits. */
	__atomic_store_n(&ctl->comb_role, cp->id + 1, __ATOMIC_SEQ_CST);
	rc = ssq_post_fetch_add_combined(a.p, held.iova, held.lkey, c.dst.remote_addr,
	                                 c.dst.rkey, 1, 7, SSQ_WQE_SIGNALED);
	w = __atomic_load_n(&a.p->me->hand.word, __ATOMIC_ACQUIRE);
	CHECK(rc == 0 && (w & 3) == SSQ_HAND_POSTED,
	      "A's combined FETCH_ADD: %d, its slot's word %llx (want POSTED)", rc,
	      (unsigned long long)w);
	/* C and E hold the whole ring, reserved and not published. */
	for (i = 0; i < 2 && !test_failures; i++)
		CHECK(ssq_reserve(hold[i], ring / 2, &q[i]) == 0, "reservation %u", i);
	if (test_failures)
		goto out;

	rc = ssq_combine_flush(a.p);
	w = __atomic_load_n(&a.p->me->hand.word, __ATOMIC_ACQUIRE);
	printf("A's flush with the role held and the ring full: %d, slot word %llx, "
	       "%u request(s) owed\n",
	       rc, (unsigned long long)w, a.p->hand_owed);
	CHECK(rc == -EAGAIN && a.p->hand_owed == 1,
	      "A's flush: %d with %u owed (want -EAGAIN, 1 owed)", rc, a.p->hand_owed);
	dereg = ssq_mem_dereg(a.c, &held);
	printf("A's dereg of the key its owed request names: %d\n", dereg);
	CHECK(dereg == -EBUSY,
	      "A's dereg of the key its owed request names: %d, want -EBUSY", dereg);

	/* C and E let everything go: NOPs in their reservations, the role free. */
	for (i = 0; i < 2; i++) {
		for (pos = q[i]; pos < q[i] + ring / 2; pos++) {
			ssq_prep_nop(ssq_producer_sq(hold[i]), (uint32_t)pos,
			             ssq_wqe_flags(hold[i], pos, 1, 0));
			(void)ssq_publish(hold[i], pos, 1, pos, 0);
		}
		ssq_submit(hold[i]);
	}
	__atomic_store_n(&ctl->comb_role, 0, __ATOMIC_SEQ_CST);

	/* A posts what it owes, and its completion comes. */
	for (rc = 0, t0 = now_s(); rc == 0 && now_s() - t0 < 10;) {
		(void)ssq_combine_flush(a.p);
		(void)ssq_poll(cp, &comp, 1);
		rc = ssq_poll(a.p, &comp, 1);
		if (!rc)
			usleep(1000);
	}
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
	ssq_client_close(e.c);
	t_ssqd_kill(d, sock_path);
	return test_exit("adv9_owed_dereg");
}
