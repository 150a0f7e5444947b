/* SPDX-License-Identifier: MIT */
/*
 * The device's thread and (loopback) the receive poller, put to sleep up
 * to SSQD_IDLE_MS while ssqd is idle (idle.c decides when) and woken at
 * once when it is not: ssqd_idle_leave, before an attach is answered, so
 * that the client's first doorbell finds them polling.
 */
#include "ctrl/daemon/queues/queues.h"

/* Only the queue's own QP receives: what the wire brings, any time. */
static int all_loopback(const struct ssqd *d)
{
	unsigned i;

	for (i = 0; i < d->opt.nqueues; i++)
		if (!d->queues[i].loopback)
			return 0;
	return 1;
}

void ssqd_queues_idle(struct ssqd *d, int idle)
{
	if (idle == d->idle)
		return;
	d->idle = idle;
	if (d->backend && d->ops->idle)
		d->ops->idle(d->backend, idle ? SSQD_IDLE_MS : 0);
	/* A wire brings messages to the receive CQs whatever ssqd's clients do. */
	ssqd_recv_idle(d, idle && all_loopback(d) ? SSQD_IDLE_MS : 0);
}

void ssqd_idle_leave(struct ssqd *d)
{
	ssqd_queues_idle(d, 0);
}
