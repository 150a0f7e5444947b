/* SPDX-License-Identifier: MIT */
/* twohost_client.c - the client side of a two-host run (twohost_client.h). */
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
#include "twohost_client.h"
#include "twohost_frames.h"
#include "twohost_queues.h"

/* Connect to the server (retrying a refusal, it may be starting). fd or -1. */
static int dial(const struct pt_opts *o)
{
	struct addrinfo hint = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM },
	                *res, *ai;
	double end = pt_now() + (o->timeout > 0 ? o->timeout : TH_CONNECT_S);
	char port[8];
	int fd = -1, rc, one = 1, err = 0;

	snprintf(port, sizeof(port), "%u", o->port);
	rc = getaddrinfo(o->peer_host, port, &hint, &res);
	if (rc) {
		fprintf(stderr, "%s: server %s: %s\n", o->tool, o->peer_host,
		        gai_strerror(rc));
		return -1;
	}
	do {
		for (ai = res; ai && fd < 0; ai = ai->ai_next) {
			fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
			if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen)) {
				err = errno;
				close(fd);
				fd = -1;
			}
		}
		if (fd < 0 && pt_now() < end)
			usleep(100 * 1000);
	} while (fd < 0 && err == ECONNREFUSED && pt_now() < end);
	freeaddrinfo(res);
	if (fd < 0)
		fprintf(stderr,
		        "%s: server %s port %u: %s (start '%s --ssq_socket=SOCKET "
		        "--server' there first)\n",
		        o->tool, o->peer_host, o->port, strerror(err), o->tool);
	else
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/*
 * The key of the server's destination for each queue but q0 the senders
 * post on (@prefix q1.., up to pt_queues_needed), into @rkeys: the
 * client's QPNs of that queue in a GRANT, the key back in GRANTED, at the
 * destination WELCOME gave (@w). -b: the GRANT carries the key of @back,
 * this side's buffer, granted to that queue for the server's senders.
 * 0, or -1 (said why).
 */
static int client_grants(const struct pt_opts *o, struct ssq_client *c,
                         const char *prefix, int fd, const struct th_msg *w,
                         const struct ssq_buf *back, uint32_t *rkeys)
{
	char why[TH_TEXT];

	struct th_msg m, g;
	struct ssq_queue *q;
	char name[48];
	uint32_t k;

	for (k = 1; k < pt_queues_needed(o); k++) {
		rkeys[k] = w->rkey;
		if (!pt_th_access(o))
			continue; /* SENDs carry no key */
		snprintf(name, sizeof(name), "%sq%u", prefix, k);
		if (ssq_queue_open(c, name, &q)) {
			fprintf(stderr, "%s: %s: %s\n", o->tool, name,
			        ssq_client_error(c));
			return -1;
		}
		memset(&m, 0, sizeof(m));
		m.kind = TH_GRANT;
		m.size = k;
		m.qpn = ssq_queue_qpn(q);
		m.peer_qpn = ssq_queue_peer_qpn(q);
		ssq_queue_close(q);
		if (o->bidir && back &&
		    pt_th_grant_key(c, name, back, pt_th_access(o), &m.rkey, why,
		                    sizeof(why))) {
			fprintf(stderr, "%s: -b: this side's buffer's %s\n", o->tool,
			        why);
			return -1;
		}
		m.iova = o->bidir && back ? back->remote_addr : 0;
		if (pt_th_send(o, fd, &m) ||
		    pt_th_recv(o, fd, TH_GRANTED, TH_REPLY_S, &g))
			return -1;
		if (g.status || g.size != k || g.iova != w->iova) {
			fprintf(stderr, "%s: the server's grant for %s: %s\n", o->tool,
			        name, g.status ? g.text : "not the destination's");
			return -1;
		}
		rkeys[k] = g.rkey;
	}
	return 0;
}

