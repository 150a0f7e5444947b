/* SPDX-License-Identifier: MIT */
/*
 * A peer's address, looked up without holding up the serve loop. A host
 * name's lookup can take the resolver's whole timeout (a DNS server that
 * drops queries: resolv.conf's timeout, 5 s by default, for each of the A
 * and AAAA queries), and every client of ssqd would wait that long at
 * each dial. So a name is looked up with getaddrinfo_a (GAI_NOWAIT, on
 * glibc's own thread), the tick asks gai_error until it is done, and the
 * answer is kept: a dial that fails marks it stale, and the next dial uses
 * it while a fresh lookup runs (the peer may have moved). A numeric
 * address needs no lookup.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "ctrl/daemon/peers/peers.h"

/* A host name's lookup: glibc's thread writes into it while busy. */
struct ssqd_lookup {
	int busy;
	struct gaicb cb, *list[1];
	struct addrinfo hints;
	char host[SSQD_HOST_MAX], port[SSQD_PORT_MAX];
};

/* @p's first answer kept for its dials. */
static void keep(struct ssqd_peer *p, const struct addrinfo *ai)
{
	memcpy(&p->lk_sa, ai->ai_addr, ai->ai_addrlen);
	p->lk_salen = ai->ai_addrlen;
	p->lk_have = 1;
	p->lk_stale = 0;
}

/* The lookup under way: done yet? 0 (kept, or failed: *@err), or EAI_INPROGRESS. */
static int lookup_done(struct ssqd_peer *p, int *err)
{
	struct ssqd_lookup *lk = p->lk;
	int rc = gai_error(&lk->cb);

	if (rc == EAI_INPROGRESS)
		return rc;
	lk->busy = 0;
	*err = rc;
	if (rc == 0 && lk->cb.ar_result)
		keep(p, lk->cb.ar_result);
	if (lk->cb.ar_result)
		freeaddrinfo(lk->cb.ar_result);
	lk->cb.ar_result = NULL;
	return 0;
}

int ssqd_peer_lookup(struct ssqd_peer *p, char *why, size_t whylen)
{
	struct addrinfo hints, *res = NULL;
	struct ssqd_lookup *lk;
	const char *bad;
	char host[SSQD_HOST_MAX], port[SSQD_PORT_MAX];
	int err = 0;

	if (p->lk && p->lk->busy && lookup_done(p, &err) == EAI_INPROGRESS)
		goto waiting;
	if (err && !p->lk_have) {
		snprintf(why, whylen, "looking up %s: %s", p->addr, gai_strerror(err));
		return -EHOSTUNREACH;
	}
	if (p->lk_have && !p->lk_stale)
		return 0;
	if (ssqd_link_split(p->addr, host, port, &bad)) {
		snprintf(why, whylen, "'%s': %s", p->addr, bad);
		return -EINVAL;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
	if (getaddrinfo(host, port, &hints, &res) == 0) {
		keep(p, res); /* numeric: no lookup at all */
		freeaddrinfo(res);
		return 0;
	}
	/* A name: looked up on glibc's thread, into buffers that outlive it. */
	if (!p->lk && !(p->lk = calloc(1, sizeof(*p->lk)))) {
		snprintf(why, whylen, "looking up %s: out of memory", p->addr);
		return -ENOMEM;
	}
	lk = p->lk;
	memset(lk, 0, sizeof(*lk));
	snprintf(lk->host, sizeof(lk->host), "%s", host);
	snprintf(lk->port, sizeof(lk->port), "%s", port);
	lk->hints.ai_family = AF_UNSPEC;
	lk->hints.ai_socktype = SOCK_STREAM;
	lk->cb.ar_name = lk->host;
	lk->cb.ar_service = lk->port;
	lk->cb.ar_request = &lk->hints;
	lk->list[0] = &lk->cb;
	err = getaddrinfo_a(GAI_NOWAIT, lk->list, 1, NULL);
	if (err) {
		if (p->lk_have)
			return 0; /* the old answer, until a lookup can start */
		snprintf(why, whylen, "looking up %s: %s", p->addr, gai_strerror(err));
		return -EHOSTUNREACH;
	}
	lk->busy = 1;
waiting:
	if (p->lk_have)
		return 0; /* the old answer meanwhile */
	snprintf(why, whylen, "looking up %s", p->addr);
	return -EINPROGRESS;
}

void ssqd_peer_lookup_stale(struct ssqd_peer *p)
{
	p->lk_stale = 1;
}
