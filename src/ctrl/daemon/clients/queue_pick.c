/* SPDX-License-Identifier: MIT */
/*
 * The queue a request names (ATTACH, GRANT): found by name - or, for an
 * ATTACH of "any" / "PEER/any", picked among that peer's queues - allowed
 * to the client, and ready - its peer linked or a queue in error
 * recovered first. Apart from request.c so that grant.c and request.c
 * both use it without calling each other; so is ssqd_uid_shares, both
 * files' bound on one uid's share.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "ctrl/daemon/clients/clients.h"
#include "ctrl/daemon/queues/queues.h"
#include "ctrl/daemon/peers/peers.h"
#include "ctrl/daemon/watch/watch.h"

int ssqd_uid_shares(const struct ssqd *d, uid_t uid)
{
	/*
	 * Under --tenants uid each ssqd serves one uid: this one its own
	 * (tenants.c hands the others' connections on), a tenant's ssqd
	 * (--tenant-fd and --allow-uid alone) that tenant's. Nobody to share
	 * with, so no half of anything is kept back.
	 */
	if (d->opt.tenants == SSQD_TENANTS_UID ||
	    (d->opt.tenant_fd >= 0 && d->opt.allow_uid >= 0 && d->opt.allow_gid < 0))
		return 0;
	return getuid() != uid ||
	       (d->opt.allow_uid >= 0 && (uid_t)d->opt.allow_uid != uid) ||
	       d->opt.allow_gid >= 0;
}

/* Queue @q's --queue-uid / --queue-gid rules seen from client @c (clients.h). */
unsigned ssqd_queue_rules_for(const struct ssqd *d, int q, const struct ssqd_client *c)
{
	unsigned i, f = 0;

	for (i = 0; i < d->opt.nqueue_rules; i++) {
		const struct ssqd_queue_rule *r = &d->opt.queue_rules[i];

		if (r->queue != q)
			continue;
		f |= SSQD_RULED;
		if (r->id == (r->is_gid ? (uint32_t)c->gid : (uint32_t)c->uid))
			f |= SSQD_RULE_NAMES_C;
		if (r->is_gid || r->id != (uint32_t)c->uid)
			f |= SSQD_RULE_NAMES_OTHER;
	}
	return f;
}

/*
 * May a uid other than @c's open queue @q? ssqd's own, one named by
 * --allow-uid, or a group's by --allow-gid; a queue's own rules
 * (--queue-uid / --queue-gid) narrow that to the ids they name. Root is
 * not counted unless it is ssqd's uid: it may do anything on the host.
 */
static int queue_shared(const struct ssqd *d, int q, const struct ssqd_client *c)
{
	unsigned f = ssqd_queue_rules_for(d, q, c);

	if (f)
		return !!(f & SSQD_RULE_NAMES_OTHER);
	return ssqd_uid_shares(d, c->uid);
}

/* Producer records of queue @q held by @uid's connections. */
static unsigned uid_records(const struct ssqd *d, int q, uid_t uid)
{
	unsigned i, n = 0;

	for (i = 0; i < SSQD_MAX_CLIENTS; i++)
		if (d->clients[i].fd >= 0 && d->clients[i].uid == uid)
			n += (unsigned)__builtin_popcountll(d->clients[i].recs[q]);
	return n;
}

/* Has @c's uid its share of queue @q's producer records (clients.h)? */
int ssqd_uid_records_full(const struct ssqd *d, int q, const struct ssqd_client *c)
{
	return queue_shared(d, q, c) && uid_records(d, q, c->uid) >= SSQD_UID_RECORDS;
}

/* May client @c attach to queue @q (--queue-uid / --queue-gid)? */
static int ssqd_queue_allows(const struct ssqd *d, int q, const struct ssqd_client *c)
{
	unsigned f = ssqd_queue_rules_for(d, q, c);

	return !f || (f & SSQD_RULE_NAMES_C);
}

static int find_queue(const struct ssqd *d, const char *name)
{
	unsigned i;

	for (i = 0; i < d->own.nqueues; i++)
		if (!strncmp(d->own.queues[i].name, name, SSQ_NAME_MAX))
			return (int)i;
	return -1;
}

