/* SPDX-License-Identifier: MIT */
/*
 * twohost.c - perftest-style runs across two hosts, each with its ssqd, the
 * two daemons peers (ssqd --listen on one, --connect on the other):
 *
 *   host B:  ssq_write_bw --ssq_socket=B.sock --server [-p PORT] [flags]
 *   host A:  ssq_write_bw --ssq_socket=A.sock [-p PORT] [flags] B
 *
 * RDMA through A's queue qN lands in B's data arena, at an IOVA of B's; only
 * B's clients can allocate there. So the server allocates the destination
 * in B's arena and hands its IOVA to the client over a TCP side channel
 * (perftest's port 18515, -p), the client's senders run the same loops as
 * on one host against A's ssqd, and after each size the server checks what
 * it can (write_bw: the data landed; send_bw: B's receive pool logged every
 * SEND; atomic_bw: the counter is the number of messages) and answers with
 * its verdict, which the client prints. write_lat is perftest's ping-pong:
 * the server WRITEs each message back through its own ssqd into a pong
 * buffer in the client's arena, and the client reports RTT/2.
 *
 * With peers, ssqd lets a peer reach a buffer only through a grant, bound
 * to one queue's QP (ssq_buf_grant, issue 28): the server grants its
 * destination to each queue the client posts on and sends each key (the
 * client's q0 in WELCOME, every other queue on the client's GRANT), and
 * the client grants its write_lat pong buffer to its q0, on which the
 * server's echoes arrive. So a default ssqd (grants on) serves two hosts.
 *
 * The side channel: fixed 252-byte frames, big-endian, each with a magic
 * and version; the client drives (HELLO / WELCOME, GRANT / GRANTED for each
 * queue but q0, then per size START / READY and DONE / VERDICT, then BYE). Either side
 * refuses a frame it does not expect, and the server refuses a client whose tool, -s or
 * -a differ from its own (perftest refuses mismatched parameters too).
 */
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
#include "twohost.h"
#include "checks.h"
#include "size_run.h"

#define TH_MAGIC     0x48325450515353ull /* "SSQPT2H" */
#define TH_VERSION   3u /* 2: HELLO carries the pong buffer's rkey; 3: grants */
#define TH_TEXT      160u
#define TH_FRAME     (16u + 13u * 4u + 3u * 8u + TH_TEXT)
#define TH_CONNECT_S 10.0  /* the client: retry a refused connect this long */
#define TH_REPLY_S   120.0 /* either side: an answer that should come soon */

enum th_kind {
	TH_HELLO = 1, /* client: the run's parameters, its q0's QPNs, its pong buffer */
	TH_WELCOME,   /* server: status; the destination (iova, len, rkey), QPNs */
	TH_START,     /* client: size; the server clears the destination */
	TH_READY,     /* server: status */
	TH_DONE,      /* client: size, msgs completed; status 1: the run failed */
	TH_VERDICT,   /* server: status, text */
	TH_BYE,       /* client: no more sizes */
	TH_GRANT,     /* client: size = queue index, its QPNs: grant the destination */
	TH_GRANTED,   /* server: status; the grant's iova and rkey, or text */
	TH_KINDS
};

static const char *const kind_names[] = {
	"?",    "HELLO",   "WELCOME", "START", "READY",
	"DONE", "VERDICT", "BYE",     "GRANT", "GRANTED"
};

