/* SPDX-License-Identifier: MIT */
/*
 * Remote access as a capability (issue 28 item 1): a client's buffer or
 * registration reaches no peer until its owner GRANTs a range of it to one
 * queue's peer. ssqd binds a type-2 memory window over that range to the
 * queue's QP (the backend's grant: on a ConnectX ibv_alloc_mw(pd,
 * IBV_MW_TYPE_2) and a bind on that QP, the window's key byte drawn at
 * random), so only requests arriving at that QP - from that peer - reach
 * it, and only while the window lives. REVOKE, freeing the buffer,
 * deregistering the memory or the owner's death free the window before
 * ssqd answers: its key reaches nothing from then on. One round trip to
 * ssqd per grant; nothing on the fast path changes.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "ctrl/daemon/queues/queues.h"
#include "ctrl/daemon/clients/clients.h"

static unsigned grants_of(const struct ssqd *d, uint32_t owner)
{
	unsigned i, n = 0;

	for (i = 0; i < SSQD_MAX_GRANTS; i++)
		n += d->grants[i].owner == owner;
	return n;
}

/* Grants held by all the clients of @uid. */
static unsigned grants_of_uid(const struct ssqd *d, uint32_t uid)
{
	unsigned i, n = 0;

	for (i = 0; i < SSQD_MAX_GRANTS; i++)
		n += d->grants[i].owner && d->grants[i].uid == uid;
	return n;
}

static void bind_look(struct ssqd *d, struct ssqd_grant *g);

unsigned ssqd_grants_drop_mem(struct ssqd *d, uint32_t kind, uint64_t mem)
{
	unsigned i, binding = 0;

	for (i = 0; i < SSQD_MAX_GRANTS; i++) {
		struct ssqd_grant *g = &d->grants[i];

		if (!g->owner || g->kind != kind || g->mem != mem)
			continue;
		/* Its bind's fate as of now: one that ran need not hold the memory. */
		if (g->binding)
			bind_look(d, g);
		ssqd_grant_revoke(d, g);
		binding += g->owner && g->binding;
	}
	return binding;
}

unsigned ssqd_grants_on(const struct ssqd *d, uint32_t kind, uint64_t mem)
{
	unsigned i, n = 0;

	for (i = 0; i < SSQD_MAX_GRANTS; i++)
		n += d->grants[i].owner && d->grants[i].kind == kind &&
		     d->grants[i].mem == mem;
	return n;
}

void ssqd_grants_drop_owner(struct ssqd *d, uint32_t owner)
{
	unsigned i;

	for (i = 0; i < SSQD_MAX_GRANTS; i++)
		if (owner && d->grants[i].owner == owner)
			ssqd_grant_revoke(d, &d->grants[i]);
}

void ssqd_grants_drop_all(struct ssqd *d)
{
	unsigned i;

	/* ssqd's end: the QPs go next, and a bind left on one with them. */
	for (i = 0; i < SSQD_MAX_GRANTS; i++)
		if (d->grants[i].owner)
			ssqd_grant_free(d, &d->grants[i]);
}

/*
 * How long a GRANT waits for its bind: a local operation, microseconds on
 * a NIC, so only a hole ahead of it on the ring makes it wait. Under the
 * client's own wait for an answer (REPLY_TIMEOUT_MS, 1000 ms, in
 * client/client_call.c), so that the owner hears ssqd's -ETIMEDOUT and
 * why: a bound answer that came after the owner gave up would leave a
 * window live whose key the owner never learned (the client revokes such
 * a late one, undo_late, but only at its next call).
 */
#define BIND_WAIT_NS (500ull * 1000000)

int ssqd_grants_binding(const struct ssqd *d)
{
	unsigned i;

	for (i = 0; i < SSQD_MAX_GRANTS; i++)
		if (d->grants[i].owner && (d->grants[i].binding || d->grants[i].answer))
			return 1;
	return 0;
}

static struct ssqd_client *client_of(struct ssqd *d, uint32_t id)
{
	unsigned i;

