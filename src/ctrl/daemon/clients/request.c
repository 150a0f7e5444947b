/* SPDX-License-Identifier: MIT */
/*
 * A client's requests, one handler per message type (the table at the
 * end, which handle_request indexes; DPDK's rte_mp_action_register and
 * redis's command table are the same shape), each checking what the
 * client asked against ssqd's own records and answering it through the
 * client's reply queue (out.c). MEM_REG alone carries a descriptor:
 * ssqd_handle takes it there, and closes it for every other request.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "ctrl/daemon/clients/clients.h"
#include "ctrl/daemon/queues/queues.h"
#include "ctrl/daemon/peers/peers.h"
#include "ctrl/proto/msg.h"

/* Data arena buffers @uid's live clients hold, and those held for gone ones. */
static unsigned uid_bufs(const struct ssqd *d, uid_t uid)
{
	unsigned i, n = 0;
	uint64_t b;

	for (i = 0; i < SSQD_MAX_CLIENTS; i++)
		if (d->clients[i].fd >= 0 && d->clients[i].uid == uid)
			n += d->clients[i].nbufs;
	ssqd_held_uid_use(d, uid, &i, &b);
	return n + i;
}

/* Data arena bytes @uid's live clients hold, and those held for gone ones. */
static uint64_t uid_bytes(const struct ssqd *d, uid_t uid)
{
	uint64_t b = 0, h;
	unsigned i;

	for (i = 0; i < SSQD_MAX_CLIENTS; i++)
		if (d->clients[i].fd >= 0 && d->clients[i].uid == uid)
			b += d->clients[i].bytes;
	ssqd_held_uid_use(d, uid, &i, &h);
	return b + h;
}

/*
 * Would @len more bytes take client @c or its uid past a quota? -EDQUOT
 * with the limit named in @why, or 0. A request larger than the whole data
 * arena is left to the allocator's -ENOMEM: no quota could ever grant it.
 */
static int over_quota(const struct ssqd *d, const struct ssqd_client *c, uint64_t len,
                      char *why, size_t whylen)
{
	const struct ssqd_options *o = &d->opt;
	uint64_t uid_mib;

	if (len > o->data_mib << 20)
		return 0;
	if (c->nbufs >= o->max_client_bufs) {
		snprintf(why, whylen,
		         "this client holds %u buffers (--max-client-bufs %u)", c->nbufs,
		         o->max_client_bufs);
		return -EDQUOT;
	}
	/* A quota of the whole arena is none: the allocator answers -ENOMEM. */
	if (o->max_client_mib < o->data_mib &&
	    len > (o->max_client_mib << 20) - c->bytes) {
		snprintf(
		    why, whylen,
		    "%llu bytes more would take this client past its %llu MiB of the "
		    "data arena (--max-client-mib; it holds %llu bytes)",
		    (unsigned long long)len, (unsigned long long)o->max_client_mib,
		    (unsigned long long)c->bytes);
		return -EDQUOT;
	}
	/*
	 * --max-uid-mib unset: all of the arena while ssqd's own uid is alone
	 * in it, half of it when other uids share it (as ssqd_uid_shares
	 * halves grants and producer records), so one uid's clients together
	 * cannot leave another uid no buffer.
	 */
	uid_mib = o->max_uid_mib;
	if (!uid_mib)
		uid_mib = !ssqd_uid_shares(d, c->uid) ? o->data_mib
		          : o->data_mib >= 2          ? o->data_mib / 2
		                                      : 1;
	if (uid_mib < o->data_mib && len > (uid_mib << 20) - uid_bytes(d, c->uid)) {
		snprintf(why, whylen,
		         "%llu bytes more would take uid %u past its %llu MiB of the "
		         "data arena (--max-uid-mib%s)",
		         (unsigned long long)len, (unsigned)c->uid,
		         (unsigned long long)uid_mib,
		         o->max_uid_mib ? ""
		                        : "; by default half when other uids share it");
		return -EDQUOT;
	}
	return 0;
}

