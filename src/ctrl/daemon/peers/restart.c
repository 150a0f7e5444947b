/* SPDX-License-Identifier: MIT */
/*
 * One queue's restart with the peer host, over the link's kept TCP
 * connection. ssqd resets a queue's QP in place when a client scribbled
 * its control block or a stalled hold is taken back (watch/guard.c,
 * watch/stall.c). Between two hosts the QP cannot simply come back at its
 * first PSNs: the peer's QP expects the PSNs after what it already took,
 * so ours would fall in its duplicate window, and a responder acknowledges
 * a duplicate SEND or WRITE again without executing it (IBA C9-105, as
 * the kernel's rxe does in rxe_resp.c duplicate_request). Completions would say
 * success for data that never landed. So both QPs start over together at
 * PSNs the asker picks (the message: ctrl/proto/peer_msg.h):
 *  asker:    quiesce; QP to RESET (packets to it are dropped, so nothing
 *            old is acknowledged); block rebuilt, held RESTARTING; ASK;
 *  answerer: quiesce; QP through RESET to RTR/RTS at the two PSNs; block
 *            rebuilt, READY; DONE;
 *  asker:    QP to RTR/RTS at the two PSNs; READY.
 * What either side had in flight completes to its owners as flushed. The
 * answerer's first packets may reach the asker's QP before it is back in
 * RTR: they are dropped and retransmitted after the transport's timeout.
 * Both asking at once: the side that dialed (--connect) wins, the other
 * drops its own ask and answers. An ask unanswered for LINK_RESTART_MS
 * means the peer is not working: the link is dropped and re-brought
 * (every queue recovered with a fresh exchange).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include "ctrl/daemon/queues/queues.h"
#include "ctrl/daemon/peers/peers.h"
#include <systemd/sd-daemon.h> /* SD_ERR...: util/log.c */

#define LINK_RESTART_MS 3000
/* Restart messages handled per call, so a chatty peer cannot hold the loop. */
#define LINK_INPUT_MAX 16

int ssqd_peer_linked(struct ssqd *d, unsigned qi)
{
	const struct ssqd_peer *p = ssqd_queue_peer(d, qi);

	return p && ssqd_link_up(p);
}

static int send_restart(struct ssqd *d, struct ssqd_peer *p,
                        const struct proto_peer_restart *r, char *why, size_t whylen)
{
	uint8_t buf[SSQ_PEER_RESTART_LEN + SSQ_PEER_MAC_LEN];
	size_t len = SSQ_PEER_RESTART_LEN + ssqd_auth_trailer(&p->auth);
	ssize_t n;

	proto_peer_encode_restart(r, (uint16_t)d->opt.peer_queues, buf);
	/* --peer-key: its MAC, under the link's next seq (peers/auth.c). */
	if (p->auth.on && ssqd_auth_seal(&p->auth, buf, SSQ_PEER_RESTART_LEN,
	                                 buf + SSQ_PEER_RESTART_LEN)) {
		snprintf(why, whylen, "HMAC-SHA256 failed (OpenSSL)");
		return -EIO;
	}
	/*
	 * Never waits: a few bytes now and then fit the socket's buffer
	 * unless the peer stopped reading, and then it is not working.
	 */
	n = send(p->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n == (ssize_t)len)
		return 0;
	snprintf(why, whylen, "sending q%u's restart to the peer: %s", p->q0 + r->index,
	         n < 0 ? strerror(errno) : "short send (it does not read)");
	return n < 0 ? -errno : -EIO;
}

/* Both of queue @qi's PSNs set, for the QP's RTR/RTS (ssqd_queue_reconnect). */
static void set_psns(struct ssqd *d, unsigned qi, uint32_t mine, uint32_t peers)
{
	d->psn[qi] = mine;
	d->local_addrs[qi].psn = mine;
	d->queues[qi].remote.psn = peers;
}

