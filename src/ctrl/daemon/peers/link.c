/* SPDX-License-Identifier: MIT */
/*
 * The TCP side of the peer exchange between two ssqd, as rc_pingpong does it:
 * listen, connect (blocking or not), swap one peer message per queue, refuse.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include "ctrl/daemon/peers/peers.h"

/* Exactly @n bytes, each wait bounded by @timeout_ms. */
static int read_full(int sock, uint8_t *buf, size_t n, int timeout_ms, char *why,
                     size_t whylen)
{
	size_t got = 0;

	while (got < n) {
		struct pollfd pfd = { sock, POLLIN, 0 };
		ssize_t r;
		int rc = poll(&pfd, 1, timeout_ms);

		if (rc < 0 && errno == EINTR)
			continue;
		if (rc <= 0) {
			snprintf(why, whylen, "peer sent %zu of %zu bytes within %d ms",
			         got, n, timeout_ms);
			return rc < 0 ? -errno : -ETIMEDOUT;
		}
		r = recv(sock, buf + got, n - got, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			snprintf(why, whylen,
			         "peer closed the connection after %zu of %zu bytes", got,
			         n);
			return -ENOTCONN;
		}
		got += (size_t)r;
	}
	return 0;
}

/*
 * Read and drop what the peer has sent, until it pauses for @ms: closing
 * with its bytes unread would make the kernel reset the connection, and
 * the peer would see the reset rather than our close.
 */
static void discard_pending(int sock, int ms)
{
	uint8_t junk[512];
	struct pollfd pfd = { sock, POLLIN, 0 };

	while (poll(&pfd, 1, ms) > 0 && recv(sock, junk, sizeof(junk), MSG_DONTWAIT) > 0)
		;
}

/* @buf's @n bytes and, with @auth on, their MAC after them: the length to send. */
static size_t seal(struct ssqd_link_auth *auth, uint8_t *buf, size_t n)
{
	if (!ssqd_auth_trailer(auth))
		return n;
	/* A MAC that cannot be made is sent as zeros: the peer refuses it. */
	if (ssqd_auth_seal(auth, buf, n, buf + n))
		memset(buf + n, 0, SSQ_PEER_MAC_LEN);
	return n + SSQ_PEER_MAC_LEN;
}

int ssqd_link_send(int sock, const struct proto_peer_addr *local, unsigned n,
                   struct ssqd_link_auth *auth, char *why, size_t whylen)
{
	uint8_t buf[SSQ_PEER_MSG_LEN + SSQ_PEER_MAC_LEN];
	unsigned i;

	for (i = 0; i < n; i++) {
		size_t len;

		proto_peer_encode(&local[i], buf);
		len = seal(auth, buf, SSQ_PEER_MSG_LEN);
		if (send(sock, buf, len, MSG_NOSIGNAL) != (ssize_t)len) {
			int rc = -errno;

			snprintf(why, whylen, "sending queue %u to the peer: %s", i,
			         strerror(errno));
			return rc;
		}
	}
	return 0;
}

int ssqd_link_recv(int sock, struct proto_peer_addr *remote, unsigned n, int timeout_ms,
                   struct ssqd_link_auth *auth, char *why, size_t whylen)
{
	uint8_t buf[SSQ_PEER_MSG_LEN + SSQ_PEER_MAC_LEN];
	unsigned i;
	int rc;

	for (i = 0; i < n; i++) {
		int len;

		/*
		 * The header first: it says the version, hence the length, so
		 * a peer of another version is refused with that reason rather
		 * than waited on for bytes it will never send.
		 */
		rc = read_full(sock, buf, SSQ_PEER_HEAD_LEN, timeout_ms, why, whylen);
		if (rc)
			return rc;
		len = proto_peer_msg_len(buf, why, whylen);
		if (len < 0) {
			discard_pending(sock, 100);
			return len;
		}
		rc = read_full(sock, buf + SSQ_PEER_HEAD_LEN,
		               (size_t)len - SSQ_PEER_HEAD_LEN, timeout_ms, why, whylen);
		if (rc)
			return rc;
		/* --peer-key: the MAC after each address, and after a refusal. */
		if (ssqd_auth_trailer(auth) &&
		    (len == (int)SSQ_PEER_MSG_LEN || len == (int)SSQ_PEER_REFUSAL_LEN)) {
			rc = read_full(sock, buf + len, SSQ_PEER_MAC_LEN, timeout_ms, why,
			               whylen);
			if (!rc && ssqd_auth_open(auth, buf, (size_t)len, buf + len, why,
			                          whylen))
				rc = -EBADMSG;
			if (rc)
				return rc;
		}
		rc = proto_peer_decode(buf, (size_t)len, &remote[i], why, whylen);
		if (rc == PROTO_PEER_WANT && !i)
			return rc; /* a note, not an exchange */
		if (rc == PROTO_PEER_WANT) {
			snprintf(why, whylen, "peer sent a want amid its addresses");
			return -EBADMSG;
		}
		if (rc)
			return rc;
		rc = ssqd_link_check_addr(&remote[i], i, n, why, whylen);
		if (rc)
			return rc;
	}
	return 0;
}

