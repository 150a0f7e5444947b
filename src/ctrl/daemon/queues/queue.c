/* SPDX-License-Identifier: MIT */
/*
 * One shared queue's life in ssqd: make it (QP, CQ, control block, receive
 * pool, UAR), connect it to its remote end, publish it to clients, and
 * recover it from ERR. The bring-up (setup.c) and the peer link
 * (peers/bring.c) both call it; it calls neither.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "ctrl/daemon/queues/queues.h"

/*
 * How long ssq_ctl_reset may wait for a client that is routing completions
 * or ringing the doorbell right now: a few instructions, unless it was
 * preempted holding the lease.
 */
#define SSQD_RESET_MS 100

/* Random 24-bit PSN, as rc_pingpong draws it. */
uint32_t ssqd_queue_new_psn(void)
{
	return (uint32_t)lrand48() & 0xffffff;
}

/*
 * What ssq's WQEs may carry: gather entries and inline bytes. ssq counts
 * its ring in WQEBBs, so the room libmlx5 reserves per WR costs nothing
 * but ring WQEBBs per WR requested: 204 inline bytes make the WQE exactly
 * 256 bytes (providers/mlx5/verbs.c, mlx5_calc_send_wqe: the largest fixed
 * part, ctrl + raddr + atomic = 48 (sq_overhead), plus the larger of 4 data
 * segments = 64 and align(4 + 204, 16) = 208), and libmlx5 reports back
 * max_inline_data = 256 - 48 - 4 = 204 (mlx5_calc_sq_size).
 */
#define SSQD_MAX_SGE    4
#define SSQD_MAX_INLINE 204
#define SSQD_WR_BYTES   256

/*
 * The SQ ssqd asks for a ring of @wqebbs WQEBBs: @wqebbs * 64 /
 * SSQD_WR_BYTES WRs of the largest WQE fill it exactly. Whatever the device
 * makes of it, its dv_qp.sq.wqe_cnt is what the control block, the CQ and
 * the layout are sized from.
 */
static void sq_request(uint32_t wqebbs, struct ssqd_sq_request *r)
{
	memset(r, 0, sizeof(*r));
	r->max_send_wr = (uint32_t)((uint64_t)wqebbs * MLX5_SEND_WQE_BB / SSQD_WR_BYTES);
	if (!r->max_send_wr)
		r->max_send_wr = 1;
	r->max_send_sge = SSQD_MAX_SGE;
	r->max_inline_data = SSQD_MAX_INLINE;
	r->send_ops = SSQD_SEND_OPS;
}

/* The shared queue's control block, and ssqd's own producer in it. */
static int make_ctl(struct ssqd *d, struct ssqd_queue *q, char *why, size_t whylen)
{
	struct ssq_sq sq;
	struct ssq_cq cq;
	uint32_t ring = q->local.dv_qp.sq.wqe_cnt;
	uint32_t every = d->opt.signal_every < ring / 2 ? d->opt.signal_every : ring / 2;
	int rc;

	q->ctl = shm_arena_alloc(&d->arena, ssq_ctl_size(ring), 4096);
	if (!q->ctl) {
		snprintf(why, whylen, "no room in the arena for a queue control block");
		return -ENOSPC;
	}
	rc = ssq_ctl_init(q->ctl, ring, every);
	if (!rc)
		rc = ssq_sq_init(&sq, &q->local.dv_qp, q->local.qpn, q->local.max_inline,
		                 q->local.max_sge);
	if (!rc)
		rc = ssq_cq_init(&cq, &q->local.dv_cq);
	if (!rc)
		rc = ssq_producer_init(&q->prod, q->ctl, SSQD_PRODUCER_ID, &sq, &cq,
		                       (uint32_t)getpid());
	/* The backend posts a window's bind on this ring through it (grant). */
	if (!rc)
		q->local.prod = &q->prod;
	if (rc)
		snprintf(why, whylen, "queue control block: %s", strerror(-rc));
	return rc;
}