int ssqd_link_restart(struct ssqd *d, unsigned qi, char *why, size_t whylen)
{
	struct ssqd_queue *q = &d->queues[qi];
	struct ssqd_peer *p = ssqd_queue_peer(d, qi);
	struct proto_peer_restart r;
	int rc = ssqd_queue_reset_qp(d, qi, why, whylen);

	if (rc) {
		ssq_ctl_set_error(q->ctl);
		return rc;
	}
	ssqd_queue_start_over(d, qi, 1);
	memset(&r, 0, sizeof(r));
	r.index = (uint16_t)(qi - p->q0);
	r.kind = PROTO_RESTART_ASK;
	r.seq = ++d->link_next_seq ? d->link_next_seq : ++d->link_next_seq;
	r.psn = ssqd_queue_new_psn();
	r.peer_psn = ssqd_queue_new_psn();
	rc = send_restart(d, p, &r, why, whylen);
	if (rc) {
		ssqd_queue_fence(d, qi);
		return rc;
	}
	q->link_seq = r.seq;
	q->link_psn = r.psn;
	q->link_peer_psn = r.peer_psn;
	q->link_deadline_ns = ssqd_now_ns() + LINK_RESTART_MS * 1000000ull;
	fprintf(stderr,
	        "ssqd: q%u: QP 0x%x reset, control block rebuilt (epoch %u); asked "
	        "the peer to restart its QP with it\n",
	        qi, q->local.qpn, q->epoch);
	return 0;
}

/* The peer answered our ask for queue @qi: back to RTS, READY. */
static void restart_done(struct ssqd *d, unsigned qi, const struct proto_peer_restart *r)
{
	struct ssqd_queue *q = &d->queues[qi];
	char why[200];
	int rc;

	q->link_seq = 0;
	if (r->status) {
		fprintf(stderr,
		        SD_ERR
		        "ssqd: q%u: the peer could not restart its QP (%s): the queue "
		        "stays in error until a client recovers it\n",
		        qi, strerror(r->status));
		ssqd_queue_fence(d, qi);
		return;
	}
	set_psns(d, qi, q->link_psn, q->link_peer_psn);
	rc = ssqd_queue_reconnect(d, qi, why, sizeof(why));
	if (rc) {
		fprintf(stderr,
		        SD_ERR "ssqd: q%u: back to RTS after the peer's restart: %s\n",
		        qi, why);
		ssqd_queue_fence(d, qi);
		return;
	}
	/* -ESTALE: a client scribbled the state meanwhile; the guard looks next. */
	(void)ssq_ctl_release(q->ctl);
	ssqd_queue_relist(d, qi);
	fprintf(stderr,
	        "ssqd: q%u restarted with the peer: QP 0x%x back in RTS at fresh PSNs\n",
	        qi, q->local.qpn);
}

/* The peer asks us to restart queue @qi at its PSNs: do it, answer. */
static int restart_ask(struct ssqd *d, struct ssqd_peer *p, unsigned qi,
                       const struct proto_peer_restart *r, char *why, size_t whylen)
{
	struct ssqd_queue *q = &d->queues[qi];
	struct proto_peer_restart done;
	char err[200];
	int rc = 0;

	if (q->link_seq && p->dials)
		return 0; /* both asked: the dialer's wins, the peer answers ours */
	if (!q->link_seq) {
		ssq_ctl_quiesce(&q->prod, ssqd_live_records(d, qi), SSQD_LEASE_MS);
		rc = ssqd_queue_reset_qp(d, qi, err, sizeof(err));
		if (!rc)
			ssqd_queue_start_over(d, qi, 1);
	}
	q->link_seq = 0; /* ours, if any, yields */
	if (!rc) {
		set_psns(d, qi, r->peer_psn, r->psn);
		rc = ssqd_queue_reconnect(d, qi, err, sizeof(err));
	}
	memset(&done, 0, sizeof(done));
	done.index = r->index;
	done.kind = PROTO_RESTART_DONE;
	done.seq = r->seq;
	if (rc) {
		fprintf(stderr, SD_ERR "ssqd: q%u: the peer asked for a restart: %s\n",
		        qi, err);
		ssqd_queue_fence(d, qi);
		done.status = (uint8_t)(-rc < 256 ? -rc : EIO);
	} else {
		(void)ssq_ctl_release(q->ctl);
		ssqd_queue_relist(d, qi);
		fprintf(stderr,
		        "ssqd: q%u restarted at the peer's ask: QP 0x%x back in RTS at "
		        "fresh PSNs, what was in flight flushed\n",
		        qi, q->local.qpn);
	}
	return send_restart(d, p, &done, why, whylen);
}

