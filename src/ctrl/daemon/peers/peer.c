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
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <ssq/client.h>
#include "ctrl/daemon/util/util.h"
#include "ctrl/daemon/queues/queues.h"
#include "ctrl/daemon/peers/peers.h"
#include "ctrl/proto/msg.h"
#include <systemd/sd-daemon.h> /* SD_ERR...: util/log.c */

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 2000
#define CONNECT_MS     2000 /* one dial */
/*
 * A re-bring waits this long at most, for all of the peer's queues
 * together, for what was in flight (a client holding a reservation, say):
 * then the link is dropped and the next dial tries again, the loop having
 * served everyone meanwhile.
 */
#define REBRING_DRAIN_MS 200
#define WANT_AGAIN_MS    1000 /* a want the peer did not answer is sent again */
#define OPEN_PENDING_MS  1500 /* busy(): an open's want outlives its asking */
#define LINK_CLOSE_MS    1000 /* an idle close the peer did not answer: closed */

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
static int busy(const struct ssqd *d, const struct ssqd_peer *p)
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
 * Before our addresses go out: fenced first (the peer that answers may
 * start sending as soon as its side is up, and our QPs should be back in
 * RTR by then, not still draining), and fresh PSNs.
 */
static void prepare(struct ssqd *d, struct ssqd_peer *p)
{
	if (p->ever)
		ssqd_peer_fence_all(d, p);
	fresh_psns(d, p);
}

/* The peer's addresses @r are in: its queues up, @s its link. */
static int finish(struct ssqd *d, struct ssqd_peer *p, int s,
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
	int rc;

	prepare(d, p);
	/* Theirs came first; each side connects its own QPs after the exchange. */
	rc = ssqd_link_send(s, &d->local_addrs[p->q0], d->opt.peer_queues, &p->auth, why,
	                    whylen);
	if (rc) {
		if (p->ever)
			ssqd_peer_fence_all(d, p);
		return rc;
	}
	return finish(d, p, s, remote, why, whylen);
}

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
 * What the dialed peer sent so far: 0 while its addresses are not whole,
 * 1 once they are (in @remote), or -errno with @why (a refusal, a bad
 * message).
 */
static int exchange_read(struct ssqd *d, struct ssqd_peer *p,
                         struct proto_peer_addr *remote, char *why, size_t whylen)
{
	unsigned n = d->opt.peer_queues,
	         step = SSQ_PEER_MSG_LEN + ssqd_auth_trailer(&p->auth);
	/*
	 * The addresses and not a byte more: the link's next message (the
	 * peer's BUSY/IDLE, sent right after) may be in the socket already,
	 * and is ssqd_link_input's to read.
	 */
	ssize_t r = recv(p->fd, p->xbuf + p->xlen, n * step - p->xlen, MSG_DONTWAIT);
	int len, rc;

	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (r <= 0) {
		snprintf(why, whylen, "the peer closed the connection after %u bytes",
		         p->xlen);
		return -ENOTCONN;
	}
	p->xlen += (unsigned)r;
	if (p->xlen < SSQ_PEER_HEAD_LEN)
		return 0;
	len = proto_peer_msg_len(p->xbuf, why, whylen);
	if (len < 0)
		return len;
	if ((unsigned)len == SSQ_PEER_REFUSAL_LEN) {
		if (p->xlen < SSQ_PEER_REFUSAL_LEN + ssqd_auth_trailer(&p->auth))
			return 0;
		return ssqd_link_refusal(p->xbuf, &p->auth, why, whylen);
	}
	if ((unsigned)len != SSQ_PEER_MSG_LEN) {
		snprintf(why, whylen, "the peer answered with no address");
		return -EBADMSG;
	}
	if (p->xlen < n * step)
		return 0;
	rc = ssqd_link_decode_addrs(p->xbuf, n, &p->auth, remote, why, whylen);
	if (!rc)
		rc = ssqd_peer_check_sender(d, p, remote, why, whylen);
	return rc ? rc : 1;
}

/* A dial failed: say so if the reason changed, back off. */
static void attempt_failed(struct ssqd_peer *p, const char *why)
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

