/* SPDX-License-Identifier: MIT */
/*
 * ssq/client.h - reach ssqd's shared queues from a process: connect, open a
 * queue by name, allocate buffers in the shared data arena, close.
 *
 * ssqd owns the device and every queue; a client maps the arena (queue
 * rings, doorbell records, data buffers) and the queue's UAR page from file
 * descriptors ssqd passes over its unix socket, and from then on posts and
 * polls with the fast-path calls of <ssq/ssq.h>, with no system call.
 *
 *	struct ssq_client *c;  struct ssq_queue *q;  struct ssq_buf b;
 *	ssq_client_connect(NULL, &c);        // $SSQ_SOCKET or /tmp/ssqd.<uid>.sock
 *	ssq_queue_open(c, "q0", &q);
 *	ssq_buf_alloc(c, 4096, &b);          // b.addr here, b.iova in WQEs
 *	ssq_post_write(ssq_queue_producer(q), b.iova, b.lkey, 64,
 *		       ssq_queue_peer_iova(q) + off, ssq_queue_peer_rkey(q), wr_id,
 *		       SSQ_WQE_SIGNALED);         // <ssq/queue.h>
 *	ssq_poll(ssq_queue_producer(q), comps, 16);
 *	ssq_queue_close(q);  ssq_client_close(c);
 *
 * A client is one connection; use it from one thread at a time. Every call
 * returns 0 (or a count) or a negative errno; the sentence for the last
 * error is ssq_client_error(). When ssqd dies, calls return -ENOTCONN
 * within a second rather than block (ssq_client_alive() checks without a
 * round trip).
 */
#ifndef SSQ_CLIENT_H
#define SSQ_CLIENT_H

#include <ssq/common.h>
#include <ssq/sq.h>
#include <ssq/cq.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ssq_client;
struct ssq_queue;

struct ssq_queue_info {
	char name[32];
	uint32_t qpn;
	int ready; /* the QP is in RTS */
};

/* A buffer in the shared data arena. */
struct ssq_buf {
	void *addr;    /* where this process sees it */
	uint64_t iova; /* what WQEs carry: the same in every process */
	uint32_t lkey; /* the data arena's key (also its rkey) */
	uint64_t len;
	uint64_t off; /* arena offset: what another process needs to find it */
};

/*
 * ssq_client_connect - connect to ssqd at @path (NULL: $SSQ_SOCKET, else
 * /tmp/ssqd.<uid>.sock), say hello and map the arena.
 * Returns 0 and *@out, or -ENOENT / -ECONNREFUSED (no ssqd there), -EACCES
 * (ssqd refuses this uid), -EPROTO (another protocol or layout version),
 * -ETIMEDOUT, -ENOMEM. On failure *@out is NULL and
 * ssq_client_strerror_last() says what went wrong.
 */
int ssq_client_connect(const char *path, struct ssq_client **out);

/* The sentence of the last failed ssq_client_connect() in this thread. */
const char *ssq_client_strerror_last(void);

/* Close the connection and unmap everything (queues still open are closed). */
void ssq_client_close(struct ssq_client *c);

/* The sentence for the last error on @c ("" if none). */
const char *ssq_client_error(const struct ssq_client *c);

/* 1 while ssqd holds the connection open, 0 once it is gone. No round trip. */
int ssq_client_alive(struct ssq_client *c);

/* The device ssqd runs on: "emu" or an mlx5 device name. */
const char *ssq_client_device(const struct ssq_client *c);

/* Fill up to @max entries; returns how many queues ssqd has, or -errno. */
int ssq_client_list(struct ssq_client *c, struct ssq_queue_info *out, int max);

/*
 * ssq_queue_open - attach to the queue @name: map its UAR page and describe
 * its send queue and CQ. Returns 0 and *@out, -ENOENT (no such queue),
 * -EAGAIN (not ready), -EBADMSG (its layout is out of bounds), -ENOTCONN.
 */
int ssq_queue_open(struct ssq_client *c, const char *name, struct ssq_queue **out);

/*
 * ssq_queue_recover - after an error CQE (ssq_reserve returns -EIO and the
 * failed and flushed requests came back through ssq_poll), ask ssqd to
 * bring the queue's QP back to RTS. ssqd waits (up to 2 s) until every
 * request posted before the error has been flushed and routed to its owner,
 * resets and reconnects the QP and restarts the shared counters; then
 * posting works again for every attached process. Any attached process may
 * ask; concurrent requests are served one after the other (the second finds
 * nothing to do: -EINVAL).
 * Returns 0, -EINVAL (the queue is not in error), -EBUSY (requests still in
 * flight: reap completions and retry), -ENOTCONN, or the QP transition's
 * error; ssq_client_error() says which.
 */
int ssq_queue_recover(struct ssq_queue *q);

/* Detach and unmap. Returns 0 or -ENOTCONN (ssqd gone: unmapped anyway). */
int ssq_queue_close(struct ssq_queue *q);

struct ssq_producer;
/*
 * The queue as this process posts into it and polls it (<ssq/queue.h>):
 * ssq_post_write(ssq_queue_producer(q), ...), ssq_poll(...). Shared with
 * every other attached process; lock-free.
 */
struct ssq_producer *ssq_queue_producer(struct ssq_queue *q);

/*
 * The queue's raw send queue and CQ, for a process that is the queue's only
 * user (it must then keep its own producer index, and must not mix this
 * with ssq_queue_producer()).
 */
struct ssq_sq *ssq_queue_sq(struct ssq_queue *q);
/* The queue's completion queue, for ssq_cq_poll. */
struct ssq_cq *ssq_queue_cq(struct ssq_queue *q);
uint32_t ssq_queue_qpn(const struct ssq_queue *q);
/* The QPN at the other end of the connection (the peer ssqd's, or loopback). */
uint32_t ssq_queue_peer_qpn(const struct ssq_queue *q);
/* Where RDMA through this queue lands: the peer's data arena and its rkey. */
uint64_t ssq_queue_peer_iova(const struct ssq_queue *q);
uint32_t ssq_queue_peer_rkey(const struct ssq_queue *q);

/*
 * ssq_buf_alloc - @len bytes (1..2^40) of the data arena, 64-byte aligned,
 * owned by this client until ssq_buf_free() or the client's end.
 * Returns 0 or -ENOMEM (arena full), -EINVAL, -ENOTCONN.
 */
int ssq_buf_alloc(struct ssq_client *c, uint64_t len, struct ssq_buf *out);

/* Returns 0, -ENOENT (not this client's), -ENOTCONN. */
int ssq_buf_free(struct ssq_client *c, const struct ssq_buf *b);

/*
 * ssq_buf_at - the buffer another process allocated, found by its arena
 * offset and length (passed to this process by the application). Returns 0
 * or -EINVAL when it is not inside the data arena.
 */
int ssq_buf_at(const struct ssq_client *c, uint64_t off, uint64_t len,
               struct ssq_buf *out);

#ifdef __cplusplus
}
#endif

#endif /* SSQ_CLIENT_H */
