/* SPDX-License-Identifier: MIT */
/*
 * A stranger on a --peer-key daemon's peer port, before it authenticates
 * (an adversarial review's findings on branch auth). A cluster of alice,
 * bob and carol (of a pair, the name that sorts first dials: bob sends
 * alice its wants, carol sends bob hers), bob with the key; alice and
 * carol are not started: this process plays them, or a stranger:
 *  1. names: a HELLO, WANT or address named "x\n<3>ssqd: FORGED" does not
 *     decode, and bob's log never holds the forged line (journald would
 *     read "<3>" as an error's priority);
 *  2. refusals tell nothing: a HELLO as 'mallory' or as bob himself gets
 *     the one fixed "authentication failed" refusal, naming neither;
 *  3. the knock table: carol's HELLO (CHALLENGE read, PROOF not yet sent)
 *     holds its slot while 12 silent connections come from carol's own
 *     host and 12 from 127.0.0.2..13; a HELLO from 127.0.0.14 (no peer's
 *     host) is closed at once with nothing sent; carol's PROOF and WANT
 *     then go through: bob wants carol;
 *  4. 100 junk connections (no SSQP magic; one byte, then a close) write
 *     a few lines (an address's 1st to 4th failures, its 8th, 16th...),
 *     each with the count so far;
 *  5. bob's want to alice: this process answers as alice with the key,
 *     then sends a refusal without a MAC: bob takes it as a reset, no
 *     "refused to link" with its text; a MACed refusal is believed.
 */
#define _GNU_SOURCE
#include <sys/wait.h>
#include "peer_auth_flow.h"
#include "ctrl/daemon/peers/peers.h"

#define N 3
static const char *const names[N] = { "alice", "bob", "carol" };
static const char forged[] = "x\n<3>ssqd: FORGED";
static const char fixed[] =
    "authentication failed: this ssqd authenticates its peers (--peer-key)";
static struct t_cluster cl;
static char key_path[108];
static uint8_t key[64];
static size_t keylen;

/* bob's view of peer @name (ssq_client_peers), or -1. */
static int peer_state(struct ssq_client *c, const char *name)
{
	struct ssq_peer_info info[8];
	int n = ssq_client_peers(c, info, 8), i;

	for (i = 0; i < n && i < 8; i++)
		if (!strcmp(info[i].name, name))
			return (int)info[i].state;
	return -1;
}

