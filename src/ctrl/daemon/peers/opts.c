/* SPDX-License-Identifier: MIT */
/* The cluster's options (peers/peers.h). */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "ctrl/daemon/peers/peers.h"

int ssqd_peer_name_ok(const char *name)
{
	size_t i, n = strlen(name);

	if (!n || n >= SSQD_PEER_NAME_MAX)
		return 0;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && !strchr("._-", name[i]))
			return 0;
	return 1;
}

/* Peer @i already holds @host:@port (both as ssqd_link_split gives them)? */
static int same_addr(const struct ssqd_options *o, unsigned i, const char *host,
                     const char *port)
{
	char h[SSQD_HOST_MAX], p[SSQD_PORT_MAX];
	const char *bad;

	/* Host names are case-blind (RFC 4343), and so is an IPv6 address's hex. */
	return !ssqd_link_split(o->peers[i].addr, h, p, &bad) && !strcasecmp(h, host) &&
	       !strcmp(p, port);
}

/*
 * Add peer @name (@nlen characters, not terminated) at @addr; @where
 * ("--peer", "FILE:LINE") for errors. Nothing is kept of a peer refused.
 */
static int add_peer(struct ssqd_options *o, const char *name, size_t nlen,
                    const char *addr, const char *where, char *why, size_t whylen)
{
	char host[SSQD_HOST_MAX], port[SSQD_PORT_MAX], nm[SSQD_PEER_NAME_MAX];
	const char *bad = NULL;
	unsigned i;

	if (nlen < sizeof(nm)) {
		memcpy(nm, name, nlen);
		nm[nlen] = 0;
	}
	if (nlen >= sizeof(nm) || !ssqd_peer_name_ok(nm)) {
		snprintf(
		    why, whylen,
		    "%s: peer name '%.*s': want 1..%u characters of A-Z a-z 0-9 . _ -",
		    where, (int)nlen, name, SSQD_PEER_NAME_MAX - 1);
		return -EINVAL;
	}
	/* As the dial will split it: a host or port it cannot use is named now. */
	if (strlen(addr) >= SSQD_PEER_ADDR_MAX)
		bad = "longer than 127 characters";
	if (bad || ssqd_link_split(addr, host, port, &bad)) {
		snprintf(why, whylen, "%s: peer %s: address '%s': %s", where, nm, addr,
		         bad);
		return -EINVAL;
	}
	for (i = 0; i < o->npeers; i++) {
		if (!strcmp(o->peers[i].name, nm)) {
			snprintf(why, whylen, "%s: peer %s named twice", where, nm);
			return -EINVAL;
		}
		/* One port, one ssqd: the dial to one of them would reach the other. */
		if (same_addr(o, i, host, port)) {
			snprintf(why, whylen,
			         "%s: peer %s at %s, where peer %s is already", where, nm,
			         addr, o->peers[i].name);
			return -EINVAL;
		}
	}
	/* One more than the peers: the file may list this daemon too. */
	if (o->npeers == SSQD_MAX_PEERS + 1) {
		snprintf(why, whylen, "%s: more than %u peers", where, SSQD_MAX_PEERS);
		return -EINVAL;
	}
	snprintf(o->peers[o->npeers].name, SSQD_PEER_NAME_MAX, "%s", nm);
	snprintf(o->peers[o->npeers].addr, SSQD_PEER_ADDR_MAX, "%s", addr);
	o->npeers++;
	return 0;
}

int ssqd_peer_opt(struct ssqd_options *o, const char *spec, char *why, size_t whylen)
{
	const char *eq = strchr(spec, '=');

	if (!eq) {
		snprintf(why, whylen, "--peer '%s': want NAME=HOST:PORT", spec);
		return -EINVAL;
	}
	return add_peer(o, spec, (size_t)(eq - spec), eq + 1, "--peer", why, whylen);
}