/*
 * The sentence for a queue name that is not there: the queues that are, so
 * that a mistyped or unqualified name ("q0" where a cluster daemon names
 * its loopback "alice/q0", newcomer review F10) is fixed from the message
 * alone. A queue whose name after its "peer/" matches comes first, as the
 * likely meaning; then as many names as the error message holds
 * (SSQ_ERRMSG_MAX), and how many there are in all.
 */
static void no_such_queue(const struct ssqd *d, const char *name, char *out, size_t len)
{
	const char *guess = NULL;
	size_t at;
	unsigned i, shown = 0;
	int n;

	for (i = 0; i < d->own.nqueues; i++) {
		const char *q = d->own.queues[i].name;
		const char *slash = memchr(q, '/', SSQ_NAME_MAX);

		if (!slash || strncmp(slash + 1, name, SSQ_NAME_MAX))
			continue;
		/* This daemon's own (loopback) queue is the likelier meaning. */
		if (!guess ||
		    (d->opt.name && !strncmp(q, d->opt.name, (size_t)(slash - q)) &&
		     d->opt.name[slash - q] == '\0'))
			guess = q;
	}
	n = guess ? snprintf(out, len, "no queue named \"%.*s\"; did you mean \"%.*s\"? ",
	                     (int)SSQ_NAME_MAX, name, (int)SSQ_NAME_MAX, guess)
	          : snprintf(out, len, "no queue named \"%.*s\"; ", (int)SSQ_NAME_MAX,
	                     name);
	at = n > 0 && (size_t)n < len ? (size_t)n : len - 1;
	if (!d->own.nqueues) {
		snprintf(out + at, len - at, "this ssqd has no queues");
		return;
	}
	n = snprintf(out + at, len - at, "queues:");
	at += n > 0 && (size_t)n < len - at ? (size_t)n : 0;
	for (i = 0; i < d->own.nqueues; i++) {
		/* Room for this name and the count that ends the sentence. */
		size_t need = strnlen(d->own.queues[i].name, SSQ_NAME_MAX) + 2 + 40;

		if (at + need >= len)
			break;
		at += (size_t)snprintf(out + at, len - at, " %.*s%s", (int)SSQ_NAME_MAX,
		                       d->own.queues[i].name,
		                       i + 1 < d->own.nqueues ? "," : "");
		shown++;
	}
	if (shown < d->own.nqueues)
		snprintf(out + at, len - at, " ... (%u in all: ssq_client_list)",
		         d->own.nqueues);
}

/*
 * The pick form of a queue name (docs/design.md, "Several queues to one
 * peer"): "any" (every queue of an ssqd without a cluster goes to its one
 * peer) or "PEER/any" (a cluster's peer, this ssqd's own name for its
 * loopback; PEER not empty). 1 and the peer's name length in *@plen (0 for
 * "any"), or 0: a queue's own name. No queue is called "any": ssqd names
 * them qK, PEER/qK.
 */
static int pick_form(const char *name, size_t *plen)
{
	size_t n = strnlen(name, SSQ_NAME_MAX);

	if (n < 3 || strcmp(name + n - 3, "any") || n == 4 ||
	    (n > 4 && name[n - 4] != '/'))
		return 0;
	*plen = n > 3 ? n - 4 : 0;
	return 1;
}

/* Is queue @q one of the peer @peer (@plen bytes; 0: any queue) names? */
static int of_peer(const struct ssqd *d, unsigned q, const char *peer, size_t plen)
{
	const char *qn = d->own.queues[q].name;

	return !plen || (!strncmp(qn, peer, plen) && qn[plen] == '/');
}

/* Producer records live clients hold in queue @q: its load, as picks count it. */
static unsigned queue_load(const struct ssqd *d, unsigned q)
{
	unsigned i, n = 0;

	for (i = 0; i < SSQD_MAX_CLIENTS; i++)
		if (d->clients[i].fd >= 0)
			n += (unsigned)__builtin_popcountll(d->clients[i].recs[q]);
	return n;
}