/* A buffer's own MR (all but --arena-rkey) goes with it. */
void ssqd_release_buf(void *ctx, struct ssqd_data_buf *b)
{
	struct ssqd *d = ctx;

	/*
	 * Its windows first: an MR with windows bound does not go
	 * (ibv_dereg_mr(3)). No bind over it is still on a ring here: FREE
	 * parks such a buffer (held.c), a dead client's waits in its grave
	 * for `completed` past everything it had reserved - its GRANTs' binds
	 * included - and held.c calls this once no grant is left. Were one
	 * left, the MR stays (a bind naming a gone MR puts the queue in error).
	 */
	if (ssqd_grants_drop_mem(d, SSQ_GRANT_BUF, b->off)) {
		fprintf(stderr,
		        "ssqd: buffer at %llu: a grant's bind over it may still "
		        "run: its MR is kept\n",
		        (unsigned long long)b->off);
		return;
	}
	if (b->mr)
		d->ops->dereg_buf(d->backend, b->mr);
	b->mr = NULL;
}

/* HELLO: the protocol's version, the device, and the arena to map. */
static int on_hello(struct ssqd *d, struct ssqd_client *c, const struct proto_msg *m)
{
	uint32_t seq = m->hdr.seq;
	struct proto_msg_hello_reply r;

	memset(&r, 0, sizeof(r));
	r.version = SSQ_PROTO_VERSION;
	r.max_queues = SSQ_MAX_QUEUES;
	memcpy(r.device, d->own.device, sizeof(r.device));
	/* What this client is about to map says what ssqd wrote. */
	ssqd_hdr_restore(d);
	r.arena_len = d->arena.len;
	r.arena_offset = d->arena.fd_offset;
	c->said_hello = 1; /* c->pid stays SO_PEERCRED's: the claimed one is unchecked */
	return ssqd_out_send(&c->out, c->fd, SSQ_MSG_HELLO | SSQ_MSG_REPLY, seq, &r,
	                     sizeof(r), &d->arena.fd, 1);
}

/* LIST: every queue, its QPN and state as ssqd lists it. */
static int on_list(struct ssqd *d, struct ssqd_client *c, const struct proto_msg *m)
{
	uint32_t seq = m->hdr.seq;
	struct proto_msg_list_reply r;
	unsigned i;

	memset(&r, 0, sizeof(r));
	r.nqueues = d->own.nqueues;
	for (i = 0; i < SSQD_MAX_CLIENTS; i++)
		r.nclients += d->clients[i].fd >= 0 && d->clients[i].said_hello;
	for (i = 0; i < r.nqueues; i++) {
		unsigned k;

		memcpy(r.queues[i].name, d->own.queues[i].name, SSQ_NAME_MAX);
		r.queues[i].qpn = d->queues[i].local.qpn;
		r.queues[i].state = d->queues[i].listed;
		r.queues[i].refused = d->queues[i].refused;
		r.queues[i].rate = d->queues[i].rate.per_s;
		for (k = 0; k < SSQD_MAX_CLIENTS; k++)
			if (d->clients[k].fd >= 0)
				r.queues[i].opens +=
				    (uint32_t)__builtin_popcountll(d->clients[k].recs[i]);
	}
	return ssqd_out_send(&c->out, c->fd, SSQ_MSG_LIST | SSQ_MSG_REPLY, seq, &r,
	                     sizeof(r), NULL, 0);
}

/*
 * ATTACH: a producer record of the queue, and the queue's UAR. The queue
 * is the one named, or the one picked for "any" / "PEER/any"
 * (ssqd_attach_queue): the answers name it as ssqd does.
 */
