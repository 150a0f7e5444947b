/* SPDX-License-Identifier: MIT */
/*
 * A peer link's timers, once per serve loop: a restart gone unanswered,
 * BUSY/IDLE told, an idle link asked to close, a dial that is due started
 * (after a lookup off the loop), one that took too long given up, and
 * the backoff between dials.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "ctrl/daemon/util/util.h"
#include "ctrl/daemon/queues/queues.h"
#include "ctrl/daemon/peers/peers.h"
#include "ctrl/daemon/peers/link_life.h"

/* A dial failed: say so if the reason changed, back off. */
void ssqd_peer_attempt_failed(struct ssqd_peer *p, const char *why)
{
	char who[64];

	if (strcmp(why, p->last_why)) {
		fprintf(stderr,
		        "ssqd: %s: dialing %s (attempt %u): %s; retrying, backoff up to "
		        "%u s\n",
		        ssqd_peer_str(p, who, sizeof(who)), p->addr, p->attempts, why,
		        BACKOFF_MAX_MS / 1000);
		snprintf(p->last_why, sizeof(p->last_why), "%s", why);
	}
	ssqd_peer_lookup_stale(p); /* the next dial looks it up again */
	p->retry_ns = ssqd_now_ns() + (uint64_t)p->backoff_ms * 1000000ull;
	p->backoff_ms =
	    p->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : p->backoff_ms * 2;
}

static void peer_tick(struct ssqd *d, struct ssqd_peer *p, uint64_t now)
{
	int linked = ssqd_link_up(p), here = ssqd_peer_in_use(d, p), s, rc;
	char why[200];

	if (linked && ssqd_link_restart_overdue(d, p, now, why, sizeof(why))) {
		ssqd_peer_lost(d, p, why);
		return;
	}
	if (d->opt.npeers && linked &&
	    ssqd_link_tell_busy(d, p, here, why, sizeof(why))) {
		ssqd_peer_lost(d, p, why);
		return;
	}
	/* ssqd_peer_busy(), with the look at the clients above taken once a tick. */
	if (here)
		p->open_wait_ns = 0; /* the open that waited has it */
	if (here || (linked && p->remote_busy)) {
		p->used_ns = now;
		if (p->link ==
		    SSQD_LINK_CLOSING) { /* it said BUSY: not closed after all */
			p->closing_ns = 0;
			ssqd_peer_link_to(d, p, SSQD_LINK_LINKED, p->fd);
		}
	} else if (d->opt.idle_ms && linked &&
	           now - p->used_ns > d->opt.idle_ms * 1000000ull) {
		/*
		 * Idle as far as we know; the peer's word may be stale (its
		 * client just attached, its BUSY under way), so it closes the
		 * link, or says BUSY (ssqd_peer_events). Opens here wait
		 * meanwhile (ssqd_peer_want).
		 */
		if (p->link != SSQD_LINK_CLOSING) {
			snprintf(why, sizeof(why),
			         "no queue of the pair open on either side for %u ms "
			         "(--idle-ms)",
			         d->opt.idle_ms);
			ssqd_peer_ask_close(d, p, why);
		} else {
			ssqd_peer_close_unanswered(d, p, now);
		}
		return;
	} else if (p->link == SSQD_LINK_CLOSING) {
		ssqd_peer_close_unanswered(d, p, now); /* asked to make room */
		return;
	}
	/*
	 * On demand, a peer that no open asks for any more (each gave up, or
	 * went) is dialed again by the next open, not every backoff for ever.
	 */
	if (p->wanted && d->opt.npeers && !d->opt.eager && p->link == SSQD_LINK_IDLE &&
	    !ssqd_peer_busy(d, p))
		p->wanted = 0;
	/*
	 * Who dials: the dialer, when the link is wanted; the other side of
	 * an on-demand pair sends a want instead; --listen's one peer and an
	 * --eager cluster's accepting side wait.
	 */
	if (!p->addr || !p->wanted || now < p->retry_ns ||
	    (!p->dials && (!d->opt.npeers || d->opt.eager)))
		return;
	if (p->link == SSQD_LINK_WANT_SENT) {
		ssqd_peer_close_link(d, p); /* no answer to our want: asked again now */
		return;
	}
	if (p->link == SSQD_LINK_DIALING || p->link == SSQD_LINK_EXCHANGING ||
	    p->link == SSQD_LINK_AUTHING) {
		/* A host that drops our SYNs would hold us for minutes. */
		if (p->link != SSQD_LINK_DIALING)
			snprintf(
			    why, sizeof(why), "%s sent %u bytes of its %s within %u ms",
			    p->addr, p->xlen,
			    p->link == SSQD_LINK_AUTHING ? "authentication" : "addresses",
			    SSQD_PEER_EXCHANGE_MS);
		else
			snprintf(why, sizeof(why), "no answer from %s within %u ms",
			         p->addr, CONNECT_MS);
		/* ssqd_peer_send_addrs fenced them: they stay so for the next dial. */
		ssqd_peer_close_link(d, p);
		ssqd_peer_attempt_failed(p, why);
		return;
	}
	if (p->link != SSQD_LINK_IDLE)
		return;
	rc = ssqd_peer_lookup(p, why, sizeof(why));
	if (rc == -EINPROGRESS)
		return; /* looked up off the loop: asked again next tick */
	p->attempts++;
	s = rc ? rc
	       : ssqd_link_connect_start((const struct sockaddr *)&p->lk_sa, p->lk_salen,
	                                 p->addr, why, sizeof(why));
	if (s < 0) {
		ssqd_peer_attempt_failed(p, why);
		return;
	}
	ssqd_peer_link_to(d, p, SSQD_LINK_DIALING, s);
	p->retry_ns = now + CONNECT_MS * 1000000ull; /* its deadline */
}

void ssqd_peer_tick(struct ssqd *d)
{
	uint64_t now = ssqd_now_ns();
	unsigned i;

	for (i = 0; i < d->npeers; i++)
		peer_tick(d, &d->peers[i], now);
}
