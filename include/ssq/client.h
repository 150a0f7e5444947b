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
 *	struct ssq_client *c;  struct ssq_queue *q;  struct ssq_buf b, d;
 *	ssq_client_connect(NULL, &c);        // ssqd's default socket (below)
 *	ssq_queue_open(c, "q0", &q);
 *	ssq_buf_alloc(c, 4096, &b);          // b.addr here, b.iova in WQEs
 *	ssq_buf_alloc(c, 4096, &d);          // loopback: a destination here
 *	ssq_post_write(ssq_queue_producer(q), b.iova, b.lkey, 64,
 *		       d.remote_addr, d.rkey, wr_id,   // d's remote descriptor:
 *		       SSQ_WQE_SIGNALED);         // a peer's comes from its owner
 *	ssq_poll(ssq_queue_producer(q), comps, 16);  // <ssq/queue.h>
 *	ssq_queue_close(q);  ssq_client_close(c);
 *
 * A client is one connection; make its calls from one thread at a time. It
 * may open any number of queues, and one queue up to 16 times: each open is
 * a producer of its own (its own record and completions), so each thread of
 * a process can post through its own open of one queue, concurrently. Every call
 * returns 0 (or a count) or a negative errno, except the predicate
 * ssq_client_alive() (1 alive, 0 gone: a truth value, as its name reads) and
 * the calls returning a string or a pointer; the sentence for the last
 * error is ssq_client_error(). -ENOTCONN always means this process's ssqd
 * is gone; a peer ssqd that is away is -EHOSTDOWN (ssq_queue_recover).
 * When ssqd dies, calls return -ENOTCONN
 * within a second rather than block (ssq_client_alive() checks without a
 * round trip). A call a live ssqd does not answer within 25 s
 * ($SSQ_REPLY_TIMEOUT_MS ms when set; 5 s more for ssq_queue_recover)
 * returns -ETIMEDOUT; its answer, should it come later,
 * is recognised by its sequence number and discarded, never taken for a
 * later call's, and what it granted (a buffer, an attachment) is given back.
 */
#ifndef SSQ_CLIENT_H
#define SSQ_CLIENT_H

#include <ssq/common.h>
#include <ssq/sq.h>
#include <ssq/cq.h>
#include <ssq/desc.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ssq_client;
struct ssq_queue;

struct ssq_queue_info {
	char name[32];
	uint32_t qpn;
	int ready; /* the QP is in RTS */
	/*
	 * Requests from its peer refused here for a key not granted to it
	 * (ssq_buf_grant), since ssqd started: guesses, or stale descriptors.
	 */
	unsigned refused;
};

/* A buffer in the shared data arena. */
struct ssq_buf {
	void *addr;    /* where this process sees it */
	uint64_t iova; /* what WQEs carry: the same in every process */
	uint32_t lkey; /* its own key (ssqd --arena-rkey: the arena's) */
	uint64_t len;
	/*
	 * Where it starts in the arena file, counted from the arena's header:
	 * what another process of this host passes to ssq_buf_at to map it.
	 * Not an address: a peer reaches this buffer at .remote_addr with .rkey.
	 */
	uint64_t off;
	/*
	 * Its remote descriptor: what a peer's WQEs carry to reach it. The
	 * buffer's own keys reach this buffer alone, until it is freed;
	 * under ssqd --arena-rkey they are the arena's, which reach it all.
	 */
	uint64_t remote_addr;
	uint32_t rkey;
};

/*
 * ssq_client_connect - connect to ssqd at @path, check who it is, say hello
 * and map the arena. @path NULL or "": $SSQ_SOCKET, else
 * $XDG_RUNTIME_DIR/ssqd.sock, else /run/ssqd/ssqd.sock for root, else
 * /tmp/ssqd-<uid>/ssqd.sock (ssqd --help says the same).
 * The server must run as root or as this process's uid, or as the uid in
 * $SSQ_SERVER_UID (SO_PEERCRED): anyone else who took the path is refused
 * with -EPERM before anything is sent.
 * Returns 0 and *@out, or -ENOENT / -ECONNREFUSED (no ssqd there), -EPERM
 * (an untrusted server), -EACCES (ssqd refuses this uid), -EUSERS (ssqd or
 * this uid's share of it is full), -EPROTO (another protocol or layout
 * version), -ETIMEDOUT, -ENOMEM. On failure *@out is NULL and
 * ssq_client_strerror_last() says what went wrong.
 */
