/* SPDX-License-Identifier: MIT */
/*
 * The peer exchange between two ssqd: the message codec refuses every
 * malformed field with a reason naming it; two daemons (--listen and
 * --connect) exchange QPN/PSN/LID/GID and connect each queue to the other's;
 * a listening ssqd refuses truncated and malformed peers, says why, and
 * keeps serving its clients until a good peer comes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <ssq/client.h>
#include "ctrl/daemon/peers/peers.h"
#include "ssq_flow.h"

static void expect_bad(const uint8_t *msg, size_t n, const char *needle, const char *what)
{
	struct proto_peer_addr a;
	char why[200] = "";
	int rc = proto_peer_decode(msg, n, &a, why, sizeof(why));

	CHECK(rc == -EBADMSG || rc == -EPROTO, "%s accepted (%d)", what, rc);
	CHECK(strstr(why, needle) != NULL, "%s: reason \"%s\" lacks \"%s\"", what, why,
	      needle);
}

static void codec(void)
{
	struct proto_peer_addr a = { 0 }, b;
	uint8_t m[SSQ_PEER_MSG_LEN], bad[SSQ_PEER_MSG_LEN + 1];
	char why[200];
	int i;

	a.index = 2;
	a.count = 3;
	a.lid = 0x1234;
	a.qpn = 0xabcdef;
	a.psn = 0x123456;
	for (i = 0; i < 16; i++)
		a.gid[i] = (uint8_t)(0xf0 + i);
	a.data_iova = 0x550000000000ull;
	a.data_rkey = 0xdeadbeef;
	strcpy(a.name, "q2");
	a.link_layer = IBV_LINK_LAYER_ETHERNET;
	a.mtu = IBV_MTU_1024;
	a.rd_atom = 16;
	proto_peer_encode(&a, m);
	CHECK(proto_peer_decode(m, sizeof(m), &b, why, sizeof(why)) == 0, "roundtrip: %s",
	      why);
	CHECK(b.index == 2 && b.count == 3 && b.lid == 0x1234 && b.qpn == 0xabcdef &&
	          b.psn == 0x123456 && !memcmp(b.gid, a.gid, 16) &&
	          b.data_iova == a.data_iova && b.data_rkey == a.data_rkey &&
	          !strcmp(b.name, "q2") && b.link_layer == IBV_LINK_LAYER_ETHERNET &&
	          b.mtu == IBV_MTU_1024 && b.rd_atom == 16,
	      "roundtrip fields differ");
	CHECK(sizeof(m) == 88 && m[4] == 0 && m[5] == 4, "version 4, 88 bytes");
	/* Network byte order on the wire: QPN at 12, big-endian. */
	CHECK(m[12] == 0 && m[13] == 0xab && m[14] == 0xcd && m[15] == 0xef, "QPN bytes");

	/* Bytes after the name's NUL are not part of it (found by fuzz_peer). */
	memcpy(bad, m, sizeof(m));
	memset(bad + 48 + 3, 'z', SSQ_NAME_MAX - 4);
	CHECK(proto_peer_decode(bad, sizeof(m), &b, why, sizeof(why)) == 0 &&
	          !strcmp(b.name, "q2") && b.name[3] == 0 &&
	          b.name[SSQ_NAME_MAX - 2] == 0,
	      "name after NUL kept");

	expect_bad(m, sizeof(m) - 1, "87 bytes", "truncated message");
	memcpy(bad, m, sizeof(m));
	bad[SSQ_PEER_MSG_LEN] = 0;
	expect_bad(bad, sizeof(bad), "89 bytes", "long message");
	memcpy(bad, m, sizeof(m));
	bad[0] = 'X';
	expect_bad(bad, sizeof(m), "magic", "bad magic");
	memcpy(bad, m, sizeof(m));
	bad[5] = 5;
	expect_bad(bad, sizeof(m), "version 5", "version 5");
	/* Version 3 (before --peer-key): refused naming both versions. */
	memcpy(bad, m, sizeof(m));
	bad[5] = 3;
	expect_bad(bad, sizeof(m), "version 3, this ssqd 4", "version 3");
	/*
	 * A version-1 ssqd's message (80 bytes, no link layer, MTU or depth):
	 * its header alone says so, and it is refused naming the versions,
	 * never read as a shorter version 4.
	 */
	memcpy(bad, m, sizeof(m));
	bad[5] = 1;
	CHECK(proto_peer_msg_len(bad, why, sizeof(why)) == -EPROTO &&
	          strstr(why, "version 1, this ssqd 4"),
	      "version 1 header: %s", why);
	expect_bad(bad, 80, "version 1, this ssqd 4", "version 1 message");
	m[80] = 3;
	expect_bad(m, sizeof(m), "link layer 3", "unknown link layer");
	m[80] = IBV_LINK_LAYER_INFINIBAND;
	m[81] = 6;
	expect_bad(m, sizeof(m), "MTU code 6", "MTU past 4096");
	m[81] = IBV_MTU_4096;
	m[82] = 0;
	expect_bad(m, sizeof(m), "0 READs", "no responder depth");
	m[82] = 16;
	a.qpn = 0x1000000;
	proto_peer_encode(&a, bad);
	expect_bad(bad, sizeof(m), "QPN 0x1000000", "25-bit QPN");
	a.qpn = 1;
	a.psn = 0xffffffff;
	proto_peer_encode(&a, bad);
	expect_bad(bad, sizeof(m), "PSN 0xffffffff", "32-bit PSN");
	a.psn = 1;
	a.index = 3;
	proto_peer_encode(&a, bad);
	expect_bad(bad, sizeof(m), "queue 3 of 3", "index past count");
	a.index = 0;
	a.count = SSQ_MAX_QUEUES + 1;
	proto_peer_encode(&a, bad);
	expect_bad(bad, sizeof(m), "of 65", "65 queues");
	a.count = 1;
	a.name[0] = 0;
	proto_peer_encode(&a, bad);
	expect_bad(bad, sizeof(m), "name", "empty name");
	strcpy(a.name, "q0");
	proto_peer_encode(&a, bad);
	memset(bad + 48, 'x', SSQ_NAME_MAX);
	expect_bad(bad, sizeof(m), "name", "unterminated name");

	/* A refusal keeps version 1's 80 bytes, so old peers can read ours. */
	proto_peer_encode_refusal("busy", bad);
	CHECK(proto_peer_msg_len(bad, why, sizeof(why)) == 80, "refusal length");
	CHECK(proto_peer_decode(bad, 80, &b, why, sizeof(why)) == -ECONNREFUSED &&
	          !strcmp(why, "peer refused: busy"),
	      "refusal: %s", why);
}

