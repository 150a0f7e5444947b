/* SPDX-License-Identifier: MIT */
/*
 * Peers prove who they are (ssqd --peer-key; issue 28 item 3). Before it,
 * anyone who reached the peer port could send a configured peer's name in
 * its address message and be linked in that peer's place. A cluster of
 * alice, bob and carol (alice dials bob, bob dials carol), bob with the
 * cluster's key; this process plays the stranger on bob's port:
 *  0. a key file of mode 0644, one of 16 bytes, one reached through a
 *     symbolic link, one in a directory of mode 0777: ssqd refuses to
 *     start, naming the file and what is wrong;
 *  1. the old attack, alice's name in a plain address message: refused
 *     ("authenticates its peers"), no address of bob's sent back;
 *  2. alice's name in a HELLO, then a PROOF made with another key: bob's
 *     CHALLENGE carries a MAC under the cluster key, the PROOF is refused
 *     and bob's log names alice and the failure;
 *  3. alice's name from 127.0.0.2, where no peer's host is: closed at
 *     once, nothing sent back (test_ctrl_adv_peer_auth_knock: the rest of
 *     the knock table);
 *  4. carol's name with the right key, a WANT: taken (bob wants carol);
 *     the same bytes again on a new connection (HELLO, PROOF, WANT): the
 *     PROOF fails against bob's fresh nonce, the WANT is not taken;
 *  5. a MACed restart/close message opened twice, or reflected to its
 *     sender: refused (the per-link sequence and the direction);
 *  6. alice, with the key, opens bob/q0: linked, READY;
 *  7. carol with another key: her link to bob fails, her log naming bob
 *     and the failed authentication;
 *  8. the one-peer modes: ssqd --listen with the key refuses 1.'s stranger,
 *     ssqd --connect with another key fails at start saying why, with the
 *     key it links.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/wait.h>
#include "peer_auth_flow.h"
#include "ctrl/daemon/peers/peers.h"

#define N 3
static const char *const names[N] = { "alice", "bob", "carol" };
static struct t_cluster cl;
static char key_path[108], bad_key_path[108];

/* A connection to bob's peer port from @src, or -1. */
static int knock(const char *src)
{
	return knock_port(src, cl.port[1]);
}

/* A refusal in @buf (@n bytes) whose reason holds @needle? */
static int refused(const uint8_t *buf, size_t n, const char *needle)
{
	struct proto_peer_addr a;
	char why[200];

	if (n != SSQ_PEER_REFUSAL_LEN ||
	    proto_peer_decode(buf, n, &a, why, sizeof(why)) != -ECONNREFUSED) {
		fprintf(stderr, "  no refusal (%zu bytes, '%.4s')\n", n,
		        (const char *)buf);
		return 0;
	}
	if (!strstr(why, needle))
		fprintf(stderr, "  refusal '%s' lacks '%s'\n", why, needle);
	return strstr(why, needle) != NULL;
}

/*
 * One session as @name from @src: HELLO, bob's CHALLENGE (its MAC checked
 * under @ckey into *@challenge_ok), PROOF under @pkey (or @proof as
 * recorded, when given), then @tail (@tlen bytes, or a WANT MACed under
 * the link key when @tail is NULL and @want). What bob sent after the
 * PROOF in @after (*@alen bytes; 0: it closed saying nothing). @rec, when
 * given, gets HELLO, PROOF and the WANT as sent (3 x 112 bytes at most).
 */