int ssq_client_connect(const char *path, struct ssq_client **out);

/* The sentence of the last failed ssq_client_connect() in this thread. */
const char *ssq_client_strerror_last(void);

/* Close the connection and unmap everything (queues still open are closed). */
void ssq_client_close(struct ssq_client *c);

/* The sentence for the last error on @c ("" if none). */
const char *ssq_client_error(const struct ssq_client *c);

/*
 * ssq_client_alive - is ssqd still at the other end of @c? A predicate, the
 * one exception to this header's 0-or-negative-errno rule: returns 1 while
 * ssqd holds the connection open, 0 once it has gone (never negative; test
 * it as a truth value, `if (!ssq_client_alive(c))`). On 0 it also sets
 * ssq_client_error(c) to say so. One poll(2) with no wait, no round trip;
 * the thread that makes @c's calls.
 */
int ssq_client_alive(struct ssq_client *c);

/* The device ssqd runs on: "emu" or an mlx5 device name. */
const char *ssq_client_device(const struct ssq_client *c);

/*
 * 1 when ssqd runs with a peer ssqd (--listen / --connect): RDMA through
 * its queues (ssq_queue_peer_iova) lands in the peer's arena, where only
 * the peer's clients allocate; 0 in loopback.
 */
int ssq_client_peer_mode(const struct ssq_client *c);

/*
 * A peer daemon of ssqd's cluster (ssqd --peers) and its link, as
 * ssq_client_peers() reports it.
 */
enum ssq_peer_state {
	SSQ_PEER_IDLE = 0,       /* not linked, nobody asked: on demand, or closed idle */
	SSQ_PEER_CONNECTING = 1, /* wanted, being linked */
	SSQ_PEER_FAILED = 2,     /* wanted; the last attempt failed (why says how) */
	SSQ_PEER_READY = 3,      /* linked: its queues up */
};
#define SSQ_PEER_DIALS      1u /* this ssqd dials it (its name sorts first) */
#define SSQ_PEER_OPEN_HERE  2u /* a client here has one of its queues open */
#define SSQ_PEER_OPEN_THERE 4u /* a client there has one of the pair's open */
struct ssq_peer_info {
	char name[32];
	char addr[64]; /* HOST:PORT */
	enum ssq_peer_state state;
	unsigned first_queue, nqueues; /* its queues, in ssq_client_list's order */
	unsigned attempts;             /* dials since it was last linked */
	unsigned links, losses;        /* times linked, times the link was lost */
	unsigned flags;                /* SSQ_PEER_* */
	char why[128];                 /* the last attempt's outcome, or "" */
	/*
	 * Requests from this peer refused here for a key not granted to it
	 * (ssq_buf_grant): its guesses, or its stale descriptors, since ssqd
	 * started. Each also cost that peer's queue an error and a recovery.
	 */
	unsigned refused;
};

/*
 * ssq_client_peers - fill up to @max entries with ssqd's peers; returns how
 * many peers it has (0 outside a cluster), or -errno.
 */
int ssq_client_peers(struct ssq_client *c, struct ssq_peer_info *out, int max);

/* Fill up to @max entries; returns how many queues ssqd has, or -errno. */
int ssq_client_list(struct ssq_client *c, struct ssq_queue_info *out, int max);