	for (i = 0; i < SSQD_MAX_CLIENTS; i++)
		if (d->clients[i].fd >= 0 && !d->clients[i].dying &&
		    d->clients[i].id == id)
			return &d->clients[i];
	return NULL;
}

/* Whether @g's bind still may run: its CQE, else `completed` past it. */
static void bind_look(struct ssqd *d, struct ssqd_grant *g)
{
	struct ssqd_queue *q = &d->queues[g->queue];
	struct ssq_completion comp[16];
	uint64_t done;
	int n;

	/*
	 * `completed` first: a router delivers a signaled WQE's CQE to its
	 * owner's ring before its release store of `completed` (R3;
	 * <ssq/queue_pvt.h>, ssq__deliver), so a bind counted by this
	 * acquire load has its CQE in what the poll below returns.
	 */
	done = __atomic_load_n(&q->ctl->completed, __ATOMIC_ACQUIRE);
	while ((n = ssq_poll(&q->prod, comp, 16)) > 0)
		ssqd_grants_seen(d, g->queue, comp, n);
	if (g->binding && done >= g->bind_end) {
		g->binding = 0;
		g->bind_rc = -ECANCELED;
	}
}

/* The answer to @g's GRANT: its key, or why not (then @g goes). */
static void answer(struct ssqd *d, struct ssqd_grant *g)
{
	struct ssqd_client *c = client_of(d, g->owner);
	struct proto_msg_grant_reply r;
	int rc = 0;

	g->answer = 0;
	if (!g->gone && !g->binding && !g->bind_rc) {
		memset(&r, 0, sizeof(r));
		r.remote_addr = g->iova;
		r.len = g->len;
		r.rkey = g->rkey;
		if (c && ssqd_out_send(&c->out, c->fd, SSQ_MSG_GRANT | SSQ_MSG_REPLY,
		                       g->seq, &r, sizeof(r), NULL, 0))
			c->failed = 1;
		return;
	}
	if (!c)
		;
	else if (g->gone)
		rc = ssqd_out_error(&c->out, c->fd, g->seq, -ECANCELED,
		                    "grant: revoked before it was answered (its "
		                    "memory, or its queue's link, went)");
	else if (g->binding)
		rc = ssqd_out_error(&c->out, c->fd, g->seq, -ETIMEDOUT,
		                    "grant: the bind did not complete in %llu ms (a "
		                    "reservation ahead of it on the queue's ring is not "
		                    "published)",
		                    BIND_WAIT_NS / 1000000);
	else if (g->bind_rc == -EIO)
		rc = ssqd_out_error(&c->out, c->fd, g->seq, -EIO,
		                    "grant: the bind completed in error (CQE syndrome "
		                    "0x%x): the queue is in error",
		                    g->syndrome);
	else
		rc = ssqd_out_error(&c->out, c->fd, g->seq, g->bind_rc,
		                    "grant: the queue was reset before the bind ran");
	if (rc)
		c->failed = 1;
	/* Its window goes once the bind cannot run (ssqd_grants_tick). */
	g->gone = 1;
}

void ssqd_grants_tick(struct ssqd *d, uint64_t now_ns)
{
	unsigned i;

	for (i = 0; i < SSQD_MAX_GRANTS; i++) {
		struct ssqd_grant *g = &d->grants[i];

		if (!g->owner)
			continue;
		if (g->binding)
			bind_look(d, g);
		if (g->answer && (g->gone || !g->binding || now_ns >= g->deadline_ns))
			answer(d, g);
		if (g->gone && !g->binding)
			ssqd_grant_free(d, g);
	}
}

/*
 * The memory GRANT @g names, if client @c owns it and it holds the range:
 * the backend's MR (*@mr, *@client), the IOVA of the range's first byte and
 * the remote access it may be given. 0, or -errno with @why.
 */