struct session {
	const char *src, *name;
	const uint8_t *pkey;
	size_t pkeylen;
	int want;
	const uint8_t *replay; /* HELLO, PROOF, WANT+MAC as another session sent them */
	uint8_t rec[3 * SSQ_PEER_AUTH_LEN];
	size_t reclen;
	int challenge_ok;
	uint8_t after[SSQ_PEER_REFUSAL_LEN];
	size_t alen;
};
static int session(struct session *se, const uint8_t *ckey, size_t ckeylen)
{
	struct proto_peer_auth h, c, pr;
	uint8_t buf[SSQ_PEER_AUTH_LEN], mac[32], lk[32];
	int s = knock(se->src);

	se->reclen = 0;
	se->alen = 0;
	se->challenge_ok = 0;
	if (s < 0)
		return -1;
	memset(&h, 0, sizeof(h));
	h.kind = PROTO_AUTH_HELLO;
	h.count = 1;
	h.gen = 7;
	snprintf(h.name, sizeof(h.name), "%s", se->name);
	(void)!getrandom(h.nonce, sizeof(h.nonce), 0);
	if (se->replay)
		memcpy(buf, se->replay, SSQ_PEER_AUTH_LEN);
	else
		proto_peer_encode_auth(&h, buf);
	memcpy(se->rec, buf, SSQ_PEER_AUTH_LEN);
	se->reclen = SSQ_PEER_AUTH_LEN;
	(void)!send(s, buf, SSQ_PEER_AUTH_LEN, MSG_NOSIGNAL);
	se->alen = read_n(s, buf, SSQ_PEER_HEAD_LEN, 10);
	if (se->alen != SSQ_PEER_HEAD_LEN ||
	    proto_peer_msg_len(buf, (char *)mac, sizeof(mac)) != SSQ_PEER_AUTH_LEN) {
		/* Refused at the HELLO: the rest of the refusal (or closed). */
		if (se->alen == SSQ_PEER_HEAD_LEN)
			se->alen += read_n(s, buf + SSQ_PEER_HEAD_LEN,
			                   SSQ_PEER_REFUSAL_LEN - SSQ_PEER_HEAD_LEN, 10);
		memcpy(se->after, buf, se->alen);
		close(s);
		return 0;
	}
	if (read_n(s, buf + SSQ_PEER_HEAD_LEN, SSQ_PEER_AUTH_LEN - SSQ_PEER_HEAD_LEN,
	           10) != SSQ_PEER_AUTH_LEN - SSQ_PEER_HEAD_LEN ||
	    proto_peer_decode_auth(buf, SSQ_PEER_AUTH_LEN, &c, (char *)lk, sizeof(lk))) {
		close(s);
		return -1;
	}
	if (se->replay)
		memcpy(h.nonce, se->replay + 48, 32); /* the recorded HELLO's */
	auth_mac(ckey, ckeylen, "ssq4 acceptor", h.nonce, c.nonce, se->name, "bob", h.gen,
	         c.count, mac);
	se->challenge_ok = !memcmp(mac, c.mac, 32) && !strcmp(c.name, "bob");
	memset(&pr, 0, sizeof(pr));
	pr.kind = PROTO_AUTH_PROOF;
	pr.count = c.count;
	pr.gen = h.gen;
	auth_mac(se->pkey, se->pkeylen, "ssq4 dialer", h.nonce, c.nonce, se->name, "bob",
	         h.gen, c.count, pr.mac);
	auth_mac(se->pkey, se->pkeylen, "ssq4 link key", h.nonce, c.nonce, se->name,
	         "bob", h.gen, c.count, lk);
	if (se->replay)
		memcpy(buf, se->replay + SSQ_PEER_AUTH_LEN, SSQ_PEER_AUTH_LEN);
	else
		proto_peer_encode_auth(&pr, buf);
	memcpy(se->rec + se->reclen, buf, SSQ_PEER_AUTH_LEN);
	se->reclen += SSQ_PEER_AUTH_LEN;
	(void)!send(s, buf, SSQ_PEER_AUTH_LEN, MSG_NOSIGNAL);
	if (se->want) {
		uint8_t w[SSQ_PEER_WANT_LEN + 32], m[9 + SSQ_PEER_WANT_LEN];
		unsigned len = 0;

		if (se->replay) {
			memcpy(w, se->replay + 2 * SSQ_PEER_AUTH_LEN, sizeof(w));
		} else {
			proto_peer_encode_want(se->name, c.count, w);
			memset(m, 0, 9); /* 'D', then seq 0 */
			m[0] = 'D';
			memcpy(m + 9, w, SSQ_PEER_WANT_LEN);
			HMAC(EVP_sha256(), lk, 32, m, sizeof(m), w + SSQ_PEER_WANT_LEN,
			     &len);
		}
		memcpy(se->rec + se->reclen, w, sizeof(w));
		se->reclen += sizeof(w);
		(void)!send(s, w, sizeof(w), MSG_NOSIGNAL);
	}
	se->alen = read_n(s, se->after, sizeof(se->after), 10);
	close(s);
	return 0;
}

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