/*
 * ssq_queue_open - attach to the queue @name ("qK", or "PEER/qK" when ssqd
 * serves a cluster): map its UAR page and describe its send queue and CQ;
 * each open is a producer of its own. A cluster's peer not linked yet is
 * linked now, the open waiting up to SSQ_OPEN_LINK_MS for it.
 * @name "any" ("PEER/any" in a cluster) lets ssqd pick one of that peer's
 * queues (ssqd --queues N): of those this client may use (--queue-uid /
 * --queue-gid), the one with the fewest producers attached, ready ones
 * first, the lowest on a tie; so processes that each open "any" once
 * spread evenly over the queues, each keeping its order on its one queue
 * for as long as it is open. ssq_queue_name says which one it got.
 * Returns 0 and *@out, -ENOENT (no such queue; for "any", no such peer),
 * -EAGAIN (not ready), -ETIMEDOUT (its peer did not link in time:
 * ssq_client_error says why), -EBUSY (ssqd has --max-active-peers in use),
 * -EACCES (the queue, or for "any" every queue of the peer, is for other
 * uids), -EUSERS (its producer records are all in use, or this client has
 * it - for "any", each queue it may use - open 16 times), -EBADMSG (its
 * layout is out of bounds), -ENOTCONN.
 */
#define SSQ_OPEN_LINK_MS 5000u
int ssq_queue_open(struct ssq_client *c, const char *name, struct ssq_queue **out);

/*
 * ssq_queue_try_open - ssq_queue_open for an event loop: one ATTACH, never
 * the wait for a peer's link. Where ssq_queue_open would wait (a cluster's
 * peer being linked on demand, or a queue coming back), it returns
 * -EINPROGRESS at once, ssqd linking the peer meanwhile: call it again
 * later (a timer; ssq_client_peers shows the link) until it returns
 * anything else. Its other returns are ssq_queue_open's, -ETIMEDOUT only if
 * ssqd does not answer within 25 s ($SSQ_REPLY_TIMEOUT_MS). The thread that
 * makes @c's calls.
 */
int ssq_queue_try_open(struct ssq_client *c, const char *name, struct ssq_queue **out);

/*
 * ssq_queue_open_start - ssq_queue_try_open with a descriptor to wait on:
 * start opening queue @name (it asks ssqd once, which starts linking a
 * cluster's peer on demand), then wait for ssq_queue_open_fd(*@op) to
 * poll readable in the loop's epoll / poll / select, and call
 * ssq_queue_open_finish. The descriptor is readable at once when the first
 * ask was answered; else when the queue's state or link in ssqd's shared
 * layout changes, when ssqd goes, and at least once a second (a thread of
 * this process looks every 10 ms while the open is pending). Readable is
 * a reason to ask, not the answer: finish asks ssqd. The program keeps
 * its own deadline, as with a non-blocking connect(2). Returns 0 and *@op
 * (whatever the first ask said: finish says it), -EINVAL (NULL argument,
 * a name of 0 or 32+ characters), -ENOMEM, -EMFILE and the like.
 * ssq_queue_open and ssq_queue_try_open stay as they are.
 */
struct ssq_open;
int ssq_queue_open_start(struct ssq_client *c, const char *name, struct ssq_open **op);
/* The eventfd of @op (see ssq_queue_open_start), or -EINVAL; @op keeps it. */
int ssq_queue_open_fd(const struct ssq_open *op);
/*
 * ssq_queue_open_finish - after ssq_queue_open_fd(@op) polled readable:
 * ask ssqd again (ssq_queue_try_open's ATTACH, the first ask's answer if
 * it was final). Returns 0 and *@out, the queue opened; -EINPROGRESS, not
 * yet: wait on the descriptor again; or ssq_queue_try_open's other
 * returns (-ENOENT, -ETIMEDOUT, -ENOTCONN, ...). After an answer other
 * than -EINPROGRESS the thread has stopped and @op only waits for
 * ssq_queue_open_free (a later finish: -EALREADY). From the thread that
 * makes @op's client's calls.
 */
int ssq_queue_open_finish(struct ssq_open *op, struct ssq_queue **out);
/*
 * ssq_queue_open_free - stop @op's thread, close its descriptor, free it:
 * after finish's last answer, or to give up on the open (a queue opened by
 * the first ask and not handed over by finish is closed). NULL: nothing.
 */