/* A restart decoded on a link of 4 queues: @needle in the error. */
static void restart_bad(const uint8_t *msg, size_t n, const char *needle)
{
	struct proto_peer_restart r;
	char why[200] = "";
	int rc = proto_peer_decode_restart(msg, n, 4, &r, why, sizeof(why));

	CHECK(rc < 0 && strstr(why, needle), "restart '%s' refused: %d (%s)", needle, rc,
	      why);
}

/* The queue restart after the exchange (peer_msg.h): layout and checks. */
static void restart_codec(void)
{
	struct proto_peer_restart a = { 3,          PROTO_RESTART_ASK, 0,
		                        0xdeadbeef, 0xabcdef,          0x123456 },
	                          b;
	struct proto_peer_addr pa = { .count = 4,
		                      .lid = 1,
		                      .name = "q0",
		                      .link_layer = IBV_LINK_LAYER_INFINIBAND,
		                      .mtu = IBV_MTU_1024,
		                      .rd_atom = 1 };
	uint8_t m[SSQ_PEER_RESTART_LEN], bad[SSQ_PEER_MSG_LEN];
	char why[200] = "";

	proto_peer_encode_restart(&a, 4, m);
	CHECK(proto_peer_msg_len(m, why, sizeof(why)) == SSQ_PEER_RESTART_LEN,
	      "restart length: %s", why);
	CHECK(!proto_peer_decode_restart(m, sizeof(m), 4, &b, why, sizeof(why)) &&
	          b.index == 3 && b.kind == PROTO_RESTART_ASK && b.seq == 0xdeadbeef &&
	          b.psn == 0xabcdef && b.peer_psn == 0x123456 && !b.status,
	      "restart roundtrip: %s", why);
	CHECK(!memcmp(m, "SSQR", 4) && m[5] == 4 && m[12] == 0xde, "restart bytes");
	/* A link of 5 queues is not this one: the peer counts differently. */
	CHECK(proto_peer_decode_restart(m, sizeof(m), 5, &b, why, sizeof(why)) ==
	              -EBADMSG &&
	          strstr(why, "this link has 5"),
	      "restart of another count: %s", why);
	restart_bad(m, sizeof(m) - 1, "not a queue restart");
	/* Where an address is due, a restart is refused as such. */
	CHECK(proto_peer_decode(m, sizeof(m), &pa, why, sizeof(why)) == -EBADMSG &&
	          strstr(why, "address was due"),
	      "restart in the exchange: %s", why);
	/* And an address is no restart. */
	proto_peer_encode(&pa, bad);
	restart_bad(bad, SSQ_PEER_MSG_LEN, "not a queue restart");
	memcpy(bad, m, sizeof(m));
	bad[9] = 4; /* index 4 of 4 */
	restart_bad(bad, sizeof(m), "queue 4 of 4");
	memcpy(bad, m, sizeof(m));
	bad[10] = 6;
	restart_bad(bad, sizeof(m), "kind 6");
	bad[10] = PROTO_LINK_BUSY; /* busy/idle carry nothing else */
	restart_bad(bad, sizeof(m), "busy/idle message with fields set");
	memset(bad + 8, 0, sizeof(m) - 8);
	bad[10] = PROTO_LINK_BUSY;
	CHECK(!proto_peer_decode_restart(bad, sizeof(m), 4, &b, why, sizeof(why)) &&
	          b.kind == PROTO_LINK_BUSY,
	      "busy message: %s", why);
	memcpy(bad, m, sizeof(m));
	bad[16] = 1; /* PSN 0x1abcdef */
	restart_bad(bad, sizeof(m), "24 bits");
	memcpy(bad, m, sizeof(m));
	bad[11] = 5; /* an ask carries no status */
	restart_bad(bad, sizeof(m), "status 5");
	memcpy(bad, m, sizeof(m));
	bad[10] = PROTO_RESTART_DONE; /* an answer carries no PSNs */
	restart_bad(bad, sizeof(m), "answer carrying PSNs");
	memcpy(bad, m, sizeof(m));
	bad[5] = 2;
	CHECK(proto_peer_decode_restart(bad, sizeof(m), 4, &b, why, sizeof(why)) ==
	          -EPROTO,
	      "restart of version 2: %s", why);

	/* A want: its length from the header, its name, nothing else. */
	proto_peer_encode_want("carol", 4, bad);
	CHECK(proto_peer_msg_len(bad, why, sizeof(why)) == SSQ_PEER_WANT_LEN,
	      "want length");
	CHECK(proto_peer_decode(bad, SSQ_PEER_WANT_LEN, &pa, why, sizeof(why)) ==
	              PROTO_PEER_WANT &&
	          !strcmp(pa.name, "carol") && pa.count == 4,
	      "want decoded: %s", why);
	memset(bad + SSQ_PEER_HEAD_LEN, 'x', SSQ_NAME_MAX);
	CHECK(proto_peer_decode(bad, SSQ_PEER_WANT_LEN, &pa, why, sizeof(why)) ==
	              -EBADMSG &&
	          strstr(why, "not NUL-terminated"),
	      "want with an unterminated name: %s", why);
	restart_bad(bad, SSQ_PEER_WANT_LEN, "not a queue restart");
}