/*
 * The device's word that send CQEs landed in a queue's CQ (the backend's
 * cq_event, from the thread that wrote them): wake the producers asleep in
 * ssq_wait (and wait fds' threads) so that one routes now, not at the end
 * of its slice. The count is client memory: it only decides whether to
 * make the (never blocking) FUTEX_WAKE, so a scribbled one costs a system
 * call per pass of the device while its beat moves. One left by a sleeper
 * killed asleep beats no more: within SSQD_WAIT_BEAT_NS the device stops
 * paying for it, rather than making a system call per pass for good.
 *
 * W6 (pairs with R6 in ssq_wait, src/dv/queue_wait.c): this thread
 * published the CQEs (the release of op_own) before this call; the fence
 * orders them before the load of waiters. A sleeper counts itself
 * (seq_cst) before it routes once more: it finds the CQE, or we see it
 * counted and wake it.
 */
void ssqd_queue_send_event(void *arg, unsigned cqes)
{
	struct ssqd_queue *q = arg;
	struct ssq_ctl *ctl = q->ctl;
	(void)cqes;
	__atomic_thread_fence(__ATOMIC_SEQ_CST); /* W6 */
	/* Acquire: the sleeper's beat, stored before its count, is seen. */
	if (!__atomic_load_n(&ctl->waiters, __ATOMIC_ACQUIRE))
		return;
	/* No sleeper has beaten lately: a count left behind. */
	if (!ssqd_beat_live(&q->wait_beat,
	                    __atomic_load_n(&ctl->wait_beat, __ATOMIC_RELAXED),
	                    ssqd_now_ns()))
		return;
	ssq__wake_waiters(ctl);
}

int ssqd_queue_make(struct ssqd *d, unsigned i, char *why, size_t whylen)
{
	struct ssqd_queue *q = &d->queues[i];
	int two_hosts = !ssqd_queue_is_loopback(d, i);
	struct ssqd_sq_request sq;
	int rc;

	sq_request(d->opt.sq_wqebbs, &sq);
	/* The receive pool sits at the QP that receives: ours with a peer ssqd. */
	rc = d->ops->create_queue(d->backend, &sq, d->opt.cqes,
	                          two_hosts ? d->opt.recv_depth : 0, d->opt.port,
	                          &q->local, why, whylen);
	if (rc)
		return rc;
	rc = make_ctl(d, q, why, whylen);
	if (rc)
		return rc;
	/* Where the device says when CQEs land, sleepers need not wait a slice. */
	if (d->ops->cq_event &&
	    !d->ops->cq_event(d->backend, &q->local, 0, ssqd_queue_send_event, q))
		q->tx_native = 1;
	if (!two_hosts) {
		/*
		 * Loopback: the other end lives in ssqd too, on the emulated
		 * device's second port (its second host), or on the same port of a
		 * ConnectX; it receives what the queue sends.
		 */
		q->loopback = 1;
		sq_request(64, &sq);
		rc = d->ops->create_queue(d->backend, &sq, 64, d->opt.recv_depth,
		                          strcmp(d->ops->kind, "emu") ? d->opt.port : 2,
		                          &q->peer, why, whylen);
		if (rc)
			return rc;
	}
	rc = ssqd_recv_alloc(d, i, why, whylen);
	if (rc)
		return rc;
	return d->ops->uar_map(d->backend, &q->local, &q->uar);
}

/*
 * The READs/atomics ssq asks for in each direction, ConnectX-6's maximum;
 * a device or peer that takes fewer gets fewer (see ssqd_queue_connect).
 */
#define SSQD_RD_ATOM_WANT 16

static uint8_t min_u8(uint8_t a, uint8_t b)
{
	return a < b ? a : b;
}