void ssq_queue_open_free(struct ssq_open *op);

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
 * flight: reap completions and retry), -EHOSTDOWN (the queue's peer ssqd is
 * not linked, or did not come back within the wait: this ssqd and the
 * connection to it are fine and keep reconnecting to the peer; keep the
 * connection and retry later), -ENOTCONN (this process's ssqd is gone:
 * connect again), -ETIMEDOUT (no answer within 30 s: $SSQ_REPLY_TIMEOUT_MS
 * plus 5 s), or the QP transition's
 * error; ssq_client_error() says which.
 */
int ssq_queue_recover(struct ssq_queue *q);

/*
 * ssq_queue_wait_fd - a descriptor that becomes readable when completions
 * for this open's producer may be ready, for epoll / poll / select: an
 * eventfd to which a thread of this process adds 1 each time the
 * producer's completions grow (asleep meanwhile, as ssq_wait sleeps; it
 * also routes the CQ when nobody else does). After it polls readable,
 * read(2) its 8 bytes, then ssq_poll until it returns 0: a wake that came
 * while completions were still waiting is not repeated. Readable once
 * more, and then for good, when ssqd goes (ssq_poll says -ENOTCONN); and
 * once each time the queue's link to its peer goes or comes back
 * (ssq_queue_link says which peer, and whether its descriptors went stale).
 * The same descriptor on every call; ssq_queue_close closes it. Returns
 * it, or -ENOTCONN, -EINVAL, -EMFILE and the like.
 */
int ssq_queue_wait_fd(struct ssq_queue *q);

/*
 * Post the producer's last combined request if it is still handed over
 * (<ssq/combine.h>: waiting up to 1 s for room), then detach and unmap.
 * Returns 0 or -ENOTCONN (ssqd gone: unmapped anyway), or the error of
 * posting that request (-EAGAIN: no room within 1 s, -EIO): closed
 * anyway, that request not posted by the close. -EAGAIN also when a
 * combiner took it and has not published it for 1 s (stopped): it runs
 * once if that combiner goes on, even after this process exits (ssqd
 * keeps the registrations it may name until then; ssq_mem_dereg says
 * -EBUSY meanwhile), its completion dropped; never if ssqd ends that
 * combiner.
 */
int ssq_queue_close(struct ssq_queue *q);

/*
 * ssq_queue_name - the name of queue @q as ssqd lists it: the one opened,
 * or for an open of "any" / "PEER/any" the one ssqd picked ("q2",
 * "bob/q1"), to log or to name in ssq_buf_grant. Valid while @q is open;
 * NULL for @q NULL. No round trip: any thread.
 */
const char *ssq_queue_name(const struct ssq_queue *q);

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
/*
 * The peer's data arena (in loopback this ssqd's): its IOVA and its
 * arena-wide key, as the peer announced them. The key reaches nothing
 * remote unless the peer runs ssqd --arena-rkey: by default each buffer has
 * keys of its own, and a peer's WQEs carry the remote descriptor
 * (remote_addr, rkey) its owner handed over; with this key they complete
 * with IBV_WC_REM_ACCESS_ERR.
 */
uint64_t ssq_queue_peer_iova(const struct ssq_queue *q);
uint32_t ssq_queue_peer_rkey(const struct ssq_queue *q);
/*
 * ssq_queue_peer_gen - how many times ssqd has brought queue @q up against
 * its peer's addresses: 1 after the first link, +1 at every re-link (the
 * peer ssqd restarted, or a RECOVER re-linked both ends); 0 for a loopback
 * queue. A change since a peer's descriptors (ssq_desc_unpack) were taken
 * means they may be stale: the peer's buffers and keys may be gone, so get
 * them again. A load from the shared layout, no round trip: any thread,
 * while @q is open.
 */
uint32_t ssq_queue_peer_gen(const struct ssq_queue *q);

/* The link of a queue to its peer, as ssq_queue_link reports it. */
struct ssq_link_info {
	char peer[32]; /* "bob" for "bob/q0"; "" for "q0" (ssq_peer_info.name) */
	uint32_t up;   /* 1: the queue is ready (its peer linked), 0: not now */
	uint32_t gen;  /* ssq_queue_peer_gen: changed = the peer's descriptors stale */
};

