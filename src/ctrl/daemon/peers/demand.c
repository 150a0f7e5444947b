/* SPDX-License-Identifier: MIT */
/*
 * Links on demand: a client's open of a queue whose peer is not linked
 * wants the link (dialed, or the peer asked to dial), and a peer's want
 * asks this side to dial it. A linked peer whose queue is in error with
 * nobody holding it starts over.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "ctrl/daemon/util/util.h"
#include "ctrl/daemon/queues/queues.h"
#include "ctrl/daemon/peers/peers.h"
#include "ctrl/daemon/peers/link_life.h"

/* From now on @p's link is wanted: dialed (or asked for) at the next tick. */
static void want_now(struct ssqd_peer *p)
{
	if (p->wanted)
		return;
	p->wanted = 1;
	p->attempts = 0;
	p->backoff_ms = BACKOFF_MIN_MS;
	p->retry_ns = 0;
}

/*
 * Queue @qi of linked peer @p is not ready: fenced (an async event, a
 * restart the peer refused) while the link stays up. Waiting brings it back
 * never: only a fresh exchange does, which a RECOVER of a client that has
 * it open asks for (peers/relink.c). With nobody holding it, the open asks
 * instead: the link starts over, every queue of the pair recovered.
 * -EINPROGRESS with @why, or -EIO for a queue that cannot come back.
 */
static int want_fenced(struct ssqd *d, struct ssqd_peer *p, unsigned qi, char *why,
                       size_t whylen)
{
	char who[64], reason[96];

	ssqd_peer_str(p, who, sizeof(who));
	if (d->queues[qi].cq_dead)
		return ssqd_queue_in_error(d, qi, why, whylen);
	if (ssqd_live_records(d, qi)) {
		snprintf(why, whylen,
		         "%s is linked but q%u is in error: waiting for the clients "
		         "that have it open to recover it",
		         who, qi);
		return -EINPROGRESS;
	}
	snprintf(reason, sizeof(reason),
	         "q%u is in error and nobody has it open: both hosts start over", qi);
	ssqd_peer_lost(d, p, reason);
	want_now(p);
	p->retry_ns = 0; /* dial (or want) at once */
	p->used_ns = p->open_wait_ns = ssqd_now_ns();
	snprintf(why, whylen, "%s: re-linking (%s)", who, reason);
	return -EINPROGRESS;
}

int ssqd_peer_want(struct ssqd *d, unsigned qi, char *why, size_t whylen)
{
	struct ssqd_peer *p = ssqd_queue_peer(d, qi);
	char who[64];
	int rc;

	if (!p)
		return 0;
	if (p->link == SSQD_LINK_CLOSING) {
		snprintf(why, whylen, "%s: its link is closing (%s): linked again next",
		         ssqd_peer_str(p, who, sizeof(who)), p->closing_why);
		return -EINPROGRESS;
	}
	if (p->link == SSQD_LINK_LINKED)
		return want_fenced(d, p, qi, why, whylen);
	if (!d->opt.npeers)
		return 0;
	ssqd_peer_str(p, who, sizeof(who));
	/* Told once, to the open that asked: the next one asks again. */
	if (p->refused_ns && ssqd_now_ns() - p->refused_ns < WANT_AGAIN_MS * 1000000ull) {
		p->refused_ns = 0;
		snprintf(why, whylen, "%s refused to link: %s", who, p->last_why);
		return -EBUSY;
	}
	rc = ssqd_peer_make_room(d, p, 1, why, whylen);
	if (rc)
		return rc;
	p->used_ns = ssqd_now_ns();
	p->open_wait_ns = p->used_ns;
	want_now(p);
	if (p->last_why[0])
		snprintf(why, whylen, "%s: linking (attempt %u: %s)", who, p->attempts,
		         p->last_why);
	else if (p->dials)
		snprintf(why, whylen, "%s: linking, dialing %s", who, p->addr);
	else
		snprintf(why, whylen, "%s: linking, asked it to dial this ssqd", who);
	return -EINPROGRESS;
}

/* A want from daemon @name: dial it at the next tick. */
int ssqd_peer_want_from(struct ssqd *d, const char *name, const char *from, char *no,
                        size_t nolen)
{
	char why[200];
	unsigned i;

	for (i = 0; i < d->npeers; i++) {
		struct ssqd_peer *p = &d->peers[i];

		if (strcmp(p->name, name) || !p->dials)
			continue;
		if (ssqd_link_up(p))
			return 0; /* linked: its want crossed our dial */
		if (ssqd_peer_make_room(d, p, 0, why, sizeof(why))) {
			fprintf(stderr, "ssqd: peer %s wants a link: %s\n", name, why);
			/* A refusal's reason is short (SSQ_PEER_REFUSAL_LEN). */
			snprintf(no, nolen,
			         "all its --max-active-peers %u links are in use",
			         d->opt.max_active_peers);
			return -EBUSY;
		}
		want_now(p);
		p->used_ns = ssqd_now_ns();
		p->open_wait_ns = p->used_ns; /* the peer's open waits for it */
		return 0;
	}
	ssqd_log_limited(&d->client_log, ssqd_now_ns(),
	                 "ssqd: a want from %s naming '%s', not a peer this ssqd "
	                 "dials\n",
	                 from, name);
	return 0;
}