/* One frame, decoded. */
struct th_msg {
	uint32_t kind, status;
	uint32_t test, size, all_sizes, procs, qps, mode, tx_depth, check;
	uint32_t qpn, peer_qpn, rkey;
	uint32_t bidir; /* HELLO: -b */
	uint64_t iova, len, msgs;
	char text[TH_TEXT];
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

static int th_send(const struct pt_opts *o, int fd, const struct th_msg *m)
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
static int th_recv(const struct pt_opts *o, int fd, uint32_t want, double secs,
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

static const char *tool_of(uint32_t test)
{
	static const char *const names[] = { "ssq_write_bw", "ssq_write_lat",
		                             "ssq_send_bw",  "ssq_send_lat",
		                             "ssq_read_bw",  "ssq_atomic_bw",
		                             "ssq_read_lat", "ssq_atomic_lat" };

	return test < 8 ? names[test] : "an unknown tool";
}

/* q0 of @c once it is up (the peer ssqd connected), within @secs. */
static int open_q0(const struct pt_opts *o, struct ssq_client *c, double secs,
                   struct ssq_queue **q)
{
	double end = pt_now() + secs;
	int rc;

	while ((rc = ssq_queue_open(c, "q0", q)) == -EAGAIN && pt_now() < end)
		usleep(50 * 1000);
	if (rc)
		fprintf(stderr, "%s: q0 of ssqd at %s: %s\n", o->tool, o->socket,
		        rc == -EAGAIN ? "not up: is the peer ssqd running?"
		                      : ssq_client_error(c));
	return rc ? -1 : 0;
}

/* ---- the server ---- */

/*
 * Does @c's ssqd name its queues PEER/qK (ssqd --peers), so that the
 * server finds its queue to the client by QPN, once the client says it?
 */
static int named_by_peer(struct ssq_client *c)
{
	struct ssq_queue_info qi[PT_MAX_LANES];
	int k, n = ssq_client_list(c, qi, PT_MAX_LANES);

	for (k = 0; k < n; k++)
		if (!strcmp(qi[k].name, "q0"))
			return 0;
	return n > 0;
}

/*
 * The queue of @c paired with one of the client's (its q0, or the queue a
 * GRANT names): its QPN is @qpn (the client queue's peer) and its peer's
 * QPN @peer (the client's queue). Two daemons may number QPs alike, so
 * both ends must match. Its name into @name (32 bytes). 0 or -1 (@why).
 */
static int open_by_qpn(struct ssq_client *c, uint32_t qpn, uint32_t peer,
                       struct ssq_queue **q, char *name, char *why, size_t len)
{
	struct ssq_queue_info qi[PT_MAX_LANES];
	int k, n = ssq_client_list(c, qi, PT_MAX_LANES);

	for (k = 0; k < n; k++) {
		if (qi[k].qpn != qpn)
			continue;
		if (ssq_queue_open(c, qi[k].name, q)) {
			snprintf(why, len, "%.31s: %.120s", qi[k].name,
			         ssq_client_error(c));
			return -1;
		}
		if (ssq_queue_peer_qpn(*q) == peer) {
			snprintf(name, 32, "%.31s", qi[k].name);
			return 0;
		}
		ssq_queue_close(*q);
	}
	snprintf(why, len,
	         "no queue of this ssqd is paired with the client's (QPN 0x%x, its "
	         "peer 0x%x): the client's ssqd is not this one's peer",
	         peer, qpn);
	return -1;
}

/* The remote access a test's requests need: 0 for SENDs (they carry no key). */
static int access_of(const struct pt_opts *o)
{
	if (pt_is_send(o))
		return 0;
	if (pt_is_read(o))
		return IBV_ACCESS_REMOTE_READ;
	if (pt_is_atomic(o))
		return IBV_ACCESS_REMOTE_ATOMIC;
	return IBV_ACCESS_REMOTE_WRITE;
}

/*
 * The key requests arriving on @c's queue @name reach @b with: a grant of
 * all of @b with @access, bound to that queue's QP (ssq_buf_grant), so a
 * peer reaches it through that queue only. @access 0 (SENDs), or
 * -EOPNOTSUPP (ssqd --arena-rkey, a device without memory windows): the
 * buffer's own key, the only one there is. 0, or -1 (@why).
 */
static int grant_key(struct ssq_client *c, const char *name, const struct ssq_buf *b,
                     int access, uint32_t *rkey, char *why, size_t len)
{
	struct ssq_desc d;
	int rc;

	*rkey = b->rkey;
	if (!access)
		return 0;
	rc = ssq_buf_grant(c, name, b, 0, b->len, access, &d);
	if (rc == -EOPNOTSUPP)
		return 0;
	if (rc) {
		snprintf(why, len, "grant on %.31s: %.100s", name, ssq_client_error(c));
		return -1;
	}
	if (d.remote_addr != b->remote_addr) {
		snprintf(why, len, "grant on %.31s: at 0x%llx, the buffer at 0x%llx",
		         name, (unsigned long long)d.remote_addr,
		         (unsigned long long)b->remote_addr);
		return -1;
	}
	*rkey = d.rkey;
	return 0;
}

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
	r->status =
	    open_by_qpn(c, m->peer_qpn, m->qpn, &q, name, r->text, sizeof(r->text)) ||
	    grant_key(c, name, dst, access_of(o), &r->rkey, r->text, sizeof(r->text));
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
		         tool_of(h->test), o->tool);
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
 * The latency tools' other half, perftest's ping-pong. write_lat: the
 * server watches the last byte of each sender's slot of the destination
 * and, when it changes, WRITEs the slot back through its own ssqd's q0 into
 * the client's pong slot (in the client's arena), where the client's
 * sender waits for it. send_lat: the server reads each queue's receive log
 * and SENDs every message back, from its receive buffer, through the same
 * queue, into the client's ssqd's log of that queue, where the sender looks
 * for it (its payload says whose and which).
 */