int ssqd_queue_local_addr(struct ssqd *d, const struct ssqd_bqueue *b, unsigned i,
                          uint32_t psn, struct proto_peer_addr *a, char *why,
                          size_t whylen)
{
	struct ssqd_port_info pi;
	int rc =
	    d->ops->query_port(d->backend, b->port, d->opt.gid_index, &pi, why, whylen);

	if (rc)
		return rc;
	memset(a, 0, sizeof(*a));
	/* Its place among the queues shared with that peer. */
	a->index = (uint16_t)(i % d->opt.peer_queues);
	a->count = (uint16_t)d->opt.peer_queues;
	a->qpn = b->qpn;
	a->psn = psn;
	a->lid = pi.lid;
	memcpy(a->gid, pi.gid, 16);
	a->link_layer = pi.link_layer;
	a->mtu = (uint8_t)pi.active_mtu;
	a->rd_atom = min_u8(SSQD_RD_ATOM_WANT, pi.max_resp_rd_atom);
	a->data_iova = d->own.data_iova;
	a->data_rkey = d->own.data_key;
	/* In a cluster the peer learns who dialed (or answered) from it. */
	if (d->opt.npeers)
		snprintf(a->name, sizeof(a->name), "%s", d->opt.name);
	else
		snprintf(a->name, sizeof(a->name), "q%u", i);
	return 0;
}

int ssqd_queue_is_loopback(const struct ssqd *d, unsigned i)
{
	return !d->npeers || i >= d->npeers * d->opt.peer_queues;
}

void ssqd_queue_name(const struct ssqd *d, unsigned i, char name[SSQ_NAME_MAX])
{
	if (d->opt.npeers)
		snprintf(name, SSQ_NAME_MAX, "%s/q%u",
		         ssqd_queue_is_loopback(d, i)
		             ? d->opt.name
		             : d->peers[d->queues[i].peer_ix].name,
		         i % d->opt.peer_queues);
	else
		snprintf(name, SSQ_NAME_MAX, "q%u", i);
}

/*
 * The path both ends agree on without talking further: the smaller of the
 * two ports' active MTUs (a larger one would send packets the other port
 * cannot take), our responder depth as told to the peer, and an initiator
 * depth within both our device's max_qp_init_rd_atom and the responder
 * depth the peer told us (the IB responder NAKs requests past its own).
 */
int ssqd_queue_connect(struct ssqd *d, struct ssqd_bqueue *b, uint32_t my_psn,
                       const struct proto_peer_addr *peer, char *why, size_t whylen)
{
	struct ssqd_qp_remote r;
	struct ssqd_port_info pi;
	int rc =
	    d->ops->query_port(d->backend, b->port, d->opt.gid_index, &pi, why, whylen);

	if (rc)
		return rc;
	if (peer->link_layer != pi.link_layer) {
		snprintf(why, whylen,
		         "the peer's port is %s, ours %s: no RC path joins them",
		         ssqd_link_layer_str(peer->link_layer),
		         ssqd_link_layer_str(pi.link_layer));
		return -EINVAL;
	}
	memset(&r, 0, sizeof(r));
	r.qpn = peer->qpn;
	r.psn = peer->psn;
	r.lid = peer->lid;
	memcpy(r.gid, peer->gid, 16);
	r.sgid_index = pi.gid_index;
	r.timeout = d->opt.qp_timeout;
	r.mtu = peer->mtu < pi.active_mtu ? (enum ibv_mtu)peer->mtu : pi.active_mtu;
	r.max_dest_rd_atomic = min_u8(SSQD_RD_ATOM_WANT, pi.max_resp_rd_atom);
	r.max_rd_atomic =
	    min_u8(min_u8(SSQD_RD_ATOM_WANT, pi.max_init_rd_atom), peer->rd_atom);
	/* Said when a port, a device or the peer settles for less than ssq asks. */
	if (r.mtu < pi.active_mtu || r.max_rd_atomic < SSQD_RD_ATOM_WANT ||
	    r.max_dest_rd_atomic < SSQD_RD_ATOM_WANT)
		fprintf(stderr,
		        "ssqd: QP 0x%x to QPN 0x%x: path MTU %u (our port %u, the peer's "
		        "%u); READ/atomic depth %u out (our device %u, the peer's "
		        "responder %u), %u in\n",
		        b->qpn, peer->qpn, 128u << r.mtu, 128u << pi.active_mtu,
		        128u << peer->mtu, r.max_rd_atomic, pi.max_init_rd_atom,
		        peer->rd_atom, r.max_dest_rd_atomic);
	if (d->ops->set_remote) {
		rc = d->ops->set_remote(d->backend, b, peer->gid, why, whylen);
		if (rc)
			return rc;
	}
	return ssqd_qp_connect(d->ops, d->backend, b, my_psn, &r, why, whylen);
}

