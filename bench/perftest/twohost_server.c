/* SPDX-License-Identifier: MIT */
/* twohost_server.c - the server side of a two-host run (twohost_server.h). */
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
#include "twohost_server.h"
#include "twohost_frames.h"
#include "twohost_queues.h"
#include "twohost_echo.h"
#include "checks.h"
#include "size_run.h"

/*
 * The server's answer to GRANT @m: the destination @dst granted to that
 * queue. -b (@back): the client's key to its buffer through that queue,
 * which this server's senders post on as qk (the queues pair by index).
 */
static void server_grant(const struct pt_opts *o, struct ssq_client *c,
                         const struct ssq_buf *dst, const struct th_msg *m,
                         struct pt_env *back, struct th_msg *r)
{
	char want[32];

	struct ssq_queue *q;
	char name[32];

	r->kind = TH_GRANTED;
	r->size = m->size;
	r->status = pt_th_open_by_qpn(c, m->peer_qpn, m->qpn, &q, name, r->text,
	                              sizeof(r->text)) ||
	            pt_th_grant_key(c, name, dst, pt_th_access(o), &r->rkey, r->text,
	                            sizeof(r->text));
	r->iova = dst->remote_addr;
	r->len = dst->len;
	snprintf(want, sizeof(want), "q%u", m->size);
	if (!r->status && back &&
	    (m->size >= PT_MAX_LANES || strcmp(name, want) ||
	     m->iova != back->dst_iova)) {
		r->status = 1;
		snprintf(r->text, sizeof(r->text),
		         "-b: the client's queue %u is this ssqd's %s, or its buffer "
		         "moved",
		         m->size, name);
	} else if (!r->status && back) {
		back->qrkey[0][m->size] = m->rkey;
	}
	if (r->status)
		fprintf(stderr, "%s --server: queue %u of the client: %s\n", o->tool,
		        m->size, r->text);
}

/* Listen on -p, wait for one client (--timeout, else for ever). The fd or -1. */
static int accept_one(const struct pt_opts *o)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
		                 .sin_port = htons(o->port),
		                 .sin_addr.s_addr = htonl(INADDR_ANY) };
	struct pollfd p;
	int one = 1, ls, fd = -1, rc;

	ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(ls, (struct sockaddr *)&a, sizeof(a)) || listen(ls, 1)) {
		fprintf(stderr, "%s: --server: TCP port %u (-p): %s\n", o->tool, o->port,
		        strerror(errno));
		if (ls >= 0)
			close(ls);
		return -1;
	}
	p.fd = ls;
	p.events = POLLIN;
	do
		rc = poll(&p, 1, o->timeout > 0 ? (int)(o->timeout * 1000) : -1);
	while (rc < 0 && errno == EINTR);
	if (rc == 0)
		fprintf(stderr,
		        "%s: --server: no client on TCP port %u in %.0f s (--timeout)\n",
		        o->tool, o->port, o->timeout);
	else if (rc > 0 && (fd = accept4(ls, NULL, NULL, SOCK_CLOEXEC)) < 0)
		fprintf(stderr, "%s: --server: accept: %s\n", o->tool, strerror(errno));
	close(ls);
	if (fd >= 0)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* The client's run, as the server must see it: its parameters, else a reason. */
static int agree(const struct pt_opts *o, const struct th_msg *h, struct pt_opts *eff,
                 char *why, size_t len)
{
	*eff = *o;
	if (h->test != (uint32_t)o->test) {
		snprintf(why, len,
		         "the client runs %s, this server %s: run the same tool",
		         pt_th_tool_of(h->test), o->tool);
		return -1;
	}
	if (h->all_sizes != (uint32_t)o->all_sizes) {
		snprintf(why, len, "-a on %s only: give both sides the same sizes",
		         h->all_sizes ? "the client" : "the server");
		return -1;
	}
	/* perftest's -b is SYMMETRIC (its usage): both sides give it. */
	if (h->bidir != (uint32_t)o->bidir) {
		snprintf(why, len, "-b on %s only: give both sides -b",
		         h->bidir ? "the client" : "the server");
		return -1;
	}
	if (!o->all_sizes && h->size != o->size) {
		snprintf(why, len,
		         "-s differs: the client sends %u bytes, the server has -s %u",
		         h->size, o->size);
		return -1;
	}
	if (h->procs < 1 || h->procs > PT_MAX_PROCS || h->qps < 1 ||
	    h->qps > PT_MAX_LANES || h->mode > PT_COMBINE || h->tx_depth < 1 ||
	    h->tx_depth > PT_MAX_TX) {
		snprintf(why, len,
		         "the client's -P %u -q %u --mode %u -t %u are out of range",
		         h->procs, h->qps, h->mode, h->tx_depth);
		return -1;
	}
	/* What the receive logs are checked against: the client's senders. */
	eff->procs = h->procs;
	eff->qps = h->qps;
	eff->mode = (enum pt_mode)h->mode;
	eff->tx_depth = h->tx_depth;
	return 0;
}