static int on_attach(struct ssqd *d, struct ssqd_client *c, const struct proto_msg *m)
{
	uint32_t seq = m->hdr.seq;
	struct proto_msg_attach_reply r;
	struct ssqd_queue *sq;
	int q, rc;
	unsigned i;

	q = ssqd_attach_queue(d, c, m, &rc);
	if (q < 0)
		return rc;
	sq = &d->queues[q];
	if ((unsigned)__builtin_popcountll(c->recs[q]) >= SSQD_OPENS_PER_CLIENT)
		return ssqd_out_error(
		    &c->out, c->fd, seq, -EUSERS,
		    "queue \"%s\" is open %u times on this connection, the "
		    "most one may (its other users need records too)",
		    d->own.queues[q].name, SSQD_OPENS_PER_CLIENT);
	if (ssqd_uid_records_full(d, q, c))
		return ssqd_out_error(
		    &c->out, c->fd, seq, -EUSERS,
		    "queue \"%s\": uid %u holds %u of its %u producer records, the "
		    "most one uid may while other uids may use it (--allow-uid, "
		    "--allow-gid)",
		    d->own.queues[q].name, (unsigned)c->uid, SSQD_UID_RECORDS,
		    SSQ_MAX_PRODUCERS - 1);
	rc = ssq_ctl_claim(sq->ctl, (uint32_t)c->pid, SSQD_PRODUCER_ID);
	if (rc < 0)
		return ssqd_out_error(&c->out, c->fd, seq, rc,
		                      "queue \"%s\" has all %u producer records in use",
		                      d->own.queues[q].name, SSQ_MAX_PRODUCERS - 1);
	/*
	 * The record is settled (ssq_ctl_claim waited for its hand-over slot):
	 * a client that detached it with a combined request out stops
	 * watching it, or its new owner's requests, or scribbles, would hold
	 * that client's frees and deregistrations (ssqd_hands_out).
	 */
	for (i = 0; i < SSQD_MAX_CLIENTS; i++)
		d->clients[i].hand_recs[q] &= ~(1ull << rc);
	c->recs[q] |= 1ull << rc;
	memset(&r, 0, sizeof(r));
	r.queue = (uint32_t)q;
	r.producer = (uint32_t)rc;
	r.uar_offset = sq->uar.offset;
	r.uar_len = sq->uar.len;
	r.uar_reg_off = sq->uar.reg_off;
	r.qpn = sq->local.qpn;
	c->attached |= 1ull << q;
	/* Its doorbells may come as soon as it reads this answer. */
	ssqd_idle_leave(d);
	return ssqd_out_send(&c->out, c->fd, SSQ_MSG_ATTACH | SSQ_MSG_REPLY, seq, &r,
	                     sizeof(r), &sq->uar.fd, 1);
}

/*
 * ALLOC's carving: @len bytes of the data arena for client @c at *@off,
 * and (unless --arena-rkey) keys of the buffer's own in *@key. 0, or
 * -errno with @why; nothing is kept on failure.
 */
static int carve(struct ssqd *d, struct ssqd_client *c, uint64_t len, uint64_t align,
                 uint64_t *off, uint32_t *key, char *why, size_t whylen)
{
	struct ssqd_data_buf *b;
	char err[200];
	int rc = ssqd_data_alloc(&d->data, len, align, c->id, off);

	/* The table of buffers, not the bytes: a full one is no full arena. */
	if (rc && d->data.n >= SSQ_DATA_MAX_BUFS) {
		snprintf(why, whylen,
		         "the data arena holds %u buffers, the most ssqd keeps "
		         "(of any size, all clients together)",
		         SSQ_DATA_MAX_BUFS);
		return rc;
	}
	if (rc) {
		snprintf(why, whylen, "no room for %llu bytes in the %llu MiB data arena",
		         (unsigned long long)len, (unsigned long long)d->opt.data_mib);
		return rc;
	}
	if (d->opt.arena_rkey)
		return 0;
	b = ssqd_data_find(&d->data, *off);
	rc = d->ops->reg_buf(d->backend, d->arena.base + *off, len,
	                     d->own.data_iova + (*off - d->own.data_off), !d->grants_only,
	                     &b->mr, &b->key, err, sizeof(err));
	if (rc) {
		ssqd_data_free(&d->data, *off, c->id, NULL);
		snprintf(why, whylen, "a buffer's own keys: %s", err);
		return rc;
	}
	*key = b->key;
	return 0;
}