/* Version 4's authentication messages (--peer-key): layout and checks. */
static void auth_codec(void)
{
	struct proto_peer_auth a, b;
	struct proto_peer_addr pa;
	uint8_t m[SSQ_PEER_AUTH_LEN], bad[SSQ_PEER_AUTH_LEN];
	char why[200];
	unsigned i;

	memset(&a, 0, sizeof(a));
	a.kind = PROTO_AUTH_CHALLENGE;
	a.count = 3;
	a.gen = 0x01020304;
	snprintf(a.name, sizeof(a.name), "bob");
	for (i = 0; i < SSQ_PEER_NONCE_LEN; i++)
		a.nonce[i] = (uint8_t)i;
	for (i = 0; i < SSQ_PEER_MAC_LEN; i++)
		a.mac[i] = (uint8_t)(0xa0 + i);
	proto_peer_encode_auth(&a, m);
	CHECK(sizeof(m) == 112 && !memcmp(m, "SSQA", 4) && m[5] == 4 && m[8] == 2 &&
	          m[12] == 1 && m[15] == 4 && m[16] == 'b' && m[48] == 0 && m[80] == 0xa0,
	      "auth bytes: magic, version 4, kind, generation, name, nonce, MAC");
	CHECK(proto_peer_msg_len(m, why, sizeof(why)) == SSQ_PEER_AUTH_LEN,
	      "auth length");
	CHECK(!proto_peer_decode_auth(m, sizeof(m), &b, why, sizeof(why)) &&
	          b.kind == a.kind && b.count == 3 && b.gen == a.gen &&
	          !strcmp(b.name, "bob") && !memcmp(b.nonce, a.nonce, 32) &&
	          !memcmp(b.mac, a.mac, 32),
	      "auth roundtrip: %s", why);
	memcpy(bad, m, sizeof(m));
	bad[8] = 4;
	CHECK(proto_peer_decode_auth(bad, sizeof(m), &b, why, sizeof(why)) == -EBADMSG &&
	          strstr(why, "kind 4"),
	      "auth of kind 4: %s", why);
	memcpy(bad, m, sizeof(m));
	memset(bad + 16, 'x', SSQ_NAME_MAX);
	CHECK(proto_peer_decode_auth(bad, sizeof(m), &b, why, sizeof(why)) == -EBADMSG,
	      "auth name not NUL-terminated");
	CHECK(proto_peer_decode_auth(m, sizeof(m) - 1, &b, why, sizeof(why)) == -EBADMSG,
	      "auth of 111 bytes");
	/* An ssqd without --peer-key, handed one where an address is due. */
	CHECK(proto_peer_decode(m, SSQ_PEER_AUTH_LEN, &pa, why, sizeof(why)) ==
	              -EBADMSG &&
	          strstr(why, "--peer-key"),
	      "auth where an address is due: %s", why);
}

