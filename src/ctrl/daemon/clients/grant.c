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

void ssqd_grants_drop_mem(struct ssqd *d, uint32_t kind, uint64_t mem)
{
	unsigned i;

	for (i = 0; i < SSQD_MAX_GRANTS; i++)
		if (d->grants[i].owner && d->grants[i].kind == kind &&
		    d->grants[i].mem == mem)
			ssqd_grant_revoke(d, &d->grants[i]);
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

	for (i = 0; i < SSQD_MAX_GRANTS; i++)
		if (d->grants[i].owner)
			ssqd_grant_revoke(d, &d->grants[i]);
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

	if (!d->ops->grant)
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
	rc = d->ops->grant(d->backend, bq, mr, client, iova, g->len, (int)g->access,
	                   &slot->mw, &slot->rkey, why, sizeof(why));
	if (rc)
		return ssqd_out_error(&c->out, c->fd, seq, rc,
		                      "grant on queue \"%s\": %s", g->name, why);
	slot->owner = c->id;
	slot->uid = (uint32_t)c->uid;
	slot->kind = g->kind;
	slot->mem = g->mem;
	slot->queue = (unsigned)q;
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

		if (g->owner != c->id || g->rkey != m->u.revoke.rkey)
			continue;
		/* Gone before the answer: its key reaches nothing from here on. */
		ssqd_grant_revoke(d, g);
		return ssqd_out_send(&c->out, c->fd, SSQ_MSG_REVOKE | SSQ_MSG_REPLY, seq,
		                     NULL, 0, NULL, 0);
	}
	return ssqd_out_error(&c->out, c->fd, seq, -ENOENT,
	                      "no grant of this client has key 0x%x", m->u.revoke.rkey);
}