int pt_th_client_open(const struct pt_opts *o, struct ssq_client *c, const char *prefix,
                      struct ssq_queue *q0, uint32_t top, int check,
                      const struct ssq_buf *pong, struct pt_env *e, uint32_t *rkeys)
{
	struct th_msg h = { 0 }, w;
	char name[48], why[TH_TEXT];
	int fd = dial(o);

	e->th_fd = fd;
	if (fd < 0)
		return -1;
	h.kind = TH_HELLO;
	h.test = (uint32_t)o->test;
	h.size = o->size;
	h.all_sizes = (uint32_t)o->all_sizes;
	h.procs = o->procs;
	h.qps = o->qps;
	h.mode = (uint32_t)o->mode;
	h.tx_depth = o->tx_depth;
	h.check = (uint32_t)check;
	h.qpn = ssq_queue_qpn(q0);
	h.peer_qpn = ssq_queue_peer_qpn(q0);
	/*
	 * write_lat: where the server WRITEs back, the buffer's remote
	 * descriptor, granted to q0, the queue its echoes come in on. -b:
	 * where the server's senders write (read, add), granted to q0 too.
	 */
	h.bidir = (uint32_t)o->bidir;
	if (pong) {
		snprintf(name, sizeof(name), "%sq0", prefix);
		if (pt_th_grant_key(c, name, pong,
		                    o->bidir ? pt_th_access(o) : IBV_ACCESS_REMOTE_WRITE,
		                    &h.rkey, why, sizeof(why))) {
			fprintf(stderr, "%s: the pong buffer's %s\n", o->tool, why);
			goto fail;
		}
		h.iova = pong->remote_addr;
		h.len = pong->len;
	}
	if (pt_th_send(o, fd, &h) || pt_th_recv(o, fd, TH_WELCOME, TH_REPLY_S, &w))
		goto fail;
	if (w.status) {
		fprintf(stderr, "%s: the server refused: %s\n", o->tool, w.text);
		goto fail;
	}
	if (w.test != (uint32_t)o->test || w.len < top ||
	    w.len > (uint64_t)(pt_top_size(o) + 64) * o->procs) {
		fprintf(stderr,
		        "%s: the server's destination (%s, %llu bytes) does not fit this "
		        "run (%s, %u bytes)\n",
		        o->tool, pt_th_tool_of(w.test), (unsigned long long)w.len,
		        o->tool, top);
		goto fail;
	}
	/* Each end of a queue is the other's peer: else they are not paired. */
	if (w.qpn != h.peer_qpn || w.peer_qpn != h.qpn) {
		fprintf(stderr,
		        "%s: the server's ssqd is not this ssqd's peer: its q0 is QPN "
		        "0x%x (peer 0x%x), this q0 0x%x (peer 0x%x)\n",
		        o->tool, w.qpn, w.peer_qpn, h.qpn, h.peer_qpn);
		goto fail;
	}
	rkeys[0] = w.rkey;
	if (client_grants(o, c, prefix, fd, &w, pong, rkeys))
		goto fail;
	e->dst_iova = w.iova;
	e->dst_len = w.len;
	e->rkey = w.rkey;
	printf("%s: server %s port %u: destination %llu bytes at IOVA 0x%llx in its "
	       "arena\n",
	       o->tool, o->peer_host, o->port, (unsigned long long)w.len,
	       (unsigned long long)w.iova);
	return 0;
fail:
	close(fd);
	e->th_fd = -1;
	return -1;
}

int pt_th_client_start(const struct pt_opts *o, const struct pt_env *e, uint32_t size)
{
	struct th_msg m = { .kind = TH_START, .size = size }, r;

	/* -b: the server's senders start once it says READY. */
	if (e->rev)
		memset(e->rev, 0, e->rev_len);
	if (pt_th_send(o, e->th_fd, &m) ||
	    pt_th_recv(o, e->th_fd, TH_READY, TH_REPLY_S, &r))
		return -1;
	if (r.status) {
		fprintf(stderr, "%s: the server refused: %s\n", o->tool, r.text);
		return -1;
	}
	return 0;
}

/*
 * -b: what the server's @msgs messages of @size left in this side's buffer:
 * write_bw its data, atomic_bw a counter of @msgs (read_bw changes nothing).
 * Said in @out. 0, or 1.
 */
static int back_check(const struct pt_opts *o, const struct pt_env *e, uint32_t size,
                      uint64_t msgs, char *out, size_t len)
{
	uint64_t got;
	uint32_t i;

	if (!e->rev)
		return 0; /* the device moves no data */
	if (o->test == PT_WRITE_BW) {
		for (i = 0; i < size && e->rev[i] == 0x5a; i++)
			;
		snprintf(out, len, "%s: -b: %s", o->tool,
		         i == size ? "the server's data landed here"
		                   : "FAILED: the server's data is not here");
		return i != size;
	}
	if (o->test == PT_ATOMIC_BW) {
		got = __atomic_load_n((uint64_t *)(void *)e->rev, __ATOMIC_RELAXED);
		snprintf(out, len,
		         "%s: -b: %sthe counter here is %llu, the server's %llu", o->tool,
		         got == msgs ? "" : "FAILED: ", (unsigned long long)got,
		         (unsigned long long)msgs);
		return got != msgs;
	}
	return 0;
}

int pt_th_client_done(const struct pt_opts *o, const struct pt_env *e, uint32_t size,
                      uint64_t msgs, int ok, struct pt_row *rem, char *verdict,
                      size_t len)
{
	struct th_msg m = { .kind = TH_DONE, .size = size, .msgs = msgs, .status = !ok },
	              v;
	size_t at;
	int bad;

	if (pt_th_send(o, e->th_fd, &m) || !ok ||
	    pt_th_recv(o, e->th_fd, TH_VERDICT, TH_REPLY_S, &v))
		return -1;
	at = (size_t)snprintf(verdict, len, "%s: server: %s%s", o->tool,
	                      v.status ? "FAILED: " : "", v.text);
	if (v.status || !o->bidir)
		return v.status ? -1 : 0;
	bad = at + 1 < len &&
	      back_check(o, e, size, v.msgs, verdict + at + 1, len - at - 1);
	if (at + 1 < len && verdict[at + 1])
		verdict[at] = '\n';
	/*
	 * -b: the server's direction as its VERDICT states it (back_verdict,
	 * twohost_server.c), perftest's rem_bw_rep (xchg_bw_reports,
	 * src/perftest_communication.c): its own messages, BW peak and average.
	 */
	if (rem && size) {
		memset(rem, 0, sizeof(*rem));
		rem->size = size;
		rem->iters = v.msgs;
		rem->peak_bps = (double)v.iova;
		rem->avg_bps = (double)v.len;
		rem->mpps = (double)v.len / size / 1e6;
	}
	return bad ? -1 : 0;
}

void pt_th_client_close(const struct pt_opts *o, struct pt_env *e)
{
	struct th_msg m = { .kind = TH_BYE };

	if (e->th_fd < 0)
		return;
	pt_th_send(o, e->th_fd, &m);
	close(e->th_fd);
	e->th_fd = -1;
}
