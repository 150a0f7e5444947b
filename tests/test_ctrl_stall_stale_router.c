/* SPDX-License-Identifier: MIT */
/*
 * A router overtaken by a restart of the queue writes nothing into the new
 * epoch. Producer S takes the CQ lease and is held (a fault hook, asleep:
 * "not stopped", as a descheduled process is) in the middle of routing its
 * own signaled WRITE's CQE, just before delivering it. ssqd's stall watch
 * takes the lease back after 10 x --stall-ms by starting the queue over
 * (the CQE routed, S's completion delivered, epoch bumped). While S is
 * still held, client B posts WRITEs in the new epoch and reaps them. Then
 * S goes on. It must find the lease no longer its own and drop what it was
 * doing: S's completion arrives once, B's each once and in order, and the
 * control block stays one the protocol could have made (no reset for an
 * inconsistency). Before, S delivered its completion a second time ("S:
 * its completion arrived 2 times") and stored its old `completed` and CQ
 * consumer index over the new epoch's (here the next walk repaired them),
 * as in ssq_multiproc's failure on a loaded machine (producer 6 held the
 * lease 2285 ms; replayed wr_ids, "control block inconsistent").
 */
#define SSQ_FAULT_HOOKS 1
#include "dv/ctl.h"
#include "stall_flow.h"

#define S_WR 0x5u

static struct conn b;
static struct ssq_ctl *ctl;
static int armed, b_next = 1, b_got = 1;

/* Poll B until wr_id @upto has arrived; each must be the next one. */
static void b_reap(uint64_t upto)
{
	struct ssq_completion comp;
	double t0 = now_s();

	while (b_got <= (int)upto && now_s() - t0 < WAIT_S) {
		if (ssq_poll(b.p, &comp, 1) != 1) {
			usleep(100);
			continue;
		}
		CHECK(comp.status == IBV_WC_SUCCESS && comp.wr_id == (uint64_t)b_got,
		      "B: completion status %d wr_id %llu, expected %d", comp.status,
		      (unsigned long long)comp.wr_id, b_got);
		b_got++;
	}
	CHECK(b_got > (int)upto, "B: wr_id %d never completed", b_got);
}

/* B posts @n signaled WRITEs and reaps them. */
static void b_writes(int n)
{
	int i, rc;

	for (i = 0; i < n; i++) {
		double t0 = now_s();

		while ((rc = ssq_post_write(
		            b.p, b.src.iova, b.src.lkey, 64, b.dst.remote_addr,
		            b.dst.rkey, (uint64_t)b_next, SSQ_WQE_SIGNALED)) == -EAGAIN &&
		       now_s() - t0 < WAIT_S)
			usleep(100);
		CHECK(rc == 0, "B: ssq_post_write %d", rc);
		b_next++;
	}
	b_reap((uint64_t)b_next - 1);
}

/*
 * S, routing its own CQE and about to deliver it: wait, asleep, for ssqd
 * to take the lease back and start the queue over; B works in the new
 * epoch meanwhile; then S goes on.
 */
void ssq_fault_hook(int where)
{
	uint32_t epoch;
	double t0;

	if (where != SSQ_HOOK_CQ_ROUTE || !armed)
		return;
	armed = 0;
	epoch = ssq_ctl_epoch(ctl);
	for (t0 = now_s(); ssq_ctl_epoch(ctl) == epoch && now_s() - t0 < 4 * WAIT_S;)
		usleep(1000);
	CHECK(ssq_ctl_epoch(ctl) != epoch, "ssqd did not take the CQ lease back");
	while (ssq_ctl_in_error(ctl) && now_s() - t0 < 4 * WAIT_S)
		usleep(1000);
	b_writes(6);
}

int main(void)
{
	struct ssq_completion comp;
	struct conn s;
	uint32_t epoch;
	int rc, got = 0;
	double t0;
	pid_t d;

	d = stall_ssqd_conns("stale-router", &s, &b);
	if (d < 0)
		return 1;
	ctl = s.p->ctl;
	b_writes(2);
	epoch = ssq_ctl_epoch(ctl);
	rc = ssq_post_write(s.p, s.src.iova, s.src.lkey, 64, s.dst.remote_addr,
	                    s.dst.rkey, S_WR, SSQ_WQE_SIGNALED);
	CHECK(rc == 0, "S: ssq_post_write %d", rc);
	/* Only S polls now: S routes its own CQE, and is held at the hook. */
	armed = 1;
	for (t0 = now_s(); now_s() - t0 < 2 * WAIT_S && got < 2;) {
		if (ssq_poll(s.p, &comp, 1) == 1) {
			CHECK(comp.status == IBV_WC_SUCCESS && comp.wr_id == S_WR,
			      "S: completion status %d wr_id %llu", comp.status,
			      (unsigned long long)comp.wr_id);
			got++;
			/* Half a second more, for a second one. */
			t0 = now_s() - 2 * WAIT_S + 0.5;
		} else {
			usleep(1000);
		}
	}
	CHECK(!armed, "S never routed its CQE");
	CHECK(got == 1, "S: its completion arrived %d times", got);
	CHECK(ssq_ctl_epoch(ctl) == epoch + 1, "epoch %u, want %u (one restart)",
	      ssq_ctl_epoch(ctl), epoch + 1);
	/* The new epoch goes on: B and S post, and nothing resets it again. */
	b_writes(4);
	CHECK(write_timed(&s, S_WR + 1, WAIT_S) >= 0, "S's next WRITE");
	usleep(500 * 1000); /* several of the watch's looks at the block */
	b_writes(1);
	CHECK(ssq_ctl_completed(ctl) <= ssq_ctl_reserved(ctl),
	      "completed %llu past reserved %llu",
	      (unsigned long long)ssq_ctl_completed(ctl),
	      (unsigned long long)ssq_ctl_reserved(ctl));
	CHECK(ssq_ctl_epoch(ctl) == epoch + 1, "epoch %u after S went on, want %u",
	      ssq_ctl_epoch(ctl), epoch + 1);
	CHECK(log_count("inconsistent", NULL) == 0, "ssqd found the block inconsistent");
	CHECK(log_count("taken back without a kill", NULL) == 1,
	      "ssqd's log: the lease taken back %d times, want once",
	      log_count("taken back without a kill", NULL));
	ssq_client_close(s.c);
	ssq_client_close(b.c);
	stall_ssqd_down(d);
	return test_exit("ctrl_stall_stale_router");
}
