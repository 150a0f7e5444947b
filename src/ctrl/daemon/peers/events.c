/* SPDX-License-Identifier: MIT */
/*
 * What poll() says of a peer's connection, state by state: a dial
 * connected or failed (DIALING), the acceptor's challenge (AUTHING), the
 * answer to our want (WANT_SENT), the peer's addresses (EXCHANGING), and
 * what a link says or its close (LINKED, CLOSING).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include "ctrl/daemon/util/util.h"
#include "ctrl/daemon/queues/queues.h"
#include "ctrl/daemon/peers/peers.h"
#include "ctrl/daemon/peers/link_life.h"
#include <systemd/sd-daemon.h> /* SD_ERR...: util/log.c */

/*
 * What the dialed peer sent so far: 0 while its addresses are not whole,
 * 1 once they are (in @remote), or -errno with @why (a refusal, a bad
 * message).
 */
static int exchange_read(struct ssqd *d, struct ssqd_peer *p,
                         struct proto_peer_addr *remote, char *why, size_t whylen)
{
	unsigned n = d->opt.peer_queues,
	         step = SSQ_PEER_MSG_LEN + ssqd_auth_trailer(&p->auth);
	/*
	 * The addresses and not a byte more: the link's next message (the
	 * peer's BUSY/IDLE, sent right after) may be in the socket already,
	 * and is ssqd_link_input's to read.
	 */
	ssize_t r = recv(p->fd, p->xbuf + p->xlen, n * step - p->xlen, MSG_DONTWAIT);
	int len, rc;

	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (r <= 0) {
		snprintf(why, whylen, "the peer closed the connection after %u bytes",
		         p->xlen);
		return -ENOTCONN;
	}
	p->xlen += (unsigned)r;
	if (p->xlen < SSQ_PEER_HEAD_LEN)
		return 0;
	len = proto_peer_msg_len(p->xbuf, why, whylen);
	if (len < 0)
		return len;
	if ((unsigned)len == SSQ_PEER_REFUSAL_LEN) {
		if (p->xlen < SSQ_PEER_REFUSAL_LEN + ssqd_auth_trailer(&p->auth))
			return 0;
		return ssqd_link_refusal(p->xbuf, &p->auth, why, whylen);
	}
	if ((unsigned)len != SSQ_PEER_MSG_LEN) {
		snprintf(why, whylen, "the peer answered with no address");
		return -EBADMSG;
	}
	if (p->xlen < n * step)
		return 0;
	rc = ssqd_link_decode_addrs(p->xbuf, n, &p->auth, remote, why, whylen);
	if (!rc)
		rc = ssqd_peer_check_sender(d, p, remote, why, whylen);
	return rc ? rc : 1;
}

/*
 * The answer to our want: the peer's close (it dials back), or a refusal
 * (it has no room: --max-active-peers all in use), which the opens
 * waiting here are told as -EBUSY (ssqd_peer_want).
 */
static void want_answer(struct ssqd *d, struct ssqd_peer *p, short revents)
{
	unsigned want = SSQ_PEER_REFUSAL_LEN + ssqd_auth_trailer(&p->auth);
	struct ssqd_link_auth auth;
	char why[200], who[64];
	ssize_t r;
	int rc;

	if (!(revents & (POLLIN | POLLERR | POLLHUP)))
		return;
	r = recv(p->fd, p->xbuf + p->xlen, want - p->xlen, MSG_DONTWAIT);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r > 0) {
		p->xlen += (unsigned)r;
		if (p->xlen < want)
			return;
	}
	auth = p->auth;             /* the link's, which its close forgets */
	ssqd_peer_close_link(d, p); /* retry_ns stays: asked again then */
	if (p->xlen < SSQ_PEER_REFUSAL_LEN)
		return;
	/*
	 * --peer-key: after the PROOF only a MACed message is the peer's; a
	 * refusal without its MAC, or failing it, could come from anyone on
	 * the path. Taken as what it proves, a reset (the want asked again at
	 * retry_ns), not as the peer's word: no -EBUSY with a stranger's
	 * reason for our opens.
	 */
	if (p->xlen < want) {
		snprintf(why, sizeof(why),
		         "a refusal without its MAC on the authenticated link: not "
		         "the peer's word, taken as a reset");
		rc = -EBADMSG;
	} else {
		rc = ssqd_link_refusal(p->xbuf, &auth, why, sizeof(why));
	}
	if (rc == -EBADMSG && want > SSQ_PEER_REFUSAL_LEN)
		fprintf(stderr, SD_WARNING "ssqd: %s: %s\n",
		        ssqd_peer_str(p, who, sizeof(who)), why);
	if (rc != -ECONNREFUSED)
		return;
	snprintf(p->last_why, sizeof(p->last_why), "%s",
	         strncmp(why, "peer refused: ", 14) ? why : why + 14);
	p->refused_ns = ssqd_now_ns();
	if (!d->opt.eager && !ssqd_peer_in_use(d, p))
		p->wanted = 0; /* asked again by the next open */
	fprintf(stderr, SD_WARNING "ssqd: %s refused to link: %s\n",
	        ssqd_peer_str(p, who, sizeof(who)), p->last_why);
}

