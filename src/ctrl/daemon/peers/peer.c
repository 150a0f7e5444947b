/* SPDX-License-Identifier: MIT */
/*
 * A peer link's life: the links to the peer daemons. One TCP
 * connection per peer carries the exchange and stays open, as
 * rc_pingpong-style programs and rdma_cm keep theirs: its close says the
 * peer is gone even when no queue is sending. Then
 *  - requests in flight on that peer's queues end as the transport decides
 *    (retry exceeded, the rest flushed), its queues are listed as not
 *    ready, clients stay attached and are served; other peers' queues go
 *    on untouched;
 *  - the side that dials (--connect, or in a cluster the daemon whose name
 *    sorts first) dials again with backoff (100 ms doubling to 2 s), the
 *    other keeps accepting; whoever answers gets a fresh exchange (new
 *    PSNs, its new QPNs and wire address), and each of that peer's queues
 *    is fenced, drained and taken RESET -> INIT -> RTR -> RTS against it
 *    (ssqd_queue_recover), then published READY again.
 * A second link from a peer whose link is healthy is refused with a
 * reason both sides print, as is a daemon whose name is not in the
 * cluster.
 * This file: the peers, a link's state, its loss, what PEER shows; the
 * rest of the life is split by job (link_life.h lists the files).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <ssq/client.h>
#include "ctrl/daemon/util/util.h"
#include "ctrl/daemon/queues/queues.h"
#include "ctrl/daemon/peers/peers.h"
#include "ctrl/daemon/peers/link_life.h"
#include "ctrl/proto/msg.h"
#include <systemd/sd-daemon.h> /* SD_ERR...: util/log.c */

void ssqd_peers_init(struct ssqd *d)
{
	struct ssqd_options *o = &d->opt;
	unsigned i;

	/* Options made without main.c's parsing (the protocol tests): one share. */
	if (!o->peer_queues)
		o->peer_queues = o->nqueues / (o->npeers ? o->npeers : 1);
	d->npeers = 0;
	d->trace_links = getenv("SSQD_TRACE_LINKS") != NULL;
	if (o->npeers) {
		for (i = 0; i < o->npeers; i++) {
			struct ssqd_peer *p = &d->peers[d->npeers++];

			memcpy(p->name, o->peers[i].name, sizeof(p->name));
			p->addr = o->peers[i].addr;
			/* One dial a pair: the name that sorts first dials. */
			p->dials = strcmp(o->name, p->name) < 0;
			p->wanted = o->eager;
		}
	} else if (o->listen_port || o->connect_to) {
		d->peers[0].addr = o->connect_to;
		d->peers[0].dials = o->connect_to != NULL;
		d->peers[0].wanted = 1;
		d->npeers = 1;
	}
	for (i = 0; i < d->npeers; i++) {
		struct ssqd_peer *p = &d->peers[i];
		unsigned k;

		p->link = SSQD_LINK_IDLE;
		p->fd = -1;
		p->q0 = i * o->peer_queues;
		p->backoff_ms = BACKOFF_MIN_MS;
		for (k = 0; k < o->peer_queues; k++)
			d->queues[p->q0 + k].peer_ix = i;
	}
}

/* "peer nodeB" in a cluster, "the peer ssqd" with one peer: for the logs. */
const char *ssqd_peer_str(const struct ssqd_peer *p, char *buf, size_t len)
{
	if (p->name[0])
		snprintf(buf, len, "peer %s", p->name);
	else
		snprintf(buf, len, "the peer ssqd");
	return buf;
}

static const char *const link_names[] = {
	[SSQD_LINK_IDLE] = "idle",
	[SSQD_LINK_DIALING] = "dialing",
	[SSQD_LINK_AUTHING] = "authenticating",
	[SSQD_LINK_WANT_SENT] = "want sent",
	[SSQD_LINK_EXCHANGING] = "exchanging",
	[SSQD_LINK_LINKED] = "linked",
	[SSQD_LINK_CLOSING] = "closing",
};

void ssqd_peer_link_to(struct ssqd *d, struct ssqd_peer *p, enum ssqd_link_state to,
                       int fd)
{
	char who[64];

	/*
	 * Not logged by default: a peer that stays away is dialed every
	 * backoff, and each dial is two changes; the lines a reader needs
	 * (linked, link down, a dial's new reason) are logged where they
	 * happen.
	 */
	if (d->trace_links && p->link != to)
		fprintf(stderr, "ssqd: %s: link %s -> %s (fd %d)\n",
		        ssqd_peer_str(p, who, sizeof(who)), link_names[p->link],
		        link_names[to], fd);
	p->link = to;
	p->fd = fd;
}

void ssqd_peer_close_link(struct ssqd *d, struct ssqd_peer *p)
{
	if (p->fd >= 0)
		close(p->fd);
	p->closing_ns = 0;
	memset(&p->auth, 0, sizeof(p->auth)); /* the next connection's own, if any */
	ssqd_peer_link_to(d, p, SSQD_LINK_IDLE, -1);
}

void ssqd_peer_fence_all(struct ssqd *d, struct ssqd_peer *p)
{
	unsigned k;

	for (k = 0; k < d->opt.peer_queues; k++)
		ssqd_queue_fence(d, p->q0 + k);
}