/* ALLOC: a buffer of the data arena, with keys of its own unless --arena-rkey. */
static int on_alloc(struct ssqd *d, struct ssqd_client *c, const struct proto_msg *m)
{
	uint32_t seq = m->hdr.seq;
	struct proto_msg_alloc_reply r;
	uint64_t len = m->u.alloc.len;
	char why[240];
	int rc;

	rc = over_quota(d, c, len, why, sizeof(why));
	if (rc)
		return ssqd_out_error(&c->out, c->fd, seq, rc, "%s", why);
	/*
	 * Each buffer takes one of the device's MRs: one uid may not
	 * take the arena's every buffer, and with them the MRs.
	 */
	if (!d->opt.arena_rkey && uid_bufs(d, c->uid) >= SSQD_UID_KEYED_BUFS)
		return ssqd_out_error(
		    &c->out, c->fd, seq, -EDQUOT,
		    "uid %u holds %u buffers, the most one uid may while each "
		    "has keys of its own (ssqd --arena-rkey: one key for the "
		    "whole arena, and no such limit)",
		    (unsigned)c->uid, SSQD_UID_KEYED_BUFS);
	memset(&r, 0, sizeof(r));
	rc = carve(d, c, len, m->u.alloc.align, &r.off, &r.key, why, sizeof(why));
	if (rc)
		return ssqd_out_error(&c->out, c->fd, seq, rc, "%s", why);
	c->bytes += len;
	c->nbufs++;
	r.len = len;
	return ssqd_out_send(&c->out, c->fd, SSQ_MSG_ALLOC | SSQ_MSG_REPLY, seq, &r,
	                     sizeof(r), NULL, 0);
}

/* FREE: a buffer of this client back to the arena, its keys with it. */
static int on_free_buf(struct ssqd *d, struct ssqd_client *c, const struct proto_msg *m)
{
	uint32_t seq = m->hdr.seq;
	struct ssqd_data_buf gone, *b = ssqd_data_find(&d->data, m->u.free.off);
	int rc;

	/*
	 * A buffer with keys of its own loses them when freed: its owner's
	 * WQEs still using them would fail, and put the queue every client
	 * shares in error. Refused until they complete (as ssq_mem_dereg).
	 */
	if (b && b->owner == c->id && b->mr && ssqd_key_in_flight(d, c, b->key, b->key))
		return ssqd_out_error(&c->out, c->fd, seq, -EBUSY,
		                      "buffer at offset %llu: a WQE of this client "
		                      "carrying its key 0x%x has not completed yet "
		                      "(poll, then free again)",
		                      (unsigned long long)m->u.free.off, b->key);
	/*
	 * Its grants revoked; one whose bind is still on a ring keeps the
	 * buffer's MR and range, nobody's, until the bind cannot run (held.c).
	 */
	if (b && b->owner == c->id && ssqd_grants_drop_mem(d, SSQ_GRANT_BUF, b->off)) {
		ssqd_held_buf(d, b, c->uid); /* still charged to @c meanwhile */
		return ssqd_out_send(&c->out, c->fd, SSQ_MSG_FREE | SSQ_MSG_REPLY, seq,
		                     NULL, 0, NULL, 0);
	}
	rc = ssqd_data_free(&d->data, m->u.free.off, c->id, &gone);
	if (rc)
		return ssqd_out_error(&c->out, c->fd, seq, rc,
		                      "no buffer of this client at offset %llu",
		                      (unsigned long long)m->u.free.off);
	ssqd_release_buf(d, &gone);
	c->bytes -= gone.len;
	c->nbufs--;
	return ssqd_out_send(&c->out, c->fd, SSQ_MSG_FREE | SSQ_MSG_REPLY, seq, NULL, 0,
	                     NULL, 0);
}

/*
 * RECOVER: a queue in error back to READY, answered later, from the serve
 * loop. The queue is in m->u.detach (msg.h: the two share a layout).
 */
