/* SPDX-License-Identifier: MIT */
/*
 * Closing a healthy link: idle for --idle-ms, or the least recently used
 * one making room under --max-active-peers. The side that wants it closed
 * asks (CLOSE); the peer closes if nothing of the pair is open there, else
 * says BUSY, and an ask left unanswered closes it anyway.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "ctrl/daemon/util/util.h"
#include "ctrl/daemon/queues/queues.h"
#include "ctrl/daemon/peers/peers.h"
#include "ctrl/daemon/peers/link_life.h"

/*
 * Ask linked peer @p to close the link (CLOSE): it closes if nothing of the
 * pair is open there, else says BUSY, which cancels the ask (peer_tick).
 * Opens of its queues here wait meanwhile (ssqd_peer_want). @why: what the
 * close will say.
 */
void ssqd_peer_ask_close(struct ssqd *d, struct ssqd_peer *p, const char *why)
{
	char err[200];

	if (ssqd_link_ask_close(d, p, err, sizeof(err))) {
		ssqd_peer_lost(d, p, err);
		return;
	}
	p->closing_ns = ssqd_now_ns();
	/*
	 * Cut to the field on purpose (%.*s): a caller's sentence may be
	 * longer than what --status shows, and GCC's -Wformat-truncation
	 * (Release, GCC 12) reads a plain "%s" into a smaller field as a bug.
	 */
	snprintf(p->closing_why, sizeof(p->closing_why), "%.*s",
	         (int)sizeof(p->closing_why) - 1, why);
	ssqd_peer_link_to(d, p, SSQD_LINK_CLOSING, p->fd);
}

/* An ask to close that the peer has not answered in LINK_CLOSE_MS: closed. */
void ssqd_peer_close_unanswered(struct ssqd *d, struct ssqd_peer *p, uint64_t now)
{
	char why[240];

	if (now - p->closing_ns <= LINK_CLOSE_MS * 1000000ull)
		return;
	snprintf(why, sizeof(why), "%s, and no answer from the peer", p->closing_why);
	ssqd_peer_close_idle(d, p, why);
}

/*
 * The peer would close the link as idle (its --idle-ms): closed if nothing
 * of it is open or being opened here, else BUSY said again.
 */
void ssqd_peer_close_asked(struct ssqd *d, struct ssqd_peer *p)
{
	char why[200];

	p->remote_busy = 0;
	if (p->link != SSQD_LINK_CLOSING && ssqd_peer_busy(d, p)) {
		p->busy_told = -1; /* said again, though we said it before */
		if (ssqd_link_tell_busy(d, p, 1, why, sizeof(why)))
			ssqd_peer_lost(d, p, why);
		return;
	}
	ssqd_peer_close_idle(d, p,
	                     "the peer closes it (idle there: --idle-ms, or room "
	                     "for another: --max-active-peers), and nothing of it "
	                     "is open here");
}

int ssqd_peer_closing(struct ssqd *d, unsigned qi)
{
	const struct ssqd_peer *p = ssqd_queue_peer(d, qi);

	return p && p->link == SSQD_LINK_CLOSING;
}

/* Peers linked, or being linked, besides @except. */
static unsigned active_peers(const struct ssqd *d, const struct ssqd_peer *except)
{
	unsigned i, n = 0;

	for (i = 0; i < d->npeers; i++)
		if (&d->peers[i] != except &&
		    (d->peers[i].link != SSQD_LINK_IDLE || d->peers[i].wanted))
			n++;
	return n;
}

void ssqd_peer_close_idle(struct ssqd *d, struct ssqd_peer *p, const char *reason)
{
	char who[64];
	unsigned k;

	/* Nothing of it is open here; the peer sees the close and stops too. */
	for (k = 0; k < d->opt.peer_queues; k++)
		ssqd_queue_fence(d, p->q0 + k);
	ssqd_peer_close_link(d, p);
	p->wanted = 0;
	ssqd_link_restart_abandon(d, p);
	fprintf(stderr,
	        "ssqd: %s: link closed (%s); linked again when a client opens "
	        "one of its queues\n",
	        ssqd_peer_str(p, who, sizeof(who)), reason);
}

/*
 * Room for @p under --max-active-peers: the least recently used linked peer
 * that nobody has a queue of open is closed. 0, or -EBUSY with @why when
 * every active peer is in use. With @ask (an open here, which can wait),
 * a linked one is asked first, as --idle-ms asks (its far end may have
 * just opened a queue of it, its BUSY still on the way): -EINPROGRESS
 * with @why until it has closed.
 */
int ssqd_peer_make_room(struct ssqd *d, struct ssqd_peer *p, int ask, char *why,
                        size_t whylen)
{
	struct ssqd_peer *lru = NULL;
	char reason[160];
	unsigned i;

	if (!d->opt.max_active_peers || p->link != SSQD_LINK_IDLE || p->wanted ||
	    active_peers(d, p) < d->opt.max_active_peers)
		return 0;
	for (i = 0; i < d->npeers; i++) {
		struct ssqd_peer *o = &d->peers[i];

		if (o == p || (o->link == SSQD_LINK_IDLE && !o->wanted) ||
		    ssqd_peer_busy(d, o))
			continue;
		if (!lru || o->used_ns < lru->used_ns)
			lru = o;
	}
	if (!lru) {
		snprintf(why, whylen,
		         "all %u active peers have queues open (or being opened) "
		         "here or there (--max-active-peers %u)",
		         d->opt.max_active_peers, d->opt.max_active_peers);
		return -EBUSY;
	}
	snprintf(reason, sizeof(reason),
	         "the least recently used of %u active peers, for %s "
	         "(--max-active-peers)",
	         d->opt.max_active_peers, p->name);
	if (!ask || !ssqd_link_up(lru)) {
		ssqd_peer_close_idle(d, lru, reason);
		return 0;
	}
	if (lru->link != SSQD_LINK_CLOSING)
		ssqd_peer_ask_close(d, lru, reason);
	if (lru->link == SSQD_LINK_IDLE)
		return 0; /* lost while asking: room now */
	snprintf(why, whylen,
	         "%s: waiting for %s, the least recently used of %u active peers, to "
	         "close its link (--max-active-peers)",
	         p->name, lru->name, d->opt.max_active_peers);
	return -EINPROGRESS;
}
