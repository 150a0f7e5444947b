/* SPDX-License-Identifier: MIT */
/*
 * The device's asynchronous events, read once per serve loop without
 * waiting: the errors no CQE reports. A QP that went to ERR on its own
 * (QP_FATAL, QP_REQ_ERR, QP_ACCESS_ERR), a CQ that overran (CQ_ERR: the CQ
 * stops, so nothing the QP does completes any more), a port that went
 * down or a device that died would otherwise leave the queue listed READY
 * while nothing it posts ever completes. Each such queue is fenced
 * (ssqd_queue_fence: listed ERROR, reservations get -EIO, the QP to ERR),
 * and the clients' RECOVER brings it back as after an error CQE.
 */
#include <stdio.h>
#include <string.h>
#include "ctrl/daemon/queues/queues.h"
#include <systemd/sd-daemon.h> /* SD_ERR...: util/log.c */

/* Does queue @q own the CQ (CQ_ERR) or the QP (the rest) @ev names? */
static int names_queue(const struct ssqd_queue *q, const struct ssqd_async_event *ev)
{
	if (ev->type == IBV_EVENT_CQ_ERR) /* CQ numbers start at 0 */
		return ev->cqn == q->local.dv_cq.cqn || ev->cqn == q->local.dv_rcq.cqn ||
		       (q->loopback &&
		        (ev->cqn == q->peer.dv_cq.cqn || ev->cqn == q->peer.dv_rcq.cqn));
	return ev->qpn == q->local.qpn || (q->loopback && ev->qpn == q->peer.qpn);
}

static void fence(struct ssqd *d, unsigned i, const struct ssqd_async_event *ev)
{
	if (!d->queues[i].ctl)
		return;
	fprintf(stderr,
	        SD_WARNING "ssqd: q%u: async event %s (QP 0x%x, CQ 0x%x, port %u): %s\n",
	        i, ibv_event_type_str(ev->type), ev->qpn, ev->cqn, ev->port,
	        d->queues[i].cq_dead
	            ? "queue in ERROR for good: its CQ stopped (restart ssqd)"
	            : "queue in ERROR until a client recovers it");
	ssqd_queue_fence(d, i);
}

/*
 * Our QP of queue @i refused a request of its peer's for its key (an IB
 * responder's R_Key violation raises IBV_EVENT_QP_ACCESS_ERR, mlx5_ib's
 * MLX5_EVENT_TYPE_WQ_ACCESS_ERROR): a key not granted to that peer, or no
 * longer - a guess, or a stale descriptor. Counted per queue (the peer's
 * share is its queues', in --status), logged under a limit so a guessing
 * peer cannot flood the log; each guess costs the guesser its link's
 * queue, which goes to ERR and needs a RECOVER (IB class C error).
 */
static void refused(struct ssqd *d, unsigned i)
{
	const struct ssqd_peer *p = ssqd_queue_peer(d, i);

	d->queues[i].refused++;
	ssqd_log_limited(&d->guess_log, ssqd_now_ns(),
	                 SD_WARNING "ssqd: q%u (%s%s): the peer used a key not granted "
	                            "to it (remote access error; %u so far on this "
	                            "queue)\n",
	                 i, p ? "peer " : "", p ? p->name : "its peer",
	                 d->queues[i].refused);
}

static void handle(struct ssqd *d, const struct ssqd_async_event *ev)
{
	unsigned i;

	switch (ev->type) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_CQ_ERR:
		for (i = 0; i < d->opt.nqueues; i++) {
			if (!names_queue(&d->queues[i], ev))
				continue;
			if (ev->type == IBV_EVENT_CQ_ERR)
				d->queues[i].cq_dead = 1;
			if (ev->type == IBV_EVENT_QP_FATAL)
				d->queues[i].sq_frozen = 1;
			/*
			 * Our end of a peer's queue: the peer's request. In
			 * loopback both ends are ours (a client's own bad key).
			 */
			if (ev->type == IBV_EVENT_QP_ACCESS_ERR &&
			    (d->queues[i].loopback ? ev->qpn == d->queues[i].peer.qpn
			                           : ev->qpn == d->queues[i].local.qpn))
				refused(d, i);
			fence(d, i, ev);
		}
		break;
	case IBV_EVENT_PORT_ERR:
		for (i = 0; i < d->opt.nqueues; i++)
			if (d->queues[i].local.port == ev->port)
				fence(d, i, ev);
		break;
	case IBV_EVENT_DEVICE_FATAL:
		for (i = 0; i < d->opt.nqueues; i++)
			fence(d, i, ev);
		break;
	default: /* PORT_ACTIVE, LID_CHANGE, COMM_EST, ...: nothing failed */
		break;
	}
}

int ssqd_async_poll(struct ssqd *d)
{
	struct ssqd_async_event ev;
	int n = 0, rc;

	if (!d->backend || !d->ops->async_event)
		return 0;
	while ((rc = d->ops->async_event(d->backend, &ev)) > 0) {
		handle(d, &ev);
		n++;
	}
	if (rc < 0 && !d->async_failed) {
		fprintf(stderr, SD_ERR "ssqd: reading the device's async events: %s\n",
		        strerror(-rc));
		d->async_failed = 1;
	}
	return n;
}