static int on_recover(struct ssqd *d, struct ssqd_client *c, const struct proto_msg *m)
{
	uint32_t seq = m->hdr.seq;
	char why[200];
	int rc;

	if (!(c->attached & (1ull << m->u.detach.queue)))
		return ssqd_out_error(&c->out, c->fd, seq, -ENOENT,
		                      "queue %u is not attached to this client",
		                      m->u.detach.queue);
	/*
	 * A link started over by a RECOVER is down: this one joins it.
	 * -EHOSTDOWN, not -ENOTCONN: this ssqd and the client's connection
	 * are fine, only the peer is away (a client that reconnects on
	 * -ENOTCONN would tear a healthy connection down; review F5).
	 */
	if (!ssqd_peer_relinking(d, m->u.detach.queue) &&
	    ssqd_peer_down(d, m->u.detach.queue, why, sizeof(why)))
		return ssqd_out_error(&c->out, c->fd, seq, -EHOSTDOWN, "queue q%u: %s",
		                      m->u.detach.queue, why);
	/*
	 * Answered by ssqd_recover_step, from the serve loop. Two
	 * hosts: both QPs start over; loopback: ssqd has both ends.
	 */
	rc = ssqd_recover_start(d, c, m->u.detach.queue, seq, why, sizeof(why));
	return rc ? ssqd_out_error(&c->out, c->fd, seq, rc, "%s", why) : 0;
}

/* PEER: one peer of a cluster and its link. */
static int on_peer(struct ssqd *d, struct ssqd_client *c, const struct proto_msg *m)
{
	uint32_t seq = m->hdr.seq;
	struct proto_msg_peer_reply r;
	char why[120];
	int rc;

	rc = ssqd_peer_info(d, m->u.peer.index, &r, why, sizeof(why));
	if (rc)
		return ssqd_out_error(&c->out, c->fd, seq, rc, "%s", why);
	return ssqd_out_send(&c->out, c->fd, SSQ_MSG_PEER | SSQ_MSG_REPLY, seq, &r,
	                     sizeof(r), NULL, 0);
}

/* VERBS: ssqd's verbs context, for a client that imports it. */
static int on_verbs(struct ssqd *d, struct ssqd_client *c, const struct proto_msg *m)
{
	uint32_t seq = m->hdr.seq;
	struct proto_msg_verbs_reply r;
	int cmd_fd;

	if (!d->ops->verbs_handles)
		return ssqd_out_error(&c->out, c->fd, seq, -EOPNOTSUPP,
		                      "the %s device has no verbs context to import",
		                      d->ops->kind);
	memset(&r, 0, sizeof(r));
	d->ops->verbs_handles(d->backend, &cmd_fd, &r.pd_handle);
	/* How the client registers its own memory: as mr.c registers the rest. */
	if (d->ops->grant || d->ops->grant_post)
		r.flags |= SSQ_VERBS_MR_BIND;
	if (d->grants_only)
		r.flags |= SSQ_VERBS_MR_NO_REMOTE;
	return ssqd_out_send(&c->out, c->fd, SSQ_MSG_VERBS | SSQ_MSG_REPLY, seq, &r,
	                     sizeof(r), &cmd_fd, 1);
}

/* MEM_DEREG: a registration given back. */
static int on_mem_dereg(struct ssqd *d, struct ssqd_client *c, const struct proto_msg *m)
{
	uint32_t seq = m->hdr.seq;
	char why[200];
	int rc;

	rc = ssqd_mr_dereg(d, c, m->u.mem_dereg.id, why, sizeof(why));
	if (rc)
		return ssqd_out_error(&c->out, c->fd, seq, rc, "%s", why);
	return ssqd_out_send(&c->out, c->fd, SSQ_MSG_MEM_DEREG | SSQ_MSG_REPLY, seq, NULL,
	                     0, NULL, 0);
}