/*
 * ssq_queue_link - where queue @q's link to its peer stands, for a program
 * that ssq_queue_wait_fd woke (that fd is readable once each time the link
 * goes or comes back): which peer, up or not, and its link count, to
 * compare with the one remembered with that peer's descriptors. A load from
 * the shared layout, no round trip: any thread while @q is open. Returns 0,
 * or -EINVAL (@q or @out NULL).
 */
int ssq_queue_link(const struct ssq_queue *q, struct ssq_link_info *out);

/*
 * ---- receiving: the queue's receive pool ----
 *
 * ssqd keeps receive WQEs posted (ssqd --recv-depth, default 256, each
 * with a buffer of --recv-size bytes, default 4096) at the QP that receives
 * what this queue's other end sends - loopback: what this ssqd's clients
 * send through the queue; with a peer ssqd: what the peer's clients send
 * through its queue of the same name - and logs every receive completion
 * (SEND, SEND_IMM, RDMA_WRITE_IMM, or an error) in the arena. Messages are
 * numbered k = 0, 1, ... in arrival order, which keeps each sender's
 * posting order (RC delivers in order, and the shared queue hands the
 * device each producer's WQEs in its order). Any number of processes may
 * read the log at once; nobody consumes it, and no round trip is involved.
 * A reader spins on ssq_recv_arrived() or sleeps in ssq_recv_wait().
 *
 * A window, not a queue: message k's buffer and record are reused by
 * message k + 2 * depth, whose receive WQE ssqd posts as soon as message
 * k + depth has arrived. So message k stays readable until depth later
 * messages have arrived; a reader further behind gets -ESTALE. Readers do
 * not slow senders down (pace senders, or keep up, to see every message).
 *
 * Errors: a SEND longer than the buffer completes at the receiver with
 * IBV_WC_LOC_LEN_ERR (logged as a record with that status and no payload)
 * and at the sender with IBV_WC_REM_INV_REQ_ERR; the receiving QP goes to
 * ERR, as an IB responder does. Receive WQEs flushed by an error are not
 * logged: they carry no message. After recovery (ssq_queue_recover, which
 * in loopback resets both ends) ssqd posts the pool again; numbering goes
 * on from ssq_recv_arrived() without a gap, and messages lost in the error
 * were never logged. In peer mode a receiving QP in ERR stays there until
 * both ssqds reconnect.
 */

/* One logged message, as ssq_recv_peek / ssq_recv_copy describe it. */
struct ssq_recv_msg {
	/*
	 * The payload in this process's mapping of the arena: SEND / SEND_IMM
	 * that succeeded; NULL for RDMA_WRITE_IMM (the data went to the
	 * WQE's raddr) and for errors. Valid while the message is (see
	 * ssq_recv_check).
	 */
	const void *data;
	uint32_t byte_len; /* bytes received (WRITE_IMM: bytes written); 0 on error */
	__be32 imm;        /* SEND_IMM / WRITE_IMM: as the sender posted it */
	uint8_t opcode;    /* MLX5_CQE_RESP_SEND, _RESP_SEND_IMM, _RESP_WR_IMM,
	                      or MLX5_CQE_RESP_ERR */
	uint8_t status;    /* enum ibv_wc_status: IBV_WC_SUCCESS or the error */
	uint8_t syndrome;  /* errors: MLX5_CQE_SYNDROME_* */
	uint8_t vendor_err;
	uint32_t qpn; /* the QP that received it */
};

/* Receive WQEs ssqd keeps posted for @q (its --recv-depth); 0: no pool. */
uint32_t ssq_recv_depth(const struct ssq_queue *q);

/* Bytes of each receive buffer of @q (its --recv-size); 0: no pool. */
uint32_t ssq_recv_size(const struct ssq_queue *q);

/*
 * Messages logged for @q so far: numbers 0 .. ssq_recv_arrived() - 1 have
 * arrived (the newest depth of them are still readable). Lock-free, any
 * thread; 0 without a pool.
 */
