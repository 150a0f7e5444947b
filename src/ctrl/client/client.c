/* SPDX-License-Identifier: MIT */
/*
 * libssq's side of the client protocol: connect to ssqd, map what it sends,
 * and describe the shared queues with the same fast-path structs the
 * hardware path uses. Every reply is decoded and checked (proto.c) and the
 * arena's layout header is checked (arena_map.c) before anything is used.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <ssq/client.h>
#include <ssq/queue.h>
#include "dv/ctl.h"
#include "ctrl/proto/msg.h"
#include "ctrl/proto/socket_path.h"
#include "shm/map/arena_map.h"
#include "shm/layout.h"
#include "ctrl/client/client_pvt.h"

/*
 * RECOVER waits in ssqd for in-flight requests (up to 2 s) and, with a
 * --listen peer, for the peer to come back (up to 3 s): that on top of
 * any call's wait (client_reply_ms).
 */
#define RECOVER_EXTRA_MS 5000

static __thread char connect_err[256];

const char *ssq_client_strerror_last(void)
{
	return connect_err;
}

const char *ssq_client_error(const struct ssq_client *c)
{
	return c->err;
}

const char *ssq_client_device(const struct ssq_client *c)
{
	return c->device;
}

int ssq_client_peer_mode(const struct ssq_client *c)
{
	return (c->hdr->flags & SSQ_ARENA_PEER) != 0;
}

/*
 * Is the process at the other end of @sock one to trust with our data? It
 * maps what we write and sends what we map, so it must be root, our own
 * uid, or the uid named in $SSQ_SERVER_UID: whoever else took the socket's
 * path (a name in /tmp, say) is refused before a byte is sent.
 */
static int check_server(int sock, const char *path)
{
	const char *trust = getenv("SSQ_SERVER_UID");
	struct ucred cr;
	socklen_t len = sizeof(cr);
	char *end;
	unsigned long want;

	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0) {
		snprintf(connect_err, sizeof(connect_err), "%s: SO_PEERCRED: %s", path,
		         strerror(errno));
		return -errno;
	}
	if (cr.uid == 0 || cr.uid == getuid())
		return 0;
	if (trust && *trust) {
		errno = 0;
		want = strtoul(trust, &end, 10);
		if (errno || *end || want > UINT32_MAX) {
			snprintf(connect_err, sizeof(connect_err),
			         "$SSQ_SERVER_UID '%s': want a uid number", trust);
			return -EINVAL;
		}
		if (cr.uid == (uid_t)want)
			return 0;
	}
	snprintf(
	    connect_err, sizeof(connect_err),
	    "the server at %s runs as uid %u (pid %d), not root or this process's uid "
	    "%u: not trusted (set SSQ_SERVER_UID=%u if it is your ssqd)",
	    path, (unsigned)cr.uid, (int)cr.pid, (unsigned)getuid(), (unsigned)cr.uid);
	return -EPERM;
}

int ssq_client_connect(const char *path, struct ssq_client **out)
{
	struct sockaddr_un sa;
	struct proto_msg_hello hello = { (uint32_t)getpid(), 0 };
	struct proto_msg reply;
	struct ssq_client *c;
	char def[108];
	int fd = -1, rc;

	*out = NULL;
	if (!path || !*path) {
		if (proto_default_socket(def, sizeof(def))) {
			snprintf(connect_err, sizeof(connect_err),
			         "$SSQ_SOCKET or $XDG_RUNTIME_DIR is too long for a "
			         "socket path");
			return -ENAMETOOLONG;
		}
		path = def;
	}
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(connect_err, sizeof(connect_err), "socket path %s is too long",
		         path);
		return -ENAMETOOLONG;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	strcpy(sa.sun_path, path);
	if (c->sock < 0 || connect(c->sock, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = -errno;
		snprintf(connect_err, sizeof(connect_err), "no ssqd at %s: %s", path,
		         strerror(errno));
		goto fail;
	}
	rc = check_server(c->sock, path);
	if (rc)
		goto fail;
	rc = client_call(c, SSQ_MSG_HELLO, &hello, sizeof(hello), &reply, &fd);
	if (rc) {
		snprintf(connect_err, sizeof(connect_err), "%s", c->err);
		goto fail;
	}
	c->arena_len = reply.u.hello_reply.arena_len;
	c->arena = shm_arena_map(fd, (off_t)reply.u.hello_reply.arena_offset,
	                         c->arena_len, connect_err, sizeof(connect_err));
	close(fd);
	if (!c->arena) {
		rc = -EPROTO;
		goto fail;
	}
	c->hdr = (const struct shm_arena_header *)c->arena;
	memcpy(c->device, reply.u.hello_reply.device, sizeof(c->device));
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->mem_lock, NULL);
	c->self = getpid();
	/* Without a watcher the client works, and learns of a hang-up in its next call.
	 */
	(void)client_watch_start(c);
	*out = c;
	return 0;
fail:
	if (c->sock >= 0)
		close(c->sock);
	free(c);
	return rc;
}