int ssqd_peers_file(struct ssqd_options *o, const char *path, char *why, size_t whylen)
{
	static const char blanks[] = " \t\r\n\v\f";
	char *line = NULL, where[300];
	size_t cap = 0;
	unsigned no = 0;
	FILE *f = fopen(path, "r");
	int rc = 0;

	if (!f) {
		rc = -errno;
		snprintf(why, whylen, "--peers %s: %s", path, strerror(errno));
		return rc;
	}
	while (!rc && getline(&line, &cap, f) >= 0) {
		char *hash = strchr(line, '#'), *tok[3], *save = NULL, *t;
		int n = 0;

		no++;
		if (hash)
			*hash = 0;
		/* Whole words, however long: the checks say what is wrong with each. */
		for (t = strtok_r(line, blanks, &save); t && n < 3;
		     t = strtok_r(NULL, blanks, &save))
			tok[n++] = t;
		snprintf(where, sizeof(where), "%s:%u", path, no);
		if (!n)
			continue;
		if (n != 2) {
			snprintf(why, whylen, "%s: want 'NAME HOST:PORT'%s", where,
			         n == 1 ? ", found one word"
			                : ", found more after the address");
			rc = -EINVAL;
			break;
		}
		rc = add_peer(o, tok[0], strlen(tok[0]), tok[1], where, why, whylen);
	}
	free(line);
	fclose(f);
	if (!rc && !o->npeers) {
		snprintf(why, whylen, "--peers %s: no peer in it", path);
		rc = -EINVAL;
	}
	return rc;
}

int ssqd_peer_opts_check(struct ssqd_options *o, char *why, size_t whylen)
{
	static char host[256];
	char h[SSQD_HOST_MAX], p[SSQD_PORT_MAX];
	const char *bad;
	unsigned i, j;

	/* The one peer of --connect: named before anything is set up. */
	if (o->connect_to && ssqd_link_split(o->connect_to, h, p, &bad)) {
		snprintf(why, whylen, "--connect '%s': %s", o->connect_to, bad);
		return -EINVAL;
	}
	o->peer_queues = o->nqueues;
	if (!o->npeers) {
		if (o->peer_key && !o->listen_port && !o->connect_to) {
			snprintf(why, whylen,
			         "--peer-key authenticates links to peers: it goes with "
			         "--listen, --connect or --peer/--peers");
			return -EINVAL;
		}
		if (o->eager || o->max_active_peers || o->idle_ms) {
			snprintf(why, whylen,
			         "--eager, --max-active-peers and --idle-ms are for a "
			         "cluster (--peer/--peers)");
			return -EINVAL;
		}
		return 0;
	}
	if (!o->name) {
		if (gethostname(host, sizeof(host) - 1)) {
			snprintf(why, whylen, "gethostname: %s: give --name",
			         strerror(errno));
			return -EINVAL;
		}
		host[strcspn(host, ".")] = 0;
		o->name = host;
	}
	if (!ssqd_peer_name_ok(o->name)) {
		snprintf(why, whylen,
		         "--name '%s': want 1..%u characters of A-Z a-z 0-9 . _ -",
		         o->name, SSQD_PEER_NAME_MAX - 1);
		return -EINVAL;
	}
	/*
	 * A cluster's file lists every daemon, this one too: that line gives
	 * this daemon's own queues, loopback.
	 */
	for (i = j = 0; i < o->npeers; i++)
		if (strcmp(o->peers[i].name, o->name))
			o->peers[j++] = o->peers[i];
		else
			o->self_queues = 1;
	o->npeers = j;
	if (o->npeers > SSQD_MAX_PEERS) {
		snprintf(why, whylen,
		         "--peer/--peers: %u peers besides this one (%s), more than %u",
		         o->npeers, o->name, SSQD_MAX_PEERS);
		return -EINVAL;
	}
	if (!o->npeers) {
		snprintf(why, whylen, "--peer/--peers name no daemon but this one (%s)",
		         o->name);
		return -EINVAL;
	}
	if (!o->listen_port || o->connect_to) {
		snprintf(why, whylen,
		         "with --peer/--peers every ssqd listens (--listen PORT) and "
		         "dials its peers itself: %s",
		         o->connect_to ? "--connect does not go with them"
		                       : "--listen is missing");
		return -EINVAL;
	}
	if (o->peer_queues * (o->npeers + o->self_queues) > SSQ_MAX_QUEUES) {
		snprintf(why, whylen,
		         "--queues %u for each of %u peers%s is %u queues, more than the "
		         "%u one ssqd has",
		         o->peer_queues, o->npeers, o->self_queues ? " and itself" : "",
		         o->peer_queues * (o->npeers + o->self_queues), SSQ_MAX_QUEUES);
		return -EINVAL;
	}
	o->nqueues = o->peer_queues * (o->npeers + o->self_queues);
	return 0;
}