/* Queue @i's layout as ssqd made it, all but its state, into @l. */
static void layout_fill(const struct ssqd *d, unsigned i, struct shm_queue_layout *l,
                        const struct proto_peer_addr *peer)
{
	const struct ssqd_queue *q = &d->queues[i];

	ssqd_queue_name(d, i, l->name);
	l->qpn = q->local.qpn;
	l->peer_qpn = peer->qpn;
	l->cqn = q->local.dv_cq.cqn;
	l->sq_wqe_cnt = q->local.dv_qp.sq.wqe_cnt;
	l->cqe_cnt = q->local.dv_cq.cqe_cnt;
	l->max_inline = q->local.max_inline;
	l->max_sge = q->local.max_sge;
	l->sq_off = shm_arena_off(&d->arena, q->local.dv_qp.sq.buf);
	l->qp_dbrec_off = shm_arena_off(&d->arena, q->local.dv_qp.dbrec);
	l->cq_off = shm_arena_off(&d->arena, q->local.dv_cq.buf);
	l->cq_dbrec_off = shm_arena_off(&d->arena, q->local.dv_cq.dbrec);
	l->uar_off = (uint64_t)q->uar.offset;
	l->bf_reg_off = q->uar.reg_off;
	l->bf_size = q->local.dv_qp.bf.size;
	l->peer_data_iova = peer->data_iova;
	l->peer_key = peer->data_rkey;
	l->peer_gen = q->peer_gen;
	l->ctl_off = shm_arena_off(&d->arena, q->ctl);
	l->ctl_len = ssq_ctl_size(l->sq_wqe_cnt);
}

void ssqd_queue_publish(struct ssqd *d, unsigned i, const struct proto_peer_addr *peer)
{
	struct shm_queue_layout *l = &d->hdr->queues[i];

	layout_fill(d, i, l, peer);
	d->queues[i].published = 1;
	ssqd_queue_list(d, i, SSQ_QUEUE_READY);
}

void ssqd_queue_list(struct ssqd *d, unsigned i, uint32_t state)
{
	d->queues[i].listed = state;
	/* Readers load state with acquire: everything before is visible first. */
	__atomic_store_n(&d->hdr->queues[i].state, state, __ATOMIC_RELEASE);
}

void ssqd_queue_layout_restore(struct ssqd *d, unsigned i)
{
	struct ssqd_queue *q = &d->queues[i];

	if (!q->published)
		return; /* nothing in it yet that a client may use */
	layout_fill(d, i, &d->hdr->queues[i], &q->remote);
	ssqd_recv_layout(d, i, &d->hdr->queues[i]);
	ssqd_queue_list(d, i, q->listed); /* a client may have rewritten it */
}

/* Connect every local QP to its remote address and publish the queues. */
int ssqd_queue_connect_all(struct ssqd *d, const struct proto_peer_addr *remote,
                           char *why, size_t whylen)
{
	unsigned i;
	int rc;

	for (i = 0; i < d->opt.nqueues; i++) {
		rc = ssqd_queue_connect(d, &d->queues[i].local, d->psn[i], &remote[i],
		                        why, whylen);
		if (rc)
			return rc;
		d->queues[i].remote = remote[i]; /* for recovery */
		rc = ssqd_recv_arm(d, i, why, whylen);
		if (rc)
			return rc;
		d->queues[i].peer_gen++; /* the first link (--connect at start) */
		ssqd_queue_publish(d, i, &remote[i]);
	}
	return 0;
}