struct echo {
	int send;
	uint32_t nprod;
	struct ssq_producer *prod[PT_MAX_LANES]; /* write: q0; send: each queue */
	uint64_t laddr;                          /* the destination's IOVA here */
	uint32_t lkey;
	uint64_t raddr; /* the client's pong slots */
	uint32_t rkey;
	uint32_t slot, procs, size;
	uint8_t *dst;
	uint8_t last[PT_MAX_PROCS];
	/* send: the queues' logs, the next message of each to echo */
	struct ssq_queue **rq;
	uint64_t next[PT_MAX_LANES];
	uint64_t posted, completed;
	char why[TH_TEXT];
};

/* Reap the echoes' completions (every echo is signaled). 0, or -1 (why). */
static int echo_reap(struct echo *x)
{
	struct ssq_completion comp[32];
	uint32_t q;
	int n, k;

	for (q = 0; q < x->nprod; q++) {
		n = ssq_poll(x->prod[q], comp, 32);
		for (k = 0; k < n; k++) {
			if (comp[k].status != IBV_WC_SUCCESS) {
				snprintf(x->why, sizeof(x->why), "echo %llu: %s",
				         (unsigned long long)comp[k].wr_id,
				         ibv_wc_status_str(
				             (enum ibv_wc_status)comp[k].status));
				return -1;
			}
			x->completed++;
		}
		if (n < 0) {
			snprintf(x->why, sizeof(x->why), "echo poll: %s", strerror(-n));
			return -1;
		}
	}
	return 0;
}

/* Post one echo on @q, polling while there is no room. 0, or -1 (why). */
static int echo_post(struct echo *x, uint32_t q, uint64_t laddr, uint32_t len,
                     uint64_t raddr)
{
	int rc;

	for (;;) {
		rc = x->send ? ssq_post_send(x->prod[q], MLX5_OPCODE_SEND, laddr, x->lkey,
		                             len, 0, x->posted, SSQ_WQE_SIGNALED)
		             : ssq_post_write(x->prod[q], laddr, x->lkey, len, raddr,
		                              x->rkey, x->posted, SSQ_WQE_SIGNALED);
		if (rc != -EAGAIN)
			break;
		if (echo_reap(x))
			return -1;
	}
	if (rc) {
		snprintf(x->why, sizeof(x->why), "echo post: %s", strerror(-rc));
		return -1;
	}
	x->posted++;
	return 0;
}