uint64_t ssq_recv_arrived(const struct ssq_queue *q);

/*
 * ssq_recv_peek - message @k of @q, without copying: its record in *@m and
 * a pointer to its payload in the arena. The payload may be overwritten
 * once depth more messages arrive: read it, then call ssq_recv_check(q, k)
 * to know the bytes you read were message @k's (or use ssq_recv_copy).
 * Returns 0, -EAGAIN (message @k has not arrived yet), -ESTALE (its buffer
 * was already posted again: depth later messages arrived), -ENOTSUP (ssqd
 * runs with --recv-depth 0), -EINVAL (NULL @q or @m). Any thread; the
 * queue itself is not changed.
 */
int ssq_recv_peek(struct ssq_queue *q, uint64_t k, struct ssq_recv_msg *m);

/*
 * ssq_recv_check - 0 while message @k's record and buffer still hold message
 * @k (no receive WQE that reuses them has been posted), else -ESTALE;
 * -EAGAIN if message @k has not arrived. After reading through
 * ssq_recv_peek's pointer it proves what was read was message @k.
 * -EINVAL / -ENOTSUP as ssq_recv_peek.
 */
int ssq_recv_check(struct ssq_queue *q, uint64_t k);

/*
 * ssq_recv_copy - ssq_recv_peek, then copy min(@len, byte_len) bytes of the
 * payload to @dst, then check the copy is message @k's (ssq_recv_check).
 * *@m (may be NULL) gets the record, byte_len the full length; m->data
 * points into the arena as with peek. Returns 0, -EAGAIN, -ESTALE (the
 * message was, or was being, overwritten: *@dst holds garbage), -ENOTSUP,
 * -EINVAL (NULL @q, or NULL @dst with @len > 0).
 */
int ssq_recv_copy(struct ssq_queue *q, uint64_t k, void *dst, size_t len,
                  struct ssq_recv_msg *m);

/*
 * ssq_recv_wait - sleep until message @k of @q has arrived
 * (ssq_recv_arrived(q) > k) or @timeout_ns nanoseconds pass; then read it
 * with ssq_recv_peek / ssq_recv_copy. It looks for up to 2 us first (a
 * reply due at once costs no system call), then sleeps on a futex in the
 * arena, shared by every process of the queue, woken by whoever logs: on
 * the emulated device its thread, as it completes the receive; on a
 * ConnectX ssqd's receive poller, which polls without napping while anyone
 * waits (a core of ssqd's busy meanwhile), so a waiter sees a message
 * within microseconds of its completion (the first after a long silence
 * ends the poller's nap by a completion event on the armed receive CQ). The sleep goes
 * in slices of at most 1 ms, so a missed wake costs at most that. Returns
 * at once if message @k has already arrived, even if it is no longer
 * readable (-ESTALE from peek).
 * @timeout_ns 0 only looks; INT64_MAX waits for ever in practice.
 * Returns 0, -ETIMEDOUT, -ENOTCONN (ssqd is gone), -ENOTSUP (ssqd runs
 * with --recv-depth 0), -EINVAL (NULL @q, negative @timeout_ns). Any
 * thread, any number at once.
 */
int ssq_recv_wait(struct ssq_queue *q, uint64_t k, int64_t timeout_ns);

/*
 * ssq_buf_alloc - @len bytes (1..2^40) of the data arena, 64-byte aligned,
 * owned by this client until ssq_buf_free() or the client's end, with keys
 * of its own (a memory region of its own at ssqd; not under ssqd
 * --arena-rkey). When ssqd has peers (--listen, --connect, --peers), no
 * peer reaches it with them: ssq_buf_grant hands a peer a descriptor that
 * does. Without peers (loopback) .remote_addr and .rkey reach it, and only
 * it, from this host's queues.
 * Returns 0 or -ENOMEM (arena full), -EDQUOT (a quota of ssqd: the message
 * names it; one uid holds at most 2048 buffers with keys of their own),
 * -EINVAL, -ENOTCONN.
 */