int ssqd_link_check_addr(const struct proto_peer_addr *a, unsigned i, unsigned n,
                         char *why, size_t whylen)
{
	if (a->count == n && a->index == i)
		return 0;
	snprintf(why, whylen,
	         "peer sent queue %u of %u, expected %u of %u (both daemons need the "
	         "same --queues)",
	         a->index, a->count, i, n);
	return -EBADMSG;
}

int ssqd_link_decode_addrs(const uint8_t *buf, unsigned n, struct ssqd_link_auth *auth,
                           struct proto_peer_addr *remote, char *why, size_t whylen)
{
	unsigned i, step = SSQ_PEER_MSG_LEN + ssqd_auth_trailer(auth);
	int rc;

	for (i = 0; i < n; i++) {
		const uint8_t *m = buf + i * step;

		/* The MAC first: nothing of a message is believed before it. */
		if (ssqd_auth_trailer(auth) &&
		    ssqd_auth_open(auth, m, SSQ_PEER_MSG_LEN, m + SSQ_PEER_MSG_LEN, why,
		                   whylen))
			return -EBADMSG;
		rc = proto_peer_decode(m, SSQ_PEER_MSG_LEN, &remote[i], why, whylen);
		if (rc > 0) {
			snprintf(why, whylen, "peer sent a want amid its addresses");
			rc = -EBADMSG;
		}
		if (!rc)
			rc = ssqd_link_check_addr(&remote[i], i, n, why, whylen);
		if (rc)
			return rc;
	}
	return 0;
}

int ssqd_link_refusal(const uint8_t *buf, struct ssqd_link_auth *auth, char *why,
                      size_t whylen)
{
	struct proto_peer_addr a;

	if (ssqd_auth_trailer(auth) &&
	    ssqd_auth_open(auth, buf, SSQ_PEER_REFUSAL_LEN, buf + SSQ_PEER_REFUSAL_LEN,
	                   why, whylen)) {
		snprintf(why, whylen,
		         "a refusal that fails its MAC on the authenticated link: not "
		         "the peer's word, taken as a reset");
		return -EBADMSG;
	}
	return proto_peer_decode(buf, SSQ_PEER_REFUSAL_LEN, &a, why, whylen);
}

int ssqd_link_send_want(int sock, const char *name, unsigned n,
                        struct ssqd_link_auth *auth, char *why, size_t whylen)
{
	uint8_t buf[SSQ_PEER_WANT_LEN + SSQ_PEER_MAC_LEN];
	size_t len;

	proto_peer_encode_want(name, (uint16_t)n, buf);
	len = seal(auth, buf, SSQ_PEER_WANT_LEN);
	if (send(sock, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)len)
		return 0;
	snprintf(why, whylen, "sending a want: %s", strerror(errno));
	return -EIO;
}

int ssqd_link_exchange(int sock, const struct proto_peer_addr *local,
                       struct proto_peer_addr *remote, unsigned n, int timeout_ms,
                       struct ssqd_link_auth *auth, char *why, size_t whylen)
{
	int rc = ssqd_link_send(sock, local, n, auth, why, whylen);

	return rc ? rc : ssqd_link_recv(sock, remote, n, timeout_ms, auth, why, whylen);
}

/*
 * --connect's first link, made at start and waited for: the dialer's half
 * of peers/auth.c's handshake, here because it reads as the blocking
 * exchange does.
 */
int ssqd_link_auth_dial(struct ssqd *d, struct ssqd_peer *p, int s, int timeout_ms,
                        char *why, size_t whylen)
{
	struct proto_peer_auth c;
	struct proto_peer_addr a;
	uint8_t buf[SSQ_PEER_AUTH_LEN];
	int rc = ssqd_auth_hello(d, p, s, why, whylen), len, fd = p->fd;

	if (!rc)
		rc = read_full(s, buf, SSQ_PEER_HEAD_LEN, timeout_ms, why, whylen);
	if (rc)
		return rc;
	len = proto_peer_msg_len(buf, why, whylen);
	if (len == (int)SSQ_PEER_REFUSAL_LEN || len == (int)SSQ_PEER_AUTH_LEN) {
		rc = read_full(s, buf + SSQ_PEER_HEAD_LEN,
		               (size_t)len - SSQ_PEER_HEAD_LEN, timeout_ms, why, whylen);
		if (rc)
			return rc;
	} else if (len >= 0) {
		snprintf(why, whylen,
		         "the peer answered our authentication with no challenge (has "
		         "it --peer-key?)");
		return -EBADMSG;
	}
	if (len == (int)SSQ_PEER_REFUSAL_LEN)
		return proto_peer_decode(buf, (size_t)len, &a, why, whylen);
	if (len < 0)
		return len;
	rc = proto_peer_decode_auth(buf, SSQ_PEER_AUTH_LEN, &c, why, whylen);
	if (rc)
		return rc;
	p->fd = s; /* ssqd_auth_answer's PROOF goes out on it */
	rc = ssqd_auth_answer(d, p, &c, why, whylen);
	p->fd = fd;
	return rc;
}

