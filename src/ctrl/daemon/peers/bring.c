/* SPDX-License-Identifier: MIT */
/*
 * A peer's queues brought up against its addresses, once a link's
 * exchange has them: fresh PSNs and a fence before ours go out, then each
 * queue connected (the first link) or recovered (a re-link), and
 * published READY; the accepting side's whole step (ssqd_peer_rebring).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "ctrl/daemon/util/util.h"
#include "ctrl/daemon/queues/queues.h"
#include "ctrl/daemon/peers/peers.h"
#include "ctrl/daemon/peers/link_life.h"

/* Our addresses for @p's queues, at fresh PSNs. */
static void fresh_psns(struct ssqd *d, const struct ssqd_peer *p)
{
	unsigned k;

	for (k = 0; k < d->opt.peer_queues; k++) {
		unsigned qi = p->q0 + k;

		d->psn[qi] = ssqd_queue_new_psn();
		d->local_addrs[qi].psn = d->psn[qi];
	}
}

/* In a cluster: the addresses came from the daemon @p names. */
int ssqd_peer_check_sender(const struct ssqd *d, const struct ssqd_peer *p,
                           const struct proto_peer_addr *remote, char *why, size_t whylen)
{
	unsigned k;

	if (!p->name[0])
		return 0;
	for (k = 0; k < d->opt.peer_queues; k++)
		if (strcmp(remote[k].name, p->name)) {
			snprintf(why, whylen,
			         "dialed %s but the daemon there is named '%s' (the "
			         "peers files differ)",
			         p->name, remote[k].name);
			return -EBADMSG;
		}
	return 0;
}

/* Queue @qi against its peer's new address @r: connected or recovered, READY. */
static int bring_queue(struct ssqd *d, const struct ssqd_peer *p, unsigned qi,
                       const struct proto_peer_addr *r, uint64_t end_ns, char *why,
                       size_t whylen)
{
	struct shm_queue_layout *l = &d->hdr->queues[qi];
	int rc;

	d->queues[qi].remote = *r;
	if (!p->ever) {
		rc = ssqd_queue_connect(d, &d->queues[qi].local, d->psn[qi], r, why,
		                        whylen);
		if (!rc)
			rc = ssqd_recv_arm(d, qi, why, whylen);
	} else {
		/* The new peer's arena, before anyone may post again. */
		l->peer_qpn = r->qpn;
		l->peer_data_iova = r->data_iova;
		l->peer_key = r->data_rkey;
		rc = ssqd_queue_recover(d, qi, end_ns, why, whylen);
	}
	if (!rc) {
		/* Before the READY store that publishes it (ssqd_queue_list). */
		d->queues[qi].peer_gen++;
		ssqd_queue_publish(d, qi, r);
	}
	return rc;
}

/*
 * Our addresses out on @s: fenced first (the peer that answers may start
 * sending as soon as its side is up, and our QPs should be back in RTR by
 * then, not still draining), at fresh PSNs.
 */
int ssqd_peer_send_addrs(struct ssqd *d, struct ssqd_peer *p, int s, char *why,
                         size_t whylen)
{
	int rc;

	if (p->ever)
		ssqd_peer_fence_all(d, p);
	fresh_psns(d, p);
	rc = ssqd_link_send(s, &d->local_addrs[p->q0], d->opt.peer_queues, &p->auth, why,
	                    whylen);
	if (rc && p->ever)
		ssqd_peer_fence_all(d, p);
	return rc;
}

/* The peer's addresses @r are in: its queues up, @s its link. */
int ssqd_peer_finish(struct ssqd *d, struct ssqd_peer *p, int s,
                     const struct proto_peer_addr *r, char *why, size_t whylen)
{
	uint64_t end = ssqd_now_ns() + REBRING_DRAIN_MS * 1000000ull;
	unsigned k;
	int rc;

	for (k = 0; k < d->opt.peer_queues; k++) {
		rc = bring_queue(d, p, p->q0 + k, &r[k], end, why, whylen);
		if (rc)
			goto fail;
	}
	ssqd_link_keepalive(s);
	ssqd_peer_link_to(d, p, SSQD_LINK_LINKED, s);
	p->ever = 1;
	p->rx_len = 0;
	p->remote_busy = 1; /* until it says otherwise */
	p->busy_told = -1;
	p->links++;
	p->attempts = 0;
	p->last_why[0] = 0;
	return 0;
fail:
	if (p->ever)
		ssqd_peer_fence_all(d, p);
	return rc;
}

int ssqd_peer_rebring(struct ssqd *d, struct ssqd_peer *p, int s,
                      const struct proto_peer_addr *remote, char *why, size_t whylen)
{
	/* Theirs came first; each side connects its own QPs after the exchange. */
	int rc = ssqd_peer_send_addrs(d, p, s, why, whylen);

	return rc ? rc : ssqd_peer_finish(d, p, s, remote, why, whylen);
}