static pid_t start(const char *sock, const char *mode, const char *arg)
{
	const char *ssqd = getenv("SSQD");
	pid_t pid = fork();

	if (pid == 0) {
		execl(ssqd, ssqd, "--device", "emu", "--socket", sock, "--hugepages=off",
		      "--data-mib", "4", "--queues", "2", mode, arg, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* A fake peer: connect to @port, send @n bytes of @msg, close. */
static void fake_peer(uint16_t port, const void *msg, size_t n)
{
	struct sockaddr_in sa = { 0 };
	int s = socket(AF_INET, SOCK_STREAM, 0), i;

	sa.sin_family = AF_INET;
	sa.sin_port = htons(port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (i = 0; i < 200; i++) {
		if (!connect(s, (struct sockaddr *)&sa, sizeof(sa)))
			break;
		usleep(50 * 1000);
	}
	if (send(s, msg, n, MSG_NOSIGNAL) < 0)
		perror("fake peer send");
	close(s);
}

/*
 * A version-1 ssqd at @port: it sends its 80-byte message and reads ours.
 * The listening ssqd reads first and must refuse it by the version in the
 * header (then close, not reset, the connection) with a refusal - whose
 * layout is version 1's - saying both versions, so that one refuses too.
 */
static void old_peer(uint16_t port)
{
	struct sockaddr_in sa = { 0 };
	uint8_t v1[80] = { 'S', 'S', 'Q', 'P', 0, 1, 0, 2 }, got[256];
	int s = socket(AF_INET, SOCK_STREAM, 0), i;
	ssize_t n, total = 0;

	sa.sin_family = AF_INET;
	sa.sin_port = htons(port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (i = 0; i < 200; i++) {
		if (!connect(s, (struct sockaddr *)&sa, sizeof(sa)))
			break;
		usleep(50 * 1000);
	}
	memcpy(v1 + 48, "q0", 3);
	CHECK(send(s, v1, sizeof(v1), MSG_NOSIGNAL) == (ssize_t)sizeof(v1),
	      "old peer sends");
	while ((n = recv(s, got + total, sizeof(got) - (size_t)total, 0)) > 0)
		total += n;
	CHECK(n == 0, "ssqd closes on the old peer (%zd: %s)", n, strerror(errno));
	CHECK(total >= 8 && !memcmp(got, "SSQN", 4) && got[4] == 0 && got[5] == 4 &&
	          memmem(got, (size_t)total, "version 1, this ssqd 4", 22),
	      "ssqd refuses saying versions 1 and 4 (%zd bytes)", total);
	close(s);
}

static void two_daemons(void)
{
	char sa[108], sb[108], hp[32];
	uint16_t port = t_free_tcp_port();
	uint8_t junk[SSQ_PEER_MSG_LEN];
	struct ssq_client *ca, *cb;
	struct ssq_queue_info info[2];
	struct ssq_queue *qa[2], *qb[2];
	pid_t a, b;
	int i, rc;

	snprintf(sa, sizeof(sa), "/tmp/ssq-peer-a-%d.sock", getpid());
	snprintf(sb, sizeof(sb), "/tmp/ssq-peer-b-%d.sock", getpid());
	snprintf(hp, sizeof(hp), "%u", port);
	a = start(sa, "--listen", hp);
	ca = ssqd_connect_pid(sa, a);
	CHECK(ca != NULL, "listening ssqd does not serve clients while it waits");
	if (!ca)
		goto out;
	rc = ssq_client_list(ca, info, 2);
	CHECK(rc == 2 && !info[0].ready && !info[1].ready,
	      "queues ready before a peer (%d)", rc);
	CHECK(ssq_queue_open(ca, "q0", &qa[0]) == -EAGAIN, "attach before the peer");
	CHECK(strstr(ssq_client_error(ca), "not connected yet") != NULL, "reason: %s",
	      ssq_client_error(ca));

	/* Truncated, then malformed peers: refused, ssqd still serves. */
	memset(junk, 0, sizeof(junk));
	memcpy(junk, "SSQP", 4);
	fake_peer(port, junk, 20);
	fake_peer(port, junk, sizeof(junk)); /* version 0 */
	old_peer(port);
	rc = ssq_client_list(ca, info, 2);
	CHECK(rc == 2 && !info[0].ready, "ssqd stopped serving after bad peers (%d)", rc);

	snprintf(hp, sizeof(hp), "127.0.0.1:%u", port);
	b = start(sb, "--connect", hp);
	cb = ssqd_connect_pid(sb, b);
	CHECK(cb != NULL, "connecting ssqd did not come up");
	for (i = 0; i < 200; i++) {
		if (ssq_client_list(ca, info, 2) == 2 && info[0].ready && info[1].ready)
			break;
		usleep(50 * 1000);
	}
	CHECK(i < 200, "listening ssqd never connected its queues");
	if (cb && i < 200) {
		for (i = 0; i < 2; i++) {
			char name[16];

			snprintf(name, sizeof(name), "q%d", i);
			CHECK(ssq_queue_open(ca, name, &qa[i]) == 0, "open A %s: %s",
			      name, ssq_client_error(ca));
			CHECK(ssq_queue_open(cb, name, &qb[i]) == 0, "open B %s: %s",
			      name, ssq_client_error(cb));
		}
		for (i = 0; i < 2; i++) {
			CHECK(ssq_queue_peer_qpn(qa[i]) == ssq_queue_qpn(qb[i]) &&
			          ssq_queue_peer_qpn(qb[i]) == ssq_queue_qpn(qa[i]),
			      "q%d: A 0x%x -> 0x%x, B 0x%x -> 0x%x", i,
			      ssq_queue_qpn(qa[i]), ssq_queue_peer_qpn(qa[i]),
			      ssq_queue_qpn(qb[i]), ssq_queue_peer_qpn(qb[i]));
			ssq_queue_close(qa[i]);
			ssq_queue_close(qb[i]);
		}
	}
	ssq_client_close(cb);
	t_ssqd_stop(b, &rc, NULL);
	CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "ssqd --connect exit 0x%x", rc);
out:
	ssq_client_close(ca);
	t_ssqd_stop(a, &rc, NULL);
	CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "ssqd --listen exit 0x%x", rc);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	codec();
	restart_codec();
	auth_codec();
	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	two_daemons();
	return test_exit("ctrl_peer");
}
