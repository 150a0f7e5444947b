/* SPDX-License-Identifier: MIT */
/*
 * Clients' own memory registrations. ssqd registers (the backend decides
 * how the device reaches the memory) and keeps the table, because the
 * client is not trusted with the table: a registration goes when none of
 * its owner's WQEs in flight carries its keys, and a dead client's at its
 * death (the device resolves keys at each access: what comes later fails)
 * - or, while a combined request of its is still out (ssqd_hands_out),
 * with its buffers once the queues passed its death (serve.c,
 * drop_client).
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <ssq/queue.h>
#include "ctrl/daemon/clients/clients.h"

static unsigned owned_by(const struct ssqd *d, uint32_t owner)
{
	unsigned i, n = 0;

	/* Held ones too: their bind may still run, they are still charged. */
	for (i = 0; i < SSQD_MAX_MRS; i++)
		n += d->mrs[i].owner == owner ||
		     (d->mrs[i].owner == SSQD_OWNER_HELD && d->mrs[i].held_by == owner);
	return n;
}

static unsigned held(const struct ssqd *d, int by_uid, uint32_t uid)
{
	unsigned i, n = 0;

	for (i = 0; i < SSQD_MAX_MRS; i++)
		n += d->mrs[i].owner && (!by_uid || d->mrs[i].uid == uid);
	return n;
}

void ssqd_mr_limits(struct ssqd *d)
{
	struct rlimit rl;
	rlim_t room = 0;

	/* main raised it already; ssqd_setup run in a test's process too. */
	ssqd_nofile_raise();
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		room = rl.rlim_cur > SSQD_FD_RESERVE ? rl.rlim_cur - SSQD_FD_RESERVE : 0;
	}
	d->mr_cap = room < SSQD_MAX_MRS ? (unsigned)room : SSQD_MAX_MRS;
	d->mr_uid_cap =
	    d->mr_cap / 4 > SSQD_MRS_PER_CLIENT ? d->mr_cap / 4 : SSQD_MRS_PER_CLIENT;
}

int ssqd_mr_reg(struct ssqd *d, const struct ssqd_client *c,
                const struct proto_msg_mem_reg *r, int fd,
                struct proto_msg_mem_reg_reply *out, char *why, size_t whylen)
{
	struct ssqd_mr *m = NULL;
	uint64_t iova, pinned = 0;
	unsigned i;
	int rc, access;