/* Would an ATTACH of queue @q be answered at once, no link or recovery first? */
static int queue_ready(struct ssqd *d, unsigned q)
{
	return d->queues[q].listed == SSQ_QUEUE_READY &&
	       !ssq_ctl_in_error(d->queues[q].ctl) && !ssqd_peer_closing(d, q);
}

/* The peers a cluster's queues go to, for a refusal: "alice, bob, carol". */
static void peer_names(const struct ssqd *d, char *out, size_t len)
{
	size_t at = 0;
	unsigned i, j;

	out[0] = '\0';
	for (i = 0; i < d->own.nqueues; i++) {
		const char *qn = d->own.queues[i].name;
		const char *slash = memchr(qn, '/', SSQ_NAME_MAX);
		int n;

		if (!slash)
			continue;
		for (j = 0; j < i && !of_peer(d, j, qn, (size_t)(slash - qn)); j++)
			;
		if (j < i) /* named already */
			continue;
		n = snprintf(out + at, len - at, "%s%.*s", at ? ", " : "",
		             (int)(slash - qn), qn);
		if (n < 0 || (size_t)n >= len - at)
			break;
		at += (size_t)n;
	}
}

/*
 * Is queue @q, @ready, a better pick than the best so far (@best < 0:
 * none)? Ready ones before those a link or recovery must bring up first;
 * then the least busy by recent rate (watch/rate.c: classes, so that
 * rates within about a factor of two, and all idle ones, compare equal);
 * then the fewest producer records held; the lowest index on a tie, as
 * the caller walks them in order.
 */
static int better(const struct ssqd *d, unsigned q, int ready, int best, int best_ready)
{
	unsigned busy, best_busy, load, best_load;

	if (best < 0 || ready != best_ready)
		return best < 0 || ready > best_ready;
	busy = ssqd_rate_class(d->queues[q].rate.per_s);
	best_busy = ssqd_rate_class(d->queues[best].rate.per_s);
	if (busy != best_busy)
		return busy < best_busy;
	load = queue_load(d, q);
	best_load = queue_load(d, (unsigned)best);
	return load < best_load;
}

/*
 * Pick, for client @c's ATTACH of @name (pick_form: peer @plen bytes of
 * it), the queue of that peer it may use (--queue-uid / --queue-gid)
 * that is least busy (better: ready first, then the recent posting rate,
 * then the fewest producer records held, then the lowest index): opens
 * go where the posting is not, and spread evenly among idle queues, each
 * staying on its queue for its life (its order is that queue's). ssqd
 * answers ATTACHes one at a time, so each pick sees the producers of the
 * ones before it; their posts count from the next sample on. Its index,
 * or a negative errno with @msg.
 */
static int pick_queue(struct ssqd *d, const struct ssqd_client *c, const char *name,
                      size_t plen, char *msg, size_t len)
{
	unsigned i, n = 0, ruled = 0, full = 0;
	int best = -1, best_ready = 0;

	if (!d->opt.npeers != !plen) {
		char peers[SSQ_ERRMSG_MAX / 2];

		peer_names(d, peers, sizeof(peers));
		if (plen)
			snprintf(
			    msg, len,
			    "no queue named \"%.*s\": this ssqd has no peers by name "
			    "(no --peers); \"any\" picks one of its queues",
			    (int)SSQ_NAME_MAX, name);
		else
			snprintf(
			    msg, len,
			    "\"any\" needs its peer in a cluster: \"PEER/any\", PEER "
			    "one of %s",
			    peers);
		return -ENOENT;
	}
	for (i = 0; i < d->own.nqueues; i++) {
		int ready;

		if (!of_peer(d, i, name, plen))
			continue;
		n++;
		if (!ssqd_queue_allows(d, (int)i, c)) {
			ruled++;
			continue;
		}
		if ((unsigned)__builtin_popcountll(c->recs[i]) >= SSQD_OPENS_PER_CLIENT)
			continue;
		if (ssqd_uid_records_full(d, (int)i, c)) {
			full++;
			continue;
		}
		ready = queue_ready(d, i);
		if (better(d, i, ready, best, best_ready)) {
			best = (int)i;
			best_ready = ready;
		}
	}
	if (!n) {
		char peers[SSQ_ERRMSG_MAX / 2];

		peer_names(d, peers, sizeof(peers));
		snprintf(msg, len, "no peer named \"%.*s\" (in \"%.*s\"); peers: %s",
		         (int)plen, name, (int)SSQ_NAME_MAX, name, peers);
		return -ENOENT;
	}
	if (best >= 0)
		return best;
	if (ruled == n) {
		snprintf(msg, len,
		         "\"%.*s\": each of its %u queues takes only the uids / gids its "
		         "--queue-uid / --queue-gid name, not uid %u / gid %u",
		         (int)SSQ_NAME_MAX, name, n, (unsigned)c->uid, (unsigned)c->gid);
		return -EACCES;
	}
	if (full)
		snprintf(msg, len,
		         "uid %u holds %u records of each queue of this peer it "
		         "may open, the most one uid may while other uids may use them",
		         (unsigned)c->uid, SSQD_UID_RECORDS);
	else
		snprintf(msg, len,
		         "\"%.*s\": this connection has each queue it may use open %u "
		         "times, the most one may",
		         (int)SSQ_NAME_MAX, name, SSQD_OPENS_PER_CLIENT);
	return -EUSERS;
}

