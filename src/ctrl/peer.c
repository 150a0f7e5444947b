/* SPDX-License-Identifier: MIT */
/* The rc_pingpong-style address exchange between two ssqd over TCP. */
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
#include "ctrl/peer.h"

static const uint8_t peer_magic[4] = { 'S', 'S', 'Q', 'P' };
/* In place of the first address: "no", and why (NUL-terminated text). */
static const uint8_t refuse_magic[4] = { 'S', 'S', 'Q', 'N' };

/* Wire layout, offsets in bytes; every integer big-endian. */
enum {
	OFF_MAGIC = 0,   /* 4 */
	OFF_VERSION = 4, /* 2 */
	OFF_COUNT = 6,   /* 2 */
	OFF_INDEX = 8,   /* 2 */
	OFF_LID = 10,    /* 2 */
	OFF_QPN = 12,    /* 4 */
	OFF_PSN = 16,    /* 4 */
	OFF_GID = 20,    /* 16 */
	OFF_IOVA = 36,   /* 8 */
	OFF_RKEY = 44,   /* 4 */
	OFF_NAME = 48,   /* 32 */
	OFF_REASON = 8,  /* a refusal: the reason, to the end */
};
_Static_assert(OFF_NAME + SSQ_NAME_MAX == SSQ_PEER_MSG_LEN, "peer message layout");

static void put16(uint8_t *p, uint16_t v)
{
	v = htobe16(v);
	memcpy(p, &v, 2);
}
static void put32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, 4);
}
static void put64(uint8_t *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, 8);
}
static uint16_t get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return be16toh(v);
}
static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return be32toh(v);
}
static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return be64toh(v);
}

void ssq_peer_encode(const struct ssq_peer_addr *a, uint8_t *out)
{
	memset(out, 0, SSQ_PEER_MSG_LEN);
	memcpy(out + OFF_MAGIC, peer_magic, 4);
	put16(out + OFF_VERSION, SSQ_PEER_VERSION);
	put16(out + OFF_COUNT, a->count);
	put16(out + OFF_INDEX, a->index);
	put16(out + OFF_LID, a->lid);
	put32(out + OFF_QPN, a->qpn);
	put32(out + OFF_PSN, a->psn);
	memcpy(out + OFF_GID, a->gid, 16);
	put64(out + OFF_IOVA, a->data_iova);
	put32(out + OFF_RKEY, a->data_rkey);
	memcpy(out + OFF_NAME, a->name, strnlen(a->name, SSQ_NAME_MAX - 1));
}

int ssq_peer_decode(const uint8_t *buf, size_t n, struct ssq_peer_addr *a, char *why,
                    size_t whylen)
{
	if (n != SSQ_PEER_MSG_LEN) {
		snprintf(why, whylen, "peer message of %zu bytes, expected %u", n,
		         SSQ_PEER_MSG_LEN);
		return -EBADMSG;
	}
	if (!memcmp(buf + OFF_MAGIC, refuse_magic, 4)) {
		char reason[SSQ_PEER_MSG_LEN - OFF_REASON];
		size_t i;

		if (!memchr(buf + OFF_REASON, 0, sizeof(reason))) {
			snprintf(why, whylen,
			         "peer refused, with an unterminated reason");
			return -EBADMSG;
		}
		/* Shown on a terminal: nothing but printable ASCII. */
		for (i = 0; buf[OFF_REASON + i]; i++)
			reason[i] =
			    buf[OFF_REASON + i] >= 0x20 && buf[OFF_REASON + i] < 0x7f
			        ? (char)buf[OFF_REASON + i]
			        : '?';
		reason[i] = 0;
		snprintf(why, whylen, "peer refused: %s", reason);
		return -ECONNREFUSED;
	}
	if (memcmp(buf + OFF_MAGIC, peer_magic, 4)) {
		snprintf(why, whylen, "peer message without the SSQP magic");
		return -EBADMSG;
	}
	if (get16(buf + OFF_VERSION) != SSQ_PEER_VERSION) {
		snprintf(why, whylen, "peer speaks exchange version %u, this ssqd %u",
		         get16(buf + OFF_VERSION), SSQ_PEER_VERSION);
		return -EPROTO;
	}
	memset(a, 0, sizeof(*a));
	a->count = get16(buf + OFF_COUNT);
	a->index = get16(buf + OFF_INDEX);
	a->lid = get16(buf + OFF_LID);
	a->qpn = get32(buf + OFF_QPN);
	a->psn = get32(buf + OFF_PSN);
	memcpy(a->gid, buf + OFF_GID, 16);
	a->data_iova = get64(buf + OFF_IOVA);
	a->data_rkey = get32(buf + OFF_RKEY);
	if (!a->count || a->count > SSQ_MAX_QUEUES || a->index >= a->count) {
		snprintf(why, whylen, "peer queue %u of %u (at most %u queues)", a->index,
		         a->count, SSQ_MAX_QUEUES);
		return -EBADMSG;
	}
	if (a->qpn > 0xffffff || a->psn > 0xffffff) {
		snprintf(why, whylen, "peer QPN 0x%x or PSN 0x%x is wider than 24 bits",
		         a->qpn, a->psn);
		return -EBADMSG;
	}
	if (!memchr(buf + OFF_NAME, 0, SSQ_NAME_MAX) || !buf[OFF_NAME]) {
		snprintf(why, whylen, "peer queue name empty or not NUL-terminated");
		return -EBADMSG;
	}
	/* Only the string: bytes after its NUL are not part of the message. */
	memcpy(a->name, buf + OFF_NAME, strlen((const char *)buf + OFF_NAME));
	return 0;
}

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

