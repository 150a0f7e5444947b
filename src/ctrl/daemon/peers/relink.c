/* SPDX-License-Identifier: MIT */
/*
 * A client's RECOVER of a queue to another host. Resetting only our QP, as
 * loopback recovery does, is not enough between two hosts: the error may
 * have moved the peer's QP to ERR too (a remote access or invalid-request
 * error does), and even if not, our restarted PSNs would fall in its
 * duplicate window and be acknowledged without being executed. So both
 * sides start over: the link is closed, and reopened at once (we dial) or
 * awaited (the peer sees the close and dials again after its first
 * backoff step); the fresh exchange brings every queue of that peer up on
 * both hosts. The serve loop does the dialing and the accepting as for any
 * link (peers/tick.c, peers/accept.c), and clients/recover.c answers the
 * client once the queue is back or SSQD_RELINK_MS have passed: a peer that
 * takes its time (stopped, say) holds up no other client meanwhile.
 */
#include <errno.h>
#include <stdio.h>
#include "ctrl/daemon/peers/peers.h"

uint64_t ssqd_peer_relinking(const struct ssqd *d, unsigned qi)
{
	const struct ssqd_peer *p = ssqd_queue_peer((struct ssqd *)d, qi);
	uint64_t end = 0;
	unsigned k;

	for (k = 0; p && k < d->opt.peer_queues; k++) {
		const struct ssqd_recovery *r = &d->queues[p->q0 + k].rec;

		if (r->nwaiters && r->deadline_ns > end)
			end = r->deadline_ns;
	}
	return end;
}

int ssqd_peer_relink_start(struct ssqd *d, unsigned qi, char *why, size_t whylen)
{
	struct ssqd_peer *p = ssqd_queue_peer(d, qi);
	char reason[96];

	if (!ssq_ctl_in_error(d->queues[qi].ctl)) {
		snprintf(why, whylen, "queue q%u is not in error: nothing to recover",
		         qi);
		return -EINVAL;
	}
	snprintf(reason, sizeof(reason),
	         "a client asked to recover q%u: both hosts start over", qi);
	p->wanted = 1; /* a client has it open: link it again, on demand or not */
	ssqd_peer_lost(d, p, reason);
	if (p->addr)
		p->retry_ns = ssqd_now_ns(); /* dial (or want) at once */
	return 0;
}

int ssqd_peer_relink_done(struct ssqd *d, unsigned qi, uint64_t deadline_ns, char *why,
                          size_t whylen)
{
	struct ssqd_peer *p = ssqd_queue_peer(d, qi);
	char who[64];

	ssqd_peer_str(p, who, sizeof(who));
	if (ssqd_link_up(p) && !ssq_ctl_in_error(d->queues[qi].ctl)) {
		fprintf(stderr, "ssqd: %s: re-linked, q%u ready again\n", who, qi);
		return 0;
	}
	if (ssqd_now_ns() < deadline_ns)
		return 1;
	if (p->dials)
		snprintf(why, whylen,
		         "%s did not answer within %d ms; ssqd keeps reconnecting to %s "
		         "and brings the queue back when it answers",
		         who, SSQD_RELINK_MS, p->addr);
	else
		snprintf(
		    why, whylen,
		    "%s did not reconnect within %d ms; ssqd keeps waiting for it on "
		    "TCP port %u",
		    who, SSQD_RELINK_MS, d->opt.listen_port);
	return -EHOSTDOWN; /* the peer, not this ssqd: see on_recover */
}
