/* SPDX-License-Identifier: MIT */
/*
 * Links that come in (--listen): each accepted connection is a "knock",
 * read without waiting as the serve loop polls it, until it has sent a
 * whole first message: a cluster's want (a note: the knocking daemon
 * wants a link and this one dials it), or its addresses for the exchange
 * (then it is told apart by its name and its queues are brought up). A
 * peer that connects and says nothing, or says it byte by byte, holds
 * only its own slot until SSQD_PEER_EXCHANGE_MS (or until a newcomer to a full
 * table takes it: evict); a refusal is sent and the
 * connection drained for REFUSE_DRAIN_MS (so that the peer reads it before
 * our close), the loop serving everyone meanwhile.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "ctrl/daemon/util/util.h"
#include "ctrl/daemon/peers/peers.h"
#include <systemd/sd-daemon.h> /* SD_ERR...: util/log.c */

#define REFUSE_DRAIN_MS 1000
/*
 * --peer-key: the one refusal a knock gets before its PROOF checks out,
 * whatever failed: the detail (which names are peers, this daemon's own,
 * where a peer's host is) goes to the local log only, not to a stranger.
 */
#define AUTH_REFUSAL                                                                     \
	"authentication failed: this ssqd authenticates its peers (--peer-key)"

void ssqd_knocks_init(struct ssqd *d)
{
	unsigned i;

	for (i = 0; i < SSQD_MAX_KNOCKS; i++)
		d->knocks[i].fd = -1;
}

static void knock_close(struct ssqd_knock *k)
{
	if (k->fd >= 0)
		close(k->fd);
	k->fd = -1;
}

/*
 * Say no, with @why; the connection is drained, then closed, by the loop.
 * Authenticated (its PROOF checked out), the refusal carries its MAC as
 * every later message does: the peer believes no refusal without one.
 */
static void knock_refuse(struct ssqd_knock *k, const char *why)
{
	uint8_t buf[SSQ_PEER_REFUSAL_LEN + SSQ_PEER_MAC_LEN];
	size_t n = SSQ_PEER_REFUSAL_LEN;

	proto_peer_encode_refusal(why, buf);
	if (k->auth.on && !ssqd_auth_seal(&k->auth, buf, n, buf + n))
		n += SSQ_PEER_MAC_LEN;
	(void)!send(k->fd, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT);
	shutdown(k->fd, SHUT_WR);
	k->draining = 1;
	k->deadline_ns = ssqd_now_ns() + REFUSE_DRAIN_MS * 1000000ull;
}

/*
 * A line about a knock that has not proved who it is: anyone who reaches
 * the port causes it, once per connection, so it goes through a limit
 * (SSQD_LOG_BURST a second, then a count of those left out) and, with
 * --peer-key, is counted against its source (ssqd_auth_failed). Once
 * authenticated, a knock is a peer's: its lines are written as they come.
 */
