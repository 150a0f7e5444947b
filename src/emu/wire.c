/* SPDX-License-Identifier: MIT */
/*
 * The wire's packet I/O: the UDP socket, sending through the fault
 * injector (drop, duplicate, reorder, delay), receiving and dispatching by
 * destination QPN to the requester (acknowledgements) or the responder
 * (requests), and the hooks the rest of the device calls. See <ssq/emu.h>.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "emu/wire_pvt.h"

/* "a.b.c.d:port" into @sa. Returns 0 or -EINVAL. */
static int parse_addr(const char *s, struct sockaddr_in *sa)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	char *end;
	unsigned long port;

	if (!colon || (size_t)(colon - s) >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	port = strtoul(colon + 1, &end, 10);
	if (!colon[1] || *end || port > 65535)
		return -EINVAL;
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
		return -EINVAL;
	return 0;
}

/* xorshift64*: a uniform double in [0, 1). */
static double rnd(struct emu_wire *w)
{
	w->rng ^= w->rng >> 12;
	w->rng ^= w->rng << 25;
	w->rng ^= w->rng >> 27;
	return (double)((w->rng * 0x2545f4914f6cdd1dull) >> 11) / 9007199254740992.0;
}

static int fault_ok(const struct emu_wire_fault *f)
{
	return f->drop >= 0 && f->drop <= 1 && f->dup >= 0 && f->dup <= 1 &&
	       f->reorder >= 0 && f->reorder <= 1 && f->delay >= 0 && f->delay <= 1;
}

int emu_wire_parse_fault(const char *s, struct emu_wire_fault *f)
{
	char buf[256], *item, *save = NULL, *eq = NULL;

	if (!s || !f)
		return -EINVAL;
	memset(f, 0, sizeof(*f));
	if (strlen(s) >= sizeof(buf)) {
		fprintf(stderr, "ssq_emu: wire fault string too long\n");
		return -EINVAL;
	}
	strcpy(buf, s);
	for (item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *end;
		double d;

		eq = strchr(item, '=');
		if (!eq || !eq[1])
			goto bad;
		*eq = 0;
		if (!strcmp(item, "seed") || !strcmp(item, "delay_us")) {
			unsigned long long v = strtoull(eq + 1, &end, 0);

			if (*end || eq[1] == '-')
				goto bad_eq;
			if (item[0] == 's')
				f->seed = v;
			else if (v > 10000000)
				goto bad_eq;
			else
				f->delay_us = (uint32_t)v;
			continue;
		}
		d = strtod(eq + 1, &end);
		if (*end || !(d >= 0 && d <= 1))
			goto bad_eq;
		if (!strcmp(item, "drop"))
			f->drop = d;
		else if (!strcmp(item, "dup"))
			f->dup = d;
		else if (!strcmp(item, "reorder"))
			f->reorder = d;
		else if (!strcmp(item, "delay"))
			f->delay = d;
		else
			goto bad_eq;
	}
	return 0;
bad_eq:
	*eq = '=';
bad:
	fprintf(stderr, "ssq_emu: SSQ_EMU_WIRE_FAULT: bad item '%s'\n", item);
	memset(f, 0, sizeof(*f));
	return -EINVAL;
}

static void set_fault_locked(struct emu_wire *w, const struct emu_wire_fault *f)
{
	memset(&w->fault, 0, sizeof(w->fault));
	if (f)
		w->fault = *f;
	w->rng = w->fault.seed ? w->fault.seed : 1;
}