/* Daemon @i started with @extra exits within 20 s: its status, or -1. */
static int start_fails(unsigned i, const char *const *extra)
{
	pid_t pid = t_cluster_start(&cl, i, extra);
	double t0 = now_s();
	int st;

	while (now_s() - t0 < 20) {
		if (waitpid(pid, &st, WNOHANG) == pid) {
			cl.pid[i] = -1;
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
		}
		usleep(20000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	cl.pid[i] = -1;
	return -1;
}

static void bad_key_files(void)
{
	char needle[400], link[128], dir[120];
	int rc;

	CHECK(write_key(bad_key_path, 32, 0644) == 0, "key file written");
	rc = start_fails(1, T_ARGS("--peer-key", bad_key_path));
	snprintf(needle, sizeof(needle), "--peer-key %s: mode 0644", bad_key_path);
	CHECK(rc > 0 && cf_file_has(cl.log[1], needle),
	      "a key readable by others: ssqd exits (%d) saying '%s'", rc, needle);
	CHECK(write_key(bad_key_path, 16, 0600) == 0, "key file written");
	rc = start_fails(1, T_ARGS("--peer-key", bad_key_path));
	snprintf(needle, sizeof(needle), "--peer-key %s: 16 bytes", bad_key_path);
	CHECK(rc > 0 && cf_file_has(cl.log[1], needle),
	      "a 16-byte key: ssqd exits (%d) saying '%s'", rc, needle);
	/* A good key through a symbolic link, or in a directory others write. */
	CHECK(write_key(bad_key_path, 32, 0600) == 0, "key file written");
	snprintf(link, sizeof(link), "%s.lnk", bad_key_path);
	unlink(link);
	CHECK(symlink(bad_key_path, link) == 0, "symlink made");
	rc = start_fails(1, T_ARGS("--peer-key", link));
	snprintf(needle, sizeof(needle), "--peer-key %s: a symbolic link", link);
	CHECK(rc > 0 && cf_file_has(cl.log[1], needle),
	      "a key through a symlink: ssqd exits (%d) saying '%s'", rc, needle);
	unlink(link);
	snprintf(dir, sizeof(dir), "%s.d", bad_key_path);
	snprintf(link, sizeof(link), "%s/key", dir);
	mkdir(dir, 0700);
	CHECK(write_key(link, 32, 0600) == 0 && chmod(dir, 0777) == 0,
	      "key in a directory of mode 0777");
	rc = start_fails(1, T_ARGS("--peer-key", link));
	snprintf(needle, sizeof(needle), "--peer-key %s: its directory %s (mode 0777)",
	         link, dir);
	CHECK(rc > 0 && cf_file_has(cl.log[1], needle),
	      "a key in a directory others write: ssqd exits (%d) saying '%s'", rc,
	      needle);
	unlink(link);
	rmdir(dir);
}

/* 1. The old attack: alice's name in a plain address message to @port. */
static void plain_claim(uint16_t port)
{
	struct proto_peer_addr m;
	uint8_t msg[SSQ_PEER_MSG_LEN], got[SSQ_PEER_MSG_LEN];
	int s = knock_port("127.0.0.1", port);
	size_t n;

	memset(&m, 0, sizeof(m));
	m.count = 1;
	m.lid = 1;
	m.qpn = 0x100;
	m.psn = 1;
	m.data_rkey = 1;
	m.link_layer = IBV_LINK_LAYER_INFINIBAND;
	m.mtu = IBV_MTU_4096;
	m.rd_atom = 16;
	snprintf(m.name, sizeof(m.name), "alice");
	proto_peer_encode(&m, msg);
	(void)!send(s, msg, sizeof(msg), MSG_NOSIGNAL);
	n = read_n(s, got, SSQ_PEER_REFUSAL_LEN, 10);
	close(s);
	CHECK(refused(got, n, "authenticates its peers"),
	      "a stranger's plain address message as alice: refused, not linked");
}

/* 5. A message of the link replayed, or reflected to its sender. */
static void link_replay(void)
{
	struct ssqd_link_auth a, b;
	struct proto_peer_restart r;
	uint8_t msg[SSQ_PEER_RESTART_LEN], mac[SSQ_PEER_MAC_LEN], mac2[SSQ_PEER_MAC_LEN];
	char why[200];

	memset(&a, 0, sizeof(a));
	(void)!getrandom(a.key, sizeof(a.key), 0);
	a.on = 1;
	a.dialer = 1;
	b = a;
	b.dialer = 0;
	memset(&r, 0, sizeof(r));
	r.kind = PROTO_LINK_CLOSE;
	proto_peer_encode_restart(&r, 1, msg);
	CHECK(ssqd_auth_seal(&a, msg, sizeof(msg), mac) == 0, "close sealed");
	CHECK(ssqd_auth_open(&b, msg, sizeof(msg), mac, why, sizeof(why)) == 0,
	      "close opened once: %s", why);
	CHECK(ssqd_auth_open(&b, msg, sizeof(msg), mac, why, sizeof(why)) == -EBADMSG &&
	          strstr(why, "fails its MAC"),
	      "the same close again: refused (%s)", why);
	CHECK(ssqd_auth_seal(&b, msg, sizeof(msg), mac2) == 0, "answer sealed");
	CHECK(ssqd_auth_open(&b, msg, sizeof(msg), mac2, why, sizeof(why)) == -EBADMSG,
	      "bob's own message reflected back to bob: refused");
	msg[10] = PROTO_LINK_BUSY; /* altered */
	CHECK(ssqd_auth_open(&a, msg, sizeof(msg), mac2, why, sizeof(why)) == -EBADMSG,
	      "an altered message: refused");
}

/* Daemon @pid exits within 20 s: its exit status, or -1 (then killed). */
static int exits(pid_t pid)
{
	double t0 = now_s();
	int st;

	while (now_s() - t0 < 20) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
		usleep(20000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

/*
 * 8. The one-peer modes: B --listen with the key refuses a stranger's plain
 * address message; A --connect with another key fails at start saying
 * why; A with the key links (q0 READY at A).
 */
static void one_peer(void)
{
	char sa[108], sb[108], la[108], lb[108], port[16], to[32];
	uint16_t pb = t_free_tcp_port();
	struct ssq_client *c = NULL;
	pid_t a, b;
	int rc;

	snprintf(sa, sizeof(sa), "/tmp/ssq-pa1-a-%d.sock", getpid());
	snprintf(sb, sizeof(sb), "/tmp/ssq-pa1-b-%d.sock", getpid());
	snprintf(la, sizeof(la), "/tmp/ssq-pa1-a-%d.log", getpid());
	snprintf(lb, sizeof(lb), "/tmp/ssq-pa1-b-%d.log", getpid());
	snprintf(port, sizeof(port), "%u", pb);
	snprintf(to, sizeof(to), "127.0.0.1:%u", pb);
	b = cf_start(sb, lb, 0, NULL, T_ARGS("--listen", port, "--peer-key", key_path));
	c = t_ssqd_connect(sb, b);
	CHECK(c != NULL, "B --listen --peer-key serves");
	if (c)
		ssq_client_close(c);
	plain_claim(pb);
	a = cf_start(sa, la, 0, NULL,
	             T_ARGS("--connect", to, "--peer-key", bad_key_path));
	rc = exits(a);
	CHECK(rc > 0 &&
	          cf_file_has(la, "authentication failed: the daemon there does not "
	                          "hold this --peer-key"),
	      "A --connect with another key: exits (%d) saying why", rc);
	a = cf_start(sa, la, 0, NULL, T_ARGS("--connect", to, "--peer-key", key_path));
	c = t_ssqd_connect(sa, a);
	CHECK(c != NULL && cf_wait_ready(c, "q0", 1, 10),
	      "A --connect with the key links to B: q0 READY");
	if (c)
		ssq_client_close(c);
	t_ssqd_stop(a, NULL, sa);
	t_ssqd_stop(b, NULL, sb);
	if (!test_failures) {
		unlink(la);
		unlink(lb);
	}
}

int main(void)
{
	struct ssq_client *ca = NULL, *cb = NULL, *cc = NULL;
	struct ssq_queue *q = NULL;
	uint8_t key[64], other[64];
	size_t keylen, otherlen;
	struct session se;
	double t0;
	int rc;

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	signal(SIGPIPE, SIG_IGN);
	snprintf(key_path, sizeof(key_path), "/tmp/ssq-pa-key-%d", getpid());
	snprintf(bad_key_path, sizeof(bad_key_path), "/tmp/ssq-pa-badkey-%d", getpid());
	cf_cluster_files(&cl, "pa", N, names, 0);
	CHECK(write_key(key_path, 32, 0600) == 0, "key file written");
	keylen = read_key(key_path, key, sizeof(key));

	/* 0. */
	bad_key_files();

	/* bob, with the cluster's key. */
	t_cluster_start(&cl, 1, T_ARGS("--peer-key", key_path));
	cb = t_cluster_connect(&cl, 1);
	CHECK(cb != NULL, "bob serves");
	if (!cb)
		goto out;

	/* 1. */
	plain_claim(cl.port[1]);

	/* 2. */
	memset(&se, 0, sizeof(se));
	se.src = "127.0.0.1";
	se.name = "alice";
	CHECK(write_key(bad_key_path, 32, 0600) == 0, "other key written");
	otherlen = read_key(bad_key_path, other, sizeof(other));
	se.pkey = other;
	se.pkeylen = otherlen;
	CHECK(session(&se, key, keylen) == 0, "a session as alice");
	CHECK(se.challenge_ok, "bob's challenge carries his MAC under the cluster key");
	CHECK(refused(se.after, se.alen, "authentication failed"),
	      "a proof under another key: refused");
	CHECK(cf_file_has(cl.log[1], "claiming to be peer alice failed authentication"),
	      "bob's log names alice and the failed authentication");
	CHECK(peer_state(cb, "alice") == SSQ_PEER_IDLE, "alice not linked at bob");

	/* 3. */
	se.pkey = key;
	se.pkeylen = keylen;
	se.src = "127.0.0.2";
	CHECK(session(&se, key, keylen) == 0, "a session as alice from 127.0.0.2");
	CHECK(se.alen == 0 && !se.challenge_ok,
	      "from 127.0.0.2, no peer's host: closed at once, nothing sent (%zu bytes)",
	      se.alen);
	CHECK(cf_file_has(cl.log[1], "closed at once: not from a peer's host"),
	      "bob's log says why");

	/* 4. */
	se.src = "127.0.0.1";
	se.name = "carol";
	se.want = 1;
	CHECK(session(&se, key, keylen) == 0 && se.challenge_ok, "a session as carol");
	CHECK(se.alen == 0, "carol's want taken (bob closed saying nothing: %zu bytes)",
	      se.alen);
	for (t0 = now_s(); now_s() - t0 < 3 && peer_state(cb, "carol") == SSQ_PEER_IDLE;)
		usleep(10000);
	CHECK(peer_state(cb, "carol") != SSQ_PEER_IDLE, "bob wants carol after her want");
	/* Nobody at carol's port: bob gives the want up after OPEN_PENDING_MS. */
	for (t0 = now_s(); now_s() - t0 < 15 && peer_state(cb, "carol") != SSQ_PEER_IDLE;)
		usleep(20000);
	CHECK(peer_state(cb, "carol") == SSQ_PEER_IDLE, "bob gave carol's want up");
	{
		struct session re = se;

		re.replay = se.rec;
		CHECK(session(&re, key, keylen) == 0, "the session replayed");
		CHECK(refused(re.after, re.alen, "authentication failed"),
		      "a replayed hello, proof and want: refused at the proof");
		for (t0 = now_s(); now_s() - t0 < 2; usleep(20000))
			if (peer_state(cb, "carol") != SSQ_PEER_IDLE)
				break;
		CHECK(peer_state(cb, "carol") == SSQ_PEER_IDLE,
		      "the replayed want not taken: carol stays idle at bob");
	}

	/* 5. */
	link_replay();

	/* 8. (before 6: bad_key_path holds the other key until 7) */
	one_peer();

	/* 6. */
	t_cluster_start(&cl, 0, T_ARGS("--peer-key", key_path));
	ca = t_cluster_connect(&cl, 0);
	CHECK(ca != NULL, "alice serves");
	if (!ca)
		goto out;
	rc = ssq_queue_open(ca, "bob/q0", &q);
	CHECK(rc == 0, "alice opens bob/q0 over an authenticated link: %d (%s)", rc,
	      ssq_client_error(ca));
	CHECK(cf_wait_ready(ca, "bob/q0", 1, 10), "bob/q0 READY at alice");
	CHECK(peer_state(cb, "alice") == SSQ_PEER_READY, "alice linked at bob");
	if (q)
		ssq_queue_close(q);

	/* 7. */
	t_cluster_start(&cl, 2, T_ARGS("--peer-key", bad_key_path));
	cc = t_cluster_connect(&cl, 2);
	CHECK(cc != NULL, "carol serves");
	if (!cc)
		goto out;
	q = NULL;
	(void)ssq_queue_try_open(cc, "bob/q0", &q);
	for (t0 = now_s(); now_s() - t0 < 15; usleep(50000))
		if (cf_file_has(cl.log[2], "peer bob: dialing") &&
		    cf_file_has(cl.log[2], "authentication failed"))
			break;
	CHECK(cf_file_has(cl.log[2], "peer bob: dialing") &&
	          cf_file_has(cl.log[2], "authentication failed: the daemon there does "
	                                 "not hold this --peer-key"),
	      "carol, with another key, is refused by bob; her log names bob and why");
	CHECK(peer_state(cb, "carol") != SSQ_PEER_READY, "carol not linked at bob");
	if (q)
		ssq_queue_close(q);
out:
	if (ca)
		ssq_client_close(ca);
	if (cb)
		ssq_client_close(cb);
	if (cc)
		ssq_client_close(cc);
	if (test_failures)
		setenv("KEEP_LOGS", "1", 1);
	t_cluster_stop(&cl);
	unlink(key_path);
	unlink(bad_key_path);
	return test_exit("ctrl_adv_peer_auth");
}