void ssq_client_close(struct ssq_client *c)
{
	if (!c)
		return;
	client_watch_stop(c);
	while (c->queues)
		ssq_queue_close(c->queues);
	client_mem_close(c);
	/* Not in a forked child: the mappings stayed with the parent (MADV_DONTFORK). */
	if (c->arena && getpid() == c->self)
		munmap(c->arena, c->arena_len);
	close(c->sock);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->mem_lock);
	free(c);
}

int ssq_client_list(struct ssq_client *c, struct ssq_queue_info *out, int max)
{
	struct proto_msg reply;
	uint32_t i;
	int rc = client_call(c, SSQ_MSG_LIST, NULL, 0, &reply, NULL);

	if (rc)
		return rc;
	for (i = 0; i < reply.u.list_reply.nqueues && (int)i < max; i++) {
		memcpy(out[i].name, reply.u.list_reply.queues[i].name,
		       sizeof(out[i].name));
		out[i].qpn = reply.u.list_reply.queues[i].qpn;
		out[i].ready = reply.u.list_reply.queues[i].state == SSQ_QUEUE_READY;
		out[i].refused = reply.u.list_reply.queues[i].refused;
	}
	return (int)reply.u.list_reply.nqueues;
}

/*
 * The name of the queue open @q, which ssqd picked for an open of "any" /
 * "PEER/any": from ssqd's LIST (the shared layout's copy of the names is
 * any client's to write). 0, or LIST's error.
 */
static int picked_name(struct ssq_client *c, struct ssq_queue *q)
{
	struct proto_msg reply;
	int rc = client_call(c, SSQ_MSG_LIST, NULL, 0, &reply, NULL);

	if (rc)
		return rc;
	if (q->index >= reply.u.list_reply.nqueues) {
		snprintf(c->err, sizeof(c->err),
		         "ssqd lists %u queues, not the one it attached (%u)",
		         reply.u.list_reply.nqueues, q->index);
		return -EBADMSG;
	}
	memcpy(q->name, reply.u.list_reply.queues[q->index].name, sizeof(q->name));
	q->name[sizeof(q->name) - 1] = '\0';
	return 0;
}

/* "any" or "PEER/any": ssqd picks the queue (docs/design.md). */
static int pick_form(const char *name)
{
	size_t n = strlen(name);

	return n >= 3 && !strcmp(name + n - 3, "any") &&
	       (n == 3 || (n > 4 && name[n - 4] == '/'));
}

/*
 * @wait: ask again while ssqd answers -EINPROGRESS (it is linking the
 * queue's peer), up to SSQ_OPEN_LINK_MS; 0: one ask, its -EINPROGRESS
 * returned (ssq_queue_try_open).
 */