/* After the client's run of @size (@msgs completed): check it, say so in @v. */
static int server_check(const struct pt_opts *o, struct pt_env *e, uint32_t size,
                        const uint64_t *base, uint64_t msgs, int check, struct th_msg *v)
{
	uint64_t got;
	int bad = 0;

	if (!check) {
		snprintf(v->text, TH_TEXT,
		         "%u bytes: nothing checked (the client's "
		         "device moves no data)",
		         size);
		return 0;
	}
	switch (o->test) {
	case PT_WRITE_BW:
		bad = pt_check_dst(o, e, size);
		snprintf(v->text, TH_TEXT,
		         bad ? "%u bytes: the destination does not hold the data"
		             : "%u bytes: the data landed in the server's arena",
		         size);
		break;
	case PT_SEND_BW:
		bad = pt_check_recv(o, e, size, base, msgs);
		snprintf(v->text, TH_TEXT,
		         bad ? "%u bytes: the receive pool's log check failed"
		             : "%u bytes: %llu SENDs in the receive pool's log, the "
		               "newest pool-full intact",
		         size, (unsigned long long)msgs);
		break;
	case PT_ATOMIC_BW:
	case PT_ATOMIC_LAT:
		got = __atomic_load_n((uint64_t *)e->dst, __ATOMIC_RELAXED);
		bad = got != msgs;
		snprintf(v->text, TH_TEXT,
		         "%u bytes: the fetch-and-add counter is %llu, %llu completed%s",
		         size, (unsigned long long)got, (unsigned long long)msgs,
		         bad ? ": they differ" : "");
		break;
	default:
		snprintf(v->text, TH_TEXT, "%u bytes: READ changes nothing to check here",
		         size);
	}
	v->status = (uint32_t)bad;
	return bad;
}

/*
 * -b: the server's own direction, the client's senders' twins on this ssqd
 * (its queues qk pair with the client's qk) into the client's buffer at the
 * descriptor HELLO @h gave, granted to the client's q0 (the other queues'
 * keys come with their GRANTs). 0, or -1 (@why).
 */
static int back_open(const struct pt_opts *eff, const struct th_msg *h, int cluster,
                     uint32_t top, struct pt_env *back, char *why, size_t len)
{
	if (cluster) {
		snprintf(why, len,
		         "-b: this ssqd names its queues by peer (a cluster); -b runs "
		         "between two ssqd paired by --listen / --connect");
		return -1;
	}
	if (h->len < (top < 8 ? 8 : top)) {
		snprintf(why, len, "-b: the client's buffer (%llu bytes) is under %u",
		         (unsigned long long)h->len, top);
		return -1;
	}
	back->socket = back->dst_socket = eff->socket;
	back->dst_iova = h->iova;
	back->dst_len = h->len;
	back->rkey = h->rkey;
	back->qgrants = 1;
	back->qrkey[0][0] = h->rkey;
	back->th_fd = -1;
	return 0;
}

/*
 * -b: the server's direction of a size into the verdict @v: its messages
 * (msgs), BW peak and average (iova, len: bytes/s), which the client adds
 * to its own (perftest's -b reports the sum); @fail: it failed. 0 or 1.
 */
static int back_verdict(const struct pt_row *row, int fail, struct th_msg *v)
{
	size_t at = strnlen(v->text, TH_TEXT - 1);

	if (fail) {
		v->status = 1;
		snprintf(v->text + at, TH_TEXT - at,
		         "; the server's direction failed (see the server)");
		return 1;
	}
	v->msgs = row->iters;
	v->iova = (uint64_t)row->peak_bps;
	v->len = (uint64_t)row->avg_bps;
	snprintf(v->text + at, TH_TEXT - at,
	         "; %llu back to the client, BW average %.2f MiB/sec",
	         (unsigned long long)row->iters, row->avg_bps / (1 << 20));
	return 0;
}