/*
 * Ask linked peer @p to close the link (CLOSE): it closes if nothing of the
 * pair is open there, else says BUSY, which cancels the ask (peer_tick).
 * Opens of its queues here wait meanwhile (ssqd_peer_want). @why: what the
 * close will say.
 */
static void ask_close(struct ssqd *d, struct ssqd_peer *p, const char *why)
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
static void close_unanswered(struct ssqd *d, struct ssqd_peer *p, uint64_t now)
{
	char why[240];

	if (now - p->closing_ns <= LINK_CLOSE_MS * 1000000ull)
		return;
	snprintf(why, sizeof(why), "%s, and no answer from the peer", p->closing_why);
	ssqd_peer_close_idle(d, p, why);
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
	/* busy(), with the look at the clients above taken once a tick. */
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
			ask_close(d, p, why);
		} else {
			close_unanswered(d, p, now);
		}
		return;
	} else if (p->link == SSQD_LINK_CLOSING) {
		close_unanswered(d, p, now); /* asked to make room */
		return;
	}
	/*
	 * On demand, a peer that no open asks for any more (each gave up, or
	 * went) is dialed again by the next open, not every backoff for ever.
	 */
	if (p->wanted && d->opt.npeers && !d->opt.eager && p->link == SSQD_LINK_IDLE &&
	    !busy(d, p))
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
		/* prepare() fenced them already; they stay so for the next dial. */
		ssqd_peer_close_link(d, p);
		attempt_failed(p, why);
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
		attempt_failed(p, why);
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

/*
 * The answer to our want: the peer's close (it dials back), or a refusal
 * (it has no room: --max-active-peers all in use), which the opens
 * waiting here are told as -EBUSY (ssqd_peer_want).
 */
static void want_answer(struct ssqd *d, struct ssqd_peer *p, short revents)
{
	unsigned want = SSQ_PEER_REFUSAL_LEN + ssqd_auth_trailer(&p->auth);
	struct ssqd_link_auth auth;
	char why[200], who[64];
	ssize_t r;
	int rc;

	if (!(revents & (POLLIN | POLLERR | POLLHUP)))
		return;
	r = recv(p->fd, p->xbuf + p->xlen, want - p->xlen, MSG_DONTWAIT);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r > 0) {
		p->xlen += (unsigned)r;
		if (p->xlen < want)
			return;
	}
	auth = p->auth;             /* the link's, which its close forgets */
	ssqd_peer_close_link(d, p); /* retry_ns stays: asked again then */
	if (p->xlen < SSQ_PEER_REFUSAL_LEN)
		return;
	/*
	 * --peer-key: after the PROOF only a MACed message is the peer's; a
	 * refusal without its MAC, or failing it, could come from anyone on
	 * the path. Taken as what it proves, a reset (the want asked again at
	 * retry_ns), not as the peer's word: no -EBUSY with a stranger's
	 * reason for our opens.
	 */
	if (p->xlen < want) {
		snprintf(why, sizeof(why),
		         "a refusal without its MAC on the authenticated link: not "
		         "the peer's word, taken as a reset");
		rc = -EBADMSG;
	} else {
		rc = ssqd_link_refusal(p->xbuf, &auth, why, sizeof(why));
	}
	if (rc == -EBADMSG && want > SSQ_PEER_REFUSAL_LEN)
		fprintf(stderr, SD_WARNING "ssqd: %s: %s\n",
		        ssqd_peer_str(p, who, sizeof(who)), why);
	if (rc != -ECONNREFUSED)
		return;
	snprintf(p->last_why, sizeof(p->last_why), "%s",
	         strncmp(why, "peer refused: ", 14) ? why : why + 14);
	p->refused_ns = ssqd_now_ns();
	if (!d->opt.eager && !ssqd_peer_in_use(d, p))
		p->wanted = 0; /* asked again by the next open */
	fprintf(stderr, SD_WARNING "ssqd: %s refused to link: %s\n",
	        ssqd_peer_str(p, who, sizeof(who)), p->last_why);
}

/*
 * The peer would close the link as idle (its --idle-ms): closed if nothing
 * of it is open or being opened here, else BUSY said again.
 */
