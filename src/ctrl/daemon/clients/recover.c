/* SPDX-License-Identifier: MIT */
/*
 * A client's RECOVER of a loopback queue, answered from the serve loop: the
 * drain that waits for what was in flight before the error (up to
 * SSQD_RECOVER_DRAIN_MS, held up by a producer stopped mid-reservation,
 * say) is one look per loop, so every other client's call is served
 * meanwhile, and the asking client gets its answer when the recovery is
 * done or out of time. A queue to another host is recovered by starting
 * its link over (peers/relink.c), answered the same way.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "ctrl/daemon/queues/queues.h"
#include "ctrl/daemon/peers/peers.h"
#include "ctrl/daemon/watch/watch.h"
#include "ctrl/daemon/clients/clients.h"

int ssqd_recover_start(struct ssqd *d, struct ssqd_client *c, unsigned qi, uint32_t seq,
                       char *why, size_t whylen)
{
	struct ssqd_recovery *r = &d->queues[qi].rec;
	int rc;

	if (!r->nwaiters) {
		int peer = ssqd_queue_peer(d, qi) != NULL;
		/* The link already starting over, for another of the peer's queues. */
		uint64_t under_way = peer ? ssqd_peer_relinking(d, qi) : 0;

		rc = under_way ? 0
		     : peer    ? ssqd_peer_relink_start(d, qi, why, whylen)
		               : ssqd_queue_in_error(d, qi, why, whylen);
		if (rc)
			return rc;
		r->deadline_ns = under_way
		                     ? under_way
		                     : ssqd_now_ns() + (peer ? SSQD_RELINK_MS
		                                             : SSQD_RECOVER_DRAIN_MS) *
		                                           1000000ull;
	} else if (r->nwaiters == SSQD_RECOVER_WAITERS) {
		snprintf(why, whylen, "queue q%u: %u recoveries already asked for", qi,
		         SSQD_RECOVER_WAITERS);
		return -EBUSY;
	}
	r->client[r->nwaiters] = c->id;
	r->seq[r->nwaiters++] = seq;
	return 0;
}

static struct ssqd_client *client_by_id(struct ssqd *d, uint32_t id)
{
	unsigned i;

	for (i = 0; i < SSQD_MAX_CLIENTS; i++)
		if (d->clients[i].fd >= 0 && d->clients[i].id == id)
			return &d->clients[i];
	return NULL; /* it left while it waited */
}

/* Answer every client waiting on queue @qi's recovery, which ended with @rc. */
static void answer(struct ssqd *d, unsigned qi, int rc, const char *why)
{
	struct ssqd_recovery *r = &d->queues[qi].rec;
	unsigned i;

	for (i = 0; i < r->nwaiters; i++) {
		struct ssqd_client *c = client_by_id(d, r->client[i]);
		int err;

		if (!c)
			continue;
		if (i == 0 && !rc)
			err =
			    ssqd_out_send(&c->out, c->fd, SSQ_MSG_RECOVER | SSQ_MSG_REPLY,
			                  r->seq[i], NULL, 0, NULL, 0);
		else if (!rc)
			err = ssqd_out_error(
			    &c->out, c->fd, r->seq[i], -EINVAL,
			    "queue q%u is not in error: nothing to recover", qi);
		else
			err = ssqd_out_error(&c->out, c->fd, r->seq[i], rc, "%s", why);
		if (err)
			c->failed = 1;
	}
	memset(r, 0, sizeof(*r));
}

int ssqd_recover_step(struct ssqd *d)
{
	unsigned qi;
	int busy = 0;

	for (qi = 0; qi < d->opt.nqueues; qi++) {
		char why[200];

		if (!d->queues[qi].rec.nwaiters)
			continue;
		if (ssqd_queue_peer(d, qi)) {
			int rc = ssqd_peer_relink_done(
			    d, qi, d->queues[qi].rec.deadline_ns, why, sizeof(why));

			if (rc > 0)
				busy++;
			else
				answer(d, qi, rc, why);
		} else if (d->queues[qi].sq_frozen) {
			/* Nothing will drain: rebuild, flushing what was in flight. */
			int rc = ssqd_queue_rebuild(d, qi, why, sizeof(why));

			if (!rc) {
				snprintf(why, sizeof(why),
				         "queue q%u rebuilt after its SQ froze "
				         "(QP_FATAL): what was in flight completes "
				         "as flushed (IBV_WC_WR_FLUSH_ERR)",
				         qi);
				fprintf(stderr, "ssqd: %s\n", why);
			}
			answer(d, qi, rc, why);
		} else if (ssqd_queue_drained(d, qi)) {
			answer(d, qi, ssqd_queue_restart(d, qi, why, sizeof(why)), why);
		} else if (ssqd_now_ns() > d->queues[qi].rec.deadline_ns) {
			ssqd_queue_busy_why(d, qi, SSQD_RECOVER_DRAIN_MS, why,
			                    sizeof(why));
			answer(d, qi, -EBUSY, why);
		} else {
			busy++;
		}
	}
	return busy;
}

int ssqd_recover_for_open(struct ssqd *d, unsigned qi, char *why, size_t whylen)
{
	struct ssqd_queue *q = &d->queues[qi];
	int rc;

	if (q->rec.nwaiters) {
		snprintf(why, whylen, "queue q%u is being recovered", qi);
		return -EINPROGRESS;
	}
	if (ssqd_live_records(d, qi)) {
		snprintf(why, whylen,
		         "queue q%u is in error: the clients that have it open "
		         "recover it (ssq_queue_recover)",
		         qi);
		return -EAGAIN;
	}
	rc = ssqd_queue_in_error(d, qi, why, whylen);
	if (rc == -EINVAL) { /* listed in error, the block not: a fence under way */
		snprintf(why, whylen, "queue q%u is not ready", qi);
		return -EAGAIN;
	}
	if (rc)
		return rc;
	if (q->sq_frozen) {
		rc = ssqd_queue_rebuild(d, qi, why, whylen);
	} else if (!ssqd_queue_drained(d, qi)) {
		snprintf(why, whylen,
		         "queue q%u is in error: recovered once what was in flight "
		         "has drained",
		         qi);
		return -EINPROGRESS;
	} else {
		rc = ssqd_queue_restart(d, qi, why, whylen);
	}
	if (!rc)
		fprintf(stderr,
		        "ssqd: q%u was in error with nobody holding it: recovered for "
		        "a client's open\n",
		        qi);
	return rc;
}