int ssqd_peer_down(struct ssqd *d, unsigned qi, char *why, size_t whylen)
{
	struct ssqd_peer *p = ssqd_queue_peer(d, qi);
	char who[64];

	if (!p || ssqd_link_up(p))
		return 0;
	ssqd_peer_str(p, who, sizeof(who));
	if (p->dials)
		snprintf(why, whylen,
		         "%s is gone; ssqd is reconnecting to %s and brings the queue "
		         "back when it answers",
		         who, p->addr);
	else
		snprintf(why, whylen,
		         "%s is not linked; ssqd waits for it on TCP port %u and brings "
		         "the queue back when it connects",
		         who, d->opt.listen_port);
	return 1;
}

void ssqd_peer_lost(struct ssqd *d, struct ssqd_peer *p, const char *reason)
{
	char who[64];
	unsigned k, revoked = 0;

	if (ssqd_link_up(p))
		p->losses++;
	ssqd_peer_close_link(d, p);
	/* A queue whose restart the peer never answered: in error, for the re-bring. */
	ssqd_link_restart_abandon(d, p);
	for (k = 0; k < d->opt.peer_queues; k++) {
		if (d->queues[p->q0 + k].listed == SSQ_QUEUE_READY)
			ssqd_queue_list(d, p->q0 + k, SSQ_QUEUE_ERROR);
		/* Before anyone links under this name again (queues/grants.c). */
		revoked += ssqd_queue_grants_drop(d, p->q0 + k);
	}
	ssqd_peer_str(p, who, sizeof(who));
	if (revoked)
		fprintf(stderr,
		        "ssqd: %s: %u grants to it revoked with its link: their "
		        "owners grant again to the peer that links next\n",
		        who, revoked);
	p->attempts = 0;
	p->last_why[0] = 0;
	p->backoff_ms = BACKOFF_MIN_MS;
	p->retry_ns = ssqd_now_ns() + BACKOFF_MIN_MS * 1000000ull;
	/* On demand, a peer nobody has a queue of open waits for the next open. */
	if (d->opt.npeers && !d->opt.eager && !ssqd_peer_in_use(d, p))
		p->wanted = 0;
	if (p->dials && p->wanted)
		fprintf(stderr,
		        SD_WARNING
		        "ssqd: %s: link down (%s); clients stay attached, reconnecting "
		        "to %s every %u ms .. %u s\n",
		        who, reason, p->addr, BACKOFF_MIN_MS, BACKOFF_MAX_MS / 1000);
	else if (p->wanted || !d->opt.npeers)
		fprintf(stderr,
		        SD_WARNING
		        "ssqd: %s: link down (%s); clients stay attached, waiting for it "
		        "on TCP port %u\n",
		        who, reason, d->opt.listen_port);
	else
		fprintf(stderr,
		        "ssqd: %s: link down (%s); none of its queues is open: linked "
		        "again when a client opens one\n",
		        who, reason);
}

/*
 * In use on either side of the link, or being linked for an open that
 * waits: not to be closed for another peer. Each waiting open asks again
 * every 10 ms (a peer's want, every WANT_AGAIN_MS); one that gave up, was
 * killed or stopped holds the link no longer than OPEN_PENDING_MS.
 */
int ssqd_peer_busy(const struct ssqd *d, const struct ssqd_peer *p)
{
	return ssqd_peer_in_use(d, p) || (ssqd_link_up(p) && p->remote_busy) ||
	       (p->open_wait_ns &&
	        ssqd_now_ns() - p->open_wait_ns < OPEN_PENDING_MS * 1000000ull);
}

int ssqd_peer_in_use(const struct ssqd *d, const struct ssqd_peer *p)
{
	unsigned k;

	for (k = 0; k < d->opt.peer_queues; k++)
		if (ssqd_live_records(d, p->q0 + k))
			return 1;
	return 0;
}

int ssqd_peer_info(struct ssqd *d, unsigned i, struct proto_msg_peer_reply *r, char *why,
                   size_t whylen)
{
	const struct ssqd_peer *p;

	if (i >= d->npeers) {
		snprintf(why, whylen, "peer %u: this ssqd has %u", i, d->npeers);
		return -ENOENT;
	}
	p = &d->peers[i]; /* @i is the client's word: checked first */
	memset(r, 0, sizeof(*r));
	r->npeers = d->npeers;
	if (ssqd_link_up(p))
		r->state = SSQ_PEER_READY;
	else if (p->wanted && p->last_why[0])
		r->state = SSQ_PEER_FAILED;
	else if (p->wanted || p->link != SSQD_LINK_IDLE)
		r->state = SSQ_PEER_CONNECTING;
	else
		r->state = SSQ_PEER_IDLE;
	r->first_queue = p->q0;
	r->nqueues = d->opt.peer_queues;
	r->attempts = p->attempts;
	r->links = p->links;
	r->losses = p->losses;
	for (unsigned k = 0; k < d->opt.peer_queues && p->q0 + k < SSQ_MAX_QUEUES; k++)
		r->refused += d->queues[p->q0 + k].refused;
	r->flags =
	    (p->dials ? SSQ_PEER_DIALS : 0) |
	    (ssqd_peer_in_use(d, p) ? SSQ_PEER_OPEN_HERE : 0) |
	    (r->state == SSQ_PEER_READY && p->remote_busy ? SSQ_PEER_OPEN_THERE : 0);
	snprintf(r->name, sizeof(r->name), "%s", p->name);
	snprintf(r->addr, sizeof(r->addr), "%s", p->addr ? p->addr : "");
	snprintf(r->why, sizeof(r->why), "%s", p->last_why);
	return 0;
}
