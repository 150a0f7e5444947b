/* SPDX-License-Identifier: MIT */
/*
 * Checking a peer's "HOST:PORT" (peers/peers.h) when ssqd starts, so that a
 * typo is named then rather than at every dial. getaddrinfo is lenient in
 * ways a peer address should not be: its numeric form follows inet_aton,
 * so "1" is 0.0.0.1 and "127.1" is 127.0.0.1, and a name it cannot parse
 * ("a b", "300.1.1.1") goes to the resolver to fail there; strtol read
 * "+1" and " 1" as port 1. Only AI_NUMERICHOST lookups run here: no DNS.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include "ctrl/daemon/peers/peers.h"

/*
 * A DNS name: labels of 1..63 letters, digits, '-' (not first or last) and
 * '_' (resolvers pass it), 253 characters at most, one final dot allowed
 * (the root). The last label all digits is a mistyped IPv4 address
 * ("300.1.1.1", "127.1"), which the resolver would only fail to find.
 */
static int name_ok(const char *h)
{
	size_t n = strlen(h), i, start = 0, last = 0;

	if (n && h[n - 1] == '.')
		n--;
	if (!n || n > 253)
		return 0;
	for (i = 0; i <= n; i++) {
		if (i < n && h[i] != '.') {
			if (!isalnum((unsigned char)h[i]) && h[i] != '-' && h[i] != '_')
				return 0;
			continue;
		}
		if (i == start || i - start > 63 || h[start] == '-' || h[i - 1] == '-')
			return 0;
		last = start;
		start = i + 1;
	}
	for (i = last; i < n && isdigit((unsigned char)h[i]); i++)
		;
	return i < n;
}

/* A numeric IPv6 address (scope id allowed), not "::". */
static int v6_ok(const char *h, const char **bad)
{
	struct addrinfo hints, *res = NULL;
	struct in6_addr a;
	int ok;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_INET6;
	hints.ai_flags = AI_NUMERICHOST;
	ok = getaddrinfo(h, NULL, &hints, &res) == 0;
	if (res)
		freeaddrinfo(res);
	if (!ok) {
		*bad = "what is in [ ] is not an IPv6 address";
		return 0;
	}
	if (inet_pton(AF_INET6, h, &a) == 1 && IN6_IS_ADDR_UNSPECIFIED(&a)) {
		*bad = "host :: is the unspecified address, not a peer's";
		return 0;
	}
	return 1;
}

static int host_ok(const char *h, int bracketed, const char **bad)
{
	struct in_addr a;

	if (bracketed)
		return v6_ok(h, bad);
	if (inet_pton(AF_INET, h, &a) == 1) {
		if (a.s_addr == htonl(INADDR_ANY)) {
			*bad = "host 0.0.0.0 is the unspecified address, not a peer's";
			return 0;
		}
		return 1;
	}
	if (!name_ok(h)) {
		*bad = "the host is neither an IPv4 address (a.b.c.d) nor a DNS name "
		       "(letters, digits, '-' and '_' between dots)";
		return 0;
	}
	return 1;
}

/* "1".."65535" in decimal digits only: no sign, space, or 0x. */
static int port_ok(const char *s, char port[SSQD_PORT_MAX])
{
	unsigned long n = 0;
	size_t i;

	for (i = 0; s[i]; i++) {
		if (s[i] < '0' || s[i] > '9')
			return 0;
		n = n * 10 + (unsigned long)(s[i] - '0');
		if (n > 65535)
			return 0;
	}
	if (!i || !n)
		return 0;
	snprintf(port, SSQD_PORT_MAX, "%lu", n);
	return 1;
}

int ssqd_link_split(const char *host_port, char host[SSQD_HOST_MAX],
                    char port[SSQD_PORT_MAX], const char **bad)
{
	const char *h = host_port, *end, *colon;
	int bracketed = 0;

	if (!host_port || !*host_port) {
		*bad = "empty: want HOST:PORT";
		return -EINVAL;
	}
	if (*h == '[') {
		bracketed = 1;
		h++;
		end = strchr(h, ']');
		if (!end) {
			*bad = "no ']' closes the IPv6 address: want [ADDR]:PORT";
			return -EINVAL;
		}
		colon = end + 1;
		if (*colon != ':') {
			*bad = "want [ADDR]:PORT";
			return -EINVAL;
		}
	} else {
		colon = strrchr(h, ':');
		if (!colon) {
			*bad = "want HOST:PORT";
			return -EINVAL;
		}
		end = colon;
		if (memchr(h, ':', (size_t)(end - h))) {
			*bad = "an IPv6 address goes in brackets: [ADDR]:PORT";
			return -EINVAL;
		}
	}
	if (end == h) {
		*bad = "want HOST:PORT (the host is empty)";
		return -EINVAL;
	}
	if ((size_t)(end - h) >= SSQD_HOST_MAX) {
		*bad = "the host is longer than 255 characters";
		return -EINVAL;
	}
	if (!port_ok(colon + 1, port)) {
		*bad = "port must be 1..65535 in decimal digits";
		return -EINVAL;
	}
	memcpy(host, h, (size_t)(end - h));
	host[end - h] = 0;
	return host_ok(host, bracketed, bad) ? 0 : -EINVAL;
}