static int queue_open(struct ssq_client *c, const char *name, struct ssq_queue **out,
                      int wait)
{
	struct proto_msg_attach req;
	struct proto_msg reply;
	struct mlx5dv_qp dv_qp;
	struct mlx5dv_cq dv_cq;
	struct ssq_queue *q;
	struct timespec t0, t;
	int fd = -1, rc;

	*out = NULL;
	if (!name || strlen(name) >= SSQ_NAME_MAX || !*name) {
		snprintf(c->err, sizeof(c->err), "queue name must be 1..%u characters",
		         SSQ_NAME_MAX - 1);
		return -EINVAL;
	}
	memset(&req, 0, sizeof(req));
	strcpy(req.name, name);
	/*
	 * -EINPROGRESS: the queue's peer is being linked on demand (ssqd
	 * --peers), or the queue recovered; ask again until it is up, at most
	 * SSQ_OPEN_LINK_MS.
	 */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		rc = client_call(c, SSQ_MSG_ATTACH, &req, sizeof(req), &reply, &fd);
		if (rc != -EINPROGRESS || !wait)
			break;
		/* By the clock: each ask takes as long as ssqd's answer too. */
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >=
		    SSQ_OPEN_LINK_MS) {
			char last[160];

			snprintf(last, sizeof(last), "%.159s", c->err);
			snprintf(c->err, sizeof(c->err), "not ready within %u ms: %s",
			         SSQ_OPEN_LINK_MS, last);
			return -ETIMEDOUT;
		}
		usleep(10000);
	}
	if (rc)
		return rc;
	q = calloc(1, sizeof(*q));
	if (!q) {
		close(fd);
		return -ENOMEM;
	}
	q->c = c;
	q->wfd.efd = -1;
	q->index = reply.u.attach_reply.queue;
	q->l = &c->hdr->queues[q->index];
	/* ssqd found a queue's own name as asked (its find_queue: exact). */
	memcpy(q->name, name, strlen(name) + 1);
	if (pick_form(name) && (rc = picked_name(c, q)))
		goto fail;
	/*
	 * ssqd attached us only to a queue it lists ready (its own word: the
	 * header's state is any client's to write, so not asked here), and
	 * wrote its layout before replying; the reply's send and receive
	 * order those writes before our reads below.
	 */
	if (shm_layout_check(c->hdr, c->arena_len, c->err, sizeof(c->err))) {
		rc = -EBADMSG;
		goto fail;
	}
	if (q->l->qpn != reply.u.attach_reply.qpn) {
		snprintf(c->err, sizeof(c->err),
		         "queue %s: the shared layout says QP 0x%x, ssqd QP 0x%x "
		         "(a client overwrote the layout)",
		         name, q->l->qpn, reply.u.attach_reply.qpn);
		rc = -EBADMSG;
		goto fail;
	}
	q->uar_len = reply.u.attach_reply.uar_len;
	/*
	 * The UAR: on a ConnectX the device's command fd at uar_mmap_offset,
	 * write-combining as libmlx5 maps it; on the emulated device a memfd.
	 */
	q->uar = mmap(NULL, q->uar_len, PROT_WRITE, MAP_SHARED, fd,
	              (off_t)reply.u.attach_reply.uar_offset);
	close(fd);
	fd = -1;
	/* As the arena (shm_arena_map): the doorbell stays with this process. */
	if (q->uar != MAP_FAILED && madvise(q->uar, q->uar_len, MADV_DONTFORK)) {
		munmap(q->uar, q->uar_len);
		q->uar = MAP_FAILED;
	}
	if (q->uar == MAP_FAILED) {
		rc = -errno;
		snprintf(c->err, sizeof(c->err), "mapping queue %s's UAR: %s", name,
		         strerror(errno));
		q->uar = NULL;
		goto fail;
	}
	memset(&dv_qp, 0, sizeof(dv_qp));
	dv_qp.dbrec = (__be32 *)(c->arena + q->l->qp_dbrec_off);
	dv_qp.sq.buf = c->arena + q->l->sq_off;
	dv_qp.sq.wqe_cnt = q->l->sq_wqe_cnt;
	dv_qp.sq.stride = MLX5_SEND_WQE_BB;
	dv_qp.bf.reg = (uint8_t *)q->uar + reply.u.attach_reply.uar_reg_off;
	dv_qp.bf.size = q->l->bf_size;
	memset(&dv_cq, 0, sizeof(dv_cq));
	dv_cq.buf = c->arena + q->l->cq_off;
	dv_cq.dbrec = (__be32 *)(c->arena + q->l->cq_dbrec_off);
	dv_cq.cqe_cnt = q->l->cqe_cnt;
	dv_cq.cqe_size = 64;
	dv_cq.cqn = q->l->cqn;
	if (ssq_sq_init(&q->sq, &dv_qp, reply.u.attach_reply.qpn, q->l->max_inline,
	                q->l->max_sge) ||
	    ssq_cq_init(&q->cq, &dv_cq) ||
	    ssq_producer_bind(&q->prod, (struct ssq_ctl *)(c->arena + q->l->ctl_off),
	                      reply.u.attach_reply.producer, &q->sq, &q->cq)) {
		snprintf(c->err, sizeof(c->err), "queue %s has an unusable geometry",
		         name);
		rc = -EBADMSG;
		goto fail;
	}
	/* Where ssq_wait asks ssqd to arm the send CQ (ctl->tx_arm). */
	q->prod.arm_seq =
	    (uint32_t *)(c->arena + offsetof(struct shm_arena_header, tx_arm_seq));
	if (q->l->recv_depth) {
		/* shm_layout_check has put the log and the buffers inside the arena. */
		q->rlog = (const struct shm_recv_log *)(c->arena + q->l->recv_log_off);
		q->rbuf = c->arena + q->l->recv_buf_off;
		q->rslots = q->l->recv_slots;
		q->rsize = q->l->recv_size;
	}
	pthread_mutex_lock(&c->lock);
	q->next = c->queues;
	c->queues = q;
	if (c->gone) /* ssqd hung up while we attached: the watcher has passed */
		client_orphan(q);
	pthread_mutex_unlock(&c->lock);
	*out = q;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	if (q->uar)
		munmap(q->uar, q->uar_len);
	free(q);
	return rc;
}