int ssq_peer_exchange(int sock, const struct ssq_peer_addr *local,
                      struct ssq_peer_addr *remote, unsigned n, int timeout_ms, char *why,
                      size_t whylen)
{
	uint8_t buf[SSQ_PEER_MSG_LEN];
	unsigned i;
	int rc;

	for (i = 0; i < n; i++) {
		ssq_peer_encode(&local[i], buf);
		if (send(sock, buf, sizeof(buf), MSG_NOSIGNAL) != (ssize_t)sizeof(buf)) {
			rc = -errno;
			snprintf(why, whylen, "sending queue %u to the peer: %s", i,
			         strerror(errno));
			return rc;
		}
	}
	for (i = 0; i < n; i++) {
		rc = read_full(sock, buf, sizeof(buf), timeout_ms, why, whylen);
		if (rc)
			return rc;
		rc = ssq_peer_decode(buf, sizeof(buf), &remote[i], why, whylen);
		if (rc)
			return rc;
		if (remote[i].count != n || remote[i].index != i) {
			snprintf(why, whylen,
			         "peer sent queue %u of %u, expected %u of %u",
			         remote[i].index, remote[i].count, i, n);
			return -EBADMSG;
		}
	}
	return 0;
}

int ssq_peer_listen(uint16_t port, char *why, size_t whylen)
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
	char host[256], *colon, *end;
	struct addrinfo hints;
	long port;
	int rc;

	if (!host_port || strlen(host_port) >= sizeof(host)) {
		snprintf(why, whylen, "--connect wants HOST:PORT");
		return -EINVAL;
	}
	strcpy(host, host_port);
	colon = strrchr(host, ':');
	if (!colon || colon == host) {
		snprintf(why, whylen, "--connect '%s': want HOST:PORT", host_port);
		return -EINVAL;
	}
	*colon = 0;
	port = strtol(colon + 1, &end, 10);
	if (*end || port < 1 || port > 65535) {
		snprintf(why, whylen, "--connect '%s': port must be 1..65535", host_port);
		return -EINVAL;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	rc = getaddrinfo(host, colon + 1, &hints, res);
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

int ssq_peer_connect(const char *host_port, int timeout_ms, char *why, size_t whylen)
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

int ssq_peer_connect_start(const char *host_port, char *why, size_t whylen)
{
	struct addrinfo *res = NULL;
	int s, rc = resolve(host_port, &res, why, whylen);

	if (rc)
		return rc;
	/* The first address only: a retry comes soon, and resolves again. */
	s = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
	           res->ai_protocol);
	if (s < 0) {
		rc = -errno;
		snprintf(why, whylen, "socket: %s", strerror(errno));
	} else if (connect(s, res->ai_addr, res->ai_addrlen) && errno != EINPROGRESS) {
		rc = -errno;
		snprintf(why, whylen, "connecting to %s: %s", host_port, strerror(errno));
		close(s);
	} else {
		rc = s;
	}
	freeaddrinfo(res);
	return rc;
}

int ssq_peer_connect_finish(int s, const char *host_port, char *why, size_t whylen)
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

void ssq_peer_keepalive(int s)
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

void ssq_peer_refuse(int s, const char *reason, int drain_ms)
{
	uint8_t buf[SSQ_PEER_MSG_LEN];
	struct timespec t0, t;

	memset(buf, 0, sizeof(buf));
	memcpy(buf + OFF_MAGIC, refuse_magic, 4);
	put16(buf + OFF_VERSION, SSQ_PEER_VERSION);
	memcpy(buf + OFF_REASON, reason,
	       strnlen(reason, SSQ_PEER_MSG_LEN - OFF_REASON - 1));
	(void)!send(s, buf, sizeof(buf), MSG_NOSIGNAL);
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
