/* SPDX-License-Identifier: MIT */
/*
 * The client protocol under bad input: the decoder refuses each malformed
 * message with a reason, and a live ssqd answers raw malformed datagrams
 * (short, bad magic, other version, unknown type, wrong length, unterminated
 * name, requests before hello, replies sent as requests, out-of-range
 * values) with error replies, keeps the connection, and goes on serving it
 * and everyone else.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <ssq/client.h>
#include "ctrl/proto/msg.h"
#include "lib/tlib.h"
#include "helpers.h"

static uint8_t buf[sizeof(struct proto_msg_hdr) + SSQ_MSG_MAX + 16];

/* A raw datagram: header fields as given, then @len payload bytes of @fill. */
static size_t raw(uint32_t magic, uint16_t version, uint16_t type, uint32_t hdr_len,
                  size_t len, uint8_t fill)
{
	struct proto_msg_hdr h = { magic, version, type, hdr_len, 77 };

	memcpy(buf, &h, sizeof(h));
	memset(buf + sizeof(h), fill, len);
	return sizeof(h) + len;
}

static void decoder(void)
{
	struct proto_msg m;
	struct proto_msg_alloc al;
	char why[200];
	size_t n;

	n = raw(SSQ_PROTO_MAGIC, SSQ_PROTO_VERSION, SSQ_MSG_LIST, 0, 0, 0);
	CHECK(proto_msg_decode(buf, n, &m, why, sizeof(why)) == 0, "LIST: %s", why);
	CHECK(proto_msg_decode(buf, 7, &m, why, sizeof(why)) == -EBADMSG &&
	          strstr(why, "shorter"),
	      "7 bytes: %s", why);
	n = raw(0x12345678, SSQ_PROTO_VERSION, SSQ_MSG_LIST, 0, 0, 0);
	CHECK(proto_msg_decode(buf, n, &m, why, sizeof(why)) == -EBADMSG &&
	          strstr(why, "magic"),
	      "magic: %s", why);
	n = raw(SSQ_PROTO_MAGIC, 9, SSQ_MSG_LIST, 0, 0, 0);
	CHECK(proto_msg_decode(buf, n, &m, why, sizeof(why)) == -EPROTO &&
	          strstr(why, "version 9"),
	      "version: %s", why);
	n = raw(SSQ_PROTO_MAGIC, SSQ_PROTO_VERSION, 0x77, 0, 0, 0);
	CHECK(proto_msg_decode(buf, n, &m, why, sizeof(why)) == -EBADMSG &&
	          strstr(why, "0x77"),
	      "type: %s", why);
	n = raw(SSQ_PROTO_MAGIC, SSQ_PROTO_VERSION, SSQ_MSG_ATTACH, 32, 31, 'a');
	CHECK(proto_msg_decode(buf, n, &m, why, sizeof(why)) == -EBADMSG, "short ATTACH");
	n = raw(SSQ_PROTO_MAGIC, SSQ_PROTO_VERSION, SSQ_MSG_ATTACH, 33, 33, 'a');
	CHECK(proto_msg_decode(buf, n, &m, why, sizeof(why)) == -EBADMSG, "long ATTACH");
	n = raw(SSQ_PROTO_MAGIC, SSQ_PROTO_VERSION, SSQ_MSG_ATTACH, 32, 32, 'a');
	CHECK(proto_msg_decode(buf, n, &m, why, sizeof(why)) == -EBADMSG &&
	          strstr(why, "NUL-terminated"),
	      "unterminated name: %s", why);
	n = raw(SSQ_PROTO_MAGIC, SSQ_PROTO_VERSION, SSQ_MSG_ATTACH, 32, 32, 0);
	CHECK(proto_msg_decode(buf, n, &m, why, sizeof(why)) == -EBADMSG &&
	          strstr(why, "empty"),
	      "empty name: %s", why);
	al = (struct proto_msg_alloc){ 4096, 48 };
	n = raw(SSQ_PROTO_MAGIC, SSQ_PROTO_VERSION, SSQ_MSG_ALLOC, sizeof(al), 0, 0);
	memcpy(buf + sizeof(struct proto_msg_hdr), &al, sizeof(al));
	n += sizeof(al);
	CHECK(proto_msg_decode(buf, n, &m, why, sizeof(why)) == -EBADMSG &&
	          strstr(why, "aligned"),
	      "alignment 48: %s", why);
}