static int find_mem(struct ssqd *d, const struct ssqd_client *c,
                    const struct proto_msg_grant *g, void **mr, int *client,
                    uint64_t *iova, uint32_t *may, char *why, size_t whylen)
{
	uint64_t len;

	if (g->kind == SSQ_GRANT_BUF) {
		struct ssqd_data_buf *b = ssqd_data_find(&d->data, g->mem);

		if (!b || b->owner != c->id) {
			snprintf(why, whylen, "no buffer of this client at offset %llu",
			         (unsigned long long)g->mem);
			return -ENOENT;
		}
		if (!b->mr) {
			snprintf(why, whylen,
			         "buffers have no keys of their own under ssqd "
			         "--arena-rkey (the arena's one key reaches them all)");
			return -EOPNOTSUPP;
		}
		*mr = b->mr;
		*client = 0;
		len = b->len;
		*iova = d->own.data_iova + (b->off - d->own.data_off) + g->off;
		*may = SSQ_MEM_ACCESS_REMOTE;
	} else {
		uint32_t slot = (uint32_t)(g->mem & 0xffff) - 1;
		struct ssqd_mr *m = slot < SSQD_MAX_MRS ? &d->mrs[slot] : NULL;

		if (!m || g->mem > UINT32_MAX || m->id != (uint32_t)g->mem ||
		    m->owner != c->id) {
			snprintf(why, whylen, "no registration %llu of this client",
			         (unsigned long long)g->mem);
			return -ENOENT;
		}
		*mr = m->impl;
		*client = 1;
		len = m->len;
		*iova = m->iova + g->off;
		*may = m->access & SSQ_MEM_ACCESS_REMOTE;
	}
	if (g->off >= len || g->len > len - g->off) {
		snprintf(why, whylen, "%llu bytes at +%llu: past its %llu bytes",
		         (unsigned long long)g->len, (unsigned long long)g->off,
		         (unsigned long long)len);
		return -ERANGE;
	}
	if (g->access & ~*may) {
		snprintf(why, whylen,
		         "access 0x%x asked, the registration has only 0x%x of it "
		         "(ssq_mem_reg's access bounds what may be granted)",
		         g->access, *may);
		return -EACCES;
	}
	return 0;
}

/* Grant @slot is client @c's, for GRANT @g on queue @q (a window of it made). */
static void slot_take(struct ssqd_grant *slot, const struct ssqd_client *c,
                      const struct proto_msg_grant *g, int q)
{
	slot->owner = c->id;
	slot->uid = (uint32_t)c->uid;
	slot->kind = g->kind;
	slot->mem = g->mem;
	slot->queue = (unsigned)q;
}

