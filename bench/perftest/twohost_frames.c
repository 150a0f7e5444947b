/* SPDX-License-Identifier: MIT */
/* twohost_frames.c - the two-host side channel's frames (twohost_frames.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <endian.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <ssq/ssq.h>
#include <ssq/client.h>
#include "twohost_frames.h"

static const char *const kind_names[] = {
	"?",    "HELLO",   "WELCOME", "START", "READY",
	"DONE", "VERDICT", "BYE",     "GRANT", "GRANTED"
};

static double deadline(double s)
{
	return s > 0 ? pt_now() + s : 0;
}

/* Write all of @buf; 0 or -1 (said why). */
static int put_all(const struct pt_opts *o, int fd, const uint8_t *buf, size_t n)
{
	ssize_t k;

	while (n) {
		k = send(fd, buf, n, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			fprintf(stderr, "%s: side channel: send: %s\n", o->tool,
			        strerror(errno));
			return -1;
		}
		buf += k;
		n -= (size_t)k;
	}
	return 0;
}

int pt_th_send(const struct pt_opts *o, int fd, const struct th_msg *m)
{
	uint8_t b[TH_FRAME];
	uint32_t w[13] = { m->status,   m->test, m->size,     m->all_sizes, m->procs,
		           m->qps,      m->mode, m->tx_depth, m->check,     m->qpn,
		           m->peer_qpn, m->rkey, m->bidir };
	uint64_t d[3] = { m->iova, m->len, m->msgs }, x;
	uint32_t v;
	size_t off = 0;
	unsigned i;

	x = htobe64(TH_MAGIC);
	memcpy(b, &x, 8);
	v = htobe32(TH_VERSION);
	memcpy(b + 8, &v, 4);
	v = htobe32(m->kind);
	memcpy(b + 12, &v, 4);
	off = 16;
	for (i = 0; i < 13; i++, off += 4) {
		v = htobe32(w[i]);
		memcpy(b + off, &v, 4);
	}
	for (i = 0; i < 3; i++, off += 8) {
		x = htobe64(d[i]);
		memcpy(b + off, &x, 8);
	}
	memset(b + off, 0, TH_TEXT);
	memcpy(b + off, m->text, strnlen(m->text, TH_TEXT - 1));
	return put_all(o, fd, b, sizeof(b));
}

/*
 * Read one frame of kind @want (0: any) within @secs (0: no limit).
 * Returns 0, -2 (a peer tool of another version: said, its version in
 * m->test), or -1 (said why: closed, timeout, bad magic, kind).
 */
int pt_th_recv(const struct pt_opts *o, int fd, uint32_t want, double secs,
               struct th_msg *m)
{
	uint8_t b[TH_FRAME];
	size_t got = 0, off;
	double end = deadline(secs);
	uint32_t w[13], v;
	uint64_t d[3], x;
	unsigned i;
	ssize_t k;

	while (got < sizeof(b)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int left = end ? (int)((end - pt_now()) * 1000) : -1;

		if (end && left <= 0) {
			fprintf(stderr,
			        "%s: side channel: no %s from the other side in %.0f "
			        "s\n",
			        o->tool, want ? kind_names[want] : "answer", secs);
			return -1;
		}
		if (poll(&p, 1, left) < 0 && errno != EINTR) {
			fprintf(stderr, "%s: side channel: poll: %s\n", o->tool,
			        strerror(errno));
			return -1;
		}
		if (!(p.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		k = recv(fd, b + got, sizeof(b) - got, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			fprintf(stderr,
			        "%s: side channel: the other side %s (waiting for %s)\n",
			        o->tool, k ? strerror(errno) : "closed the connection",
			        want ? kind_names[want] : "a frame");
			return -1;
		}
		got += (size_t)k;
	}
	memcpy(&x, b, 8);
	if (be64toh(x) != TH_MAGIC) {
		fprintf(stderr,
		        "%s: side channel: not an ssq perftest peer (magic 0x%016llx): "
		        "is -p the port of an ssq tool's --server?\n",
		        o->tool, (unsigned long long)be64toh(x));
		return -1;
	}
	memcpy(&v, b + 8, 4);
	if (be32toh(v) != TH_VERSION) {
		fprintf(stderr,
		        "%s: side channel: the other side speaks version %u, this tool "
		        "%u: run the same ssq build on both hosts\n",
		        o->tool, be32toh(v), TH_VERSION);
		m->test = be32toh(v);
		return -2;
	}
	memset(m, 0, sizeof(*m));
	memcpy(&v, b + 12, 4);
	m->kind = be32toh(v);
	for (off = 16, i = 0; i < 13; i++, off += 4) {
		memcpy(&v, b + off, 4);
		w[i] = be32toh(v);
	}
	for (i = 0; i < 3; i++, off += 8) {
		memcpy(&x, b + off, 8);
		d[i] = be64toh(x);
	}
	memcpy(m->text, b + off, TH_TEXT);
	m->text[TH_TEXT - 1] = 0;
	m->status = w[0];
	m->test = w[1];
	m->size = w[2];
	m->all_sizes = w[3];
	m->procs = w[4];
	m->qps = w[5];
	m->mode = w[6];
	m->tx_depth = w[7];
	m->check = w[8];
	m->qpn = w[9];
	m->peer_qpn = w[10];
	m->rkey = w[11];
	m->bidir = w[12];
	m->iova = d[0];
	m->len = d[1];
	m->msgs = d[2];
	if (want && m->kind != want) {
		fprintf(stderr, "%s: side channel: got %s (kind %u), want %s\n", o->tool,
		        m->kind < TH_KINDS ? kind_names[m->kind] : "an unknown frame",
		        m->kind, kind_names[want]);
		return -1;
	}
	return 0;
}

const char *pt_th_tool_of(uint32_t test)
{
	static const char *const names[] = { "ssq_write_bw", "ssq_write_lat",
		                             "ssq_send_bw",  "ssq_send_lat",
		                             "ssq_read_bw",  "ssq_atomic_bw",
		                             "ssq_read_lat", "ssq_atomic_lat" };

	return test < 8 ? names[test] : "an unknown tool";
}

const char *pt_th_kind_name(uint32_t kind)
{
	return kind < TH_KINDS ? kind_names[kind] : "frame";
}
