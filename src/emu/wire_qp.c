/* SPDX-License-Identifier: MIT */
/*
 * The wire's per-QP state across QP transitions: PSNs set at RTR and RTS,
 * everything forgotten at RESET, the outstanding WQEs handed back to the
 * flush at ERR. Called by the state machine (qp_state.c) and the object
 * calls; it calls nothing else in the device.
 */
#include <stdlib.h>
#include "emu/wire_pvt.h"

void emu_wire_qp_state(struct emu_qp *qp, enum ibv_qp_state cur, enum ibv_qp_state next)
{
	struct emu_wire_qp *wq = qp->wire;

	if (ssq_likely(!wq))
		return;
	if (next == IBV_QPS_RESET || (cur == IBV_QPS_INIT && next == IBV_QPS_RTR)) {
		struct sockaddr_in peer = wq->peer;

		memset(wq, 0, sizeof(*wq));
		wq->peer = peer;
		wq->epsn = qp->rq_psn & PSN_MASK;
	}
	if (cur == IBV_QPS_RTR && next == IBV_QPS_RTS)
		wq->next_psn = wq->snd_psn = wq->una = wq->max_sent =
		    qp->sq_psn & PSN_MASK;
	if (next == IBV_QPS_ERR && cur != IBV_QPS_ERR && wq->head != wq->tail) {
		/* The outstanding WQEs are flushed with the rest: emu_qp_flush
		 * runs from sq_cc, so start it at the oldest one. */
		qp->sq_cc = wq->ent[wq->head % WIRE_MAX_OUT].idx;
		wq->head = wq->tail = 0;
	}
}

void emu_wire_qp_free(struct emu_qp *qp)
{
	free(qp->wire);
	qp->wire = NULL;
}