static int raw_socket(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_SEQPACKET, 0);

	strcpy(sa.sun_path, path);
	return connect(s, (struct sockaddr *)&sa, sizeof(sa)) ? -1 : s;
}

/*
 * The reply to what was just sent on @s, case @what: an SSQ_MSG_ERROR with
 * @err (0: any) whose text has @needle (NULL: any).
 */
static void check_error_reply(int s, int err, const char *needle, const char *what)
{
	struct proto_msg m;
	char why[200] = "";
	int rc;

	rc = proto_msg_recv(s, &m, NULL, 0, NULL, 2000, why, sizeof(why));
	CHECK(rc == 0 && m.hdr.type == SSQ_MSG_ERROR, "%s: reply rc %d type 0x%x (%s)",
	      what, rc, rc ? 0 : m.hdr.type, why);
	if (rc || m.hdr.type != SSQ_MSG_ERROR)
		return;
	if (err)
		CHECK(m.u.error.err == err, "%s: error %d, want %d (\"%s\")", what,
		      m.u.error.err, err, m.u.error.msg);
	if (needle)
		CHECK(strstr(m.u.error.msg, needle) != NULL, "%s: \"%s\" lacks \"%s\"",
		      what, m.u.error.msg, needle);
}

/* Send @n bytes of buf raw; expect an error reply whose text has @needle. */
static void expect_error(int s, size_t n, const char *needle, const char *what)
{
	CHECK(send(s, buf, n, 0) == (ssize_t)n, "%s: send", what);
	check_error_reply(s, 0, needle, what);
}

/*
 * Send a well-formed request: @type, @seq, @len payload bytes at @body;
 * expect an error reply with @err (0: any) whose text has @needle (NULL: any).
 */
static void expect_request_error(int s, uint16_t type, uint32_t seq, const void *body,
                                 uint32_t len, int err, const char *needle,
                                 const char *what)
{
	CHECK(proto_msg_send(s, type, seq, body, len, NULL, 0) == 0, "%s: send", what);
	check_error_reply(s, err, needle, what);
}

/*
 * uid 65534 (nobody), in a child, connects to the ssqd at @path: its wait
 * status, 0 when refused -EACCES with @needle (NULL: any) in the text; what
 * it got said on stderr otherwise.
 */
static int nobody_connect(const char *path, const char *needle)
{
	struct ssq_client *x;
	int st = -1, rc;
	pid_t kid = fork();

	if (kid == 0) {
		if (setgid(65534) || setuid(65534))
			_exit(3);
		rc = ssq_client_connect(path, &x);
		if (rc == -EACCES &&
		    (!needle || strstr(ssq_client_strerror_last(), needle)))
			_exit(0);
		fprintf(stderr, "uid 65534: %d %s\n", rc, ssq_client_strerror_last());
		_exit(1);
	}
	waitpid(kid, &st, 0);
	return st;
}