int ssqd_link_input(struct ssqd *d, struct ssqd_peer *p, char *why, size_t whylen)
{
	unsigned msgs;

	unsigned len = SSQ_PEER_RESTART_LEN + ssqd_auth_trailer(&p->auth);

	for (msgs = 0; msgs < LINK_INPUT_MAX; msgs++) {
		struct proto_peer_restart r;
		ssize_t n = recv(p->fd, p->rx + p->rx_len, len - p->rx_len, MSG_DONTWAIT);
		int rc;

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		if (n < 0) {
			snprintf(why, whylen, "its connection: %s", strerror(errno));
			return -errno;
		}
		if (n == 0) {
			snprintf(why, whylen, "it closed the connection");
			return -ENOTCONN;
		}
		p->rx_len += (unsigned)n;
		if (p->rx_len < len)
			continue;
		p->rx_len = 0;
		/*
		 * --peer-key: nothing acted on before its MAC checks out; one
		 * that fails (replayed, forged) fails the link (the caller
		 * drops the peer, which dials again).
		 */
		if (p->auth.on &&
		    ssqd_auth_open(&p->auth, p->rx, SSQ_PEER_RESTART_LEN,
		                   p->rx + SSQ_PEER_RESTART_LEN, why, whylen))
			return -EBADMSG;
		rc = proto_peer_decode_restart(p->rx, SSQ_PEER_RESTART_LEN,
		                               (uint16_t)d->opt.peer_queues, &r, why,
		                               whylen);
		if (rc)
			return rc;
		if (r.kind == PROTO_LINK_CLOSE)
			return 1; /* the caller agrees or says BUSY */
		if (r.kind >= PROTO_LINK_BUSY) {
			p->remote_busy = r.kind == PROTO_LINK_BUSY;
		} else if (r.kind == PROTO_RESTART_ASK) {
			rc = restart_ask(d, p, p->q0 + r.index, &r, why, whylen);
			if (rc)
				return rc;
		} else if (d->queues[p->q0 + r.index].link_seq == r.seq) {
			restart_done(d, p->q0 + r.index, &r);
		}
		/* An answer to an ask that yielded or was given up: nothing. */
	}
	return 0;
}

int ssqd_link_restart_overdue(const struct ssqd *d, const struct ssqd_peer *p,
                              uint64_t now_ns, char *why, size_t whylen)
{
	unsigned qi;

	for (qi = p->q0; qi < p->q0 + d->opt.peer_queues; qi++)
		if (d->queues[qi].link_seq && now_ns >= d->queues[qi].link_deadline_ns) {
			snprintf(why, whylen,
			         "it did not answer q%u's restart within %u ms", qi,
			         LINK_RESTART_MS);
			return 1;
		}
	return 0;
}

void ssqd_link_restart_abandon(struct ssqd *d, struct ssqd_peer *p)
{
	unsigned qi;

	for (qi = p->q0; qi < p->q0 + d->opt.peer_queues; qi++) {
		if (!d->queues[qi].link_seq)
			continue;
		d->queues[qi].link_seq = 0;
		ssqd_queue_fence(d, qi);
	}
	p->rx_len = 0;
}

int ssqd_link_ask_close(struct ssqd *d, struct ssqd_peer *p, char *why, size_t whylen)
{
	struct proto_peer_restart r;

	memset(&r, 0, sizeof(r));
	r.kind = PROTO_LINK_CLOSE;
	return send_restart(d, p, &r, why, whylen);
}

int ssqd_link_tell_busy(struct ssqd *d, struct ssqd_peer *p, int busy, char *why,
                        size_t whylen)
{
	struct proto_peer_restart r;
	int rc;

	if (p->busy_told == busy)
		return 0;
	memset(&r, 0, sizeof(r));
	r.kind = busy ? PROTO_LINK_BUSY : PROTO_LINK_IDLE;
	rc = send_restart(d, p, &r, why, whylen);
	if (!rc)
		p->busy_told = busy;
	return rc;
}
