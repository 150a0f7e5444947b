/* SPDX-License-Identifier: MIT */
/*
 * A reservation that a restart of the queue overtakes fails instead of
 * building into a position the new epoch hands out again. Producer S is
 * held (a fault hook) between its fetch-add and recording the result;
 * meanwhile a client scribbles the control block and ssqd starts the queue
 * over (its record IDLE, `reserve` back to 0). S then goes on: ssq_reserve
 * must return -EIO, leave its record IDLE, and another client's WRITEs
 * must complete as before. Before, S wrote BUILDING over the IDLE, its
 * publish was accepted at a position the new epoch gave another WQE, and
 * that WQE never completed (an adversary's finding, issue 16).
 */
#define SSQ_FAULT_HOOKS 1
#include "dv/ctl.h"
#include "stall_flow.h"

static struct ssq_ctl *ctl;
static int armed;

/* After S's fetch-add: have ssqd start the queue over, and wait for it. */
void ssq_fault_hook(int where)
{
	uint32_t epoch;
	double t0;

	if (where != SSQ_HOOK_AFTER_ADD || !armed)
		return;
	armed = 0;
	epoch = ssq_ctl_epoch(ctl);
	__atomic_store_n(&ctl->magic, 0, __ATOMIC_SEQ_CST);
	for (t0 = now_s(); ssq_ctl_epoch(ctl) == epoch && now_s() - t0 < WAIT_S;)
		usleep(1000);
	/* The rebuild stores the epoch before READY: wait for that too. */
	while (ssq_ctl_in_error(ctl) && now_s() - t0 < WAIT_S)
		usleep(1000);
}

int main(void)
{
	struct conn s, b;
	uint64_t pos = 0;
	uint32_t epoch;
	int rc;
	double took;
	pid_t d;

	d = stall_ssqd_conns("race", &s, &b);
	if (d < 0)
		return 1;
	ctl = s.p->ctl;
	CHECK(write_timed(&b, 1, WAIT_S) >= 0, "B's first WRITE");
	epoch = ssq_ctl_epoch(ctl);
	armed = 1;
	rc = ssq_reserve(s.p, 1, &pos);
	CHECK(ssq_ctl_epoch(ctl) != epoch, "ssqd did not start the queue over");
	CHECK(rc == -EIO,
	      "S's reservation overtaken by the restart: %d at position %llu, want -EIO",
	      rc, (unsigned long long)pos);
	CHECK(__atomic_load_n(&s.p->me->state, __ATOMIC_SEQ_CST) == SSQ_PROD_IDLE,
	      "S's record is %u after the failed reservation, not IDLE",
	      __atomic_load_n(&s.p->me->state, __ATOMIC_SEQ_CST));
	if (rc == 0) /* as before the fix: S builds into its stale position */
		(void)ssq_post_write(s.p, s.src.iova, s.src.lkey, 64, s.dst.remote_addr,
		                     s.dst.rkey, 0x5555, SSQ_WQE_SIGNALED);
	took = write_timed(&b, 2, WAIT_S);
	CHECK(took >= 0 && took < BOUND_S, "B's WRITE after the restart took %.3f s",
	      took);
	took = write_timed(&s, 3, WAIT_S);
	CHECK(took >= 0 && took < BOUND_S, "S's next WRITE took %.3f s", took);
	ssq_client_close(s.c);
	ssq_client_close(b.c);
	stall_ssqd_down(d);
	return test_exit("ctrl_rebuild_race");
}