/* EXCHANGING: the peer's addresses as they come; whole, its queues up. */
static void exchange_events(struct ssqd *d, struct ssqd_peer *p, short revents)
{
	struct proto_peer_addr remote[SSQ_MAX_QUEUES];
	char why[256], who[64];
	int s = p->fd, first = !p->ever, rc;

	if (!(revents & (POLLIN | POLLERR | POLLHUP)))
		return;
	rc = exchange_read(d, p, remote, why, sizeof(why));
	if (!rc)
		return;
	if (rc > 0)
		rc = ssqd_peer_finish(d, p, s, remote, why, sizeof(why));
	else if (p->ever)
		ssqd_peer_fence_all(d, p);
	if (rc) {
		ssqd_peer_link_to(d, p, SSQD_LINK_IDLE, -1);
		close(s);
		ssqd_peer_attempt_failed(p, why);
		return;
	}
	fprintf(stderr, "ssqd: %s: %s %s (attempt %u), %u queue(s) ready\n",
	        ssqd_peer_str(p, who, sizeof(who)),
	        first ? "linked to" : "reconnected to", p->addr, p->attempts,
	        d->opt.peer_queues);
}

/*
 * @p's connection @s in state @to, its next message read from the start
 * (p->xbuf) and awaited for @ms at most (then peer_tick acts: tick.c).
 */
static void await_peer(struct ssqd *d, struct ssqd_peer *p, enum ssqd_link_state to,
                       int s, unsigned ms)
{
	ssqd_peer_link_to(d, p, to, s);
	p->xlen = 0;
	p->retry_ns = ssqd_now_ns() + ms * 1000000ull;
}

/*
 * Connected (and, with --peer-key, authenticated): a side that dials sends
 * its addresses (EXCHANGING); the other side, dialing only to ask for a
 * link on demand, sends its want (WANT_SENT). 0, or -errno with @why (@s
 * then still open, the link's state unchanged).
 */
static int dial_go(struct ssqd *d, struct ssqd_peer *p, int s, char *why, size_t whylen)
{
	int rc;

	if (!p->dials) {
		rc = ssqd_link_send_want(s, d->opt.name, d->opt.peer_queues, &p->auth,
		                         why, whylen);
		if (rc)
			return rc;
		/*
		 * Our want delivered: the peer closes, and dials back, or
		 * refuses it first (no room there); read which. Asked again
		 * after WANT_AGAIN_MS if it does not dial.
		 */
		await_peer(d, p, SSQD_LINK_WANT_SENT, s, WANT_AGAIN_MS);
		return 0;
	}
	/* Ours out now; theirs read as they come (exchange_read). */
	rc = ssqd_peer_send_addrs(d, p, s, why, whylen);
	if (rc)
		return rc;
	await_peer(d, p, SSQD_LINK_EXCHANGING, s, SSQD_PEER_EXCHANGE_MS);
	return 0;
}

/* A dial given up: closed, and the next one after the backoff. */
static void dial_failed(struct ssqd *d, struct ssqd_peer *p, const char *why)
{
	int s = p->fd;

	memset(&p->auth, 0, sizeof(p->auth));
	ssqd_peer_link_to(d, p, SSQD_LINK_IDLE, -1);
	close(s);
	ssqd_peer_attempt_failed(p, why);
}

/*
 * DIALING: the dial connected or failed. Connected, a tenant's TENANT
 * goes out first (peers/tenant.c), then with --peer-key our HELLO
 * (AUTHING); without, dial_go.
 */