/*
 * Bringing a queue whose QP went to ERR back to RTS, on a client's request:
 *  1. wait until every WQE reserved before the error is published (or
 *     healed), flushed by the device and routed to its owner - producers
 *     cannot reserve meanwhile (ssq_reserve returns -EIO in error):
 *     ssqd_queue_drained() looks once, the caller repeats it without
 *     blocking anyone (the serve loop) or within a bound;
 *  2. RESET and reconnect the QP (and, loopback, the other end, which an
 *     access error also moved to ERR) with the addresses of the first time;
 *  3. restart the shared queue (ssq_ctl_reset): its counters at 0, as the
 *     QP's WQE index after a reset, the epoch bumped, READY again.
 * Steps 2 and 3 are ssqd_queue_restart().
 */
int ssqd_queue_drained(struct ssqd *d, unsigned qi)
{
	struct ssqd_queue *q = &d->queues[qi];

	if (q->heal_pending)
		ssqd_queue_heal(d, qi);
	ssq_submit(&q->prod);
	ssq_progress(&q->prod);
	return ssq_ctl_drained(q->ctl);
}

/*
 * Queue @i to ERROR: listed so (if it was ever published), the shared
 * state (reservations get -EIO), and the QP, so that whatever is still in
 * flight towards the old peer is flushed now rather than retried.
 */
void ssqd_queue_fence(struct ssqd *d, unsigned i)
{
	struct ssqd_queue *q = &d->queues[i];
	struct ibv_qp_attr attr;

	if (q->listed != SSQ_QUEUE_UNUSED)
		ssqd_queue_list(d, i, SSQ_QUEUE_ERROR);
	if (!q->ctl)
		return;
	ssq_ctl_set_error(q->ctl);
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_ERR;
	/*
	 * Every state but RESET may go to ERR (the kernel's qp_state_table);
	 * a QP in RESET has nothing in flight, so its refusal is ignored.
	 */
	(void)d->ops->modify_qp(d->backend, &q->local, &attr, IBV_QP_STATE);
}

void ssqd_queue_relist(struct ssqd *d, unsigned qi)
{
	/* A fence (an async event, a stop) listed it ERROR. */
	if (d->queues[qi].listed == SSQ_QUEUE_ERROR)
		ssqd_queue_list(d, qi, SSQ_QUEUE_READY);
}

void ssqd_queue_heal(struct ssqd *d, unsigned qi)
{
	struct ssqd_queue *q = &d->queues[qi];
	int rc = ssq_ctl_heal(&q->prod, SSQD_HEAL_TRY_MS);
	uint64_t now = ssqd_now_ns();

	q->heal_pending = rc == -ETIMEDOUT;
	if (rc > 0)
		fprintf(stderr,
		        "ssqd: q%u: dead producers left %d unpublished WQEBBs: sent as "
		        "NOPs\n",
		        qi, rc);
	if (!q->heal_pending) {
		q->heal_since_ns = 0;
		q->heal_logged = 0;
	} else if (!q->heal_since_ns) {
		q->heal_since_ns = now;
	} else if (!q->heal_logged &&
	           now - q->heal_since_ns > d->opt.heal_ms * 1000000ull) {
		fprintf(
		    stderr,
		    "ssqd: q%u: healing after a death held up for over %u ms by a live "
		    "producer mid-reservation; still trying\n",
		    qi, d->opt.heal_ms);
		q->heal_logged = 1;
	}
}

/* RECOVER of a queue whose CQ overran: said at once, before any drain. */
static int cq_dead_why(unsigned qi, char *why, size_t whylen)
{
	snprintf(why, whylen,
	         "queue q%u: its CQ overran and stopped (IBV_EVENT_CQ_ERR); a CQ in "
	         "error does not come back: restart ssqd",
	         qi);
	return -EIO;
}

int ssqd_queue_in_error(struct ssqd *d, unsigned qi, char *why, size_t whylen)
{
	if (d->queues[qi].cq_dead)
		return cq_dead_why(qi, why, whylen);
	if (ssq_ctl_in_error(d->queues[qi].ctl))
		return 0;
	snprintf(why, whylen, "queue q%u is not in error: nothing to recover", qi);
	return -EINVAL;
}