int pt_th_server(const struct pt_opts *o, struct ssq_client *c)
{
	struct pt_env back = { 0 }; /* -b: the server's direction */
	struct pt_info info = { .dev = "" };
	struct pt_row brow;
	int bfail = 0;
	struct ssq_queue *q0;
	struct ssq_buf dst;
	struct pt_env e = { 0 };
	struct pt_opts eff;
	struct th_msg h, m, r;
	struct pt_th_echo x = { 0 };
	uint64_t base[PT_MAX_LANES] = { 0 };
	uint32_t top, i, started = 0;
	int fd, rc = 1, got, fails = 0, check, cluster = pt_th_named_by_peer(c);
	char q0name[32] = "q0";

	/* A cluster's queue to the client is known once it says its QPN. */
	if (!cluster && pt_th_open_q0(o, c, o->timeout > 0 ? o->timeout : 60, &q0))
		return 1;
	if (cluster)
		printf("%s --server: ssqd at %s (a cluster: the client's peer queue "
		       "is found by its QPN), waiting for a client on TCP port %u\n",
		       o->tool, o->socket, o->port);
	else
		printf("%s --server: ssqd at %s (peer QPN 0x%x), waiting for a client "
		       "on TCP port %u\n",
		       o->tool, o->socket, ssq_queue_peer_qpn(q0), o->port);
	fflush(stdout);
	fd = accept_one(o);
	if (fd < 0)
		return 1;
	memset(&r, 0, sizeof(r));
	r.kind = TH_WELCOME;
	got = pt_th_recv(o, fd, TH_HELLO, TH_REPLY_S, &h);
	/*
	 * A client of another version is answered in this one's frame: the
	 * version check every version makes names both, where a hang-up
	 * said only that the server closed the connection.
	 */
	if (got == -2) {
		snprintf(r.text, sizeof(r.text),
		         "the server speaks side channel version %u, the client %u: "
		         "run the same ssq build on both hosts",
		         TH_VERSION, h.test);
		r.status = 1;
		pt_th_send(o, fd, &r);
	}
	if (got)
		goto out;
	if (agree(o, &h, &eff, r.text, sizeof(r.text))) {
		r.status = 1;
		fprintf(stderr, "%s --server: client refused: %s\n", o->tool, r.text);
		pt_th_send(o, fd, &r);
		goto out;
	}
	if (cluster &&
	    pt_th_open_by_qpn(c, h.peer_qpn, h.qpn, &q0, q0name, r.text, sizeof(r.text)))
		goto refuse;
	if (o->bidir &&
	    back_open(&eff, &h, cluster, pt_top_size(o), &back, r.text, sizeof(r.text)))
		goto refuse;
	check = h.check != 0;
	top = pt_top_size(o);
	/* write_lat: a 64-byte aligned slot per client sender, as on one host. */
	x.slot = o->test == PT_WRITE_LAT ? (top + 63) & ~63u : 0;
	if (x.slot && h.len < (uint64_t)x.slot * eff.procs) {
		snprintf(r.text, sizeof(r.text),
		         "the client's pong buffer (%llu bytes) is shorter than %u "
		         "slots of %u",
		         (unsigned long long)h.len, eff.procs, x.slot);
		goto refuse;
	}
	if (ssq_buf_alloc(c,
	                  x.slot    ? (uint64_t)x.slot * eff.procs
	                  : top < 8 ? 8
	                            : top,
	                  &dst)) {
		snprintf(r.text, sizeof(r.text),
		         "the server's destination (%u bytes): %s", top,
		         ssq_client_error(c));
		goto refuse;
	}
	e.dst = dst.addr;
	e.dst_len = dst.len;
	x.prod[0] = ssq_queue_producer(q0);
	x.nprod = 1;
	x.laddr = dst.iova;
	x.lkey = dst.lkey;
	/*
	 * send_lat echoes from the receive pool, outside dst: the arena's own
	 * key (ssq_buf_at gives it) serves any of the arena locally.
	 */
	if (o->test == PT_SEND_LAT) {
		struct ssq_buf whole;

		if (ssq_buf_at(c, dst.off, dst.len, &whole)) {
			snprintf(r.text, sizeof(r.text),
			         "the server's destination is not in its arena");
			goto refuse;
		}
		x.lkey = whole.lkey;
	}
	/* write_lat's echoes: the client's pong buffer, at its descriptor. */
	x.raddr = h.iova;
	x.rkey = h.rkey;
	x.procs = eff.procs;
	x.dst = dst.addr;
	if (((o->test == PT_SEND_BW && check) || o->test == PT_SEND_LAT) &&
	    pt_open_recv_logs(&eff, c, c, q0, &e)) {
		snprintf(r.text, sizeof(r.text),
		         "the server's ssqd cannot take the SENDs (see the server)");
		goto refuse;
	}
	if (o->test == PT_SEND_LAT) {
		/* Each queue's echoes go back through it: the client reads that log. */
		x.send = 1;
		x.rq = e.rq;
		x.nprod = e.nrq;
		for (i = 0; i < e.nrq; i++)
			x.prod[i] = ssq_queue_producer(e.rq[i]);
	}
	/* The destination's remote descriptor: granted to the client's q0. */
	r.iova = dst.remote_addr;
	r.len = dst.len;
	if (pt_th_grant_key(c, q0name, &dst, pt_th_access(o), &r.rkey, r.text,
	                    sizeof(r.text)))
		goto refuse;
	r.qpn = ssq_queue_qpn(q0);
	r.peer_qpn = ssq_queue_peer_qpn(q0);
	r.test = (uint32_t)o->test;
	if (pt_th_send(o, fd, &r))
		goto out;
	printf("%s --server: client: -P %u -q %u --mode %s; destination %llu bytes at "
	       "IOVA 0x%llx\n",
	       o->tool, eff.procs, eff.qps, pt_mode_names[eff.mode],
	       (unsigned long long)dst.len, (unsigned long long)dst.iova);
	for (;;) {
		if (pt_th_recv(o, fd, 0, 0, &m))
			goto out;
		if (m.kind == TH_BYE)
			break;
		memset(&r, 0, sizeof(r));
		if (m.kind == TH_GRANT) {
			server_grant(o, c, &dst, &m, o->bidir ? &back : NULL, &r);
			if (pt_th_send(o, fd, &r) || r.status)
				goto out;
			continue;
		}
		if (m.kind == TH_START) {
			r.kind = TH_READY;
			if (m.size < 1 || m.size > dst.len ||
			    (!o->all_sizes && m.size != o->size)) {
				r.status = 1;
				snprintf(r.text, sizeof(r.text),
				         "size %u does not fit the destination "
				         "(%llu bytes, -s %u)",
				         m.size, (unsigned long long)dst.len, o->size);
				fprintf(stderr, "%s --server: %s\n", o->tool, r.text);
				pt_th_send(o, fd, &r);
				goto out;
			}
			memset(dst.addr, 0, dst.len);
			for (i = 0; i < e.nrq; i++)
				base[i] = ssq_recv_arrived(e.rq[i]);
			started = m.size;
			x.size = m.size;
			x.posted = x.completed = 0;
			if (pt_th_send(o, fd, &r))
				goto out;
			memcpy(x.next, base, sizeof(x.next));
			if ((x.slot || x.send) && pt_th_echo_run(o, &x, fd))
				goto out;
			/* -b: this side's senders run while the client's do. */
			if (o->bidir)
				bfail = pt_run_size(&eff, &back, &info, m.size, &brow);
			continue;
		} else if (m.kind == TH_DONE) {
			r.kind = TH_VERDICT;
			if (m.size != started) {
				fprintf(stderr,
				        "%s --server: DONE for %u bytes, started %u\n",
				        o->tool, m.size, started);
				goto out;
			}
			if (m.status) {
				fprintf(stderr,
				        "%s --server: the client's run of %u "
				        "bytes failed (see the client)\n",
				        o->tool, m.size);
				goto out;
			}
			if (x.slot || x.send)
				fails += pt_th_echo_check(&x, m.msgs, &r);
			else
				fails += server_check(&eff, &e, m.size, base, m.msgs,
				                      check, &r);
			if (o->bidir)
				fails += back_verdict(&brow, bfail, &r);
			printf("%s --server: %s\n", o->tool, r.text);
			fflush(stdout);
		} else {
			fprintf(stderr, "%s --server: side channel: unexpected %s\n",
			        o->tool, pt_th_kind_name(m.kind));
			goto out;
		}
		if (pt_th_send(o, fd, &r))
			goto out;
	}
	rc = fails ? 1 : 0;
	printf("%s --server: %s\n", o->tool,
	       fails ? "some checks failed" : "done, every check passed");
	goto out;
refuse:
	r.status = 1;
	fprintf(stderr, "%s --server: %s\n", o->tool, r.text);
	pt_th_send(o, fd, &r);
out:
	close(fd);
	return rc;
}