/* Echo what arrived since the last call. 1 if anything, 0, -1 (why). */
static int echo_some(struct echo *x)
{
	struct ssq_recv_msg m;
	uint32_t i;
	int moved = 0;

	for (i = 0; !x->send && i < x->procs; i++) {
		size_t at = (size_t)i * x->slot;
		uint8_t v = __atomic_load_n(&x->dst[at + x->size - 1], __ATOMIC_ACQUIRE);

		if (v == x->last[i])
			continue;
		x->last[i] = v;
		if (echo_post(x, 0, x->laddr + at, x->size, x->raddr + at))
			return -1;
		moved = 1;
	}
	for (i = 0; x->send && i < x->nprod; i++) {
		while (ssq_recv_arrived(x->rq[i]) > x->next[i]) {
			/* Back from where it was received: the buffer is in the arena. */
			if (ssq_recv_peek(x->rq[i], x->next[i], &m) ||
			    m.status != IBV_WC_SUCCESS || !m.data) {
				snprintf(x->why, sizeof(x->why),
				         "queue q%u, received message %llu: status %u", i,
				         (unsigned long long)x->next[i], m.status);
				return -1;
			}
			if (echo_post(x, i,
			              x->laddr +
			                  (uint64_t)((const uint8_t *)m.data - x->dst),
			              m.byte_len, 0))
				return -1;
			x->next[i]++;
			moved = 1;
		}
	}
	return moved;
}

/* Echo until the client says something on @fd. 0, or -1 (said why). */
static int echo_run(const struct pt_opts *o, struct echo *x, int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	unsigned spins = 0;
	int moved;

	memset(x->last, 0, sizeof(x->last));
	for (;;) {
		moved = echo_some(x);
		if (moved < 0 || echo_reap(x))
			goto fail;
		if (moved) {
			spins = 0;
			continue;
		}
		ssq_cpu_relax();
		/* The client's next frame ends the size; a core for the device. */
		if ((++spins & 1023) == 0) {
			if (poll(&p, 1, 0) > 0)
				return 0;
			sched_yield();
		}
	}
fail:
	fprintf(stderr, "%s --server: %s\n", o->tool, x->why);
	return -1;
}

/* Every message echoed, every echo completed? Said in @v. */
static int echo_check(struct echo *x, uint64_t msgs, struct th_msg *v)
{
	double end = pt_now() + 10;

	while (x->completed < x->posted && pt_now() < end && !echo_reap(x))
		sched_yield();
	v->status = x->posted != msgs || x->completed != x->posted;
	snprintf(v->text, TH_TEXT,
	         "%u bytes: %llu %ss echoed back (%llu completed), %llu sent%s", x->size,
	         (unsigned long long)x->posted, x->send ? "SEND" : "WRITE",
	         (unsigned long long)x->completed, (unsigned long long)msgs,
	         v->status ? ": they differ" : "");
	return (int)v->status;
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
	struct echo x = { 0 };
	uint64_t base[PT_MAX_LANES] = { 0 };
	uint32_t top, i, started = 0;
	int fd, rc = 1, got, fails = 0, check, cluster = named_by_peer(c);
	char q0name[32] = "q0";

	/* A cluster's queue to the client is known once it says its QPN. */
	if (!cluster && open_q0(o, c, o->timeout > 0 ? o->timeout : 60, &q0))
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
	got = th_recv(o, fd, TH_HELLO, TH_REPLY_S, &h);
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
		th_send(o, fd, &r);
	}
	if (got)
		goto out;
	if (agree(o, &h, &eff, r.text, sizeof(r.text))) {
		r.status = 1;
		fprintf(stderr, "%s --server: client refused: %s\n", o->tool, r.text);
		th_send(o, fd, &r);
		goto out;
	}
	if (cluster &&
	    open_by_qpn(c, h.peer_qpn, h.qpn, &q0, q0name, r.text, sizeof(r.text)))
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
	if (grant_key(c, q0name, &dst, access_of(o), &r.rkey, r.text, sizeof(r.text)))
		goto refuse;
	r.qpn = ssq_queue_qpn(q0);
	r.peer_qpn = ssq_queue_peer_qpn(q0);
	r.test = (uint32_t)o->test;
	if (th_send(o, fd, &r))
		goto out;
	printf("%s --server: client: -P %u -q %u --mode %s; destination %llu bytes at "
	       "IOVA 0x%llx\n",
	       o->tool, eff.procs, eff.qps, pt_mode_names[eff.mode],
	       (unsigned long long)dst.len, (unsigned long long)dst.iova);
	for (;;) {
		if (th_recv(o, fd, 0, 0, &m))
			goto out;
		if (m.kind == TH_BYE)
			break;
		memset(&r, 0, sizeof(r));
		if (m.kind == TH_GRANT) {
			server_grant(o, c, &dst, &m, o->bidir ? &back : NULL, &r);
			if (th_send(o, fd, &r) || r.status)
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
				th_send(o, fd, &r);
				goto out;
			}
			memset(dst.addr, 0, dst.len);
			for (i = 0; i < e.nrq; i++)
				base[i] = ssq_recv_arrived(e.rq[i]);
			started = m.size;
			x.size = m.size;
			x.posted = x.completed = 0;
			if (th_send(o, fd, &r))
				goto out;
			memcpy(x.next, base, sizeof(x.next));
			if ((x.slot || x.send) && echo_run(o, &x, fd))
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
				fails += echo_check(&x, m.msgs, &r);
			else
				fails += server_check(&eff, &e, m.size, base, m.msgs,
				                      check, &r);
			if (o->bidir)
				fails += back_verdict(&brow, bfail, &r);
			printf("%s --server: %s\n", o->tool, r.text);
			fflush(stdout);
		} else {
			fprintf(stderr, "%s --server: side channel: unexpected %s\n",
			        o->tool,
			        m.kind < TH_KINDS ? kind_names[m.kind] : "frame");
			goto out;
		}
		if (th_send(o, fd, &r))
			goto out;
	}
	rc = fails ? 1 : 0;
	printf("%s --server: %s\n", o->tool,
	       fails ? "some checks failed" : "done, every check passed");
	goto out;