void ssqd_queue_busy_why(struct ssqd *d, unsigned qi, unsigned ms, char *why,
                         size_t whylen)
{
	const struct ssq_ctl *ctl = d->queues[qi].ctl;

	snprintf(why, whylen,
	         "queue q%u: WQEs still in flight after %u ms (completed %llu of %llu)",
	         qi, ms, (unsigned long long)ssq_ctl_completed(ctl),
	         (unsigned long long)ssq_ctl_reserved(ctl));
}

int ssqd_queue_recover(struct ssqd *d, unsigned qi, uint64_t end_ns, char *why,
                       size_t whylen)
{
	uint64_t t0 = ssqd_now_ns(), t;
	int rc = ssqd_queue_in_error(d, qi, why, whylen);

	if (rc)
		return rc;
	while (!ssqd_queue_drained(d, qi)) {
		t = ssqd_now_ns();
		if (t > end_ns) {
			ssqd_queue_busy_why(d, qi, (unsigned)((t - t0) / 1000000), why,
			                    whylen);
			return -EBUSY;
		}
		usleep(100);
	}
	return ssqd_queue_restart(d, qi, why, whylen);
}

int ssqd_queue_reset_qp(struct ssqd *d, unsigned qi, char *why, size_t whylen)
{
	struct ssqd_queue *q = &d->queues[qi];
	struct ibv_qp_attr attr;
	int mask, rc;

	if (q->cq_dead)
		return cq_dead_why(qi, why, whylen);
	ssqd_recv_pause(d, qi); /* nothing posted into a QP being reset */
	ssqd_qp_attr_reset(&attr, &mask);
	rc = d->ops->modify_qp(d->backend, &q->local, &attr, mask);
	if (!rc && q->loopback)
		rc = d->ops->modify_qp(d->backend, &q->peer, &attr, mask);
	if (rc) {
		snprintf(why, whylen, "queue q%u: QP to RESET: %s", qi, strerror(-rc));
		return rc;
	}
	/* libmlx5 clears its doorbell record on reset; ssq owns this one. */
	__atomic_store_n(&q->local.dv_qp.dbrec[MLX5_SND_DBR], 0, __ATOMIC_RELEASE);
	__atomic_store_n(&q->local.dv_qp.dbrec[MLX5_RCV_DBR], 0, __ATOMIC_RELEASE);
	return 0;
}

int ssqd_queue_reconnect(struct ssqd *d, unsigned qi, char *why, size_t whylen)
{
	struct ssqd_queue *q = &d->queues[qi];
	int rc;

	if (q->loopback) {
		rc = ssqd_queue_connect(d, &q->peer, q->peer_psn, &d->local_addrs[qi],
		                        why, whylen);
		if (rc)
			return rc;
	}
	rc = ssqd_queue_connect(d, &q->local, d->psn[qi], &q->remote, why, whylen);
	if (rc)
		return rc;
	/* The RQ came back empty: post the receive pool again. */
	return ssqd_recv_arm(d, qi, why, whylen);
}

int ssqd_queue_restart_qp(struct ssqd *d, unsigned qi, char *why, size_t whylen)
{
	int rc = ssqd_queue_reset_qp(d, qi, why, whylen);

	return rc ? rc : ssqd_queue_reconnect(d, qi, why, whylen);
}

int ssqd_queue_restart(struct ssqd *d, unsigned qi, char *why, size_t whylen)
{
	struct ssqd_queue *q = &d->queues[qi];
	int rc = ssqd_queue_restart_qp(d, qi, why, whylen);

	if (rc)
		return rc;
	rc = ssq_ctl_reset(&q->prod, SSQD_RESET_MS);
	if (rc) {
		snprintf(why, whylen,
		         "queue q%u: QP back in RTS, but its shared state could not "
		         "restart: %s",
		         qi, strerror(-rc));
		return rc;
	}
	ssqd_queue_relist(d, qi);
	q->epoch++; /* ssqd's own count: what ssq_ctl_check expects */
	ssqd_queue_binds_reset(d, qi);
	fprintf(stderr, "ssqd: q%u recovered: QP 0x%x back in RTS, epoch %u\n", qi,
	        q->local.qpn, q->epoch);
	return 0;
}
