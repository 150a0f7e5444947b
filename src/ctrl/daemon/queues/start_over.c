/* SPDX-License-Identifier: MIT */
/*
 * The control block's half of starting a queue over in place, shared by
 * the guard and the stall watch (watch/guard.c) and a restart with the
 * peer host (peers/restart.c): which records are kept, and the block
 * rebuilt from ssqd's own copies once its QP is through RESET.
 */
#include <string.h>
#include "ctrl/daemon/queues/queues.h"

uint64_t ssqd_live_records(const struct ssqd *d, unsigned qi)
{
	uint64_t live = 0;
	unsigned i;

	for (i = 0; i < SSQD_MAX_CLIENTS; i++) {
		const struct ssqd_client *c = &d->clients[i];

		if (c->fd >= 0)
			live |= c->recs[qi];
	}
	return live;
}

void ssqd_queue_start_over(struct ssqd *d, unsigned qi, int held)
{
	struct ssqd_queue *q = &d->queues[qi];
	unsigned i;

	q->epoch++;
	/* What was in flight completes to its owners as flushed. */
	if (held)
		ssq_ctl_rebuild_held(&q->prod, q->epoch, ssqd_live_records(d, qi),
		                     SSQD_LEASE_MS);
	else
		ssq_ctl_rebuild(&q->prod, q->epoch, ssqd_live_records(d, qi),
		                SSQD_LEASE_MS);
	/* Nothing is left to heal, no hold to watch, nothing reserved before. */
	memset(&q->stall, 0, sizeof(q->stall));
	q->heal_pending = 0;
	q->heal_since_ns = 0;
	q->heal_logged = 0;
	for (i = 0; i < SSQD_MAX_GRAVES; i++)
		d->graves[i].fence[qi] = 0;
	q->sq_frozen = 0;
	ssqd_queue_binds_reset(d, qi);
	if (!held)
		ssqd_queue_relist(d, qi);
}
