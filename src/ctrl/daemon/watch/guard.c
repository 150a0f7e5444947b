/* SPDX-License-Identifier: MIT */
/*
 * ssqd's look at what its clients wrote into a queue's control block. The
 * block is in memory every client of the queue maps writable, so a buggy or
 * hostile one can put anything there; the fast path and the healer bound
 * what they read by private copies, and this is the other half: a block
 * no correct run could have made (ssq_ctl_check) is reset - logged, the QP
 * through RESET back to RTS and the block rebuilt from ssqd's own copies
 * of its bounds (q->prod) and epoch (q->epoch) - instead of stalling
 * every client of the queue for good.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "ctrl/daemon/util/util.h"
#include "ctrl/daemon/queues/queues.h"
#include "ctrl/daemon/peers/peers.h"
#include "ctrl/daemon/watch/watch.h"
#include <systemd/sd-daemon.h> /* SD_ERR...: util/log.c */

/*
 * Ten times what ssqd's own wakes allow a beat (SSQD_WAIT_BEAT_NS): taking
 * a live sleeper's count back costs more than skipping a wake, and a
 * stale one costs the routers little more for half a second.
 */
#define STALE_COUNT_NS (10 * SSQD_WAIT_BEAT_NS)

/*
 * A count of ssq_wait sleepers whose beat has stood for STALE_COUNT_NS
 * is one left behind (a process killed asleep never takes its count back;
 * or a scribble): every client that routes the queue's CQ then makes a
 * FUTEX_WAKE per pass that delivers completions (ssq_progress), for as
 * long as the queue lives - one dead process taxing the others' fast
 * path. Take it back: a compare-and-swap from the value seen at the last
 * look to 0, so a count that moved meanwhile (a sleeper came or went) is
 * left to the next look. A live sleeper descheduled that long then takes
 * its own count back below 0, a huge count with no beat once it has gone,
 * which a later look takes back too; meanwhile it may miss a wake and
 * find its completion at the end of its slice, as on any missed wake.
 */