/* Lines of the file at @path holding @needle. */
static unsigned count_lines(const char *path, const char *needle)
{
	char line[1024];
	FILE *f = fopen(path, "r");
	unsigned n = 0;

	while (f && fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	if (f)
		fclose(f);
	return n;
}

/* A HELLO as @name from @src to bob; the connection, or -1. */
static int hello(const char *src, const char *name, struct proto_peer_auth *h)
{
	uint8_t buf[SSQ_PEER_AUTH_LEN];
	int s = knock_port(src, cl.port[1]);

	memset(h, 0, sizeof(*h));
	h->kind = PROTO_AUTH_HELLO;
	h->count = 1;
	h->gen = 9;
	snprintf(h->name, sizeof(h->name), "%s", name);
	(void)!getrandom(h->nonce, sizeof(h->nonce), 0);
	proto_peer_encode_auth(h, buf);
	if (s >= 0)
		(void)!send(s, buf, sizeof(buf), MSG_NOSIGNAL);
	return s;
}

/* What bob answers a HELLO as @name from @src: its bytes into @buf. */
static size_t hello_answer(const char *src, const char *name, uint8_t *buf)
{
	struct proto_peer_auth h;
	int s = hello(src, name, &h);
	size_t n = s >= 0 ? read_n(s, buf, SSQ_PEER_REFUSAL_LEN, 10) : 0;

	if (s >= 0)
		close(s);
	return n;
}

/* The refusal in @buf (@n bytes): its reason into @why, or 0 if none. */
static int refusal(const uint8_t *buf, size_t n, char *why, size_t whylen)
{
	struct proto_peer_addr a;

	return n == SSQ_PEER_REFUSAL_LEN &&
	       proto_peer_decode(buf, n, &a, why, whylen) == -ECONNREFUSED;
}

static void bad_names(void)
{
	struct proto_peer_auth h, got;
	struct proto_peer_addr a;
	uint8_t buf[SSQ_PEER_AUTH_LEN]; /* the largest it encodes */
	char why[200];
	size_t n;

	memset(&h, 0, sizeof(h));
	h.kind = PROTO_AUTH_HELLO;
	memcpy(h.name, forged, sizeof(forged));
	proto_peer_encode_auth(&h, buf);
	CHECK(proto_peer_decode_auth(buf, SSQ_PEER_AUTH_LEN, &got, why, sizeof(why)) ==
	          -EBADMSG,
	      "a HELLO named with a newline and '<3>' does not decode (%s)", why);
	proto_peer_encode_want("bad name", 1, buf);
	CHECK(proto_peer_decode(buf, SSQ_PEER_WANT_LEN, &a, why, sizeof(why)) == -EBADMSG,
	      "a WANT named 'bad name' does not decode (%s)", why);
	memset(&a, 0, sizeof(a));
	a.count = 1;
	a.lid = 1;
	a.link_layer = IBV_LINK_LAYER_INFINIBAND;
	a.mtu = IBV_MTU_4096;
	a.rd_atom = 16;
	snprintf(a.name, sizeof(a.name), "al\x1bice");
	proto_peer_encode(&a, buf);
	CHECK(proto_peer_decode(buf, SSQ_PEER_MSG_LEN, &a, why, sizeof(why)) == -EBADMSG,
	      "an address named with an escape does not decode (%s)", why);
	n = hello_answer("127.0.0.1", forged, buf);
	CHECK(refusal(buf, n, why, sizeof(why)), "the forged HELLO refused");
	CHECK(!cf_file_has(cl.log[1], "FORGED"), "bob's log holds no forged line");
}

static void no_enumeration(void)
{
	static const char *const who[] = { "mallory", "bob" };
	uint8_t buf[SSQ_PEER_REFUSAL_LEN];
	char why[200];
	unsigned i;
	size_t n;

	for (i = 0; i < 2; i++) {
		n = hello_answer("127.0.0.1", who[i], buf);
		CHECK(refusal(buf, n, why, sizeof(why)) && strstr(why, fixed) &&
		          !strstr(why, "bob") && !strstr(why, who[i]),
		      "a HELLO as '%s': the fixed refusal, naming nobody ('%s')", who[i],
		      why);
	}
	CHECK(cf_file_has(cl.log[1], "'mallory' is not a peer of bob"),
	      "bob's own log keeps the detail");
}

/* 3. carol's HELLO keeps its slot against silent connections. */
static void knock_table(struct ssq_client *cb)
{
	struct proto_peer_auth h, c, pr;
	uint8_t buf[SSQ_PEER_AUTH_LEN], lk[32], w[SSQ_PEER_WANT_LEN + 32],
	    m[9 + SSQ_PEER_WANT_LEN];
	int s, silent[24], i, st = -1;
	unsigned len = 0;
	char src[32];
	double t0;
	size_t n;

	s = hello("127.0.0.1", "carol", &h);
	n = s >= 0 ? read_n(s, buf, SSQ_PEER_AUTH_LEN, 10) : 0;
	CHECK(n == SSQ_PEER_AUTH_LEN &&
	          !proto_peer_decode_auth(buf, n, &c, (char *)lk, sizeof(lk)) &&
	          c.kind == PROTO_AUTH_CHALLENGE,
	      "carol's HELLO answered with a CHALLENGE");
	for (i = 0; i < 24; i++) {
		snprintf(src, sizeof(src), "127.0.0.%d", i < 12 ? 1 : i - 10);
		silent[i] = knock_port(src, cl.port[1]);
	}
	n = hello_answer("127.0.0.14", "carol", buf);
	CHECK(n == 0, "a HELLO as carol from 127.0.0.14: closed at once (%zu bytes)", n);
	memset(&pr, 0, sizeof(pr));
	pr.kind = PROTO_AUTH_PROOF;
	pr.count = c.count;
	pr.gen = h.gen;
	auth_mac(key, keylen, "ssq4 dialer", h.nonce, c.nonce, "carol", "bob", h.gen,
	         c.count, pr.mac);
	auth_mac(key, keylen, "ssq4 link key", h.nonce, c.nonce, "carol", "bob", h.gen,
	         c.count, lk);
	proto_peer_encode_auth(&pr, buf);
	proto_peer_encode_want("carol", c.count, w);
	memset(m, 0, 9);
	m[0] = 'D';
	memcpy(m + 9, w, SSQ_PEER_WANT_LEN);
	HMAC(EVP_sha256(), lk, 32, m, sizeof(m), w + SSQ_PEER_WANT_LEN, &len);
	if (s >= 0) {
		(void)!send(s, buf, sizeof(buf), MSG_NOSIGNAL);
		(void)!send(s, w, sizeof(w), MSG_NOSIGNAL);
	}
	for (t0 = now_s(); now_s() - t0 < 10; usleep(20000)) {
		st = peer_state(cb, "carol");
		if (st != SSQ_PEER_IDLE)
			break;
	}
	CHECK(st != SSQ_PEER_IDLE && st != -1,
	      "carol's PROOF and WANT, after 24 silent connections: bob wants carol "
	      "(state %d)",
	      st);
	for (i = 0; i < 24; i++)
		if (silent[i] >= 0)
			close(silent[i]);
	if (s >= 0)
		close(s);
	/* Nobody at carol's port: bob gives the want up (OPEN_PENDING_MS). */
	for (t0 = now_s(); now_s() - t0 < 20 && peer_state(cb, "carol") != SSQ_PEER_IDLE;)
		usleep(50000);
}

/*
 * 4. Junk before authentication: 100 connections from one address (the
 * kernel's backlog paces them, a few a second) write a few lines, each
 * with the count so far, not one each.
 */
static void junk_flood(void)
{
	unsigned before = count_lines(cl.log[1], "SSQP magic") +
	                  count_lines(cl.log[1], "closed the connection after"),
	         lines, i;
	double t0;

	for (i = 0; i < 100; i++) {
		int s = knock_port("127.0.0.1", cl.port[1]);

		if (s < 0)
			continue;
		(void)!send(s, "GARBAGEGARBAGE!!", i % 2 ? 1 : 16, MSG_NOSIGNAL);
		close(s);
	}
	for (t0 = now_s(); now_s() - t0 < 10; usleep(50000))
		if (cf_file_has(cl.log[1], "(64 failed authentication(s) from this "
		                           "address"))
			break;
	lines = count_lines(cl.log[1], "SSQP magic") +
	        count_lines(cl.log[1], "closed the connection after") - before;
	CHECK(lines <= 12, "100 junk connections: %u lines", lines);
	CHECK(cf_file_has(cl.log[1], "(64 failed authentication(s) from this address"),
	      "with the count so far");
}

/* Accept bob's dial on @l as alice and authenticate; the connection, or -1. */
static int as_alice(int l, uint8_t *lk)
{
	struct proto_peer_auth h, c, pr;
	uint8_t buf[SSQ_PEER_AUTH_LEN], w[SSQ_PEER_WANT_LEN + 32];
	struct pollfd pfd = { l, POLLIN, 0 };
	char why[200];
	int s;

	if (poll(&pfd, 1, 20000) != 1 || (s = accept(l, NULL, NULL)) < 0)
		return -1;
	if (read_n(s, buf, sizeof(buf), 10) != sizeof(buf) ||
	    proto_peer_decode_auth(buf, sizeof(buf), &h, why, sizeof(why)) ||
	    h.kind != PROTO_AUTH_HELLO)
		goto fail;
	memset(&c, 0, sizeof(c));
	c.kind = PROTO_AUTH_CHALLENGE;
	c.count = h.count;
	c.gen = h.gen;
	snprintf(c.name, sizeof(c.name), "alice");
	(void)!getrandom(c.nonce, sizeof(c.nonce), 0);
	auth_mac(key, keylen, "ssq4 acceptor", h.nonce, c.nonce, "bob", "alice", h.gen,
	         h.count, c.mac);
	auth_mac(key, keylen, "ssq4 link key", h.nonce, c.nonce, "bob", "alice", h.gen,
	         h.count, lk);
	proto_peer_encode_auth(&c, buf);
	(void)!send(s, buf, sizeof(buf), MSG_NOSIGNAL);
	/* bob's PROOF, then its MACed WANT. */
	if (read_n(s, buf, sizeof(buf), 10) != sizeof(buf) ||
	    proto_peer_decode_auth(buf, sizeof(buf), &pr, why, sizeof(why)) ||
	    pr.kind != PROTO_AUTH_PROOF || read_n(s, w, sizeof(w), 10) != sizeof(w))
		goto fail;
	return s;
fail:
	close(s);
	return -1;
}

/* 5. A refusal without a MAC on an authenticated link is no refusal. */
static void forged_refusal(struct ssq_client *cb)
{
	struct sockaddr_in sa;
	uint8_t lk[32], r[SSQ_PEER_REFUSAL_LEN + 32], m[9 + SSQ_PEER_REFUSAL_LEN];
	struct ssq_queue *q = NULL;
	int l = socket(AF_INET, SOCK_STREAM, 0), one = 1, s, rc;
	unsigned len = 0;
	double t0;

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons(cl.port[0]);
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	CHECK(l >= 0 && !bind(l, (struct sockaddr *)&sa, sizeof(sa)) && !listen(l, 4),
	      "this process listens on alice's port");
	rc = ssq_queue_try_open(cb, "alice/q0", &q);
	s = as_alice(l, lk);
	CHECK(s >= 0, "bob dials alice (this process) for its want, authenticated");
	proto_peer_encode_refusal("FORGED-BUSY", r);
	if (s >= 0) {
		(void)!send(s, r, SSQ_PEER_REFUSAL_LEN, MSG_NOSIGNAL);
		close(s);
	}
	for (t0 = now_s(); now_s() - t0 < 10; usleep(50000))
		if (cf_file_has(cl.log[1], "FORGED-BUSY") ||
		    cf_file_has(cl.log[1], "taken as a reset"))
			break;
	CHECK(cf_file_has(cl.log[1], "taken as a reset") &&
	          !cf_file_has(cl.log[1], "FORGED-BUSY"),
	      "bob takes the refusal without a MAC as a reset, its text not believed");
	if (q)
		ssq_queue_close(q);
	q = NULL;
	rc = ssq_queue_try_open(cb, "alice/q0", &q);
	CHECK(!(rc == -EBUSY && strstr(ssq_client_error(cb), "FORGED")),
	      "the next open is not told the stranger's reason (%d)", rc);
	/* bob asks again: a refusal MACed under the link key is the peer's. */
	s = as_alice(l, lk);
	CHECK(s >= 0, "bob dials alice again");
	proto_peer_encode_refusal("REAL-BUSY", r);
	m[0] = 'A';
	memset(m + 1, 0, 8); /* seq 0: alice's first message on the link */
	memcpy(m + 9, r, SSQ_PEER_REFUSAL_LEN);
	HMAC(EVP_sha256(), lk, 32, m, sizeof(m), r + SSQ_PEER_REFUSAL_LEN, &len);
	if (s >= 0) {
		(void)!send(s, r, sizeof(r), MSG_NOSIGNAL);
		close(s);
	}
	for (t0 = now_s(); now_s() - t0 < 10; usleep(50000))
		if (cf_file_has(cl.log[1], "refused to link: REAL-BUSY"))
			break;
	CHECK(cf_file_has(cl.log[1], "refused to link: REAL-BUSY"),
	      "a MACed refusal is believed");
	if (q)
		ssq_queue_close(q);
	close(l);
}

int main(void)
{
	struct ssq_client *cb = NULL;

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	signal(SIGPIPE, SIG_IGN);
	snprintf(key_path, sizeof(key_path), "/tmp/ssq-pk-key-%d", getpid());
	cf_cluster_files(&cl, "pk", N, names, 0);
	CHECK(write_key(key_path, 32, 0600) == 0, "key file written");
	keylen = read_key(key_path, key, sizeof(key));
	t_cluster_start(&cl, 1, T_ARGS("--peer-key", key_path));
	cb = t_cluster_connect(&cl, 1);
	CHECK(cb != NULL, "bob serves");
	if (!cb)
		goto out;
	bad_names();
	no_enumeration();
	knock_table(cb);
	junk_flood();
	forged_refusal(cb);
out:
	if (cb)
		ssq_client_close(cb);
	if (test_failures)
		setenv("KEEP_LOGS", "1", 1);
	t_cluster_stop(&cl);
	unlink(key_path);
	return test_exit("ctrl_adv_peer_auth_knock");
}