int emu_wire_set_fault(struct emu_dev *dev, const struct emu_wire_fault *f)
{
	int ret = 0;

	if (!dev || (f && !fault_ok(f)))
		return -EINVAL;
	pthread_mutex_lock(&dev->lock);
	if (dev->wire)
		set_fault_locked(dev->wire, f);
	else
		ret = -EINVAL;
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

int emu_wire_open(struct emu_dev *dev, const char *bind_addr, char *local_out, size_t len)
{
	struct emu_wire_fault f;
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	const char *env = getenv("SSQ_EMU_WIRE_FAULT");
	struct emu_wire *w;
	char host[INET_ADDRSTRLEN], out[INET_ADDRSTRLEN + 8];
	int ret, fd, sz = 4 << 20;

	if (!dev || parse_addr(bind_addr ? bind_addr : "127.0.0.1:0", &sa))
		return -EINVAL;
	memset(&f, 0, sizeof(f));
	if (env && *env && emu_wire_parse_fault(env, &f))
		return -EINVAL;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* Room for a window of packets in flight; best effort. */
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl)) {
		ret = -errno;
		close(fd);
		return ret;
	}
	inet_ntop(AF_INET, &sa.sin_addr, host, sizeof(host));
	snprintf(out, sizeof(out), "%s:%u", host, ntohs(sa.sin_port));
	if (local_out && strlen(out) >= len) {
		close(fd);
		return -ENOSPC;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		close(fd);
		return -ENOMEM;
	}
	w->fd = fd;
	set_fault_locked(w, &f);
	pthread_mutex_lock(&dev->lock);
	if (dev->wire) {
		pthread_mutex_unlock(&dev->lock);
		close(fd);
		free(w);
		return -EEXIST;
	}
	dev->wire = w;
	pthread_mutex_unlock(&dev->lock);
	if (local_out)
		strcpy(local_out, out);
	return 0;
}

int emu_qp_set_remote(struct emu_qp *qp, const char *addr)
{
	struct sockaddr_in sa;
	struct emu_wire_qp *wq = NULL;
	int ret = -EINVAL;

	if (!qp || (addr && parse_addr(addr, &sa)))
		return -EINVAL;
	if (addr) {
		wq = calloc(1, sizeof(*wq));
		if (!wq)
			return -ENOMEM;
		wq->peer = sa;
	}
	pthread_mutex_lock(&qp->dev->lock);
	if (qp->dev->wire && (qp->state == IBV_QPS_RESET || qp->state == IBV_QPS_INIT)) {
		free(qp->wire);
		qp->wire = wq;
		wq = NULL;
		ret = 0;
	}
	pthread_mutex_unlock(&qp->dev->lock);
	free(wq);
	return ret;
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

int emu_wire_fd(const struct emu_dev *dev)
{
	return dev->wire ? dev->wire->fd : -1;
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

int emu_wire_stats(struct emu_dev *dev, struct emu_wire_stats *st)
{
	int ret = -EINVAL;

	if (!dev || !st)
		return -EINVAL;
	pthread_mutex_lock(&dev->lock);
	if (dev->wire) {
		*st = dev->wire->st;
		ret = 0;
	}
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

void emu_wire_qp_free(struct emu_qp *qp)
{
	free(qp->wire);
	qp->wire = NULL;
}

void emu_wire_close(struct emu_dev *dev)
{
	unsigned i;

	for (i = 0; i < SSQ_EMU_MAX_QP; i++)
		if (dev->qps[i])
			emu_wire_qp_free(dev->qps[i]);
	if (dev->wire) {
		close(dev->wire->fd);
		free(dev->wire);
		dev->wire = NULL;
	}
}

/* The one walk of a scatter/gather list: from @off on, @len bytes. */
static void sg_walk(const struct emu_sg *sg, uint64_t off, uint8_t *out,
                    const uint8_t *in, uint32_t len)
{
	while (off >= sg->len) {
		off -= sg->len;
		sg++;
	}
	while (len) {
		uint32_t n = sg->len - (uint32_t)off;

		if (n > len)
			n = len;
		if (in) {
			memcpy(sg->p + off, in, n);
			in += n;
		} else {
			memcpy(out, sg->p + off, n);
			out += n;
		}
		len -= n;
		off = 0;
		sg++;
	}
}

void emu_sg_scatter(const struct emu_sg *sg, uint64_t off, const uint8_t *src,
                    uint32_t len)
{
	sg_walk(sg, off, NULL, src, len);
}

void emu_sg_gather(uint8_t *dst, const struct emu_sg *sg, uint64_t off, uint32_t len)
{
	sg_walk(sg, off, dst, NULL, len);
}