int ssq_buf_alloc(struct ssq_client *c, uint64_t len, struct ssq_buf *out);

/*
 * Returns 0, -ENOENT (not this client's), -EBUSY (the buffer has keys of
 * its own, not under ssqd --arena-rkey, and a WQE of this client that may use the
 * buffer's keys has not completed: poll, then free again), -ENOTCONN.
 */
int ssq_buf_free(struct ssq_client *c, const struct ssq_buf *b);

/*
 * ssq_buf_at - the buffer another process allocated, found by its arena
 * offset and length (passed to this process by the application). Its lkey
 * and rkey are the arena's: local access only, unless ssqd runs
 * --arena-rkey (a peer needs the descriptor its owner got). Returns 0 or
 * -EINVAL when it is not inside the data arena.
 */
int ssq_buf_at(const struct ssq_client *c, uint64_t off, uint64_t len,
               struct ssq_buf *out);

/*
 * ---- this process's own memory: zero-copy sends and receives ----
 *
 * ssq_mem_reg registers memory of the calling process (malloc, mmap, the
 * stack) with ssqd's device, ssq_mem_reg_fd shareable memory by its file
 * descriptor (memfd, tmpfs or hugetlbfs file, dma-buf). Each registration
 * has its own keys: a peer reaches only what a client registered with
 * remote access, at .remote_addr with .rkey. On the emulated device ssqd
 * reaches the memory through this process's /proc/self/mem (ssq_mem_reg)
 * or its own mapping of the file (ssq_mem_reg_fd); a WQE that touches
 * the memory after ssq_mem_dereg, or after this process has exited,
 * completes with IBV_WC_LOC_PROT_ERR (through this host's lkey) or
 * IBV_WC_REM_ACCESS_ERR (through the rkey), and never reaches memory that
 * is not this process's. ssqd deregisters a client's memory when the
 * client goes.
 */

/* Memory registered with ssq_mem_reg / ssq_mem_reg_fd. */
struct ssq_mr {
	void *addr;           /* ssq_mem_reg: its first byte here; _fd: NULL */
	uint64_t len;         /* bytes */
	uint64_t iova;        /* what this host's WQEs carry for its first byte */
	uint32_t lkey;        /* ... with this key */
	uint32_t rkey;        /* what a peer's WQEs carry, with remote_addr */
	uint64_t remote_addr; /* a peer's address of the first byte */
	uint32_t id;          /* ssqd's name for it */
	int access;           /* IBV_ACCESS_* as registered */
};

/*
 * ssq_mem_reg - register @len bytes at @addr of this process with
 * IBV_ACCESS_* @access (LOCAL_WRITE, REMOTE_WRITE, REMOTE_READ,
 * REMOTE_ATOMIC; remote write or atomic need LOCAL_WRITE, as ibv_reg_mr
 * wants). WQEs then carry addresses inside [@addr, +@len) as IOVAs with
 * out->lkey; a peer uses out->remote_addr + offset with out->rkey.
 * Returns 0, -EINVAL (NULL, zero or over 2^40 bytes, bad access bits),
 * -EFAULT (part of the range is not mapped, or is read-only and write
 * access was asked: ibv_reg_mr's answer), -EOPNOTSUPP (memory the device
 * cannot reach: see ssq_mem_reg(3)), -EDQUOT / -ENOMEM (ssqd's limits),
 * -EACCES (the emulated device, an ssqd of another uid without
 * CAP_SYS_PTRACE: it cannot read this process's /proc/PID/maps), -EPERM
 * (ssqd cannot read this process's RLIMIT_MEMLOCK: /proc mounted
 * hidepid), -ENOTCONN, -ETIMEDOUT; ssq_client_error() says which.
 */
int ssq_mem_reg(struct ssq_client *c, void *addr, uint64_t len, int access,
                struct ssq_mr *out);

/*
 * ssq_mem_reg_fd - register @len bytes of the shareable memory @fd from
 * @offset on; IOVAs are offsets into @fd (out->iova is @offset), so every
 * process that maps the file addresses it alike. @fd stays the caller's
 * (ssqd keeps a reference). Returns as ssq_mem_reg, and -EINVAL for a
 * range past the file's end, -EBADF for a descriptor ssqd cannot map.
 */
