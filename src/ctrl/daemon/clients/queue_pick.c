/* SPDX-License-Identifier: MIT */
/*
 * The queue a request names (ATTACH, GRANT): found by name, allowed to the
 * client, and ready - its peer linked or a queue in error recovered first.
 * Apart from request.c so that grant.c and request.c both use it without
 * calling each other; so is ssqd_uid_shares, both files' bound on one
 * uid's share.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "ctrl/daemon/clients/clients.h"
#include "ctrl/daemon/queues/queues.h"
#include "ctrl/daemon/peers/peers.h"

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

/* ATTACH, its first half (clients.h). */
int ssqd_attach_queue(struct ssqd *d, struct ssqd_client *c, const struct proto_msg *m,
                      int *rc)
{
	uint32_t seq = m->hdr.seq;
	char why[200];
	int q;

	*rc = 0;
	q = find_queue(d, m->u.attach.name);
	if (q < 0) {
		char msg[SSQ_ERRMSG_MAX];

		no_such_queue(d, m->u.attach.name, msg, sizeof(msg));
		return *rc = ssqd_out_error(&c->out, c->fd, seq, -ENOENT, "%s", msg), -1;
	}
	if (!ssqd_queue_allows(d, q, c))
		return *rc = ssqd_out_error(
		           &c->out, c->fd, seq, -EACCES,
		           "queue \"%s\" takes only the uids / gids its --queue-uid / "
		           "--queue-gid name, not uid %u / gid %u",
		           m->u.attach.name, (unsigned)c->uid, (unsigned)c->gid),
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
		                            m->u.attach.name, why),
		       -1;
	if (d->queues[q].listed != SSQ_QUEUE_READY)
		return *rc = ssqd_out_error(&c->out, c->fd, seq, -EAGAIN,
		                            "queue \"%s\" is not connected yet (waiting "
		                            "for the peer ssqd)",
		                            m->u.attach.name),
		       -1;
	return q;
}