static void knock_log(struct ssqd *d, const struct ssqd_knock *k, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void knock_log(struct ssqd *d, const struct ssqd_knock *k, const char *fmt, ...)
{
	char line[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (k->auth.on)
		fprintf(stderr, "ssqd: %s\n", line);
	else if (d->peer_key_len)
		(void)ssqd_auth_failed(d, &k->ip, "%s", line);
	else
		ssqd_log_limited(&d->client_log, ssqd_now_ns(), SD_WARNING "ssqd: %s\n",
		                 line);
}

/* Whether @p's link still counts: connected, and none of its queues failed. */
static int peer_healthy(struct ssqd *d, struct ssqd_peer *p)
{
	struct pollfd pfd = { p->fd, POLLIN, 0 };
	unsigned k;

	if (!ssqd_link_up(p))
		return 0;
	if (poll(&pfd, 1, 0) > 0)
		ssqd_peer_events(d, p, pfd.revents);
	if (p->fd < 0)
		return 0;
	for (k = 0; k < d->opt.peer_queues; k++) {
		struct ssq_ctl *ctl = d->queues[p->q0 + k].ctl;

		if (ctl && ssq_ctl_in_error(ctl)) {
			ssqd_peer_lost(d, p,
			               p->name[0]
			                   ? "its queues failed and it connected again"
			                   : "its queues failed and a new peer "
			                     "connected");
			return 0;
		}
	}
	return 1;
}

/* Which peer sent @remote: its name in a cluster; the one peer otherwise. */
static struct ssqd_peer *which_peer(struct ssqd *d, const struct proto_peer_addr *remote,
                                    char *why, size_t whylen)
{
	unsigned i;

	if (!d->opt.npeers)
		return &d->peers[0];
	if (!strcmp(remote[0].name, d->opt.name)) {
		snprintf(why, whylen,
		         "a daemon named '%s' like this one connected (two daemons "
		         "share a name)",
		         remote[0].name);
		return NULL;
	}
	for (i = 0; i < d->npeers; i++)
		if (!strcmp(remote[0].name, d->peers[i].name))
			return ssqd_peer_check_sender(d, &d->peers[i], remote, why,
			                              whylen)
			           ? NULL
			           : &d->peers[i];
	snprintf(why, whylen, "'%s' is not a peer of %s (the peers files differ)",
	         remote[0].name, d->opt.name);
	return NULL;
}

/* A knock's addresses are in: which peer, and bring its queues up. */
static void knock_accepted(struct ssqd *d, struct ssqd_knock *k,
                           const struct proto_peer_addr *remote)
{
	char why[256], who[64];
	struct ssqd_peer *p = which_peer(d, remote, why, sizeof(why));
	int rc, again, fl;

	if (!p) {
		knock_log(d, k, "refused %s: %s", k->from, why);
		knock_refuse(k, why);
		return;
	}
	ssqd_peer_str(p, who, sizeof(who));
	if (peer_healthy(d, p)) {
		if (p->name[0])
			knock_log(d, k,
			          "refused a second link from %s (%s): its link is "
			          "healthy",
			          k->from, who);
		else
			knock_log(d, k,
			          "refused a second peer %s: the connected peer is "
			          "healthy (one peer at a time)",
			          k->from);
		knock_refuse(k, d->opt.npeers ? "this ssqd already has a healthy link to "
		                                "that daemon"
		                              : "this ssqd already has a healthy peer "
		                                "(one peer at a time)");
		return;
	}
	ssqd_peer_close_link(d, p); /* our own dial to it, still under way: theirs wins */
	if (ssqd_peer_make_room(d, p, 0, why, sizeof(why))) {
		knock_log(d, k, "refused %s (%s): %s", k->from, who, why);
		knock_refuse(k, why);
		return;
	}
	p->wanted = 1;
	p->used_ns = ssqd_now_ns();
	again = p->ever;
	/* --peer-key: the knock's MACs go on with the link (its addresses sent next). */
	p->auth = k->auth;
	/* The link itself is read without waiting, written with: blocking. */
	fl = fcntl(k->fd, F_GETFL);
	if (fl >= 0)
		fcntl(k->fd, F_SETFL, fl & ~O_NONBLOCK);
	rc = ssqd_peer_rebring(d, p, k->fd, remote, why, sizeof(why));
	if (rc) {
		knock_log(d, k, "%s (%s) refused: %s; its queues stay in error", who,
		          k->from, why);
		knock_close(k);
		return;
	}
	k->fd = -1; /* the peer's link now */
	fprintf(stderr, "ssqd: %s%s %s connected, %u queue(s) ready%s\n",
	        again ? "new " : "", who, k->from, d->opt.peer_queues,
	        again ? " again" : "");
}

/* Peer @name of the cluster, or NULL. */
static struct ssqd_peer *peer_named(struct ssqd *d, const char *name)
{
	unsigned i;

	for (i = 0; i < d->npeers; i++)
		if (d->peers[i].name[0] && !strcmp(d->peers[i].name, name))
			return &d->peers[i];
	return NULL;
}

/*
 * --peer-key: the knock's HELLO (stage 0) or PROOF (stage 1), @len its
 * first message's length. Whole and good, taken off the buffer (what
 * follows it parsed next); 0 then, or 1 when the knock was refused or
 * closed, or is still to send the rest. Every failure counted against its
 * source address (peers/auth.c): a stranger gets no further than this.
 */
static int knock_auth(struct ssqd *d, struct ssqd_knock *k, int len)
{
	struct proto_peer_auth a;
	struct ssqd_peer *p;
	char why[200];
	int rc;

	if (len != (int)SSQ_PEER_AUTH_LEN) {
		ssqd_auth_failed(d, &k->ip,
		                 "peer %s refused: this ssqd authenticates its peers "
		                 "(--peer-key) and it sent no authentication",
		                 k->from);
		knock_refuse(k, AUTH_REFUSAL);
		return 1;
	}
	if (k->len < SSQ_PEER_AUTH_LEN)
		return 1;
	rc = proto_peer_decode_auth(k->buf, SSQ_PEER_AUTH_LEN, &a, why, sizeof(why));
	if (!rc && k->stage == 0) {
		/* --listen's one peer: whoever holds the key (its address unknown). */
		p = d->opt.npeers ? peer_named(d, a.name) : &d->peers[0];
		if (!p) {
			/* The detail goes to the local log only (AUTH_REFUSAL). */
			snprintf(why, sizeof(why), "'%s' is not a peer of %s", a.name,
			         d->opt.name);
			ssqd_auth_failed(d, &k->ip,
			                 "a link from %s refused: %s (the peers files "
			                 "differ)",
			                 k->from, why);
			knock_refuse(k, AUTH_REFUSAL);
			return 1;
		}
		if (d->opt.npeers && !ssqd_peer_src_ok(p, &k->ip)) {
			ssqd_auth_failed(
			    d, &k->ip,
			    "a link from %s claims to be peer %s, whose host "
			    "(%s) is not there",
			    k->from, p->name, p->addr);
			knock_refuse(k, AUTH_REFUSAL);
			return 1;
		}
		rc = ssqd_auth_challenge(d, k, &a, why, sizeof(why));
	} else if (!rc) {
		rc = ssqd_auth_check_proof(d, k, &a, why, sizeof(why));
		if (rc == -EACCES) {
			ssqd_auth_failed(d, &k->ip,
			                 "a link from %s claiming to be peer %s failed "
			                 "authentication: %s",
			                 k->from, k->claimed, why);
			knock_refuse(k, AUTH_REFUSAL);
			return 1;
		}
	}
	if (rc) {
		ssqd_auth_failed(d, &k->ip, "peer %s refused: %s", k->from, why);
		knock_refuse(k, AUTH_REFUSAL);
		return 1;
	}
	k->len -= SSQ_PEER_AUTH_LEN;
	memmove(k->buf, k->buf + SSQ_PEER_AUTH_LEN, k->len);
	return 0;
}

/*
 * A TENANT where none is due: this ssqd runs no tenants (or read the
 * knock's already: a tenant's ssqd gets its links with it read). Refused
 * saying which runs what, so the operator sees the mismatch by name.
 */
static void knock_tenant_unasked(struct ssqd *d, struct ssqd_knock *k)
{
	struct proto_peer_tenant t;
	char why[200], no[SSQ_PEER_REFUSAL_LEN];
	uint32_t id;
	int own = ssqd_peer_tenant(d, &id);

	if (k->len < SSQ_PEER_TENANT_LEN)
		return;
	if (proto_peer_decode_tenant(k->buf, SSQ_PEER_TENANT_LEN, &t, why, sizeof(why))) {
		knock_log(d, k, "peer %s refused: %s", k->from, why);
		knock_refuse(k, why);
		return;
	}
	if (own)
		snprintf(no, sizeof(no), "the peer sent its tenant twice");
	else
		snprintf(no, sizeof(no),
		         "this ssqd runs --tenants none, the peer --tenants %s",
		         ssqd_tenant_kind_str(t.kind));
	knock_log(d, k, "peer %s (%s %u) refused: %s", k->from,
	          ssqd_tenant_kind_str(t.kind), (unsigned)t.id, no);
	knock_refuse(k, no);
}

/*
 * Read what @k sent, up to @room more bytes into k->buf: 1 when k->len
 * grew, 0 when nothing is there yet, -1 when the connection ended (closed,
 * logged if it had said anything).
 */
static int knock_recv(struct ssqd *d, struct ssqd_knock *k, size_t room)
{
	ssize_t r = recv(k->fd, k->buf + k->len, room, MSG_DONTWAIT);

	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (r <= 0) {
		if (k->len)
			knock_log(d, k,
			          "peer %s refused: it closed the connection after %u "
			          "bytes",
			          k->from, k->len);
		knock_close(k);
		return -1;
	}
	k->len += (unsigned)r;
	return 1;
}

/*
 * --tenants, the ssqd that owns the peer port: the knock's TENANT, read
 * alone (recv is asked for no byte past it: what follows is for the
 * tenant's ssqd to read if the link is another tenant's). Its own
 * tenant's is read on here (routed 1); another's is left for serve.c to
 * hand over (routed 2).
 */
static void knock_route(struct ssqd *d, struct ssqd_knock *k)
{
	struct proto_peer_tenant t;
	char why[200], no[SSQ_PEER_REFUSAL_LEN];
	uint32_t own_id;
	int own = ssqd_peer_tenant(d, &own_id), len;

	if (knock_recv(d, k, SSQ_PEER_TENANT_LEN - k->len) <= 0)
		return;
	if (k->len < SSQ_PEER_HEAD_LEN)
		return;
	len = proto_peer_msg_len(k->buf, why, sizeof(why));
	if (len >= 0 && len != (int)SSQ_PEER_TENANT_LEN) {
		snprintf(why, sizeof(why), "this ssqd runs --tenants %s, the peer none",
		         ssqd_tenant_kind_str(own));
		len = -EBADMSG;
	}
	if (len < 0) {
		knock_log(d, k, "peer %s refused: %s", k->from, why);
		knock_refuse(k, why);
		return;
	}
	if (k->len < SSQ_PEER_TENANT_LEN)
		return;
	if (proto_peer_decode_tenant(k->buf, SSQ_PEER_TENANT_LEN, &t, why, sizeof(why))) {
		knock_log(d, k, "peer %s refused: %s", k->from, why);
		knock_refuse(k, why);
		return;
	}
	if (t.kind != own) {
		snprintf(no, sizeof(no),
		         "this ssqd runs --tenants %s, the peer --tenants %s",
		         ssqd_tenant_kind_str(own), ssqd_tenant_kind_str(t.kind));
		knock_log(d, k, "peer %s refused: %s", k->from, no);
		knock_refuse(k, no);
		return;
	}
	k->len = 0;
	k->tenant = t.id;
	if (t.id == own_id) {
		k->routed = 1;
		return;
	}
	if (!ssqd_peer_tenant_ok(d, t.id)) {
		ssqd_peer_tenant_none(own, t.id, no, sizeof(no));
		knock_log(d, k, "peer %s refused: %s", k->from, no);
		/* With --peer-key, who may use this host stays in its log. */
		knock_refuse(k, d->peer_key_len ? AUTH_REFUSAL : no);
		return;
	}
	k->routed = 2;
}

void ssqd_knock_handed(struct ssqd *d, struct ssqd_knock *k, int ok, const char *why)
{
	if (ok) {
		ssqd_log_limited(&d->client_log, ssqd_now_ns(),
		                 "ssqd: a link from %s for tenant %u: handed to its "
		                 "ssqd\n",
		                 k->from, (unsigned)k->tenant);
		knock_close(k); /* the tenant's ssqd holds it now */
		return;
	}
	knock_log(d, k, "a link from %s for tenant %u refused: %s", k->from,
	          (unsigned)k->tenant, why);
	k->routed = 1;
	/* With --peer-key, nothing of this host's tenants before the proof. */
	knock_refuse(k, d->peer_key_len ? AUTH_REFUSAL : why);
}

/* What the knock has sent so far, whole? Act on it. */
static void knock_parse(struct ssqd *d, struct ssqd_knock *k)
{
	struct proto_peer_addr remote[SSQ_MAX_QUEUES];
	unsigned n = d->opt.peer_queues, t = ssqd_auth_trailer(&k->auth);
	char why[256];
	int len, rc;

	if (k->len < SSQ_PEER_HEAD_LEN)
		return;
	len = proto_peer_msg_len(k->buf, why, sizeof(why));
	if (len < 0) {
		knock_log(d, k, "peer %s refused: %s; still listening on port %u",
		          k->from, why, d->opt.listen_port);
		/* Another version reads a refusal (its layout is version 1's): say why.
		 */
		if (len == -EPROTO)
			knock_refuse(k, why);
		else
			knock_close(k);
		return;
	}
	if ((unsigned)len == SSQ_PEER_TENANT_LEN) {
		knock_tenant_unasked(d, k);
		return;
	}
	if (d->peer_key_len && k->stage < 2) {
		if (!knock_auth(d, k, len))
			knock_parse(d, k); /* what came after it */
		return;
	}
	if ((unsigned)len == SSQ_PEER_AUTH_LEN) {
		knock_log(d, k,
		          "peer %s refused: it authenticates (--peer-key) and this "
		          "ssqd has none",
		          k->from);
		knock_refuse(k, "this ssqd has no --peer-key: give both the key");
		return;
	}
	if ((unsigned)len == SSQ_PEER_WANT_LEN) {
		if (k->len < SSQ_PEER_WANT_LEN + t)
			return;
		rc = t ? ssqd_auth_open(&k->auth, k->buf, SSQ_PEER_WANT_LEN,
		                        k->buf + SSQ_PEER_WANT_LEN, why, sizeof(why))
		       : 0;
		if (!rc)
			rc = proto_peer_decode(k->buf, SSQ_PEER_WANT_LEN, &remote[0], why,
			                       sizeof(why));
		/* Authenticated: the want is for the name it proved, no other. */
		if (rc == PROTO_PEER_WANT && t && strcmp(remote[0].name, k->claimed)) {
			snprintf(why, sizeof(why), "authenticated as %s, it wants for %s",
			         k->claimed, remote[0].name);
			rc = -EBADMSG;
		}
		if (rc != PROTO_PEER_WANT && t)
			ssqd_auth_failed(d, &k->ip, "a want from %s (%s): %s", k->from,
			                 k->claimed, why);
		else if (rc != PROTO_PEER_WANT)
			knock_log(d, k, "a want from %s: %s", k->from, why);
		else if (ssqd_peer_want_from(d, remote[0].name, k->from, why,
		                             sizeof(why))) {
			knock_refuse(k, why); /* its opens are told -EBUSY */
			return;
		}
		knock_close(k);
		return;
	}
	if ((unsigned)len != SSQ_PEER_MSG_LEN) {
		knock_log(d, k, "peer %s refused: its first message is no address",
		          k->from);
		knock_close(k);
		return;
	}
	if (k->len < n * (SSQ_PEER_MSG_LEN + t))
		return;
	rc = ssqd_link_decode_addrs(k->buf, n, &k->auth, remote, why, sizeof(why));
	/* In a cluster: the name it proved (one-peer modes name queues there). */
	if (!rc && t && d->opt.npeers && strcmp(remote[0].name, k->claimed)) {
		snprintf(why, sizeof(why), "authenticated as %s, its addresses name %s",
		         k->claimed, remote[0].name);
		rc = -EBADMSG;
	}
	if (rc) {
		knock_log(d, k, "peer %s refused: %s; still listening on port %u",
		          k->from, why, d->opt.listen_port);
		knock_close(k);
		return;
	}
	knock_accepted(d, k, remote);
}

/* How many knocks came from @ip (@extra more: the newcomer's). */
static unsigned from_ip(const struct ssqd *d, const struct in6_addr *ip, unsigned extra)
{
	unsigned i, n = extra;

	for (i = 0; i < SSQD_MAX_KNOCKS; i++)
		if (d->knocks[i].fd >= 0 && !memcmp(&d->knocks[i].ip, ip, sizeof(*ip)))
			n++;
	return n;
}

/*
 * Whether knock @k may make room for a newcomer: one that has said nothing
 * whole yet, or was refused and drains. With --peer-key, a knock whose
 * HELLO passed the name and address check (stage 1) or that proved the
 * key (2) is a peer's, or another user's on a peer's host: it keeps its
 * slot until its deadline, never dropped for one that has said nothing.
 */
static int evictable(const struct ssqd_knock *k)
{
	return k->fd >= 0 && (k->draining || k->stage == 0);
}

/*
 * Room for a newcomer from @ip, the table full or @ip holding its share
 * (@own: only @ip's knocks may go). Peers link one at a time and say who
 * they are at once, so this many knocks at once are a stranger's. Closing
 * the newcomer would let a stranger that reconnects as soon as a slot
 * frees keep every peer out for good; the oldest evictable knock of the
 * source holding the most slots goes instead (the newcomer's own source
 * counted), so the stranger crowds out only itself. NULL: none may go.
 */
static struct ssqd_knock *evict(struct ssqd *d, const struct in6_addr *ip, int own)
{
	struct ssqd_knock *victim = NULL;
	unsigned i, most = 0;

	for (i = 0; i < SSQD_MAX_KNOCKS; i++) {
		struct ssqd_knock *k = &d->knocks[i];
		int same = !memcmp(&k->ip, ip, sizeof(*ip));
		unsigned n;

		if (!evictable(k) || (own && !same))
			continue;
		n = from_ip(d, &k->ip, same);
		if (n > most || (n == most && k->accepted_ns < victim->accepted_ns)) {
			most = n;
			victim = k;
		}
	}
	if (!victim)
		return NULL;
	ssqd_log_limited(&d->client_log, ssqd_now_ns(),
	                 "ssqd: %s connections to the peer port are still to say "
	                 "who they are: closed the oldest of the %u from %s\n",
	                 own ? "a source's" : "all the table's", most, victim->from);
	knock_close(victim);
	return victim;
}

/* --peer-key in a cluster: @ip is an address some peer's host looked up to? */
static int from_peer_host(const struct ssqd *d, const struct in6_addr *ip)
{
	unsigned i;

	for (i = 0; i < d->npeers; i++)
		if (ssqd_peer_src_ok(&d->peers[i], ip))
			return 1;
	return 0;
}

/*
 * Connection @s from @sa to the peer port, a knock from now on (@routed:
 * its TENANT read, or none due), or closed.
 */
static void knock_take(struct ssqd *d, int s, struct sockaddr_in6 sa, int routed)
{
	char ip[INET6_ADDRSTRLEN], from[80];
	struct ssqd_knock *k = NULL;
	unsigned i;

	if (sa.sin6_family != AF_INET6)
		memset(&sa.sin6_addr, 0, sizeof(sa.sin6_addr));
	if (sa.sin6_family != AF_INET6 ||
	    !inet_ntop(AF_INET6, &sa.sin6_addr, ip, sizeof(ip)))
		snprintf(ip, sizeof(ip), "?");
	snprintf(from, sizeof(from), "[%s]:%u", ip, ntohs(sa.sin6_port));
	/*
	 * A cluster with --peer-key takes links from its peers' hosts only
	 * (the HELLO checks the claimed peer's own): anyone else is closed
	 * before it takes a slot, counted against its address, so no number
	 * of strangers' connections fills the table.
	 */
	if (d->peer_key_len && d->opt.npeers && !from_peer_host(d, &sa.sin6_addr)) {
		(void)ssqd_auth_failed(d, &sa.sin6_addr,
		                       "a connection from %s closed at once: not from "
		                       "a peer's host",
		                       from);
		close(s);
		return;
	}
	/* One source holds half the table at most: the rest is for the others. */
	if (from_ip(d, &sa.sin6_addr, 0) >= SSQD_KNOCKS_PER_SOURCE) {
		k = evict(d, &sa.sin6_addr, 1);
	} else {
		for (i = 0; i < SSQD_MAX_KNOCKS && !k; i++)
			if (d->knocks[i].fd < 0)
				k = &d->knocks[i];
		if (!k)
			k = evict(d, &sa.sin6_addr, 0);
	}
	if (!k) {
		/* Every slot it could take is a peer's (or a peer host's) under way. */
		ssqd_log_limited(&d->client_log, ssqd_now_ns(),
		                 SD_WARNING "ssqd: a connection from %s closed at once: "
		                            "the connections to the peer port it could "
		                            "take the place of are authenticating\n",
		                 from);
		close(s);
		return;
	}
	memset(k, 0, sizeof(*k));
	k->fd = s;
	k->ip = sa.sin6_addr;
	k->accepted_ns = ssqd_now_ns();
	k->deadline_ns = k->accepted_ns + SSQD_PEER_EXCHANGE_MS * 1000000ull;
	k->routed = routed;
	snprintf(k->from, sizeof(k->from), "%s", from);
	/* A peer sends at once: often it is all here already. */
	ssqd_knock_events(d, k, POLLIN);
}

void ssqd_accept_peer(struct ssqd *d)
{
	struct sockaddr_in6 sa;
	socklen_t len = sizeof(sa);
	uint32_t id;
	int s = accept4(d->peer_listen_fd, (struct sockaddr *)&sa, &len,
	                SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (s >= 0)
		knock_take(d, s, sa, !ssqd_peer_tenant(d, &id));
}

void ssqd_knock_adopt(struct ssqd *d, int s)
{
	struct sockaddr_in6 sa;
	socklen_t len = sizeof(sa);

	/* The parent's peer port is AF_INET6 (link.c): IPv4 comes v4-mapped. */
	memset(&sa, 0, sizeof(sa));
	if (getpeername(s, (struct sockaddr *)&sa, &len) < 0)
		sa.sin6_family = AF_UNSPEC;
	knock_take(d, s, sa, 1);
}

void ssqd_knock_events(struct ssqd *d, struct ssqd_knock *k, short revents)
{
	uint8_t junk[256];
	ssize_t r;

	if (k->fd < 0 || !(revents & (POLLIN | POLLHUP | POLLERR)))
		return;
	if (k->draining) {
		while ((r = recv(k->fd, junk, sizeof(junk), MSG_DONTWAIT)) > 0)
			;
		if (r == 0 || (errno != EAGAIN && errno != EINTR))
			knock_close(k);
		return;
	}
	if (!k->routed) {
		knock_route(d, k);
		/* Ours: what came after its TENANT is read at the next poll. */
		return;
	}
	if (k->routed == 2)
		return; /* serve.c hands it over */
	if (knock_recv(d, k, sizeof(k->buf) - k->len) > 0)
		knock_parse(d, k);
}

void ssqd_knocks_tick(struct ssqd *d, uint64_t now)
{
	unsigned i;

	for (i = 0; i < SSQD_MAX_KNOCKS; i++) {
		struct ssqd_knock *k = &d->knocks[i];

		if (k->fd < 0 || now < k->deadline_ns)
			continue;
		if (!k->draining)
			knock_log(d, k,
			          "peer %s refused: it sent %u bytes in %u ms, not a "
			          "whole first message",
			          k->from, k->len, SSQD_PEER_EXCHANGE_MS);
		knock_close(k);
	}
}
