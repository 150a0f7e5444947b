/* SPDX-License-Identifier: MIT */
/*
 * Adversary, a cluster's peer addresses (ssqd --peer NAME=HOST:PORT and
 * --peers FILE, checked by ssqd_link_split and peers/opts.c). Each bad
 * entry must be refused when ssqd starts, by a sentence naming the peer
 * and what is wrong, with nothing of it kept; before, the check split at
 * the last colon and asked strtol for the port, so that
 *  - "fe80::1" was host "fe80:" port 1, and "[::1]:24601" a host name
 *    "[::1]" that only the dial's lookup refused;
 *  - ports "+1" and " 1" were port 1;
 *  - hosts no lookup can answer ("a b", "300.1.1.1", "1" - getaddrinfo
 *    reads that as 0.0.0.1 -, "0.0.0.0", "-x") were taken, to fail at
 *    each dial;
 *  - two peers at one address were taken (one of them can never link);
 *  - a name over the limit in --peer was "want NAME=HOST:PORT", and in a
 *    file a name over 63 characters or an address over 128 was cut in
 *    two by sscanf, "want 'NAME HOST:PORT'" naming neither.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "helpers.h"
#include "ctrl/daemon/daemon.h"
#include "ctrl/daemon/peers/peers.h"

/* --peer @spec must be refused with @want (and the peer's name) in the reason. */
static void refused(const char *spec, const char *name, const char *want)
{
	struct ssqd_options o;
	char why[512] = "";
	int rc;

	ssqd_options_default(&o);
	rc = ssqd_peer_opt(&o, spec, why, sizeof(why));
	CHECK(rc == -EINVAL, "--peer '%s' taken (%d)", spec, rc);
	CHECK(o.npeers == 0, "--peer '%s': a peer kept after refusing it", spec);
	CHECK(strstr(why, name) && strstr(why, want),
	      "--peer '%s': the reason names the peer (%s) and '%s': %s", spec, name,
	      want, why);
}

/* --peer @spec must be taken, its address splitting into @host and @port. */
static void taken(const char *spec, const char *host, const char *port)
{
	char h[256] = "", p[8] = "", why[512] = "";
	struct ssqd_options o;
	const char *bad = "";
	int rc;

	ssqd_options_default(&o);
	rc = ssqd_peer_opt(&o, spec, why, sizeof(why));
	CHECK(rc == 0 && o.npeers == 1, "--peer '%s' refused: %s", spec, why);
	if (rc || o.npeers != 1)
		return;
	rc = ssqd_link_split(o.peers[0].addr, h, p, &bad);
	CHECK(rc == 0 && !strcmp(h, host) && !strcmp(p, port),
	      "--peer '%s': host '%s' port '%s' (%s), want '%s' '%s'", spec, h, p,
	      rc ? bad : "ok", host, port);
}

/* A peers file of @text must be refused with @a and @b in the reason. */
static void file_refused(const char *text, const char *a, const char *b)
{
	char path[] = "/tmp/ssq-adv-peers-XXXXXX", why[512] = "";
	struct ssqd_options o;
	int fd = mkstemp(path), rc;

	CHECK(fd >= 0, "mkstemp");
	if (fd < 0)
		return;
	CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text), "write");
	close(fd);
	ssqd_options_default(&o);
	rc = ssqd_peers_file(&o, path, why, sizeof(why));
	CHECK(rc == -EINVAL, "peers file taken (%d): %.60s...", rc, text);
	CHECK(strstr(why, a) && strstr(why, b), "peers file: want '%s' and '%s' in: %s",
	      a, b, why);
	unlink(path);
}