int ssqd_on_grant(struct ssqd *d, struct ssqd_client *c, const struct proto_msg *m)
{
	const struct proto_msg_grant *g = &m->u.grant;
	uint32_t seq = m->hdr.seq, may;
	struct proto_msg_grant_reply r;
	struct ssqd_grant *slot = NULL;
	struct ssqd_bqueue *bq;
	uint64_t iova;
	char why[200];
	void *mr;
	int q, rc, client;
	unsigned i;

	if (!d->ops->grant && !d->ops->grant_post)
		return ssqd_out_error(&c->out, c->fd, seq, -EOPNOTSUPP,
		                      "the %s device has no memory windows here yet: "
		                      "buffers and registrations keep their own remote "
		                      "keys",
		                      d->ops->kind);
	rc = find_mem(d, c, g, &mr, &client, &iova, &may, why, sizeof(why));
	if (rc)
		return ssqd_out_error(&c->out, c->fd, seq, rc, "grant: %s", why);
	if (grants_of(d, c->id) >= SSQD_GRANTS_PER_CLIENT)
		return ssqd_out_error(&c->out, c->fd, seq, -EDQUOT,
		                      "this client holds %u grants, the most one may "
		                      "(ssq_desc_revoke some)",
		                      SSQD_GRANTS_PER_CLIENT);
	if (ssqd_uid_shares(d, c->uid) &&
	    grants_of_uid(d, (uint32_t)c->uid) >= SSQD_GRANTS_PER_UID)
		return ssqd_out_error(
		    &c->out, c->fd, seq, -EDQUOT,
		    "uid %u holds %u grants, the most one uid may while "
		    "other uids may use ssqd (--allow-uid, --allow-gid)",
		    (unsigned)c->uid, SSQD_GRANTS_PER_UID);
	for (i = 0; i < SSQD_MAX_GRANTS && !slot; i++)
		if (!d->grants[i].owner)
			slot = &d->grants[i];
	if (!slot)
		return ssqd_out_error(&c->out, c->fd, seq, -ENOMEM,
		                      "ssqd holds %u grants, the most it may",
		                      SSQD_MAX_GRANTS);
	/*
	 * The queue as ATTACH finds it (its name first in both): one this
	 * client may use, linked to its peer (an idle cluster link is asked
	 * for: -EINPROGRESS, the client asks again), READY. A window binds
	 * only on a QP that sends (RTS): its bind is a WQE of that QP.
	 */
	q = ssqd_attach_queue(d, c, m, &rc);
	if (q < 0)
		return rc;
	/*
	 * Loopback: the requests this queue's producers post arrive at the
	 * other end, inside ssqd; that QP is the one that must accept them.
	 */
	bq = d->queues[q].loopback ? &d->queues[q].peer : &d->queues[q].local;
	if (d->ops->grant_post) {
		rc = d->ops->grant_post(d->backend, bq, mr, client, iova, g->len,
		                        (int)g->access, &slot->mw, &slot->rkey,
		                        &slot->wr_id, &slot->bind_end, why, sizeof(why));
		if (rc)
			return ssqd_out_error(&c->out, c->fd, seq, rc,
			                      "grant on queue \"%s\": %s", g->name, why);
		/*
		 * Answered from the loop once the bind completed
		 * (ssqd_grants_tick): a reservation ahead of it that is never
		 * published would hold ssqd, and every client, here.
		 */
		slot_take(slot, c, g, q);
		slot->binding = 1;
		slot->answer = 1;
		slot->seq = seq;
		slot->iova = iova;
		slot->len = g->len;
		slot->deadline_ns = ssqd_now_ns() + BIND_WAIT_NS;
		return 0;
	}
	rc = d->ops->grant(d->backend, bq, mr, client, iova, g->len, (int)g->access,
	                   &slot->mw, &slot->rkey, why, sizeof(why));
	if (rc)
		return ssqd_out_error(&c->out, c->fd, seq, rc,
		                      "grant on queue \"%s\": %s", g->name, why);
	slot_take(slot, c, g, q);
	memset(&r, 0, sizeof(r));
	r.remote_addr = iova;
	r.len = g->len;
	r.rkey = slot->rkey;
	return ssqd_out_send(&c->out, c->fd, SSQ_MSG_GRANT | SSQ_MSG_REPLY, seq, &r,
	                     sizeof(r), NULL, 0);
}

int ssqd_on_revoke(struct ssqd *d, struct ssqd_client *c, const struct proto_msg *m)
{
	uint32_t seq = m->hdr.seq;
	unsigned i;

	for (i = 0; i < SSQD_MAX_GRANTS; i++) {
		struct ssqd_grant *g = &d->grants[i];

		/* One not answered yet (or going) has no key its owner knows. */
		if (g->owner != c->id || g->rkey != m->u.revoke.rkey || g->answer ||
		    g->gone)
			continue;
		/* Gone before the answer: its key reaches nothing from here on. */
		ssqd_grant_revoke(d, g);
		return ssqd_out_send(&c->out, c->fd, SSQ_MSG_REVOKE | SSQ_MSG_REPLY, seq,
		                     NULL, 0, NULL, 0);
	}
	return ssqd_out_error(&c->out, c->fd, seq, -ENOENT,
	                      "no grant of this client has key 0x%x", m->u.revoke.rkey);
}