/* DETACH: one producer record given back, healed as a death. */
static int on_detach(struct ssqd *d, struct ssqd_client *c, const struct proto_msg *m)
{
	uint32_t seq = m->hdr.seq;

	if (!(c->recs[m->u.detach.queue] & (1ull << m->u.detach.producer)))
		return ssqd_out_error(&c->out, c->fd, seq, -ENOENT,
		                      "queue %u has no producer %u of this client",
		                      m->u.detach.queue, m->u.detach.producer);
	c->recs[m->u.detach.queue] &= ~(1ull << m->u.detach.producer);
	if (!c->recs[m->u.detach.queue])
		c->attached &= ~(1ull << m->u.detach.queue);
	ssqd_queue_mark_dead(d, m->u.detach.queue, m->u.detach.producer);
	/*
	 * Watched for this client until ssq_ctl_claim hands the record to
	 * someone else (on_attach clears the bit; the claim waits for its
	 * WQEs and its hand-over slot): the close does not wait for
	 * completions, so WQEs it published (ssqd_key_in_flight searches
	 * them for its keys) and its last combined request still TAKEN by a
	 * stopped combiner (the close's -EAGAIN) or published and not
	 * completed (ssqd_hands_out) carry this client's keys, which must
	 * outlive the close (test_adv7c_detach_inflight_free.c).
	 */
	c->hand_recs[m->u.detach.queue] |= 1ull << m->u.detach.producer;
	ssqd_queue_heal(d, m->u.detach.queue);
	return ssqd_out_send(&c->out, c->fd, SSQ_MSG_DETACH | SSQ_MSG_REPLY, seq, NULL, 0,
	                     NULL, 0);
}

/* MEM_REG: the client's memory, reached through @fd (taken). */
static int mem_reg(struct ssqd *d, struct ssqd_client *c, const struct proto_msg *m,
                   int fd)
{
	struct proto_msg_mem_reg_reply r;
	char why[300];
	int rc;

	if (fd < 0 && m->u.mem_reg.kind != SSQ_MEM_VERBS)
		return ssqd_out_error(&c->out, c->fd, m->hdr.seq, -EBADF,
		                      "a memory registration carries its file "
		                      "descriptor (SCM_RIGHTS), and this one has none");
	rc = ssqd_mr_reg(d, c, &m->u.mem_reg, fd, &r, why, sizeof(why));
	if (rc)
		return ssqd_out_error(&c->out, c->fd, m->hdr.seq, rc,
		                      "registering %llu bytes at 0x%llx: %s",
		                      (unsigned long long)m->u.mem_reg.len,
		                      (unsigned long long)m->u.mem_reg.addr, why);
	return ssqd_out_send(&c->out, c->fd, SSQ_MSG_MEM_REG | SSQ_MSG_REPLY, m->hdr.seq,
	                     &r, sizeof(r), NULL, 0);
}

typedef int request_fn(struct ssqd *d, struct ssqd_client *c, const struct proto_msg *m);

/* MEM_REG is ssqd_handle's: it takes the descriptor that came with it. */
static request_fn *const handlers[SSQ_MSG_TYPE_MAX + 1] = {
	[SSQ_MSG_HELLO] = on_hello,      [SSQ_MSG_LIST] = on_list,
	[SSQ_MSG_ATTACH] = on_attach,    [SSQ_MSG_ALLOC] = on_alloc,
	[SSQ_MSG_FREE] = on_free_buf,    [SSQ_MSG_DETACH] = on_detach,
	[SSQ_MSG_RECOVER] = on_recover,  [SSQ_MSG_MEM_DEREG] = on_mem_dereg,
	[SSQ_MSG_VERBS] = on_verbs,      [SSQ_MSG_PEER] = on_peer,
	[SSQ_MSG_GRANT] = ssqd_on_grant, [SSQ_MSG_REVOKE] = ssqd_on_revoke,
};

static int handle_request(struct ssqd *d, struct ssqd_client *c,
                          const struct proto_msg *m)
{
	unsigned t = m->hdr.type;

	if (t != SSQ_MSG_HELLO && !c->said_hello)
		return ssqd_out_error(&c->out, c->fd, m->hdr.seq, -EPROTO,
		                      "say hello first (type 0x%x)", m->hdr.type);
	if (t > SSQ_MSG_TYPE_MAX || !handlers[t])
		/* Replies and errors are not requests. */
		return ssqd_out_error(&c->out, c->fd, m->hdr.seq, -EBADMSG,
		                      "message type 0x%x is not a request", m->hdr.type);
	return handlers[t](d, c, m);
}

int ssqd_handle(struct ssqd *d, struct ssqd_client *c, const struct proto_msg *m, int fd)
{
	if (m->hdr.type == SSQ_MSG_MEM_REG && c->said_hello && !c->refused)
		return mem_reg(d, c, m, fd);
	if (fd >= 0)
		close(fd);
	return handle_request(d, c, m);
}