int ssqd_link_listen(uint16_t port, char *why, size_t whylen)
{
	struct sockaddr_in6 sa;
	int one = 1, s = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0), err;

	if (s < 0) {
		err = errno;
		snprintf(why, whylen, "socket: %s", strerror(err));
		return -err;
	}
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&sa, 0, sizeof(sa));
	sa.sin6_family = AF_INET6;
	sa.sin6_port = htobe16(port);
	sa.sin6_addr = in6addr_any;
	if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(s, 4) < 0) {
		err = errno;
		snprintf(why, whylen, "listening on TCP port %u: %s", port,
		         strerror(err));
		close(s);
		return -err;
	}
	return s;
}

/* Resolve "HOST:PORT" (as --connect names it) into @res. */
static int resolve(const char *host_port, struct addrinfo **res, char *why, size_t whylen)
{
	char host[SSQD_HOST_MAX], port[SSQD_PORT_MAX];
	const char *bad;
	struct addrinfo hints;
	int rc;

	if (ssqd_link_split(host_port, host, port, &bad)) {
		snprintf(why, whylen, "--connect '%s': %s", host_port ? host_port : "",
		         bad);
		return -EINVAL;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	rc = getaddrinfo(host, port, &hints, res);
	if (rc) {
		snprintf(why, whylen, "--connect '%s': %s", host_port, gai_strerror(rc));
		return -EHOSTUNREACH;
	}
	return 0;
}

static void set_nodelay(int s)
{
	int one = 1;

	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int ssqd_link_connect(const char *host_port, int timeout_ms, char *why, size_t whylen)
{
	struct addrinfo *res = NULL, *ai;
	struct timespec t0, t;
	int s = -1, rc;

	rc = resolve(host_port, &res, why, whylen);
	if (rc)
		return rc;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		for (ai = res; ai; ai = ai->ai_next) {
			s = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
			           ai->ai_protocol);
			if (s < 0)
				continue;
			if (!connect(s, ai->ai_addr, ai->ai_addrlen))
				goto done;
			close(s);
			s = -1;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >=
		    timeout_ms)
			break;
		usleep(100 * 1000);
	}
	snprintf(why, whylen, "could not connect to %s within %d ms", host_port,
	         timeout_ms);
	freeaddrinfo(res);
	return -ECONNREFUSED;
done:
	freeaddrinfo(res);
	set_nodelay(s);
	return s;
}

int ssqd_link_connect_start(const struct sockaddr *sa, socklen_t salen,
                            const char *host_port, char *why, size_t whylen)
{
	int s = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), rc;

	if (s < 0) {
		rc = -errno;
		snprintf(why, whylen, "socket: %s", strerror(errno));
	} else if (connect(s, sa, salen) && errno != EINPROGRESS) {
		rc = -errno;
		snprintf(why, whylen, "connecting to %s: %s", host_port, strerror(errno));
		close(s);
	} else {
		rc = s;
	}
	return rc;
}

int ssqd_link_connect_finish(int s, const char *host_port, char *why, size_t whylen)
{
	int err = 0, fl;
	socklen_t len = sizeof(err);

	if (getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	if (err) {
		snprintf(why, whylen, "connecting to %s: %s", host_port, strerror(err));
		return -err;
	}
	fl = fcntl(s, F_GETFL);
	if (fl < 0 || fcntl(s, F_SETFL, fl & ~O_NONBLOCK) < 0) {
		err = errno;
		snprintf(why, whylen, "fcntl: %s", strerror(err));
		return -err;
	}
	set_nodelay(s);
	return 0;
}

void ssqd_link_keepalive(int s)
{
	/*
	 * A peer process that dies closes the connection at once; a peer host
	 * that vanishes says nothing: probe after 2 s idle, every 1 s, give up
	 * after 3 unanswered (about 5 s).
	 */
	int one = 1, idle = 2, intvl = 1, cnt = 3;

	setsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(s, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(s, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(s, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

void ssqd_link_refuse(int s, const char *reason, int drain_ms)
{
	uint8_t buf[SSQ_PEER_MSG_LEN];
	struct timespec t0, t;

	proto_peer_encode_refusal(reason, buf);
	_Static_assert(SSQ_PEER_REFUSAL_LEN <= sizeof(buf), "refusal fits");
	(void)!send(s, buf, SSQ_PEER_REFUSAL_LEN, MSG_NOSIGNAL);
	/*
	 * Read what the peer sent until it closes: closing with its addresses
	 * unread would make the kernel reset the connection, and the reset can
	 * overtake the refusal.
	 */
	shutdown(s, SHUT_WR);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd pfd = { s, POLLIN, 0 };
		int left;

		clock_gettime(CLOCK_MONOTONIC, &t);
		left = drain_ms - (int)((t.tv_sec - t0.tv_sec) * 1000 +
		                        (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0 || poll(&pfd, 1, left) <= 0 ||
		    recv(s, buf, sizeof(buf), MSG_DONTWAIT) <= 0)
			break;
	}
	close(s);
}