	if (owned_by(d, c->id) >= SSQD_MRS_PER_CLIENT) {
		snprintf(why, whylen,
		         "this client holds %u registrations, the most one may",
		         SSQD_MRS_PER_CLIENT);
		rc = -EDQUOT;
		goto fail;
	}
	if (held(d, 1, (uint32_t)c->uid) >= d->mr_uid_cap) {
		snprintf(why, whylen,
		         "uid %u holds %u registrations, the most one uid may",
		         (unsigned)c->uid, d->mr_uid_cap);
		rc = -EDQUOT;
		goto fail;
	}
	if (held(d, 0, 0) >= d->mr_cap) {
		snprintf(why, whylen,
		         "ssqd holds %u registrations, the most its descriptor limit "
		         "(RLIMIT_NOFILE) leaves room for",
		         d->mr_cap);
		rc = -ENOMEM;
		goto fail;
	}
	for (i = 0; i < SSQD_MAX_MRS; i++)
		if (r->kind == SSQ_MEM_VERBS && d->mrs[i].owner &&
		    d->mrs[i].handle == r->addr) {
			snprintf(why, whylen, "MR handle %llu is registered already",
			         (unsigned long long)r->addr);
			rc = -EEXIST;
			goto fail;
		}
	for (i = 0; i < SSQD_MAX_MRS && !m; i++)
		if (!d->mrs[i].owner)
			m = &d->mrs[i];
	if (!m) {
		snprintf(why, whylen, "ssqd holds %u registrations, the most it may",
		         SSQD_MAX_MRS);
		rc = -ENOMEM;
		goto fail;
	}
	/*
	 * A registration the client made itself, with remote access, that
	 * does not say it followed the VERBS reply's flags would be reachable
	 * from peers by its own key (see below).
	 */
	if (r->kind == SSQ_MEM_VERBS && d->grants_only &&
	    (r->access & SSQ_MEM_ACCESS_REMOTE) &&
	    !(r->access & SSQ_MEM_VERBS_BINDABLE)) {
		snprintf(why, whylen,
		         "with peers, a registration made in ssqd's PD must "
		         "have IBV_ACCESS_MW_BIND and no remote access "
		         "(peers reach it through grants only): access 0x%x",
		         r->access);
		rc = -EINVAL;
		goto fail;
	}
	/* A file ssqd pins for the client counts against the client's limit. */
	rc = ssqd_pin_charge(d, c, (int)r->kind, fd, r->addr, r->len, &pinned, why,
	                     whylen);
	if (rc)
		goto fail;
	/*
	 * MW_BIND, so that its owner may grant ranges of it (grant.c); with
	 * peers (grants_only) in place of its remote access: what it asked
	 * for then only bounds what may be granted.
	 */
	access = (int)(r->access & SSQ_MEM_ACCESS_ALL);
	if ((d->ops->grant || d->ops->grant_post) && (access & SSQ_MEM_ACCESS_REMOTE))
		access |= IBV_ACCESS_MW_BIND;
	if (d->grants_only)
		access &= ~SSQ_MEM_ACCESS_REMOTE;
	if (r->kind == SSQ_MEM_VERBS) {
		/*
		 * The client made the MR, with access ssqd cannot read back
		 * (msg.h, SSQ_VERBS_MR_*): the client's word that it followed
		 * the VERBS reply's flags is all there is. Its word binds only
		 * itself - a false one makes its own grants' binds fail; with
		 * no word and remote access it was refused above.
		 */
		access = (int)(r->access & (SSQ_MEM_ACCESS_ALL | SSQ_MEM_VERBS_BINDABLE));
	}
	rc = d->ops->reg_client(d->backend, (int)r->kind, fd, c->pid, r->addr, r->len,
	                        r->iova, access, &m->impl, &m->lkey, &m->rkey, &iova, why,
	                        whylen);
	if (rc)
		goto fail;
	m->owner = c->id;
	m->uid = (uint32_t)c->uid;
	m->pid = (int32_t)c->pid;
	m->len = r->len;
	m->pinned = pinned;
	m->handle = r->kind == SSQ_MEM_VERBS ? r->addr : ~0ull;
	m->iova = iova;
	m->access = r->access & SSQ_MEM_ACCESS_ALL;
	m->id = (((m->id >> 16) + 1) & 0x7fff) << 16 | (uint32_t)(m - d->mrs + 1);
	memset(out, 0, sizeof(*out));
	out->id = m->id;
	out->lkey = m->lkey;
	out->rkey = m->rkey;
	out->iova = iova;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	return rc;
}

/*
 * Might a WQE client @c posted, still in flight on some queue, use @key?
 * Only its own WQEs count (the slot of a WQE's first WQEBB names its
 * producer record, or one it detached that nobody claimed since: the close does not
 * wait): another client cannot keep @c's memory registered by posting its key. Each of
 * them, between a queue's completed and reserved counters (at most the ring: they are
 * client-writable), is searched for the key as any big-endian word: a data segment's
 * lkey, a remote address segment's rkey, or - harmlessly - a word of inline data that
 * matches, which only delays the answer until that WQE completes. Not a safety rule: a
 * WQE that reaches a registration after it went fails with a protection error (the device
 * resolves keys at each access).
 */
int ssqd_hands_out(const struct ssqd *d, const struct ssqd_client *c)
{
	unsigned qi;

	for (qi = 0; qi < d->own.nqueues; qi++) {
		uint64_t ids = c->recs[qi] | c->hand_recs[qi];

		for (; d->queues[qi].ctl && ids; ids &= ids - 1)
			if (ssq_ctl_hand_out(d->queues[qi].ctl,
			                     (uint32_t)__builtin_ctzll(ids)))
				return 1;
	}
	return 0;
}