/* ATTACH, its first half (clients.h). */
int ssqd_attach_queue(struct ssqd *d, struct ssqd_client *c, const struct proto_msg *m,
                      int *rc)
{
	uint32_t seq = m->hdr.seq;
	const char *name = m->u.attach.name;
	char why[200];
	size_t plen;
	int q;

	*rc = 0;
	if (pick_form(name, &plen) && m->hdr.type != SSQ_MSG_ATTACH)
		return *rc = ssqd_out_error(
		           &c->out, c->fd, seq, -EINVAL,
		           "\"%.*s\": a grant is bound to one queue's QP; name it "
		           "(ssq_queue_name says which one an open of \"any\" got)",
		           (int)SSQ_NAME_MAX, name),
		       -1;
	if (pick_form(name, &plen)) {
		char msg[SSQ_ERRMSG_MAX];

		q = pick_queue(d, c, name, plen, msg, sizeof(msg));
		if (q < 0)
			return *rc = ssqd_out_error(&c->out, c->fd, seq, q, "%s", msg),
			       -1;
		/* From here on its own name: what the answers below say. */
		name = d->own.queues[q].name;
	}
	q = find_queue(d, name);
	if (q < 0) {
		char msg[SSQ_ERRMSG_MAX];

		no_such_queue(d, name, msg, sizeof(msg));
		return *rc = ssqd_out_error(&c->out, c->fd, seq, -ENOENT, "%s", msg), -1;
	}
	if (!ssqd_queue_allows(d, q, c))
		return *rc = ssqd_out_error(
		           &c->out, c->fd, seq, -EACCES,
		           "queue \"%s\" takes only the uids / gids its --queue-uid / "
		           "--queue-gid name, not uid %u / gid %u",
		           name, (unsigned)c->uid, (unsigned)c->gid),
		       -1;
	/*
	 * Listed READY is ssqd's own view; an error CQE that only a client's
	 * routing saw (a requester-side error raises no async event, IB
	 * 11.6.3) shows only in the shared state it set (SSQ_CTL_ERROR, R8a
	 * in queue_pvt.h), which this open reads so it recovers that too.
	 */
	if ((d->queues[q].listed != SSQ_QUEUE_READY ||
	     ssq_ctl_in_error(d->queues[q].ctl) || ssqd_peer_closing(d, (unsigned)q)) &&
	    (*rc = ssqd_queue_peer(d, (unsigned)q)
	               ? ssqd_peer_want(d, (unsigned)q, why, sizeof(why))
	               : ssqd_recover_for_open(d, (unsigned)q, why, sizeof(why))))
		return *rc = ssqd_out_error(&c->out, c->fd, seq, *rc, "queue \"%s\": %s",
		                            name, why),
		       -1;
	if (d->queues[q].listed != SSQ_QUEUE_READY)
		return *rc = ssqd_out_error(&c->out, c->fd, seq, -EAGAIN,
		                            "queue \"%s\" is not connected yet (waiting "
		                            "for the peer ssqd)",
		                            name),
		       -1;
	return q;
}
