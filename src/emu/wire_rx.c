/* SPDX-License-Identifier: MIT */
/*
 * The wire's packet input: the datagrams waiting on the socket, each
 * dispatched by destination QPN to that QP's requester (acknowledgements,
 * READ responses) or responder (requests), in the states that accept them.
 */
#include <sys/socket.h>
#include "emu/wire_pvt.h"

unsigned emu_wire_rx(struct emu_dev *dev, unsigned budget)
{
	struct emu_wire *w = dev->wire;
	unsigned n = 0;

	if (ssq_likely(!w))
		return 0;
	while (n < budget) {
		ssize_t len = recv(w->fd, w->rx, sizeof(w->rx), 0);
		struct emu_qp *qp;
		uint8_t op;

		if (len < 0)
			break; /* EAGAIN: drained */
		if (len < WIRE_BTH || len > WIRE_MAX_PKT)
			continue;
		n++;
		w->st.rx_pkts++;
		op = w->rx[0];
		qp = emu_qp_by_qpn(dev, get_be32(w->rx + 4) & 0xffffff);
		if (!qp || !qp->wire)
			continue; /* no such QP: lost */
		if (op == WIRE_ACK || op == WIRE_ATOMIC_ACK ||
		    (op >= WIRE_READ_FIRST && op <= WIRE_READ_ONLY)) {
			if (qp->state == IBV_QPS_RTS)
				emu_wire_req_rx(qp, w->rx, (uint32_t)len);
		} else if (op <= WIRE_READ_REQ || op == WIRE_CMP_SWAP ||
		           op == WIRE_FETCH_ADD) {
			if (qp->state == IBV_QPS_RTR || qp->state == IBV_QPS_RTS)
				emu_wire_resp_rx(qp, w->rx, (uint32_t)len);
		}
	}
	return n;
}
