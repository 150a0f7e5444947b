/* SPDX-License-Identifier: MIT */
/*
 * The wire's packet output: BTH and AETH encoding, and sending through the
 * fault injector (drop, duplicate, reorder, delay), the held packets and the
 * coalesced ACKs of each pass included. Only the socket and the packet
 * bytes: it calls nothing else in the device.
 */
#include <sys/socket.h>
#include "emu/wire_pvt.h"

/* xorshift64*: a uniform double in [0, 1). */
static double rnd(struct emu_wire *w)
{
	w->rng ^= w->rng >> 12;
	w->rng ^= w->rng << 25;
	w->rng ^= w->rng >> 27;
	return (double)((w->rng * 0x2545f4914f6cdd1dull) >> 11) / 9007199254740992.0;
}

static void raw_send(struct emu_wire *w, const struct sockaddr_in *to, const uint8_t *pkt,
                     uint32_t len)
{
	/* A full socket buffer or an unreachable peer is a lost packet: the
	 * transport's retries deal with it, as with a drop on a real link. */
	(void)!sendto(w->fd, pkt, len, 0, (const struct sockaddr *)to, sizeof(*to));
}

static void hold(struct emu_wire *w, const struct sockaddr_in *to, const uint8_t *pkt,
                 uint32_t len, uint64_t due_ns)
{
	struct wire_held *h;

	if (w->nheld == WIRE_HELD_MAX) {
		raw_send(w, to, pkt, len);
		return;
	}
	w->st.held++;
	h = &w->held[w->nheld++];
	h->due_ns = due_ns;
	h->to = *to;
	h->len = len;
	memcpy(h->data, pkt, len);
}

void emu_wire_xmit(struct emu_wire *w, const struct sockaddr_in *to, const uint8_t *pkt,
                   uint32_t len)
{
	const struct emu_wire_fault *f = &w->fault;
	int copies = 1, i;

	w->st.tx_pkts++;
	if (ssq_likely(!f->drop && !f->dup && !f->reorder && !f->delay)) {
		raw_send(w, to, pkt, len);
		return;
	}
	if (f->drop && rnd(w) < f->drop) {
		w->st.dropped++;
		return;
	}
	if (f->dup && rnd(w) < f->dup) {
		w->st.duplicated++;
		copies = 2;
	}
	for (i = 0; i < copies; i++) {
		if (f->reorder && rnd(w) < f->reorder)
			/* Sent by emu_wire_tx at the end of this pass, after
			 * the packets this pass sends later. */
			hold(w, to, pkt, len, 0);
		else if (f->delay && rnd(w) < f->delay)
			hold(w, to, pkt, len,
			     emu_now_ns() +
			         (uint64_t)(f->delay_us ? f->delay_us : 100) * 1000);
		else
			raw_send(w, to, pkt, len);
	}
}

void emu_wire_bth(uint8_t *p, uint8_t opcode, uint32_t dqpn, uint32_t psn, int ackreq)
{
	p[0] = opcode;
	p[1] = 0;    /* SE, MigReq, PadCnt 0, TVer 0 */
	p[2] = 0xff; /* default P_Key 0xffff */
	p[3] = 0xff;
	put_be32(p + 4, dqpn & 0xffffff);
	put_be32(p + 8, (psn & PSN_MASK) | (ackreq ? WIRE_BTH_ACKREQ : 0));
}

void emu_wire_send_aeth(struct emu_qp *qp, uint8_t synd, uint32_t psn)
{
	uint8_t pkt[WIRE_BTH + WIRE_AETH];

	emu_wire_bth(pkt, WIRE_ACK, qp->dest_qpn, psn, 0);
	put_be32(pkt + WIRE_BTH, ((uint32_t)synd << 24) | (qp->wire->msn & 0xffffff));
	emu_wire_xmit(qp->dev->wire, &qp->wire->peer, pkt, sizeof(pkt));
}

void emu_wire_tx(struct emu_dev *dev)
{
	struct emu_wire *w = dev->wire;
	uint64_t now;
	unsigned i, k;

	if (ssq_likely(!w))
		return;
	/* Cumulative ACKs: one per QP and pass, for the last in-order PSN. */
	for (i = 0; i < dev->nqp; i++) {
		struct emu_qp *qp = dev->qps[i];

		if (qp && qp->wire && qp->wire->ack_pending) {
			qp->wire->ack_pending = 0;
			emu_wire_send_aeth(qp, AETH_ACK | 0x1f,
			                   (qp->wire->epsn - 1) & PSN_MASK);
		}
	}
	if (!w->nheld)
		return;
	now = emu_now_ns();
	for (i = 0, k = 0; i < w->nheld; i++) {
		if (w->held[i].due_ns <= now)
			raw_send(w, &w->held[i].to, w->held[i].data, w->held[i].len);
		else if (k++ != i)
			w->held[k - 1] = w->held[i];
	}
	w->nheld = k;
}
