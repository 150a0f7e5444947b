/* SPDX-License-Identifier: MIT */
/*
 * An idle ssqd: no client has a queue attached and nothing is in flight,
 * so the serve loop has nobody to guard, route for or stall-watch, and no
 * doorbell can come (a client rings only after its attach is answered).
 * Its loop, the device's thread and (loopback) the receive poller then
 * sleep up to SSQD_IDLE_MS instead of every 10 ms, so that several ssqd
 * fit on a small machine; each is woken at once by what ends the idle:
 * the serve loop's poll by a connection, a request or the peer link, the
 * device and the poller by ssqd_idle_leave (queues/device_idle.c) before
 * an attach is answered.
 * Deadlines an idle ssqd still has (a connection's hello, a dial or want
 * to a peer, a linked peer's --idle-ms, accept paused) shorten its sleep
 * to the earliest of them.
 */
#include "ctrl/daemon/daemon.h"
#include "ctrl/daemon/queues/queues.h"
#include "ctrl/daemon/peers/peers.h"

#define PROGRESS_MS 10 /* how often a busy ssqd routes completions nobody polls */

/* Nothing to do between polls but wait for a socket or a deadline? */
static int quiet(const struct ssqd *d)
{
	unsigned i;

	for (i = 0; i < SSQD_MAX_CLIENTS; i++) {
		const struct ssqd_client *c = &d->clients[i];

		if (c->fd >= 0 && (c->attached || c->dying || c->failed))
			return 0;
	}
	for (i = 0; i < SSQD_MAX_GRAVES; i++)
		if (d->graves[i].owner) /* waits for completions */
			return 0;
	for (i = 0; i < d->opt.nqueues; i++) {
		const struct ssqd_queue *q = &d->queues[i];

		if (!q->ctl)
			continue;
		/*
		 * The counters are in client memory: a forged pair only makes
		 * ssqd look at the queue more often, or sleep as if idle, which
		 * nobody attached can notice.
		 */
		if (q->heal_pending || q->rec.nwaiters || q->link_seq ||
		    ssq_ctl_reserved(q->ctl) != ssq_ctl_completed(q->ctl))
			return 0;
	}
	return 1;
}

/* @at is due before *@first: take it. */
static void earliest(uint64_t *first, uint64_t at)
{
	if (at && at < *first)
		*first = at;
}

int ssqd_idle_poll_ms(struct ssqd *d, uint64_t now)
{
	uint64_t first = UINT64_MAX;
	unsigned i;

	ssqd_queues_idle(d, quiet(d));
	if (!d->idle)
		return PROGRESS_MS;
	for (i = 0; i < SSQD_MAX_CLIENTS; i++) {
		const struct ssqd_client *c = &d->clients[i];

		if (c->fd >= 0 && (!c->said_hello || c->refused))
			earliest(&first, c->hello_by_ns);
	}
	if (d->accept_pause_until_ns > now)
		earliest(&first, d->accept_pause_until_ns);
	for (i = 0; i < SSQD_MAX_KNOCKS; i++)
		if (d->knocks[i].fd >= 0)
			earliest(&first, d->knocks[i].deadline_ns);
	for (i = 0; i < d->npeers; i++) {
		const struct ssqd_peer *p = &d->peers[i];

		/* The next dial or want, or the end of the one under way. */
		if (p->addr && p->wanted && !ssqd_link_up(p))
			earliest(&first, p->retry_ns ? p->retry_ns : now);
		/* A linked peer's --idle-ms. */
		if (d->opt.idle_ms && ssqd_link_up(p))
			earliest(&first, p->used_ns + d->opt.idle_ms * 1000000ull);
	}
	/* A tenant's ssqd: when it asks to exit idle (tenant_idle.c). */
	earliest(&first, ssqd_tenant_idle_due(d));
	/* Connections waiting for a closing tenant's slot (tenant_park.c). */
	earliest(&first, ssqd_tenants_due(d, now));
	/* Each at most PROGRESS_MS late, as when busy. */
	if (first <= now + PROGRESS_MS * 1000000ull)
		return PROGRESS_MS;
	if (first - now >= SSQD_IDLE_MS * 1000000ull)
		return SSQD_IDLE_MS;
	return (int)((first - now + 999999) / 1000000);
}
