/* SPDX-License-Identifier: MIT */
/*
 * The end of grants (clients/grant.c makes them): a grant is a type-2
 * memory window bound to one queue's QP, and it names a peer, not a QP.
 * When that queue's link goes down, whoever links next under the peer's
 * name (a restarted daemon, with --listen any host that connects) gets the
 * same QP, reset and connected again: a window left bound would let the
 * newcomer read and write what was granted to its predecessor. So the
 * windows go with the link, before the QP is brought up for anyone; their
 * owners learn it from the peer event (ssq_queue_peer_gen) and REVOKE's
 * -ENOENT, and grant again to the peer that is there now.
 */
#include <errno.h>
#include <string.h>
#include "ctrl/daemon/queues/queues.h"

void ssqd_grant_free(struct ssqd *d, struct ssqd_grant *g)
{
	if (g->mw)
		d->ops->revoke(d->backend, g->mw);
	memset(g, 0, sizeof(*g));
}

void ssqd_grant_revoke(struct ssqd *d, struct ssqd_grant *g)
{
	/*
	 * A bind still on the ring would bind a freed window - or the next
	 * one given the same index (ibv_alloc_mw) - once it runs: the slot
	 * stays taken, unanswered, until the bind cannot run
	 * (clients/grant.c, ssqd_grants_tick frees it then).
	 */
	if (g->binding) {
		g->gone = 1; /* and its owner, if it waits, told so */
		return;
	}
	/* Its bind ran or cannot: the window goes now (once: revoke may come again). */
	if (g->mw)
		d->ops->revoke(d->backend, g->mw);
	g->mw = NULL;
	/*
	 * Its GRANT not answered yet (ssqd_grants_tick answers next): the
	 * slot stays until the owner is told -ECANCELED - a GRANT never
	 * answered would hold every later call of its client
	 * (client_call_wait reads replies in order).
	 */
	if (g->answer) {
		g->gone = 1;
		return;
	}
	memset(g, 0, sizeof(*g));
}

void ssqd_grants_seen(struct ssqd *d, unsigned qi, const struct ssq_completion *comp,
                      int n)
{
	unsigned i;
	int k;

	for (k = 0; k < n; k++)
		for (i = 0; i < SSQD_MAX_GRANTS; i++) {
			struct ssqd_grant *g = &d->grants[i];

			if (!g->owner || !g->binding || g->queue != qi ||
			    g->wr_id != comp[k].wr_id)
				continue;
			g->binding = 0;
			/* Flushed: a reset took it off the ring before it ran. */
			g->bind_rc = comp[k].status == IBV_WC_SUCCESS        ? 0
			             : comp[k].status == IBV_WC_WR_FLUSH_ERR ? -ECANCELED
			                                                     : -EIO;
			g->syndrome = comp[k].syndrome;
		}
}

unsigned ssqd_queue_grants_drop(struct ssqd *d, unsigned qi)
{
	unsigned i, n = 0;

	for (i = 0; i < SSQD_MAX_GRANTS; i++)
		if (d->grants[i].owner && d->grants[i].queue == qi &&
		    !d->grants[i].gone) {
			ssqd_grant_revoke(d, &d->grants[i]);
			n++;
		}
	return n;
}

void ssqd_queue_binds_reset(struct ssqd *d, unsigned qi)
{
	struct ssq_completion comp[16];
	unsigned i;
	int n;

	/* The flushed completions the rebuild gave ssqd's producer first. */
	while ((n = ssq_poll(&d->queues[qi].prod, comp, 16)) > 0)
		ssqd_grants_seen(d, qi, comp, n);
	/* Through RESET, a bind still counted as on the ring can no longer run. */
	for (i = 0; i < SSQD_MAX_GRANTS; i++)
		if (d->grants[i].owner && d->grants[i].binding &&
		    d->grants[i].queue == qi) {
			d->grants[i].binding = 0;
			d->grants[i].bind_rc = -ECANCELED;
		}
}