static void stale_waiters(struct ssqd_queue *q, uint64_t now_ns)
{
	/* Acquire: the beat stored before the count (ssq__sleeper_in) is seen. */
	uint32_t w = __atomic_load_n(&q->ctl->waiters, __ATOMIC_ACQUIRE), seen = w;
	uint32_t beat = __atomic_load_n(&q->ctl->wait_beat, __ATOMIC_RELAXED);

	(void)ssqd_beat_live(&q->guard_beat, beat, now_ns); /* when it last moved */
	if (w && now_ns - q->guard_beat.ns >= STALE_COUNT_NS && w == q->guard_waiters)
		(void)__atomic_compare_exchange_n(&q->ctl->waiters, &seen, 0, 0,
		                                  __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
	q->guard_waiters = w;
}

void ssqd_queue_guard(struct ssqd *d, unsigned qi, uint64_t now_ns)
{
	struct ssqd_queue *q = &d->queues[qi];
	char why[160], err[200];
	int rc;

	/*
	 * A recovery under way, or a restart the peer host has not answered
	 * yet, owns the queue until it ends (or times out).
	 */
	if (!q->ctl || q->rec.nwaiters || q->link_seq || now_ns < q->guard_next_ns)
		return;
	q->guard_next_ns = now_ns + SSQD_GUARD_MS * 1000000ull;
	/*
	 * RESTARTING now is a client's store (ssqd's own restarts are over,
	 * or skipped above): it only makes reservations wait, so it is undone
	 * at once, even while restarts are paced; the check then decides
	 * whether anything else was written.
	 */
	if (!ssq_ctl_release(q->ctl))
		ssqd_log_limited(&d->client_log, now_ns,
		                 "ssqd: q%u: a client stored RESTARTING in the control "
		                 "block: READY again\n",
		                 qi);
	ssqd_send_arm_restore(d, qi);
	stale_waiters(q, now_ns);
	if (now_ns < q->restart_next_ns ||
	    !ssq_ctl_check(&q->prod, q->epoch, why, sizeof(why)))
		return;
	ssqd_log_limited(&d->client_log, now_ns,
	                 SD_WARNING
	                 "ssqd: q%u: control block inconsistent (%s): a client wrote "
	                 "it; resetting the queue\n",
	                 qi, why);
	rc = ssqd_queue_rebuild_paced(d, qi, now_ns, err, sizeof(err));
	if (rc) {
		fprintf(stderr,
		        SD_ERR
		        "ssqd: q%u: reset after an inconsistent control block: %s\n",
		        qi, err);
		ssqd_queue_fence(d, qi);
		return;
	}
	if (!q->link_seq) /* else the peer's answer finishes it, and says so */
		fprintf(stderr,
		        "ssqd: q%u reset: QP 0x%x back in RTS, control block rebuilt, "
		        "epoch %u\n",
		        qi, q->local.qpn, q->epoch);
}

int ssqd_queue_rebuild_paced(struct ssqd *d, unsigned qi, uint64_t now_ns, char *why,
                             size_t whylen)
{
	struct ssqd_queue *q = &d->queues[qi];
	unsigned gap;

	if (now_ns < q->restart_next_ns) {
		snprintf(why, whylen,
		         "queue q%u: restarted too often; the next restart in %llu ms",
		         qi,
		         (unsigned long long)((q->restart_next_ns - now_ns) / 1000000));
		return -EAGAIN;
	}
	gap = q->restart_last_ns && now_ns - q->restart_last_ns < 1000000000ull
	          ? (q->restart_gap_ms ? q->restart_gap_ms * 2 : 10)
	          : 0;
	q->restart_gap_ms = gap < 1000 ? gap : 1000;
	q->restart_last_ns = now_ns;
	q->restart_next_ns = now_ns + q->restart_gap_ms * 1000000ull;
	return ssqd_queue_rebuild(d, qi, why, whylen);
}

int ssqd_queue_rebuild(struct ssqd *d, unsigned qi, char *why, size_t whylen)
{
	struct ssqd_queue *q = &d->queues[qi];
	int rc;

	/* Nobody rings the QP while it is reset, nor routes its CQ. */
	ssq_ctl_quiesce(&q->prod, ssqd_live_records(d, qi), SSQD_LEASE_MS);
	if (ssqd_peer_linked(d, qi))
		return ssqd_link_restart(d, qi, why, whylen);
	if (ssqd_queue_peer(d, qi)) {
		/*
		 * Another host's queue whose link is down: its QP is likely
		 * still in RTS there, expecting the PSNs after what it took.
		 * Ours alone at its first PSNs would fall inside that
		 * duplicate window (WRITEs acknowledged, or dropped until
		 * retry exceeded, not executed), and nobody can ask the peer
		 * to restart with us. The block is rebuilt (consistent again,
		 * nothing in flight) but the queue stays fenced: the link's
		 * re-bring restarts both QPs at fresh PSNs.
		 */
		rc = ssqd_queue_reset_qp(d, qi, why, whylen);
		if (!rc)
			ssqd_queue_start_over(d, qi, 1);
		ssqd_queue_fence(d, qi);
		if (!rc)
			snprintf(why, whylen,
			         "queue q%u: its peer is not linked: in error until the "
			         "link is back, which restarts both QPs",
			         qi);
		return rc ? rc : -ENOTCONN;
	}
	rc = ssqd_queue_restart_qp(d, qi, why, whylen);
	if (rc) {
		/*
		 * Not restarting any more: in error (-EIO to reservations, not
		 * the -EAGAIN of a restart), until a fence or a recovery;
		 * ssq_ctl_reset takes over the leases we hold.
		 */
		ssq_ctl_set_error(q->ctl);
		return rc;
	}
	ssqd_queue_start_over(d, qi, 0);
	return 0;
}
