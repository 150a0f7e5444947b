/* SPDX-License-Identifier: MIT */
/*
 * Peers that prove who they are (--peer-key). Without it a peer is told
 * apart by the name in its message only, and anyone who reaches the peer
 * port could claim a configured peer's name, be linked in its place, get
 * its traffic and keep the real one out. With it, every daemon of the
 * cluster holds one secret, a file readable by ssqd's uid only (as munge's
 * munge.key or a PMIx deployment's shared secret), and:
 *  - the dialer sends HELLO {name, nonce_d, gen}; the acceptor checks the
 *    name is a peer's and the connection comes from an address that
 *    peer's host looked up to at start, and answers CHALLENGE {name,
 *    nonce_a, HMAC(key, "acceptor" || T)}; the dialer checks it and
 *    answers PROOF {HMAC(key, "dialer" || T)}, T being both nonces, both
 *    names, gen and --queues (and under --tenants the tenant's kind and
 *    id, peers/tenant.c): each side proves it holds the key, for this
 *    connection (and tenant) only (fresh nonces from both sides: nothing
 *    recorded answers a later one);
 *  - every later message on the connection carries HMAC(K, direction ||
 *    seq || message), K = HMAC(key, "link" || T), seq counted per
 *    direction from 0: a message replayed, reordered, reflected back to
 *    its sender or carried to another connection fails, and fails the
 *    link.
 * A stranger never gets past the knock table (peers/accept.c): no link,
 * no want, nothing counted against --max-active-peers, until its PROOF.
 * The MAC is OpenSSL libcrypto's HMAC-SHA256 (HMAC(3), not a home-made
 * one), compared with CRYPTO_memcmp in constant time; nonces come from
 * getrandom(2).
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include "ctrl/daemon/peers/peers.h"
#include <systemd/sd-daemon.h> /* SD_ERR...: util/log.c */

#define KEY_MIN 32 /* bytes: HMAC-SHA256's own output, as RFC 2104 sec. 3 advises */
/* Labels, 16 bytes each: one per use of the key, so no MAC answers for another. */
static const char label_acceptor[16] = "ssq4 acceptor";
static const char label_dialer[16] = "ssq4 dialer";
static const char label_link[16] = "ssq4 link key";

/*
 * What both sides MAC: label, both nonces, both names, gen, count; under
 * --tenants the tenant's kind and id too (peers/tenant.c), each side its
 * own: a link steered to another tenant than the dialer's fails both
 * MACs. Without tenants the transcript is what it was before them.
 */
#define TRANSCRIPT_BASE (16 + 2 * SSQ_PEER_NONCE_LEN + 2 * SSQ_NAME_MAX + 4 + 2)
struct transcript {
	uint8_t b[TRANSCRIPT_BASE + 1 + 4];
	size_t len;
};

static void transcript(struct transcript *t, const struct ssqd *d, const uint8_t *nonce_d,
                       const uint8_t *nonce_a, const char *name_d, const char *name_a,
                       uint32_t gen, uint16_t count)
{
	uint8_t *p = t->b + 16;
	uint32_t id;
	int kind = ssqd_peer_tenant(d, &id);

	memset(t, 0, sizeof(*t));
	memcpy(p, nonce_d, SSQ_PEER_NONCE_LEN);
	p += SSQ_PEER_NONCE_LEN;
	memcpy(p, nonce_a, SSQ_PEER_NONCE_LEN);
	p += SSQ_PEER_NONCE_LEN;
	memcpy(p, name_d, strnlen(name_d, SSQ_NAME_MAX - 1));
	p += SSQ_NAME_MAX;
	memcpy(p, name_a, strnlen(name_a, SSQ_NAME_MAX - 1));
	p += SSQ_NAME_MAX;
	gen = htobe32(gen);
	memcpy(p, &gen, 4);
	p += 4;
	count = htobe16(count);
	memcpy(p, &count, 2);
	t->len = TRANSCRIPT_BASE;
	if (kind) {
		p = t->b + TRANSCRIPT_BASE;
		*p++ = (uint8_t)kind;
		id = htobe32(id);
		memcpy(p, &id, 4);
		t->len += 5;
	}
}

/* HMAC-SHA256 of @t under @label with @key: SSQ_PEER_MAC_LEN bytes at @out. */
static int mac_transcript(const uint8_t *key, unsigned keylen, const char *label,
                          struct transcript *t, uint8_t *out)
{
	unsigned len = 0;