int ssqd_key_in_flight(const struct ssqd *d, const struct ssqd_client *c, uint32_t lkey,
                       uint32_t rkey)
{
	__be32 l = htobe32(lkey), r = htobe32(rkey);
	unsigned qi, w, i;

	/*
	 * A combined request of @c's in a hand-over slot, each record looked
	 * at as its protocol goes, so that a request moving on between two
	 * looks is seen by the next one:
	 *  - still POSTED: any combiner may take it and write it with the
	 *    keys it names at any time (ssq_ctl_hand_names);
	 *  - taken by a combiner: written into the ring when that combiner
	 *    goes on; until then no search finds its keys, so any key may be
	 *    among them (ssq_ctl_hand_out);
	 *  - taken back (or left unpublished by a combiner) and still owed:
	 *    posted by its owner when it settles next, in no word (EMPTY) nor
	 *    in the ring until then (ssq_ctl_hand_owes: the owner says it
	 *    before its word goes EMPTY).
	 * Then the ring's search below.
	 */
	for (qi = 0; qi < d->own.nqueues; qi++) {
		uint64_t ids = c->recs[qi] | c->hand_recs[qi];

		for (; d->queues[qi].ctl && ids; ids &= ids - 1) {
			const struct ssq_ctl *ctl = d->queues[qi].ctl;
			uint32_t id = (uint32_t)__builtin_ctzll(ids);

			if (ssq_ctl_hand_names(ctl, id, lkey, rkey) ||
			    ssq_ctl_hand_out(ctl, id) ||
			    ssq_ctl_hand_owes(ctl, id, lkey, rkey))
				return 1;
		}
	}
	for (qi = 0; qi < d->own.nqueues; qi++) {
		const struct ssqd_queue *q = &d->queues[qi];
		uint32_t ring = q->prod.sq.wqe_cnt;
		uint64_t pos, end, from, ids = c->recs[qi] | c->hand_recs[qi];

		if (!q->ctl || !ids)
			continue;
		end = ssq_ctl_reserved(q->ctl);
		from = ssq_ctl_completed(q->ctl);
		if (end - from > ring)
			from = end - ring;
		for (pos = from; pos != end;) {
			const struct ssq_ctl_slot *s = ssq__slot(&q->prod, pos);
			uint32_t owner = __atomic_load_n(&s->owner, __ATOMIC_RELAXED);
			uint64_t len = __atomic_load_n(&s->len, __ATOMIC_RELAXED);

			if (!len || len > end - pos)
				len = 1;
			if (owner < SSQ_MAX_PRODUCERS && (ids & (1ull << owner)))
				for (i = 0; i < len; i++) {
					const __be32 *wqebb =
					    (const __be32 *)ssq_sq_wqebb(
					        &q->prod.sq, (uint32_t)(pos + i));

					for (w = 0; w < MLX5_SEND_WQE_BB / 4; w++)
						if (wqebb[w] == l || wqebb[w] == r)
							return 1;
				}
			pos += len;
		}
	}
	return 0;
}

void ssqd_mr_release(struct ssqd *d, struct ssqd_mr *m)
{
	if (m->owner == SSQD_OWNER_HELD)
		d->nheld--;
	d->ops->dereg_client(d->backend, m->impl);
	m->owner = 0;
	m->held_by = 0;
	m->pinned = 0;
	m->impl = NULL;
}

static void drop(struct ssqd *d, struct ssqd_mr *m)
{
	/*
	 * Its windows first: the key a peer holds reaches nothing once we
	 * answer. A bind over it still on a ring keeps the MR (held.c).
	 */
	if (ssqd_grants_drop_mem(d, SSQ_GRANT_MR, m->id))
		ssqd_held_mr(d, m);
	else
		ssqd_mr_release(d, m);
}

int ssqd_mr_dereg(struct ssqd *d, const struct ssqd_client *c, uint32_t id, char *why,
                  size_t whylen)
{
	uint32_t slot = (id & 0xffff) - 1;
	struct ssqd_mr *m = slot < SSQD_MAX_MRS ? &d->mrs[slot] : NULL;

	if (!m || m->id != id || m->owner != c->id) {
		snprintf(why, whylen, "no registration %u of this client", id);
		return -ENOENT;
	}
	if (ssqd_key_in_flight(d, c, m->lkey, m->rkey)) {
		snprintf(why, whylen,
		         "registration %u: a WQE carrying its key 0x%x has not completed "
		         "yet (poll, then try again)",
		         id, m->lkey);
		return -EBUSY;
	}
	drop(d, m);
	return 0;
}

unsigned ssqd_mr_drop_owner(struct ssqd *d, uint32_t owner)
{
	unsigned i, n = 0;

	for (i = 0; i < SSQD_MAX_MRS; i++)
		if (owner && d->mrs[i].owner == owner) {
			drop(d, &d->mrs[i]);
			n++;
		}
	return n;
}

void ssqd_mr_drop_all(struct ssqd *d)
{
	unsigned i;

	for (i = 0; i < SSQD_MAX_MRS; i++)
		if (d->mrs[i].owner)
			drop(d, &d->mrs[i]);
}
