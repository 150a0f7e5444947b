/* SPDX-License-Identifier: MIT */
/*
 * Shared pieces of the tests that play a stranger (or a peer) on an ssqd's
 * peer port with --peer-key: a key file, a read of exactly n bytes, the
 * daemon's transcript MAC, a connection from a chosen 127.0.0.x.
 */
#ifndef SSQ_TEST_PEER_AUTH_FLOW_H
#define SSQ_TEST_PEER_AUTH_FLOW_H

#include <endian.h>
#include <poll.h>
#include <sys/random.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include "cluster_flow.h"
#include "ctrl/proto/peer_msg.h"

/* A key file at @path: @len random bytes, mode @mode. 0, or -1. */
static inline int write_key(const char *path, size_t len, mode_t mode)
{
	uint8_t k[64];
	int fd;

	if (getrandom(k, len, 0) != (ssize_t)len)
		return -1;
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || write(fd, k, len) != (ssize_t)len || fchmod(fd, mode)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* The key in the file at @path, up to @max bytes: its length, 0 if none. */
static inline size_t read_key(const char *path, uint8_t *k, size_t max)
{
	int fd = open(path, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, k, max) : -1;

	if (fd >= 0)
		close(fd);
	return n > 0 ? (size_t)n : 0;
}

/* Exactly @n bytes within @secs: @n, or what came before a close or the time. */
static inline size_t read_n(int s, uint8_t *buf, size_t n, double secs)
{
	double t0 = now_s();
	size_t got = 0;

	while (got < n && now_s() - t0 < secs) {
		struct pollfd pfd = { s, POLLIN, 0 };
		ssize_t r;

		if (poll(&pfd, 1, 100) <= 0)
			continue;
		r = recv(s, buf + got, n - got, 0);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	return got;
}

/* What the daemon MACs (peers/auth.c): label, nonces, names, gen, count. */
static inline void auth_mac(const uint8_t *key, size_t keylen, const char *label,
                            const uint8_t *nd, const uint8_t *na, const char *name_d,
                            const char *name_a, uint32_t gen, uint16_t count,
                            uint8_t *out)
{
	uint8_t t[16 + 64 + 64 + 6];
	unsigned len = 0;

	memset(t, 0, sizeof(t));
	memcpy(t, label, strlen(label));
	memcpy(t + 16, nd, 32);
	memcpy(t + 48, na, 32);
	memcpy(t + 80, name_d, strlen(name_d));
	memcpy(t + 112, name_a, strlen(name_a));
	gen = htobe32(gen);
	memcpy(t + 144, &gen, 4);
	count = htobe16(count);
	memcpy(t + 148, &count, 2);
	HMAC(EVP_sha256(), key, (int)keylen, t, sizeof(t), out, &len);
}

/* A connection to peer port @port from @src (127.0.0.x), or -1. */
static inline int knock_port(const char *src, uint16_t port)
{
	struct sockaddr_in sa;
	int s = socket(AF_INET, SOCK_STREAM, 0);

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	inet_pton(AF_INET, src, &sa.sin_addr);
	if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa))) {
		if (s >= 0)
			close(s);
		return -1;
	}
	return t_tcp_connect(s, port);
}

#endif