int ssq_mem_reg_fd(struct ssq_client *c, int fd, uint64_t offset, uint64_t len,
                   int access, struct ssq_mr *out);

/*
 * ---- remote access, handed out: grants ----
 *
 * With peers, a buffer or registration is reachable by no peer until its
 * owner grants a range of it: ssq_buf_grant / ssq_mem_grant ask ssqd to
 * bind a type-2 memory window over [@off, +@len) of it, with @access
 * (IBV_ACCESS_REMOTE_WRITE, _READ, _ATOMIC; a registration's grants within
 * what ssq_mem_reg asked), to the QP of @queue ("bob/q0", or "q0" with one
 * peer): the descriptor in *@out (remote_addr, rkey, length; owner left
 * "" for the caller to name this host before ssq_desc_pack) then works
 * for requests that peer posts on its end of that queue, and for no other
 * peer, no other queue, no other range. The window's key carries a byte
 * ssqd drew at random. A request with any other key fails the peer's WQE
 * with IBV_WC_REM_ACCESS_ERR, puts that queue in error at both ends, and
 * counts as refused in ssq_client_peers / ssqd --status.
 *
 * ssq_desc_revoke takes a grant back; so do ssq_buf_free, ssq_mem_dereg
 * and this client's end. Each returns only once the window is gone: no
 * request that arrives later reaches the memory. On a ConnectX the bind
 * is a WQE on the queue's shared ring, run once every reservation ahead
 * of it is published: memory freed while a bind over it may still run
 * (its grant answered -ETIMEDOUT, its key never handed out) is kept by
 * ssqd - its range not given to another buffer, still counted against
 * this client's quotas - until that bind ran or was discarded.
 *
 * Without peers the same calls bind a window on the loopback queue, on
 * the emulated device; on a ConnectX its far end, where the requests
 * arrive, has no shared ring for ssqd's bind: -EOPNOTSUPP (buffers keep
 * their own remote keys there: no peer to grant to).
 * One round trip to ssqd each; WQEs carry the rkey as any other.
 * Returns 0, -EINVAL (also a @queue "any" / "PEER/any": a grant binds to
 * one queue, so name the one ssq_queue_name gives), -ENOENT (not this
 * client's buffer, registration or grant; no such queue), -ERANGE (past its end), -EACCES
 * (more than a registration allows, or the queue is not this client's), -EDQUOT (64
 * grants per client), -EAGAIN / -ETIMEDOUT (the queue's peer is not
 * linked; or, on a ConnectX, the bind waited 500 ms behind a reservation
 * some client has not published: nothing granted, try again),
 * -EOPNOTSUPP (ssqd --arena-rkey; a registration made without
 * IBV_ACCESS_MW_BIND, which this library adds wherever remote access is
 * asked; on a ConnectX a loopback queue),
 * -ENOTCONN; ssq_client_error() says which.
 */
int ssq_buf_grant(struct ssq_client *c, const char *queue, const struct ssq_buf *b,
                  uint64_t off, uint64_t len, int access, struct ssq_desc *out);
int ssq_mem_grant(struct ssq_client *c, const char *queue, const struct ssq_mr *mr,
                  uint64_t off, uint64_t len, int access, struct ssq_desc *out);
int ssq_desc_revoke(struct ssq_client *c, const struct ssq_desc *d);

/*
 * ssq_mem_dereg - give @mr back. Refused with -EBUSY while a WQE of this
 * client that may use its keys has not completed on some queue, or a combined
 * request naming them is still handed over (reap completions with ssq_poll,
 * ssq_combine_flush a request handed over, then try again); -ENOENT when it is not this
 * client's; -ENOTCONN. After it returns 0 the keys name nothing.
 */
int ssq_mem_dereg(struct ssq_client *c, const struct ssq_mr *mr);

#ifdef __cplusplus
}
#endif

#endif /* SSQ_CLIENT_H */