	memcpy(t->b, label, 16);
	if (!HMAC(EVP_sha256(), key, (int)keylen, t->b, t->len, out, &len) ||
	    len != SSQ_PEER_MAC_LEN)
		return -EIO;
	return 0;
}

static int fresh_nonce(uint8_t *nonce, char *why, size_t whylen)
{
	ssize_t n = getrandom(nonce, SSQ_PEER_NONCE_LEN, 0);

	if (n == (ssize_t)SSQ_PEER_NONCE_LEN)
		return 0;
	snprintf(why, whylen, "getrandom: %s", n < 0 ? strerror(errno) : "short read");
	return n < 0 ? -errno : -EIO;
}

/* This daemon's name on the wire: "" in the one-peer modes. */
static const char *self_name(const struct ssqd *d)
{
	return d->opt.name ? d->opt.name : "";
}

/*
 * The directory holding the key at @path: whoever may write it may swap
 * the key for its own (ssh's StrictModes refuses the same), unless its
 * sticky bit keeps others from renaming or removing what is not theirs
 * (/tmp): then the file's own owner and mode, checked next, are enough.
 */
static int parent_ok(const char *path, char *why, size_t whylen)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');
	struct stat st;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	if (stat(dir, &st) < 0) {
		int e = errno;

		snprintf(why, whylen, "--peer-key %s: its directory %s: %s", path, dir,
		         strerror(e));
		return -e;
	}
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)) {
		snprintf(why, whylen,
		         "--peer-key %s: its directory %s (mode %04o) lets its group or "
		         "others replace the key (chmod go-w it)",
		         path, dir, (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

int ssqd_peer_key_load(struct ssqd *d, const char *path, char *why, size_t whylen)
{
	struct stat st;
	ssize_t n;
	int fd, rc = parent_ok(path, why, whylen);

	if (rc)
		return rc;
	/* The file itself: a link could be pointed elsewhere later (as ssh's
	 * StrictModes). */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
	if (fd < 0) {
		rc = -errno;
		snprintf(why, whylen, "--peer-key %s: %s", path,
		         errno == ELOOP ? "a symbolic link; give the key file itself"
		                        : strerror(errno));
		return rc;
	}
	/* The open file's, not the path's: nothing swapped in between. */
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		snprintf(why, whylen, "--peer-key %s: %s", path, strerror(errno));
	} else if (!S_ISREG(st.st_mode)) {
		snprintf(why, whylen, "--peer-key %s: not a regular file", path);
		rc = -EINVAL;
	} else if (st.st_uid != geteuid()) {
		snprintf(why, whylen,
		         "--peer-key %s: owned by uid %u, not by ssqd's uid %u (chown "
		         "it)",
		         path, (unsigned)st.st_uid, (unsigned)geteuid());
		rc = -EPERM;
	} else if (st.st_mode & 077) {
		snprintf(why, whylen,
		         "--peer-key %s: mode %04o lets its group or others at it; a "
		         "key is readable by ssqd's uid only (chmod 600 it)",
		         path, (unsigned)(st.st_mode & 07777));
		rc = -EPERM;
	} else if (st.st_size < KEY_MIN || st.st_size > (off_t)sizeof(d->peer_key)) {
		snprintf(why, whylen,
		         "--peer-key %s: %lld bytes; a key has %u to %zu (head -c 32 "
		         "/dev/urandom > %s)",
		         path, (long long)st.st_size, KEY_MIN, sizeof(d->peer_key), path);
		rc = -EINVAL;
	} else {
		n = read(fd, d->peer_key, (size_t)st.st_size);
		if (n != st.st_size) {
			rc = n < 0 ? -errno : -EIO;
			snprintf(why, whylen, "--peer-key %s: %s", path,
			         n < 0 ? strerror(errno) : "short read");
		} else {
			d->peer_key_len = (unsigned)n;
		}
	}
	close(fd);
	return rc;
}

/* @p's host looked up once: the addresses its connections may come from. */
static void peer_sources(struct ssqd_peer *p)
{
	char host[SSQD_HOST_MAX], port[SSQD_PORT_MAX];
	struct addrinfo hints, *res = NULL, *ai;
	const char *bad;
	int rc;

	p->nsrc = 0;
	if (!p->addr || ssqd_link_split(p->addr, host, port, &bad))
		return;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	rc = getaddrinfo(host, NULL, &hints, &res);
	if (rc) {
		fprintf(stderr,
		        SD_WARNING "ssqd: peer %s: looking up %s: %s; its links are "
		                   "refused until ssqd restarts (--peer-key checks where "
		                   "they come from)\n",
		        p->name, host, gai_strerror(rc));
		return;
	}
	for (ai = res; ai && p->nsrc < SSQD_PEER_SRC_MAX; ai = ai->ai_next) {
		struct in6_addr a;

		if (ai->ai_family == AF_INET) {
			/* The peer port is an AF_INET6 socket: IPv4 comes v4-mapped. */
			memset(&a, 0, sizeof(a));
			a.s6_addr[10] = a.s6_addr[11] = 0xff;
			memcpy(&a.s6_addr[12],
			       &((const struct sockaddr_in *)ai->ai_addr)->sin_addr, 4);
		} else if (ai->ai_family == AF_INET6) {
			a = ((const struct sockaddr_in6 *)ai->ai_addr)->sin6_addr;
		} else {
			continue;
		}
		p->src[p->nsrc++] = a;
	}
	freeaddrinfo(res);
}

int ssqd_peer_auth_init(struct ssqd *d, char *why, size_t whylen)
{
	unsigned i;
	int rc;

	if (!d->opt.peer_key) {
		if (d->opt.npeers)
			fprintf(stderr, SD_WARNING
			        "ssqd: peers are not authenticated: anyone who reaches "
			        "the peer port can claim a peer's name; give every "
			        "daemon --peer-key FILE (docs/cluster.md)\n");
		else if (d->npeers)
			fprintf(stderr, SD_WARNING
			        "ssqd: the peer is not authenticated: anyone who reaches "
			        "the peer port can be it; give both daemons --peer-key "
			        "FILE (docs/cluster.md)\n");
		return 0;
	}
	rc = ssqd_peer_key_load(d, d->opt.peer_key, why, whylen);
	if (rc)
		return rc;
	for (i = 0; i < d->npeers; i++)
		peer_sources(&d->peers[i]);
	fprintf(stderr, "ssqd: peers authenticated with the key in %s (HMAC-SHA256)\n",
	        d->opt.peer_key);
	return 0;
}

int ssqd_peer_src_ok(const struct ssqd_peer *p, const struct in6_addr *ip)
{
	unsigned i;

	for (i = 0; i < p->nsrc; i++)
		if (!memcmp(&p->src[i], ip, sizeof(*ip)))
			return 1;
	return 0;
}

unsigned ssqd_auth_failed(struct ssqd *d, const struct in6_addr *ip, const char *fmt, ...)
{
	struct ssqd_auth_fails *f = NULL, *oldest = &d->auth_fails[0];
	uint64_t now = ssqd_now_ns();
	char line[400];
	va_list ap;
	unsigned i;

	for (i = 0; i < SSQD_AUTH_SOURCES && !f; i++) {
		struct ssqd_auth_fails *e = &d->auth_fails[i];

		if (e->n && !memcmp(&e->ip, ip, sizeof(*ip)))
			f = e;
		else if (e->last_ns < oldest->last_ns)
			oldest = e;
	}
	if (!f) {
		/* A full table forgets the source quiet the longest. */
		f = oldest;
		memset(f, 0, sizeof(*f));
		f->ip = *ip;
	}
	f->n++;
	f->last_ns = now;
	/*
	 * A stranger fails as often as it connects, and a connection is all
	 * it costs: of one address's failures the 1st to 4th are logged, then
	 * the 8th, 16th, 32nd..., each with the count so far. N failures write
	 * O(log N) lines, each address's lines under the rate limit besides.
	 */
	if (f->n > 4 && (f->n & (f->n - 1)))
		return f->n;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	ssqd_log_limited(&d->auth_log, now,
	                 SD_WARNING "ssqd: %s (%u failed authentication(s) from this "
	                            "address; the next line for it at %u)\n",
	                 line, f->n, f->n < 4 ? f->n + 1 : 2 * f->n);
	return f->n;
}

int ssqd_auth_hello(struct ssqd *d, struct ssqd_peer *p, int s, char *why, size_t whylen)
{
	struct proto_peer_auth h;
	uint8_t buf[SSQ_PEER_AUTH_LEN];
	int rc = fresh_nonce(p->nonce, why, whylen);

	if (rc)
		return rc;
	memset(&h, 0, sizeof(h));
	h.kind = PROTO_AUTH_HELLO;
	h.count = (uint16_t)d->opt.peer_queues;
	h.gen = p->gen = ++d->link_gen;
	snprintf(h.name, sizeof(h.name), "%s", self_name(d));
	memcpy(h.nonce, p->nonce, SSQ_PEER_NONCE_LEN);
	memset(&p->auth, 0, sizeof(p->auth));
	proto_peer_encode_auth(&h, buf);
	if (send(s, buf, sizeof(buf), MSG_NOSIGNAL | MSG_DONTWAIT) ==
	    (ssize_t)sizeof(buf))
		return 0;
	snprintf(why, whylen, "sending our authentication: %s", strerror(errno));
	return -EIO;
}

int ssqd_auth_answer(struct ssqd *d, struct ssqd_peer *p, const struct proto_peer_auth *c,
                     char *why, size_t whylen)
{
	struct transcript t;
	struct proto_peer_auth pr;
	uint8_t want[SSQ_PEER_MAC_LEN], buf[SSQ_PEER_AUTH_LEN];

	if (c->kind != PROTO_AUTH_CHALLENGE || c->gen != p->gen ||
	    c->count != d->opt.peer_queues || strcmp(c->name, p->name)) {
		snprintf(why, whylen,
		         "its authentication answer is not a challenge for this dial "
		         "(kind %u, generation %u of %u, %u queues of %u, name '%s')",
		         c->kind, c->gen, p->gen, c->count, d->opt.peer_queues, c->name);
		return -EBADMSG;
	}
	transcript(&t, d, p->nonce, c->nonce, self_name(d), p->name, p->gen, c->count);
	if (mac_transcript(d->peer_key, d->peer_key_len, label_acceptor, &t, want))
		goto hmac_failed;
	if (CRYPTO_memcmp(want, c->mac, SSQ_PEER_MAC_LEN)) {
		uint32_t id;

		/* Under tenants the MAC covers the tenant too (peers/tenant.c). */
		snprintf(why, whylen,
		         "authentication failed: the daemon there does not hold this "
		         "--peer-key%s",
		         ssqd_peer_tenant(d, &id) ? ", or serves another tenant than ours"
		                                  : "");
		return -EACCES;
	}
	memset(&pr, 0, sizeof(pr));
	pr.kind = PROTO_AUTH_PROOF;
	pr.count = c->count;
	pr.gen = p->gen;
	if (mac_transcript(d->peer_key, d->peer_key_len, label_dialer, &t, pr.mac) ||
	    mac_transcript(d->peer_key, d->peer_key_len, label_link, &t, p->auth.key))
		goto hmac_failed;
	proto_peer_encode_auth(&pr, buf);
	if (send(p->fd, buf, sizeof(buf), MSG_NOSIGNAL | MSG_DONTWAIT) !=
	    (ssize_t)sizeof(buf)) {
		snprintf(why, whylen, "sending our proof: %s", strerror(errno));
		return -EIO;
	}
	p->auth.on = 1;
	p->auth.dialer = 1;
	p->auth.tx_seq = p->auth.rx_seq = 0;
	return 0;
hmac_failed:
	snprintf(why, whylen, "HMAC-SHA256 failed (OpenSSL)");
	return -EIO;
}

int ssqd_auth_challenge(struct ssqd *d, struct ssqd_knock *k,
                        const struct proto_peer_auth *h, char *why, size_t whylen)
{
	struct transcript t;
	struct proto_peer_auth c;
	uint8_t buf[SSQ_PEER_AUTH_LEN];
	int rc;

	if (h->kind != PROTO_AUTH_HELLO) {
		snprintf(why, whylen, "authentication of kind %u where a hello was due",
		         h->kind);
		return -EBADMSG;
	}
	rc = fresh_nonce(k->nonce_a, why, whylen);
	if (rc)
		return rc;
	memcpy(k->nonce_d, h->nonce, SSQ_PEER_NONCE_LEN);
	snprintf(k->claimed, sizeof(k->claimed), "%s", h->name);
	k->gen = h->gen;
	memset(&c, 0, sizeof(c));
	c.kind = PROTO_AUTH_CHALLENGE;
	c.count = (uint16_t)d->opt.peer_queues;
	c.gen = h->gen;
	snprintf(c.name, sizeof(c.name), "%s", self_name(d));
	memcpy(c.nonce, k->nonce_a, SSQ_PEER_NONCE_LEN);
	transcript(&t, d, k->nonce_d, k->nonce_a, k->claimed, self_name(d), k->gen,
	           c.count);
	if (mac_transcript(d->peer_key, d->peer_key_len, label_acceptor, &t, c.mac)) {
		snprintf(why, whylen, "HMAC-SHA256 failed (OpenSSL)");
		return -EIO;
	}
	proto_peer_encode_auth(&c, buf);
	if (send(k->fd, buf, sizeof(buf), MSG_NOSIGNAL | MSG_DONTWAIT) !=
	    (ssize_t)sizeof(buf)) {
		snprintf(why, whylen, "sending our challenge: %s", strerror(errno));
		return -EIO;
	}
	k->stage = 1;
	return 0;
}

int ssqd_auth_check_proof(struct ssqd *d, struct ssqd_knock *k,
                          const struct proto_peer_auth *pr, char *why, size_t whylen)
{
	struct transcript t;
	uint8_t want[SSQ_PEER_MAC_LEN];
	uint16_t count = (uint16_t)d->opt.peer_queues;

	if (pr->kind != PROTO_AUTH_PROOF || pr->gen != k->gen) {
		snprintf(why, whylen, "authentication of kind %u where a proof was due",
		         pr->kind);
		return -EBADMSG;
	}
	transcript(&t, d, k->nonce_d, k->nonce_a, k->claimed, self_name(d), k->gen,
	           count);
	if (mac_transcript(d->peer_key, d->peer_key_len, label_dialer, &t, want) ||
	    mac_transcript(d->peer_key, d->peer_key_len, label_link, &t, k->auth.key)) {
		snprintf(why, whylen, "HMAC-SHA256 failed (OpenSSL)");
		return -EIO;
	}
	if (CRYPTO_memcmp(want, pr->mac, SSQ_PEER_MAC_LEN)) {
		memset(&k->auth, 0, sizeof(k->auth));
		snprintf(why, whylen, "its proof does not match this ssqd's --peer-key");
		return -EACCES;
	}
	k->auth.on = 1;
	k->auth.dialer = 0;
	k->auth.tx_seq = k->auth.rx_seq = 0;
	k->stage = 2;
	return 0;
}

/*
 * HMAC(K, direction || seq || @msg): @from_dialer says who sent it. One
 * HMAC(3) call over one buffer: OpenSSL 3 deprecates HMAC_CTX's
 * piecewise calls (for EVP_MAC), not HMAC().
 */
static int msg_mac(const struct ssqd_link_auth *a, int from_dialer, uint64_t seq,
                   const uint8_t *msg, size_t n, uint8_t *out)
{
	uint8_t buf[9 + SSQ_PEER_MSG_LEN];
	unsigned len = 0;

	if (n > sizeof(buf) - 9)
		return -EINVAL;
	buf[0] = from_dialer ? 'D' : 'A';
	seq = htobe64(seq);
	memcpy(buf + 1, &seq, 8);
	memcpy(buf + 9, msg, n);
	if (!HMAC(EVP_sha256(), a->key, SSQD_LINK_KEY_LEN, buf, 9 + n, out, &len) ||
	    len != SSQ_PEER_MAC_LEN)
		return -EIO;
	return 0;
}

int ssqd_auth_seal(struct ssqd_link_auth *a, const uint8_t *msg, size_t n, uint8_t *mac)
{
	int rc = msg_mac(a, a->dialer, a->tx_seq, msg, n, mac);

	if (!rc)
		a->tx_seq++;
	return rc;
}

int ssqd_auth_open(struct ssqd_link_auth *a, const uint8_t *msg, size_t n,
                   const uint8_t *mac, char *why, size_t whylen)
{
	uint8_t want[SSQ_PEER_MAC_LEN];

	if (msg_mac(a, !a->dialer, a->rx_seq, msg, n, want) ||
	    CRYPTO_memcmp(want, mac, SSQ_PEER_MAC_LEN)) {
		snprintf(why, whylen,
		         "message %llu on the link fails its MAC (replayed, altered or "
		         "not from the peer)",
		         (unsigned long long)a->rx_seq);
		return -EBADMSG;
	}
	a->rx_seq++;
	return 0;
}