int ssq_queue_open(struct ssq_client *c, const char *name, struct ssq_queue **out)
{
	return queue_open(c, name, out, 1);
}

int ssq_queue_try_open(struct ssq_client *c, const char *name, struct ssq_queue **out)
{
	return queue_open(c, name, out, 0);
}

int ssq_queue_close(struct ssq_queue *q)
{
	struct proto_msg_detach req = { 0, 0 };
	struct ssq_queue **pp;
	struct proto_msg reply;
	int rc, settled = 0;

	if (!q)
		return 0;
	/*
	 * A combined request still handed over (<ssq/combine.h>) was accepted
	 * (0): post it first, as ssq_producer_fini does. ssqd's DETACH marks
	 * the record dead, and ssq_ctl_mark_dead takes a request still POSTED
	 * back, never to run (test_ssq_combine_adv_close.c). Not in a forked
	 * child (the record is its parent's), nor once ssqd is gone.
	 */
	if (getpid() == q->c->self && !q->orphaned)
		settled = ssq_producer_settle(&q->prod, SSQ_SETTLE_MS);
	client_wait_fd_stop(q);
	pthread_mutex_lock(&q->c->lock);
	for (pp = &q->c->queues; *pp; pp = &(*pp)->next)
		if (*pp == q) {
			*pp = q->next;
			break;
		}
	pthread_mutex_unlock(&q->c->lock);
	req.queue = q->index;
	req.producer = q->prod.id;
	/*
	 * A forked child's copy of the queue: the record is its parent's, and
	 * so is the mapping (MADV_DONTFORK: the child's range may hold other
	 * things by now).
	 */
	if (getpid() == q->c->self) {
		rc = client_call(q->c, SSQ_MSG_DETACH, &req, sizeof(req), &reply, NULL);
		munmap(q->uar, q->uar_len);
	} else {
		rc = 0;
	}
	free(q);
	return rc ?: settled;
}

int ssq_queue_recover(struct ssq_queue *q)
{
	struct proto_msg_detach req = { q->index, 0 };
	struct proto_msg reply;

	return client_call_wait(q->c, SSQ_MSG_RECOVER, &req, sizeof(req), -1, &reply,
	                        NULL, client_reply_ms() + RECOVER_EXTRA_MS);
}

struct ssq_sq *ssq_queue_sq(struct ssq_queue *q)
{
	return &q->sq;
}

struct ssq_cq *ssq_queue_cq(struct ssq_queue *q)
{
	return &q->cq;
}

struct ssq_producer *ssq_queue_producer(struct ssq_queue *q)
{
	return &q->prod;
}

uint32_t ssq_queue_qpn(const struct ssq_queue *q)
{
	return q->l->qpn;
}