static void close_asked(struct ssqd *d, struct ssqd_peer *p)
{
	char why[200];

	p->remote_busy = 0;
	if (p->link != SSQD_LINK_CLOSING && busy(d, p)) {
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

/* EXCHANGING: the peer's addresses as they come; whole, its queues up. */
static void exchange_events(struct ssqd *d, struct ssqd_peer *p, short revents)
{
	struct proto_peer_addr remote[SSQ_MAX_QUEUES];
	char why[256], who[64];
	int s = p->fd, first = !p->ever, rc;

	if (!(revents & (POLLIN | POLLERR | POLLHUP)))
		return;
	rc = exchange_read(d, p, remote, why, sizeof(why));
	if (!rc)
		return;
	if (rc > 0)
		rc = finish(d, p, s, remote, why, sizeof(why));
	else if (p->ever)
		ssqd_peer_fence_all(d, p);
	if (rc) {
		ssqd_peer_link_to(d, p, SSQD_LINK_IDLE, -1);
		close(s);
		attempt_failed(p, why);
		return;
	}
	fprintf(stderr, "ssqd: %s: %s %s (attempt %u), %u queue(s) ready\n",
	        ssqd_peer_str(p, who, sizeof(who)),
	        first ? "linked to" : "reconnected to", p->addr, p->attempts,
	        d->opt.peer_queues);
}

/*
 * Connected (and, with --peer-key, authenticated): a side that dials sends
 * its addresses (EXCHANGING); the other side, dialing only to ask for a
 * link on demand, sends its want (WANT_SENT). 0, or -errno with @why (@s
 * then still open, the link's state unchanged).
 */
static int dial_go(struct ssqd *d, struct ssqd_peer *p, int s, char *why, size_t whylen)
{
	int rc;

	if (!p->dials) {
		rc = ssqd_link_send_want(s, d->opt.name, d->opt.peer_queues, &p->auth,
		                         why, whylen);
		if (rc)
			return rc;
		/*
		 * Our want delivered: the peer closes, and dials back, or
		 * refuses it first (no room there); read which. Asked again
		 * after WANT_AGAIN_MS if it does not dial.
		 */
		ssqd_peer_link_to(d, p, SSQD_LINK_WANT_SENT, s);
		p->xlen = 0;
		p->retry_ns = ssqd_now_ns() + WANT_AGAIN_MS * 1000000ull;
		return 0;
	}
	/* Ours out now; theirs read as they come (exchange_read). */
	prepare(d, p);
	rc = ssqd_link_send(s, &d->local_addrs[p->q0], d->opt.peer_queues, &p->auth, why,
	                    whylen);
	if (rc) {
		if (p->ever)
			ssqd_peer_fence_all(d, p);
		return rc;
	}
	ssqd_peer_link_to(d, p, SSQD_LINK_EXCHANGING, s);
	p->xlen = 0;
	p->retry_ns = ssqd_now_ns() + SSQD_PEER_EXCHANGE_MS * 1000000ull;
	return 0;
}

/* A dial given up: closed, and the next one after the backoff. */
static void dial_failed(struct ssqd *d, struct ssqd_peer *p, const char *why)
{
	int s = p->fd;

	memset(&p->auth, 0, sizeof(p->auth));
	ssqd_peer_link_to(d, p, SSQD_LINK_IDLE, -1);
	close(s);
	attempt_failed(p, why);
}

/*
 * DIALING: the dial connected or failed. Connected, with --peer-key our
 * HELLO goes out first (AUTHING); without, dial_go.
 */
static void dial_events(struct ssqd *d, struct ssqd_peer *p, short revents)
{
	char why[256];
	int s = p->fd, rc;

	if (!(revents & (POLLOUT | POLLERR | POLLHUP)))
		return;
	/* Failed: nobody there; what is in flight ends as the transport decides. */
	rc = ssqd_link_connect_finish(s, p->addr, why, sizeof(why));
	if (!rc && d->peer_key_len) {
		rc = ssqd_auth_hello(d, p, s, why, sizeof(why));
		if (!rc) {
			ssqd_peer_link_to(d, p, SSQD_LINK_AUTHING, s);
			p->xlen = 0;
			p->retry_ns = ssqd_now_ns() + SSQD_PEER_EXCHANGE_MS * 1000000ull;
			return;
		}
	} else if (!rc) {
		rc = dial_go(d, p, s, why, sizeof(why));
		if (!rc)
			return;
	}
	dial_failed(d, p, why);
}

/*
 * AUTHING: the acceptor's CHALLENGE (or its refusal) as it comes; whole and
 * good, our PROOF, then dial_go. The CHALLENGE and not a byte more: the
 * acceptor says nothing else before our PROOF.
 */
static void auth_events(struct ssqd *d, struct ssqd_peer *p, short revents)
{
	struct proto_peer_auth c;
	struct proto_peer_addr a;
	char why[256];
	ssize_t r;
	int len, rc;

	if (!(revents & (POLLIN | POLLERR | POLLHUP)))
		return;
	r = recv(p->fd, p->xbuf + p->xlen, SSQ_PEER_AUTH_LEN - p->xlen, MSG_DONTWAIT);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) {
		snprintf(why, sizeof(why),
		         "the peer closed the connection after %u bytes of its "
		         "authentication",
		         p->xlen);
		dial_failed(d, p, why);
		return;
	}
	p->xlen += (unsigned)r;
	if (p->xlen < SSQ_PEER_HEAD_LEN)
		return;
	len = proto_peer_msg_len(p->xbuf, why, sizeof(why));
	if (len == (int)SSQ_PEER_REFUSAL_LEN) {
		if (p->xlen < SSQ_PEER_REFUSAL_LEN)
			return;
		(void)proto_peer_decode(p->xbuf, SSQ_PEER_REFUSAL_LEN, &a, why,
		                        sizeof(why));
		dial_failed(d, p, why);
		return;
	}
	if (len >= 0 && len != (int)SSQ_PEER_AUTH_LEN) {
		snprintf(why, sizeof(why),
		         "the peer answered our authentication with no challenge (has "
		         "it --peer-key?)");
		len = -EBADMSG;
	}
	if (len < 0) {
		dial_failed(d, p, why);
		return;
	}
	if (p->xlen < SSQ_PEER_AUTH_LEN)
		return;
	rc = proto_peer_decode_auth(p->xbuf, SSQ_PEER_AUTH_LEN, &c, why, sizeof(why));
	if (!rc)
		rc = ssqd_auth_answer(d, p, &c, why, sizeof(why));
	if (!rc)
		rc = dial_go(d, p, p->fd, why, sizeof(why));
	if (rc)
		dial_failed(d, p, why);
}

/* LINKED, CLOSING: what the link says (restarts, BUSY/IDLE, CLOSE), or its close. */
static void link_events(struct ssqd *d, struct ssqd_peer *p, short revents)
{
	char why[256];
	int rc;

	if (!(revents & (POLLIN | POLLHUP | POLLERR)))
		return;
	rc = ssqd_link_input(d, p, why, sizeof(why));
	if (rc > 0) {
		close_asked(d, p);
	} else if (rc && p->link == SSQD_LINK_CLOSING) { /* it agreed: closed its end */
		snprintf(why, sizeof(why), "%s", p->closing_why);
		ssqd_peer_close_idle(d, p, why);
	} else if (rc) {
		ssqd_peer_lost(d, p, why);
	}
}

void ssqd_peer_events(struct ssqd *d, struct ssqd_peer *p, short revents)
{
	switch (p->link) {
	case SSQD_LINK_IDLE:
		return;
	case SSQD_LINK_DIALING:
		dial_events(d, p, revents);
		return;
	case SSQD_LINK_AUTHING:
		auth_events(d, p, revents);
		return;
	case SSQD_LINK_WANT_SENT:
		want_answer(d, p, revents);
		return;
	case SSQD_LINK_EXCHANGING:
		exchange_events(d, p, revents);
		return;
	case SSQD_LINK_LINKED:
	case SSQD_LINK_CLOSING:
		link_events(d, p, revents);
		return;
	}
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

		if (o == p || (o->link == SSQD_LINK_IDLE && !o->wanted) || busy(d, o))
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
		ask_close(d, lru, reason);
	if (lru->link == SSQD_LINK_IDLE)
		return 0; /* lost while asking: room now */
	snprintf(why, whylen,
	         "%s: waiting for %s, the least recently used of %u active peers, to "
	         "close its link (--max-active-peers)",
	         p->name, lru->name, d->opt.max_active_peers);
	return -EINPROGRESS;
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