refuse:
	r.status = 1;
	fprintf(stderr, "%s --server: %s\n", o->tool, r.text);
	th_send(o, fd, &r);
out:
	close(fd);
	return rc;
}

/* ---- the client ---- */

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
		if (!access_of(o))
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
		    grant_key(c, name, back, access_of(o), &m.rkey, why, sizeof(why))) {
			fprintf(stderr, "%s: -b: this side's buffer's %s\n", o->tool,
			        why);
			return -1;
		}
		m.iova = o->bidir && back ? back->remote_addr : 0;
		if (th_send(o, fd, &m) || th_recv(o, fd, TH_GRANTED, TH_REPLY_S, &g))
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
		if (grant_key(c, name, pong,
		              o->bidir ? access_of(o) : IBV_ACCESS_REMOTE_WRITE, &h.rkey,
		              why, sizeof(why))) {
			fprintf(stderr, "%s: the pong buffer's %s\n", o->tool, why);
			goto fail;
		}
		h.iova = pong->remote_addr;
		h.len = pong->len;
	}
	if (th_send(o, fd, &h) || th_recv(o, fd, TH_WELCOME, TH_REPLY_S, &w))
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
		        o->tool, tool_of(w.test), (unsigned long long)w.len, o->tool,
		        top);
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
	if (th_send(o, e->th_fd, &m) || th_recv(o, e->th_fd, TH_READY, TH_REPLY_S, &r))
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
                      uint64_t msgs, int ok, struct pt_row *row, char *verdict,
                      size_t len)
{
	struct th_msg m = { .kind = TH_DONE, .size = size, .msgs = msgs, .status = !ok },
	              v;
	size_t at;
	int bad;

	if (th_send(o, e->th_fd, &m) || !ok ||
	    th_recv(o, e->th_fd, TH_VERDICT, TH_REPLY_S, &v))
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
	 * perftest's -b prints one row, the sum of both sides' BW peak, BW
	 * average and message rate; #iterations its own (print_full_bw_report
	 * with rem_bw_rep, src/perftest_parameters.c).
	 */
	if (row && size) {
		row->peak_bps += (double)v.iova;
		row->avg_bps += (double)v.len;
		row->mpps += (double)v.len / size / 1e6;
	}
	return bad ? -1 : 0;
}

void pt_th_client_close(const struct pt_opts *o, struct pt_env *e)
{
	struct th_msg m = { .kind = TH_BYE };

	if (e->th_fd < 0)
		return;
	th_send(o, e->th_fd, &m);
	close(e->th_fd);
	e->th_fd = -1;
}