const char *ssq_queue_name(const struct ssq_queue *q)
{
	return q ? q->name : NULL;
}

uint32_t ssq_queue_peer_qpn(const struct ssq_queue *q)
{
	return q->l->peer_qpn;
}

uint64_t ssq_queue_peer_iova(const struct ssq_queue *q)
{
	return q->l->peer_data_iova;
}

uint32_t ssq_queue_peer_rkey(const struct ssq_queue *q)
{
	return q->l->peer_key;
}

_Static_assert(sizeof(((struct ssq_link_info *)0)->peer) >= SSQ_NAME_MAX,
               "a queue's peer name fits");

int ssq_queue_link(const struct ssq_queue *q, struct ssq_link_info *out)
{
	const char *slash;

	if (!q || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	/* "bob/q0": bob's; "q0" (loopback, or the one peer of --connect): "". */
	slash = memchr(q->l->name, '/', SSQ_NAME_MAX);
	if (slash)
		memcpy(out->peer, q->l->name, (size_t)(slash - q->l->name));
	out->up = __atomic_load_n(&q->l->state, __ATOMIC_ACQUIRE) == SSQ_QUEUE_READY;
	out->gen = ssq_queue_peer_gen(q);
	return 0;
}

uint32_t ssq_queue_peer_gen(const struct ssq_queue *q)
{
	/*
	 * Relaxed: a counter to compare, read with no other field. ssqd
	 * writes it only from its own copy (layout_fill), so a client that
	 * scribbles it fools itself until the next client connects.
	 */
	return __atomic_load_n(&q->l->peer_gen, __ATOMIC_RELAXED);
}

int ssq_buf_at(const struct ssq_client *c, uint64_t off, uint64_t len,
               struct ssq_buf *out)
{
	const struct shm_arena_header *h = c->hdr;

	if (off < h->data_off || len > h->data_len ||
	    off - h->data_off > h->data_len - len)
		return -EINVAL;
	out->addr = c->arena + off;
	out->iova = h->data_iova + (off - h->data_off);
	out->lkey = h->data_key;
	out->len = len;
	out->off = off;
	out->remote_addr = out->iova;
	out->rkey = h->data_key;
	return 0;
}

int ssq_buf_alloc(struct ssq_client *c, uint64_t len, struct ssq_buf *out)
{
	struct proto_msg_alloc req = { len, 64 };
	struct proto_msg reply;
	int rc;

	if (!len || len > SSQ_ALLOC_MAX) {
		snprintf(c->err, sizeof(c->err), "buffer length %llu: want 1..2^40",
		         (unsigned long long)len);
		return -EINVAL;
	}
	rc = client_call(c, SSQ_MSG_ALLOC, &req, sizeof(req), &reply, NULL);
	if (rc)
		return rc;
	if (ssq_buf_at(c, reply.u.alloc_reply.off, len, out)) {
		snprintf(c->err, sizeof(c->err),
		         "ssqd gave a buffer outside the data arena");
		return -EBADMSG;
	}
	/* The buffer's own keys (the arena's reach nothing remote); none: ssqd
	 * --arena-rkey, the arena's serve. */
	if (reply.u.alloc_reply.key)
		out->lkey = out->rkey = reply.u.alloc_reply.key;
	return 0;
}

int ssq_buf_free(struct ssq_client *c, const struct ssq_buf *b)
{
	struct proto_msg_free req = { b->off };
	struct proto_msg reply;

	return client_call(c, SSQ_MSG_FREE, &req, sizeof(req), &reply, NULL);
}

uint32_t ssq_recv_depth(const struct ssq_queue *q)
{
	return q->rlog ? q->l->recv_depth : 0;
}

uint32_t ssq_recv_size(const struct ssq_queue *q)
{
	return q->rlog ? q->rsize : 0;
}

uint64_t ssq_recv_arrived(const struct ssq_queue *q)
{
	/* Pairs with the poller's release (W3): records below it are written. */
	return q->rlog ? __atomic_load_n(&q->rlog->arrived, __ATOMIC_ACQUIRE) : 0;
}

/*
 * Did anything reuse message @k's record or buffer before now? Both are
 * reused only for message k + slots, whose receive WQE is posted - and
 * `posted` raised past k + slots - before its record is written (W1) and
 * before the device can see the WQE (W4, recv_pool.c). So a caller that
 * read the record or the buffer, then fences (R2: acquire, pairing with
 * W1's release; the device's writes follow the doorbell that follows W4)
 * and finds posted <= k + slots, read nothing written for a later message.
 */
static int recv_intact(const struct ssq_queue *q, uint64_t k)
{
	__atomic_thread_fence(__ATOMIC_ACQUIRE); /* R2 */
	return __atomic_load_n(&q->rlog->posted, __ATOMIC_RELAXED) <= k + q->rslots
	           ? 0
	           : -ESTALE;
}

int ssq_recv_check(struct ssq_queue *q, uint64_t k)
{
	if (!q)
		return -EINVAL;
	if (!q->rlog)
		return -ENOTSUP;
	/* Nothing of message @k was there to be read, let alone intact. */
	if (k >= ssq_recv_arrived(q))
		return -EAGAIN;
	return recv_intact(q, k);
}

int ssq_recv_peek(struct ssq_queue *q, uint64_t k, struct ssq_recv_msg *m)
{
	const struct shm_recv_record *r;
	uint64_t seq;

	if (!q || !m)
		return -EINVAL;
	if (!q->rlog)
		return -ENOTSUP;
	/*
	 * By the count, not by seq alone: seq == k + 1 also holds for a slot
	 * never written (seq 0) when k + 1 wraps to 0 (k = UINT64_MAX), and
	 * recv_intact's k + slots would wrap too. arrived > k means record k
	 * was written (the poller's W2 before its W3).
	 */
	if (k >= ssq_recv_arrived(q))
		return -EAGAIN;
	r = &q->rlog->rec[k & (q->rslots - 1)];
	/* R1: pairs with the poller's release of seq (W2): the fields are there. */
	seq = __atomic_load_n(&r->seq, __ATOMIC_ACQUIRE);
	if (seq < k + 1)
		return -EAGAIN; /* the slot still holds an older message */
	if (seq > k + 1)
		return -ESTALE; /* it already holds a later one */
	/* Relaxed atomics: a later record may be written meanwhile (recv_intact). */
	m->byte_len = __atomic_load_n(&r->byte_len, __ATOMIC_RELAXED);
	m->imm = (__be32)__atomic_load_n(&r->imm, __ATOMIC_RELAXED);
	m->opcode = __atomic_load_n(&r->opcode, __ATOMIC_RELAXED);
	m->status = __atomic_load_n(&r->status, __ATOMIC_RELAXED);
	m->syndrome = __atomic_load_n(&r->syndrome, __ATOMIC_RELAXED);
	m->vendor_err = __atomic_load_n(&r->vendor_err, __ATOMIC_RELAXED);
	m->qpn = __atomic_load_n(&r->qpn, __ATOMIC_RELAXED);
	m->data = NULL;
	if (m->status == IBV_WC_SUCCESS &&
	    (m->opcode == MLX5_CQE_RESP_SEND || m->opcode == MLX5_CQE_RESP_SEND_IMM))
		m->data = q->rbuf + (size_t)(k & (q->rslots - 1)) * q->rsize;
	return recv_intact(q, k);
}

int ssq_recv_copy(struct ssq_queue *q, uint64_t k, void *dst, size_t len,
                  struct ssq_recv_msg *m)
{
	struct ssq_recv_msg own;
	int rc;

	if (!q || (!dst && len))
		return -EINVAL;
	if (!m)
		m = &own;
	rc = ssq_recv_peek(q, k, m);
	if (rc)
		return rc;
	if (m->data && len)
		memcpy(dst, m->data, len < m->byte_len ? len : m->byte_len);
	/*
	 * R3: the copy, then the check (recv_intact: acquire fence, then
	 * `posted`). The device writes buffer k % slots again only for receive
	 * WQE k + slots, and ssqd raises posted past k + slots before it rings
	 * that WQE (W4), so posted <= k + slots after the copy proves no byte
	 * copied came from a later message - even one that was mid-DMA.
	 */
	return recv_intact(q, k);
}