static void live_daemon(void)
{
	const char *ssqd = getenv("SSQD");
	char path[108];
	struct ssq_client *c = NULL;
	struct ssq_queue_info info[2];
	struct proto_msg m;
	struct proto_msg_hello hello = { 1, 0 };
	char why[200];
	int s, fds[2], nfds, i, status;
	pid_t d;

	snprintf(path, sizeof(path), "/tmp/ssq-proto-%d.sock", getpid());
	d = fork();
	if (d == 0) {
		execl(ssqd, ssqd, "--device", "emu", "--socket", path, "--hugepages=off",
		      "--data-mib", "4", (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 400 && ssq_client_connect(path, &c); i++)
		usleep(50 * 1000);
	CHECK(c != NULL, "ssqd did not come up");
	if (!c)
		goto out;
	s = raw_socket(path);
	CHECK(s >= 0, "raw connect");

	expect_error(s, raw(SSQ_PROTO_MAGIC, SSQ_PROTO_VERSION, SSQ_MSG_LIST, 0, 0, 0),
	             "hello", "request before hello");
	expect_error(s, 5, "shorter", "5-byte datagram");
	expect_error(s, raw(0xdeadbeef, SSQ_PROTO_VERSION, SSQ_MSG_HELLO, 8, 8, 0),
	             "magic", "bad magic");
	{
		char ver[32];

		snprintf(ver, sizeof(ver), "version %u", SSQ_PROTO_VERSION + 1);
		expect_error(
		    s,
		    raw(SSQ_PROTO_MAGIC, SSQ_PROTO_VERSION + 1, SSQ_MSG_HELLO, 8, 8, 0),
		    ver, ver);
	}
	expect_error(s, raw(SSQ_PROTO_MAGIC, SSQ_PROTO_VERSION, 0x99, 0, 0, 0), "0x99",
	             "unknown type");
	expect_error(s, raw(SSQ_PROTO_MAGIC, SSQ_PROTO_VERSION, SSQ_MSG_HELLO, 8, 9, 0),
	             "payload", "HELLO one byte long");
	expect_error(s,
	             raw(SSQ_PROTO_MAGIC, SSQ_PROTO_VERSION, SSQ_MSG_HELLO, 4000, 8, 0),
	             "payload", "header length lies");

	/* Now a proper hello: the connection is still good. */
	CHECK(proto_msg_send(s, SSQ_MSG_HELLO, 1, &hello, sizeof(hello), NULL, 0) == 0,
	      "hello");
	CHECK(proto_msg_recv(s, &m, fds, 2, &nfds, 2000, why, sizeof(why)) == 0 &&
	          m.hdr.type == (SSQ_MSG_HELLO | SSQ_MSG_REPLY) && nfds == 1,
	      "hello after garbage: %s", why);
	if (nfds == 1)
		close(fds[0]);
	expect_error(s,
	             raw(SSQ_PROTO_MAGIC, SSQ_PROTO_VERSION, SSQ_MSG_ATTACH, 32, 32, 'z'),
	             "NUL-terminated", "unterminated queue name");
	memset(buf + sizeof(struct proto_msg_hdr), 0, 32);
	memcpy(buf + sizeof(struct proto_msg_hdr), "q9", 2);
	expect_error(s, sizeof(struct proto_msg_hdr) + 32, "q9", "unknown queue");
	expect_error(s,
	             raw(SSQ_PROTO_MAGIC, SSQ_PROTO_VERSION, SSQ_MSG_LIST | SSQ_MSG_REPLY,
	                 sizeof(struct proto_msg_list_reply),
	                 sizeof(struct proto_msg_list_reply), 0),
	             "not a request", "a reply sent as a request");
	{
		/* A registration: of a kind that does not exist, then without its fd. */
		struct proto_msg_mem_reg mr = { 4, 0, 4096, 4096, 0 };

		expect_request_error(s, SSQ_MSG_MEM_REG, 10, &mr, sizeof(mr), 0,
		                     "kind must be 1, 2 or 3", "mem_reg of kind 4");
		/* The "made bindable" word is for a registration the client made. */
		mr.kind = SSQ_MEM_PROCESS;
		mr.access = SSQ_MEM_VERBS_BINDABLE;
		expect_request_error(s, SSQ_MSG_MEM_REG, 12, &mr, sizeof(mr), 0,
		                     "access 0x10", "mem_reg of kind 1 saying bindable");
		mr.access = 0;
		expect_request_error(s, SSQ_MSG_MEM_REG, 11, &mr, sizeof(mr), -EBADF,
		                     "file descriptor", "mem_reg without a fd");
	}
	{
		struct proto_msg_alloc al = { 1ull << 41, 64 };

		expect_request_error(s, SSQ_MSG_ALLOC, 9, &al, sizeof(al), 0, "2^40",
		                     "2^41-byte alloc");
	}
	{
		struct proto_msg_free fr = { 12345 };

		expect_request_error(s, SSQ_MSG_FREE, 10, &fr, sizeof(fr), -ENOENT, NULL,
		                     "freeing a buffer we do not own");
	}
	close(s);
	/*
	 * Another uid: the socket's mode 0660 keeps it out; with the mode
	 * opened up, ssqd's peer-credential check still refuses it, by name.
	 */
	if (getuid() == 0) {
		int st = nobody_connect(path, NULL);

		CHECK(st == 0, "nobody got past mode 0660 (0x%x)", st);
		chmod(path, 0666);
		st = nobody_connect(path, "may not use");
		CHECK(st == 0,
		      "uid 65534 was not refused by ssqd's credential check (0x%x)", st);
		chmod(path, 0660);
	} else {
		printf("peer-credential check not tested: needs root to switch uid\n");
	}

	/* The well-behaved client never noticed. */
	CHECK(ssq_client_list(c, info, 2) == 1 && info[0].ready,
	      "other client after garbage");
	ssq_client_close(c);
out:
	CHECK(t_ssqd_stop_ok(d, &status, NULL), "ssqd exit 0x%x", status);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	decoder();
	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	live_daemon();
	return test_exit("ctrl_proto");
}