int main(void)
{
	char spec[600], line[1200], name[80];
	struct ssqd_options o;
	char why[512];

	/* IPv6: in brackets, as URLs and ssh -L write them. */
	taken("bob=[::1]:24601", "::1", "24601");
	taken("bob=[fe80::1%lo]:7", "fe80::1%lo", "7");
	refused("bob=fe80::1", "bob", "brackets");
	refused("bob=::1:24601", "bob", "brackets");
	refused("bob=[::1]", "bob", "PORT");
	refused("bob=[::1]24601", "bob", "PORT");
	refused("bob=[::1:24601", "bob", "]");
	refused("bob=[]:24601", "bob", "host");
	refused("bob=[bob.example]:24601", "bob", "IPv6");
	refused("bob=[::]:24601", "bob", "host");

	/* Ports: 1..65535 in decimal digits, nothing else. */
	taken("bob=localhost:65535", "localhost", "65535");
	taken("bob=127.0.0.1:1", "127.0.0.1", "1");
	refused("bob=host:+1", "bob", "port");
	refused("bob=host: 1", "bob", "port");
	refused("bob=host:1 ", "bob", "port");
	refused("bob=host:0x50", "bob", "port");
	refused("bob=host:0", "bob", "port");
	refused("bob=host:65536", "bob", "port");
	refused("bob=host:99999999999999999999", "bob", "port");
	refused("bob=host:", "bob", "port");
	refused("bob=host", "bob", "PORT");

	/* Hosts: an IP address, or a name a lookup can answer. */
	taken("bob=bob-1.example.org:24601", "bob-1.example.org", "24601");
	taken("bob=bob.example.:24601", "bob.example.", "24601");
	refused("bob=:24601", "bob", "host");
	refused("bob=a b:24601", "bob", "host");
	refused("bob=a/b:24601", "bob", "host");
	refused("bob=-x:24601", "bob", "host");
	refused("bob=a..b:24601", "bob", "host");
	refused("bob=300.1.1.1:24601", "bob", "host");
	refused("bob=1:24601", "bob", "host");
	refused("bob=127.1:24601", "bob", "host");
	refused("bob=0.0.0.0:24601", "bob", "host");
	memcpy(spec, "bob=", 4);
	memset(spec + 4, 'h', 300);
	memcpy(spec + 304, ":24601", 7);
	refused(spec, "bob", "long");

	/* Names. */
	memset(name, 'n', 40);
	name[40] = 0;
	snprintf(spec, sizeof(spec), "%s=host:24601", name);
	refused(spec, name, "characters");
	refused("=host:24601", "''", "characters");
	refused("b/b=host:24601", "b/b", "characters");

	/* Twice the name, twice the address: the second refused, the first kept. */
	ssqd_options_default(&o);
	CHECK(!ssqd_peer_opt(&o, "bob=host:1", why, sizeof(why)), "bob: %s", why);
	CHECK(ssqd_peer_opt(&o, "bob=other:2", why, sizeof(why)) == -EINVAL &&
	          strstr(why, "bob") && strstr(why, "twice"),
	      "bob twice: %s", why);
	CHECK(ssqd_peer_opt(&o, "carol=HOST:1", why, sizeof(why)) == -EINVAL &&
	          strstr(why, "carol") && strstr(why, "bob"),
	      "carol at bob's address: %s", why);
	CHECK(o.npeers == 1, "%u peers kept, want bob alone", o.npeers);

	/* A peers file's lines: cut in two by sscanf before. */
	memset(name, 'n', 70);
	name[70] = 0;
	snprintf(line, sizeof(line), "alice host:1\n%s host:2\n", name);
	file_refused(line, ":2", "characters");
	memset(spec, 'h', 200);
	spec[200] = 0;
	snprintf(line, sizeof(line), "bob %s:1\n", spec);
	file_refused(line, "bob", "long");
	file_refused("bob host:1 carol\n", ":1", "NAME HOST:PORT");
	file_refused("bob host:+1\n", "bob", "port");
	file_refused("bob [::1]:1\ncarol [::1]:1\n", "carol", "bob");
	return test_exit("ctrl_adv_poll_peer_addr");
}