static void dial_events(struct ssqd *d, struct ssqd_peer *p, short revents)
{
	char why[256];
	int s = p->fd, rc;

	if (!(revents & (POLLOUT | POLLERR | POLLHUP)))
		return;
	/* Failed: nobody there; what is in flight ends as the transport decides. */
	rc = ssqd_link_connect_finish(s, p->addr, why, sizeof(why));
	/* A tenant's link: which tenant first, for the port's owner to route. */
	if (!rc)
		rc = ssqd_link_send_tenant(d, s, why, sizeof(why));
	if (!rc && d->peer_key_len) {
		rc = ssqd_auth_hello(d, p, s, why, sizeof(why));
		if (!rc) {
			await_peer(d, p, SSQD_LINK_AUTHING, s, SSQD_PEER_EXCHANGE_MS);
			return;
		}
	} else if (!rc) {
		rc = dial_go(d, p, s, why, sizeof(why));
		if (!rc)
			return;
	}
	dial_failed(d, p, why);
}

/*
 * AUTHING: the acceptor's CHALLENGE (or its refusal) as it comes; whole and
 * good, our PROOF, then dial_go. The CHALLENGE and not a byte more: the
 * acceptor says nothing else before our PROOF.
 */
static void auth_events(struct ssqd *d, struct ssqd_peer *p, short revents)
{
	struct proto_peer_auth c;
	struct proto_peer_addr a;
	char why[256];
	ssize_t r;
	int len, rc;

	if (!(revents & (POLLIN | POLLERR | POLLHUP)))
		return;
	r = recv(p->fd, p->xbuf + p->xlen, SSQ_PEER_AUTH_LEN - p->xlen, MSG_DONTWAIT);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) {
		snprintf(why, sizeof(why),
		         "the peer closed the connection after %u bytes of its "
		         "authentication",
		         p->xlen);
		dial_failed(d, p, why);
		return;
	}
	p->xlen += (unsigned)r;
	if (p->xlen < SSQ_PEER_HEAD_LEN)
		return;
	len = proto_peer_msg_len(p->xbuf, why, sizeof(why));
	if (len == (int)SSQ_PEER_REFUSAL_LEN) {
		if (p->xlen < SSQ_PEER_REFUSAL_LEN)
			return;
		(void)proto_peer_decode(p->xbuf, SSQ_PEER_REFUSAL_LEN, &a, why,
		                        sizeof(why));
		dial_failed(d, p, why);
		return;
	}
	if (len >= 0 && len != (int)SSQ_PEER_AUTH_LEN) {
		snprintf(why, sizeof(why),
		         "the peer answered our authentication with no challenge (has "
		         "it --peer-key?)");
		len = -EBADMSG;
	}
	if (len < 0) {
		dial_failed(d, p, why);
		return;
	}
	if (p->xlen < SSQ_PEER_AUTH_LEN)
		return;
	rc = proto_peer_decode_auth(p->xbuf, SSQ_PEER_AUTH_LEN, &c, why, sizeof(why));
	if (!rc)
		rc = ssqd_auth_answer(d, p, &c, why, sizeof(why));
	if (!rc)
		rc = dial_go(d, p, p->fd, why, sizeof(why));
	if (rc)
		dial_failed(d, p, why);
}

/* LINKED, CLOSING: what the link says (restarts, BUSY/IDLE, CLOSE), or its close. */
static void link_events(struct ssqd *d, struct ssqd_peer *p, short revents)
{
	char why[256];
	int rc;

	if (!(revents & (POLLIN | POLLHUP | POLLERR)))
		return;
	rc = ssqd_link_input(d, p, why, sizeof(why));
	if (rc > 0) {
		ssqd_peer_close_asked(d, p);
	} else if (rc && p->link == SSQD_LINK_CLOSING) { /* it agreed: closed its end */
		snprintf(why, sizeof(why), "%s", p->closing_why);
		ssqd_peer_close_idle(d, p, why);
	} else if (rc) {
		ssqd_peer_lost(d, p, why);
	}
}

void ssqd_peer_events(struct ssqd *d, struct ssqd_peer *p, short revents)
{
	switch (p->link) {
	case SSQD_LINK_IDLE:
		return;
	case SSQD_LINK_DIALING:
		dial_events(d, p, revents);
		return;
	case SSQD_LINK_AUTHING:
		auth_events(d, p, revents);
		return;
	case SSQD_LINK_WANT_SENT:
		want_answer(d, p, revents);
		return;
	case SSQD_LINK_EXCHANGING:
		exchange_events(d, p, revents);
		return;
	case SSQD_LINK_LINKED:
	case SSQD_LINK_CLOSING:
		link_events(d, p, revents);
		return;
	}
}
