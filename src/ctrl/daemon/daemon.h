/* SPDX-License-Identifier: MIT */
/*
 * ssqd's state: the arena, the device backend, the shared queues and the
 * clients. One control thread runs all of it (the emulated device has its
 * own thread, inside the backend).
 */
#ifndef SSQ_CTRL_DAEMON_H
#define SSQ_CTRL_DAEMON_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include <netinet/in.h>
#include <ssq/queue.h>
#include "ctrl/backend/backend.h"
#include "ctrl/daemon/clients/mr.h"
#include "ctrl/daemon/clients/out.h"
#include "ctrl/daemon/clients/data_alloc.h"
#include "ctrl/daemon/util/log_limit.h"
#include "ctrl/daemon/peers/link.h"
#include "ctrl/daemon/queues/recv_pool.h"
#include "ctrl/daemon/queues/send_arm.h"
#include "ctrl/daemon/watch/stall.h"
#include "shm/create/arena.h"
#include "shm/layout.h"

#define SSQD_MAX_CLIENTS 256
/* Opens of one queue on one connection: its producer records (63 a queue). */
#define SSQD_OPENS_PER_CLIENT 16u
#define SSQD_DATA_IOVA        0x0000550000000000ull /* where the data arena sits, for all */

/* --queue-uid and --queue-gid options one ssqd takes. */
#define SSQD_MAX_QUEUE_RULES 32

/*
 * Peers one ssqd links to (each takes at least one of the SSQ_MAX_QUEUES
 * queues), and the longest name one may have: its queues are "NAME/qK"
 * within SSQ_NAME_MAX.
 */
#define SSQD_MAX_PEERS     64
#define SSQD_PEER_NAME_MAX 24
#define SSQD_PEER_ADDR_MAX 128

/* A peer as --peer NAME=HOST:PORT or a --peers file line names it. */
struct ssqd_peer_spec {
	char name[SSQD_PEER_NAME_MAX];
	char addr[SSQD_PEER_ADDR_MAX]; /* HOST:PORT */
};

struct ssqd_options {
	const char *device;      /* NULL: first mlx5 device, else "emu" */
	const char *socket_path; /* unix socket clients connect to */
	/*
	 * A listening AF_UNIX SOCK_SEQPACKET socket ssqd was handed (systemd
	 * socket activation): served instead of binding socket_path, and
	 * left in place at exit, as its owner made it. -1: bind socket_path.
	 */
	int listen_fd;
	/* Queues in all: --queues, times the peers when --peer/--peers name them. */
	unsigned nqueues;      /* 1 .. SSQ_MAX_QUEUES */
	unsigned peer_queues;  /* --queues: each peer's (loopback: nqueues) */
	uint32_t sq_wqebbs;    /* per queue, power of two */
	uint32_t cqes;         /* per queue, power of two */
	uint64_t data_mib;     /* data arena */
	uint32_t signal_every; /* forced CQE interval, WQEBBs */
	uint32_t recv_depth;   /* receive WQEs kept posted per queue; 0: no pool */
	uint32_t recv_size;    /* bytes per receive buffer */
	/*
	 * A death is seen at once (the client's socket closes); healing then
	 * runs in tries of at most SSQD_HEAL_TRY_MS between which ssqd serves
	 * and notices further deaths, until done. A heal held up longer than
	 * heal_ms (by a live producer mid-reservation) is logged once.
	 */
	unsigned heal_ms;
	/*
	 * Every hold a live client has in a queue (an open reservation, the
	 * doorbell or the CQ lease) has this deadline: one that has not moved
	 * for stall_ms gets its process killed and healed as a death; a queue
	 * with work outstanding and no completion for stall_ms is repaired
	 * (stall_watch.h). 0: no deadline.
	 */
	unsigned stall_ms;
	/*
	 * --arena-rkey: the data arena one MR that peers may reach, its key
	 * every buffer's. 0 (the default): each arena buffer an MR of its own,
	 * the arena's for local access only.
	 */
	int arena_rkey;
	enum shm_hugepages hugepages;
	uint16_t listen_port;   /* 0: not listening for a peer */
	const char *connect_to; /* HOST:PORT of a listening peer, or NULL */
	/*
	 * --name and the cluster (--peer, --peers): this ssqd's name, and the
	 * other daemons it links to, each its own --queues queues "NAME/qK".
	 * NULL / 0: the one-peer modes (--listen or --connect) or loopback.
	 */
	const char *name;
	struct ssqd_peer_spec peers[SSQD_MAX_PEERS + 1]; /* + this one, in a file */
	unsigned npeers;
	/* The peers named this daemon too: its own queues NAME/qK, loopback. */
	int self_queues;
	/*
	 * A cluster links a peer when a client first opens one of its queues,
	 * unless --eager (all at start); --max-active-peers keeps at most that
	 * many linked (0: all), closing the least recently used idle one for a
	 * new one; --idle-ms closes a link nobody has had a queue of open for
	 * that long (0: never).
	 */
	int eager;
	unsigned max_active_peers;
	unsigned idle_ms;
	uint8_t port;                  /* device port */
	int gid_index;                 /* SSQD_GID_AUTO, SSQD_GID_NONE or an index */
	struct ssqd_backend_conf conf; /* --emu-link-layer, --emu-mtu */
	long allow_uid;                /* -1: only ssqd's own uid (and root) */
	long allow_gid;                /* -1: none */
	/*
	 * --queue-uid / --queue-gid: a queue with rules takes only the clients
	 * one of its rules names (uid, or primary gid as SO_PEERCRED gives it);
	 * a queue without any, every client ssqd serves.
	 */
	struct ssqd_queue_rule {
		uint8_t queue;
		uint8_t is_gid;
		uint32_t id;
	} queue_rules[SSQD_MAX_QUEUE_RULES];
	unsigned nqueue_rules;
	/*
	 * What one connection or one uid may hold, so that no client locks
	 * the others out: a connection says hello within hello_ms or is
	 * closed; a uid holds at most max_uid_clients connections; a client
	 * at most max_client_mib of the data arena in max_client_bufs
	 * buffers, a uid's clients max_uid_mib together (0: the defaults,
	 * set from data_mib by main).
	 */
	unsigned hello_ms;
	unsigned max_uid_clients;
	uint64_t max_client_mib, max_uid_mib;
	unsigned max_client_bufs;
};

#define SSQD_CLIENT_BUFS_DEFAULT 1024

/* ssqd's own producer record in every queue: heals, routes when idle. */
#define SSQD_PRODUCER_ID (SSQ_MAX_PRODUCERS - 1)

/* One try at healing a queue holds ssqd's thread at most this long. */
#define SSQD_HEAL_TRY_MS 1

/* How long a recovery waits for what was in flight before the error. */
#define SSQD_RECOVER_DRAIN_MS 2000

/*
 * A recovery under way: the clients whose RECOVER it answers (the first
 * asked; the others asked meanwhile and, as if they had come after it, find
 * nothing left to recover) and its deadline.
 */
#define SSQD_RECOVER_WAITERS 8
struct ssqd_recovery {
	unsigned nwaiters; /* 0: none under way */
	uint64_t deadline_ns;
	uint32_t client[SSQD_RECOVER_WAITERS]; /* client ids */
	uint32_t seq[SSQD_RECOVER_WAITERS];
};

struct ssqd_queue {
	struct ssq_ctl *ctl;
	struct ssq_producer prod; /* ssqd's own, id SSQD_PRODUCER_ID */
	int published;            /* its layout has been in the header (publish) */
	/*
	 * Its state as ssqd lists it (enum shm_queue_state): the header's
	 * copy is client memory, so ssqd acts on this one (queue_unit.c).
	 */
	uint32_t listed;
	int heal_pending;       /* deaths not healed yet: try (again) */
	uint64_t heal_since_ns; /* when the pending heal first timed out; 0: it has not */
	int heal_logged;        /* held up past heal_ms: said so */
	struct ssqd_bqueue local;
	struct ssqd_bqueue peer; /* loopback only: the other end, inside ssqd */
	struct shm_uar_map uar;
	struct proto_peer_addr remote; /* what local is connected to */
	uint32_t peer_psn;             /* loopback: the other end's first PSN */
	int loopback;
	unsigned peer_ix; /* not loopback: its ssqd_peer, d->peers[peer_ix] */
	/*
	 * One of its CQs overran (IBV_EVENT_CQ_ERR): an mlx5 CQ in error
	 * writes nothing more, and resetting the QP does not revive it, so
	 * RECOVER refuses rather than list a queue READY that cannot complete.
	 */
	int cq_dead;
	/*
	 * Its QP failed without a CQE (IBV_EVENT_QP_FATAL): the SQ stopped, so
	 * what was posted will never complete or flush, and RECOVER cannot wait
	 * for a drain; it rebuilds the queue instead (ssqd_queue_rebuild).
	 */
	int sq_frozen;
	struct ssqd_recv_pool rx; /* receives for this queue (recv_pool.h) */
	struct ssqd_recovery rec;
	struct ssqd_stall stall; /* stall_watch.c's looks */
	uint32_t epoch;          /* resets of the control block: ssqd's count */
	uint64_t guard_next_ns;  /* when ssqd_queue_guard looks next */
	/* ctl->waiters and ctl->wait_beat as the guard last saw them */
	uint32_t guard_waiters;
	struct ssqd_beat guard_beat;
	/* ssqd_queue_rebuild_paced: the last restart, the next allowed, the gap */
	uint64_t restart_last_ns, restart_next_ns;
	unsigned restart_gap_ms;
	struct ssqd_beat wait_beat; /* ctl->wait_beat, as ssqd_queue_send_event sees it */
	int tx_native;              /* the device's events announce its send CQEs */
	struct ssqd_send_arm_q txa; /* or arms on request (send_arm.c) */
	/*
	 * A restart of this queue asked of the peer host (peer_restart.c):
	 * the ask's seq (0: none under way), the PSNs it picked (ours, the
	 * peer's), its deadline. The queue stays RESTARTING meanwhile.
	 */
	uint32_t link_seq, link_psn, link_peer_psn;
	uint64_t link_deadline_ns;
};

/* A dead client's buffers, held until the WQEs it posted have completed. */
#define SSQD_MAX_GRAVES 256
struct ssqd_grave {
	uint32_t owner; /* client id; 0: unused */
	pid_t pid;
	uint64_t fence[SSQ_MAX_QUEUES]; /* each queue's reserve at the death */
};

struct ssqd_client {
	int fd;
	uint32_t id; /* owner tag for data buffers, never reused */
	pid_t pid;   /* SO_PEERCRED's, never what the client claims */
	int pidfd;   /* the same process (client_pidfd.h), or -1 */
	int stalled; /* killed for a stall: waiting for its death */
	int said_hello;
	uid_t uid;
	gid_t gid;
	int refused;       /* not allowed: answered with EACCES, then dropped */
	uint64_t attached; /* bit per queue: recs[q] != 0 */
	/* Its producer records in each queue, a bit per id: one per open. */
	uint64_t recs[SSQ_MAX_QUEUES];
	struct ssqd_out out;  /* replies its socket did not take yet */
	int failed;           /* a late answer could not be sent: drop it */
	uint64_t hello_by_ns; /* CLOCK_MONOTONIC: the hello's deadline */
	uint64_t bytes;       /* of the data arena, in nbufs buffers */
	unsigned nbufs;
	/*
	 * Dropped while its process ran with queues attached: killed, and
	 * dropped for good (its records healed) once the pidfd says it exited.
	 */
	int dying;
	uint64_t kill_by_ns; /* still there then: killed (0: no kill due) */
	int unmapped;        /* its process maps no queue any more: heal it */
};

/*
 * Another host's ssqd and the link to it: the exchange's TCP connection,
 * kept open (its close, or error, is how ssqd learns the peer is gone,
 * idle queues included), and that peer's share of the queues.
 */
struct ssqd_lookup; /* peer_lookup.c */
struct ssqd_peer {
	char name[SSQD_PEER_NAME_MAX]; /* "" for the one peer of --listen/--connect */
	const char *addr;              /* its HOST:PORT; NULL: unknown (--listen) */
	/* Its address as looked up for dials, off the loop (peer_lookup.c). */
	struct sockaddr_storage lk_sa;
	socklen_t lk_salen;
	int lk_have, lk_stale;
	struct ssqd_lookup *lk; /* a host name's lookup, kept for the next */
	int dials;              /* this ssqd dials for the exchange */
	/*
	 * Its link is wanted: a client opened one of its queues (or --eager,
	 * or a one-peer mode). A dialer dials a wanted peer; the other side
	 * sends it a want (noting: that connection is under way; exchanging
	 * too once the want is out, its answer read into xbuf: the peer's
	 * close, or a refusal when it has no room).
	 */
	int wanted;
	int noting;
	uint64_t refused_ns; /* when our want was last refused (last_why: why) */
	uint64_t used_ns;    /* the last time one of its queues was open: LRU */
	/* An open here (or the peer's, by its want) waits for the link: busy. */
	uint64_t open_wait_ns;
	/*
	 * When we asked the peer to close the link (--idle-ms, or room for
	 * another under --max-active-peers), and why; 0: not asked.
	 */
	uint64_t closing_ns;
	char closing_why[160];
	unsigned links, losses; /* times linked, times the link was lost */
	/* Linked: whether the peer has one of our queues open; what we told it. */
	int remote_busy;
	int busy_told;  /* -1: nothing yet */
	unsigned q0;    /* its queues: q0 .. q0 + opt.peer_queues - 1 */
	int fd;         /* -1: not linked */
	int connecting; /* fd is a dial under way */
	/*
	 * The dial connected and our addresses went out: the peer's are read
	 * into xbuf as they come (connecting stays set until they are whole).
	 */
	int exchanging;
	unsigned xlen;
	uint8_t xbuf[SSQ_MAX_QUEUES * SSQ_PEER_MSG_LEN];
	int ever; /* its queues were up once: re-bring them */
	/* CLOCK_MONOTONIC: the next dial; connecting: its deadline */
	uint64_t retry_ns;
	unsigned backoff_ms; /* 100, doubling to 2000 */
	unsigned attempts;   /* since the peer was lost */
	char last_why[200];  /* last attempt's outcome: logged when it changes */
	/* After the exchange: a restart message read so far (peer_restart.c). */
	uint8_t rx[SSQ_PEER_RESTART_LEN];
	unsigned rx_len;
};

/*
 * A connection to the peer port that has yet to send its first message
 * (peer_accept.c), or one refused and being drained before its close. A
 * newcomer to a full table takes the slot of the oldest knock of the
 * source that holds the most: one that keeps them all full keeps only its
 * own knocks out, not a peer's.
 */
#define SSQD_MAX_KNOCKS 8
struct ssqd_knock {
	int fd; /* -1: free */
	int draining;
	uint64_t deadline_ns;
	uint64_t accepted_ns;
	unsigned len;
	char from[80];
	struct in6_addr ip; /* from's address, to tell sources apart */
	uint8_t buf[SSQ_MAX_QUEUES * SSQ_PEER_MSG_LEN];
};

struct ssqd {
	struct ssqd_options opt;
	struct shm_arena arena;
	const struct ssqd_backend_ops *ops;
	struct ssqd_backend *backend;
	int async_failed; /* reading async events failed: said so once */
	struct shm_arena_header *hdr;
	/*
	 * The header as ssqd wrote it, where no client can write: every
	 * client maps the arena read-write, header and all, so ssqd reads
	 * the queue count, names, data arena and device from here, never
	 * from hdr, and puts them back into hdr before a new client maps it
	 * (ssqd_hdr_restore). Queue states stay hdr's: they are shared.
	 */
	struct shm_arena_header own;
	struct ssqd_queue queues[SSQ_MAX_QUEUES];
	struct ssqd_data_alloc data;
	uint32_t psn[SSQ_MAX_QUEUES];                       /* our QPs' first PSNs */
	struct proto_peer_addr local_addrs[SSQ_MAX_QUEUES]; /* what we tell the peer */
	int peer_listen_fd; /* --listen: open for as long as ssqd runs */
	struct ssqd_peer peers[SSQD_MAX_PEERS];
	unsigned npeers;        /* 0: loopback */
	uint32_t link_next_seq; /* the next restart ask's (peer_restart.c) */
	struct ssqd_knock knocks[SSQD_MAX_KNOCKS];
	int listen_fd;
	int socket_lock_fd; /* the claim on the socket's path (socket_claim.h) */
	struct ssqd_client clients[SSQD_MAX_CLIENTS];
	struct ssqd_grave graves[SSQD_MAX_GRAVES];
	struct ssqd_mr mrs[SSQD_MAX_MRS]; /* clients' own memory (client_mr.h) */
	uint32_t next_client_id;
	struct ssqd_log_limit client_log; /* lines clients' bad input causes */
	struct ssqd_recv_poller rxp;      /* the receive pools' thread */
	struct ssqd_send_arm txa;         /* the send CQs' arm and event threads */
	uint64_t stall_next_ns;           /* the stall watch's next look */
	uint64_t accept_pause_until_ns;   /* out of descriptors: accept later */
	int idle;                         /* sleeping up to SSQD_IDLE_MS (idle.c) */
	/* Registrations ssqd may hold, and one uid: from RLIMIT_NOFILE (client_mr.h). */
	unsigned mr_cap, mr_uid_cap;
	volatile sig_atomic_t stop;
};

/* Defaults for every option. */
void ssqd_options_default(struct ssqd_options *o);

/*
 * ssqd_setup - arena, device, data MR, queues brought to RTS (loopback, or
 * against the peer of --listen / --connect), the device's progress, the
 * client socket. Returns 0, or a negative errno with a sentence in @why;
 * on error everything made so far is torn down.
 */
int ssqd_setup(struct ssqd *d, char *why, size_t whylen);

/* Serve clients until d->stop is set (by a signal). Returns 0. */
int ssqd_serve(struct ssqd *d);

void ssqd_teardown(struct ssqd *d);

/*
 * One queue's life (queue_unit.c), called by the bring-up and the peer link:
 * ssqd_queue_make - the queue's QP (and, loopback, its other end), control
 *   block, receive pool and UAR mapping;
 * ssqd_queue_local_addr - what the peer is told of the QP @b of queue @i;
 * ssqd_queue_connect - RESET/INIT -> RTR -> RTS against @peer;
 * ssqd_queue_connect_all - every queue connected, its receives posted, published;
 * ssqd_queue_publish - the layout entry clients read: fields, then READY;
 * ssqd_queue_recover - bring queue @qi from ERR back to RTS once every
 *   request in flight has been flushed and routed.
 * The int ones return 0 or a negative errno with the reason in @why.
 */
uint32_t ssqd_queue_new_psn(void);
/*
 * Queue @i's name for clients: "qK", or "PEER/qK" in a cluster.
 * ssqd_queue_is_loopback: whether its other end is inside this ssqd (no
 * peer mode, or a cluster's own queues, after the peers').
 */
int ssqd_queue_is_loopback(const struct ssqd *d, unsigned i);
void ssqd_queue_name(const struct ssqd *d, unsigned i, char name[SSQ_NAME_MAX]);
/*
 * ssqd_hdr_restore (arena_header.c) - rewrite the arena header's fixed part
 * and the queue names from d->own, undoing whatever a client scribbled.
 */
void ssqd_hdr_restore(struct ssqd *d);
/*
 * ssqd_peer_lookup (peer_lookup.c) - @p's address for a dial into
 * p->lk_sa without waiting on a lookup: 0, -EINPROGRESS while a host name
 * is looked up (ask again at the next tick), or -errno, saying why in @why.
 * ssqd_peer_lookup_stale: a dial failed; the next dial looks it up again
 * (using the old answer meanwhile).
 */
int ssqd_peer_lookup(struct ssqd_peer *p, char *why, size_t whylen);
void ssqd_peer_lookup_stale(struct ssqd_peer *p);
/*
 * ssqd_pin_charge (pin.c) - may client @c have ssqd register @len bytes at
 * @addr of kind @kind (@fd) against its RLIMIT_MEMLOCK? 0 and the bytes to
 * charge to the registration in *@charge, or -ENOMEM (over the limit) /
 * -EPERM (the limit cannot be read), saying why in @why.
 */
int ssqd_pin_charge(const struct ssqd *d, const struct ssqd_client *c, int kind, int fd,
                    uint64_t addr, uint64_t len, uint64_t *charge, char *why,
                    size_t whylen);
/*
 * ssqd_queue_layout_restore (queue_unit.c) - rewrite queue @i's layout in
 * the header, all but its state, from ssqd's own records (once published).
 */
void ssqd_queue_layout_restore(struct ssqd *d, unsigned i);
/*
 * ssqd_queue_list (queue_unit.c) - list queue @i as @state: ssqd's own
 * word (q->listed), then the header's copy, released after what was
 * written before it.
 */
void ssqd_queue_list(struct ssqd *d, unsigned i, uint32_t state);
int ssqd_queue_make(struct ssqd *d, unsigned i, char *why, size_t whylen);

/*
 * ssqd_queue_send_event - CQEs landed in @arg's (a struct ssqd_queue)
 * send CQ: wake the producers asleep in ssq_wait on it, if any beat lately.
 * The device's thread calls it (cq_event), or ssqd's send-arm event thread.
 */
void ssqd_queue_send_event(void *arg, unsigned cqes);
int ssqd_queue_local_addr(struct ssqd *d, const struct ssqd_bqueue *b, unsigned i,
                          uint32_t psn, struct proto_peer_addr *a, char *why,
                          size_t whylen);
int ssqd_queue_connect(struct ssqd *d, struct ssqd_bqueue *b, uint32_t my_psn,
                       const struct proto_peer_addr *peer, char *why, size_t whylen);
int ssqd_queue_connect_all(struct ssqd *d, const struct proto_peer_addr *remote,
                           char *why, size_t whylen);
void ssqd_queue_publish(struct ssqd *d, unsigned i, const struct proto_peer_addr *peer);
int ssqd_queue_recover(struct ssqd *d, unsigned qi, uint64_t end_ns, char *why,
                       size_t whylen);
/*
 * ssqd_queue_recover in steps, for callers that must not block
 * (client_recover.c): ssqd_queue_in_error - 0, or -EINVAL with @why;
 * ssqd_queue_drained - one look at whether everything reserved before the
 * error has completed and been routed (1) or not yet (0), moving it along;
 * ssqd_queue_restart - RESET, reconnect, counters restarted, READY;
 * ssqd_queue_busy_why - the sentence for a drain that ran out of time.
 */
int ssqd_queue_in_error(struct ssqd *d, unsigned qi, char *why, size_t whylen);
/*
 * ssqd_queue_fence - queue @i to ERROR: its listing, its shared state
 * (reservations get -EIO) and its QP (what is in flight is flushed).
 */
void ssqd_queue_fence(struct ssqd *d, unsigned i);
/* One try (SSQD_HEAL_TRY_MS) at healing queue @qi after deaths; heal_pending if more is
 * needed. */
void ssqd_queue_heal(struct ssqd *d, unsigned qi);
int ssqd_queue_drained(struct ssqd *d, unsigned qi);
int ssqd_queue_restart(struct ssqd *d, unsigned qi, char *why, size_t whylen);
/*
 * Its first half: the QP (and a loopback peer's) through RESET back to RTS,
 * in two steps: ssqd_queue_reset_qp (to RESET; nothing posted into it), and
 * ssqd_queue_reconnect (to RTS at d->psn[qi] against q->remote, whose psn
 * is the peer's send PSN; the receive pool posted again).
 */
int ssqd_queue_restart_qp(struct ssqd *d, unsigned qi, char *why, size_t whylen);
int ssqd_queue_reset_qp(struct ssqd *d, unsigned qi, char *why, size_t whylen);
int ssqd_queue_reconnect(struct ssqd *d, unsigned qi, char *why, size_t whylen);
/*
 * The last step of a restart or a rebuild, once the control block works
 * again: a queue a fence listed ERROR is listed READY.
 */
void ssqd_queue_relist(struct ssqd *d, unsigned qi);
void ssqd_queue_busy_why(struct ssqd *d, unsigned qi, unsigned ms, char *why,
                         size_t whylen);

/*
 * A client's RECOVER of a loopback queue, answered from the serve loop so
 * that no other client waits meanwhile (client_recover.c):
 * ssqd_recover_start - begin (or join) the recovery of queue @qi for client
 *   @c's request @seq; 0 (the answer comes later) or a negative errno with
 *   @why to answer now;
 * ssqd_recover_step - once per serve loop: move every recovery along and
 *   answer its clients when it is done or out of time. Returns how many
 *   recoveries are still under way (the loop then polls more often).
 */
int ssqd_recover_start(struct ssqd *d, struct ssqd_client *c, unsigned qi, uint32_t seq,
                       char *why, size_t whylen);
int ssqd_recover_step(struct ssqd *d);
/*
 * ssqd_recover_for_open - a client opens loopback queue @qi, which is in
 * error with no client holding it to RECOVER (the last one left after an
 * error it caused, say): recovered now, as a RECOVER would. 0 (READY
 * again), -EINPROGRESS (what was in flight still drains: the open asks
 * again), -EAGAIN (clients hold it: theirs to recover) or -EIO, with @why.
 */
int ssqd_recover_for_open(struct ssqd *d, unsigned qi, char *why, size_t whylen);

/*
 * ssqd_async_poll - take every pending async event of the device (no
 * waiting) and fence the queues whose QP, CQ, port or device failed.
 * Returns how many events it took. async_events.c.
 */
int ssqd_async_poll(struct ssqd *d);

/*
 * An idle ssqd (idle.c): no client has a queue attached, nothing is in
 * flight. ssqd_idle_poll_ms - how long the serve loop may wait in poll
 * from @now: 10 ms while busy; while idle up to SSQD_IDLE_MS, less for a
 * deadline (hello, reconnect). It tells the device and the receive poller
 * whether they may sleep that long too. ssqd_idle_leave - busy from now
 * on, before anything that lets a client ring a doorbell (an attach's
 * answer): the device and the poller are woken and poll as usual.
 */
#define SSQD_IDLE_MS 250
int ssqd_idle_poll_ms(struct ssqd *d, uint64_t now);
void ssqd_idle_leave(struct ssqd *d);

/*
 * ssqd_queue_guard - at most every SSQD_GUARD_MS (@now_ns, CLOCK_MONOTONIC),
 * look at queue @qi's control block (ssq_ctl_check, against ssqd's own
 * copies of its bounds and epoch); one a client made inconsistent is
 * logged and the queue reset: the QP through RESET to RTS, the block
 * rebuilt (ssq_ctl_rebuild) keeping the connected clients' records
 * (queue_guard.c).
 */
#define SSQD_GUARD_MS 10
void ssqd_queue_guard(struct ssqd *d, unsigned qi, uint64_t now_ns);

/*
 * ssqd_queue_rebuild - queue @qi's QP through RESET back to RTS and its
 * control block rebuilt (ssq_ctl_quiesce, ssq_ctl_rebuild), the attached
 * clients' records kept; what was in flight completes to its owners as
 * flushed. RECOVER's for a QP whose SQ froze. 0 or -errno with @why
 * (queue_guard.c).
 * ssqd_queue_rebuild_paced - the same for the guard and the stall watch,
 * which a client can make ask again and again (a scribble, a forged hold):
 * restarts of one queue less than a second apart wait 10 ms, then twice
 * as long each time up to a second, so that ssqd's loop - which a restart
 * holds for up to twice SSQD_LEASE_MS - goes on serving other queues.
 * -EAGAIN (nothing done) when it is too soon.
 */
int ssqd_queue_rebuild(struct ssqd *d, unsigned qi, char *why, size_t whylen);

/*
 * ssqd_live_records - the producer records of the clients attached to
 * queue @qi, a bit each: the ones a rebuild keeps, and the only ones whose
 * holds count. ssqd_queue_start_over - once queue @qi's QP is through
 * RESET: the control block rebuilt (what was in flight flushed to its
 * owners), nothing left to heal or watch, and the queue listed READY
 * again; with @held it stays RESTARTING instead, for ssq_ctl_release
 * (queue_start_over.c). SSQD_LEASE_MS: how long the rebuild waits for a
 * live client routing or ringing now.
 */
#define SSQD_LEASE_MS 20
void ssqd_queue_start_over(struct ssqd *d, unsigned qi, int held);
uint64_t ssqd_live_records(const struct ssqd *d, unsigned qi);
int ssqd_queue_rebuild_paced(struct ssqd *d, unsigned qi, uint64_t now_ns, char *why,
                             size_t whylen);

/*
 * The peers and their links (daemon_peer.c).
 * ssqd_peers_init - d->peers from the options: none (loopback), the one
 *   peer of --listen or --connect, or --peer/--peers' cluster, each peer
 *   its opt.peer_queues queues from q0 on; in a cluster the daemon whose
 *   name sorts first dials, the other accepts.
 * ssqd_queue_peer - queue @qi's peer, or NULL for a loopback queue.
 * ssqd_peer_events - what poll() says of @p's fd (the peer closed: lost;
 *   a dial finished: exchange and (re-)bring its queues up; restart
 *   messages: peer_restart.c).
 * ssqd_peer_tick - once per serve loop: drop a peer whose restart went
 *   unanswered, start a dial that is due, drop one unanswered for 2 s.
 * ssqd_peer_lost - forget @p's link: its queues listed as not ready
 *   (requests in flight end as the transport decides, retry-exceeded); a
 *   peer ssqd dials is dialed again with backoff.
 * ssqd_peer_rebring - @p knocked on the socket @s with its addresses
 *   @remote (peer_accept.c): fresh PSNs, ours sent, then each of its
 *   queues connected (the first time) or fenced, drained and taken RESET
 *   -> INIT -> RTR -> RTS against the new addresses (ssqd_queue_recover),
 *   and published READY. On any failure its queues are left in ERROR and
 *   @s is not kept. Returns 0 (p->fd = @s) or a negative errno with @why.
 * ssqd_peer_fence_all - @p's queues to ERROR (listed, shared state, QP).
 * ssqd_peer_down - nonzero when queue @qi's peer is not linked now; @why
 *   says so.
 */
void ssqd_peers_init(struct ssqd *d);
void ssqd_peer_events(struct ssqd *d, struct ssqd_peer *p, short revents);
void ssqd_peer_tick(struct ssqd *d);
void ssqd_peer_lost(struct ssqd *d, struct ssqd_peer *p, const char *reason);
int ssqd_peer_rebring(struct ssqd *d, struct ssqd_peer *p, int s,
                      const struct proto_peer_addr *remote, char *why, size_t whylen);
void ssqd_peer_fence_all(struct ssqd *d, struct ssqd_peer *p);
/* @p's connection closed, whatever it was (a dial, a want, the link). */
void ssqd_peer_close_link(struct ssqd_peer *p);
/* "peer NAME", or "the peer ssqd" in a one-peer mode, for the logs. */
const char *ssqd_peer_str(const struct ssqd_peer *p, char *buf, size_t len);
/* In a cluster: @remote (opt.peer_queues addresses) all came from @p. */
int ssqd_peer_check_sender(const struct ssqd *d, const struct ssqd_peer *p,
                           const struct proto_peer_addr *remote, char *why,
                           size_t whylen);
/*
 * ssqd_peer_make_room - room for @p under --max-active-peers (the least
 * recently used idle link closed; with @ask, asked to close first:
 * -EINPROGRESS until it has), or -EBUSY with @why.
 * ssqd_peer_want_from - a want from daemon @name (at @from): dial it. 0,
 *   or -EBUSY with @no, a reason short enough for a refusal, when
 *   --max-active-peers leaves no room.
 */
int ssqd_peer_make_room(struct ssqd *d, struct ssqd_peer *p, int ask, char *why,
                        size_t whylen);
int ssqd_peer_want_from(struct ssqd *d, const char *name, const char *from, char *no,
                        size_t nolen);

/*
 * Links coming in, without waiting on any (peer_accept.c):
 * ssqd_accept_peer - accept on the peer port: a knock, read as it comes;
 * ssqd_knock_events - what poll() says of knock @k: read, and once its
 *   first message is whole, act on it (a want, or the exchange: tell which
 *   peer and bring its queues up, or refuse it saying why);
 * ssqd_knocks_tick - knocks past their deadline closed.
 */
void ssqd_knocks_init(struct ssqd *d);
void ssqd_accept_peer(struct ssqd *d);
void ssqd_knock_events(struct ssqd *d, struct ssqd_knock *k, short revents);
void ssqd_knocks_tick(struct ssqd *d, uint64_t now);
/*
 * A client's RECOVER of a queue to another host (peer_relink.c), answered
 * from the serve loop (client_recover.c):
 * ssqd_peer_relink_start - queue @qi in error: its link closed and made
 *   again (dialed at once, or awaited), so that both hosts bring the
 *   peer's queues up with a fresh exchange. 0, or -EINVAL (not in error)
 *   with @why;
 * ssqd_peer_relinking - the deadline of a RECOVER under way on any queue
 *   of queue @qi's peer (another RECOVER of one of them joins it), or 0;
 * ssqd_peer_relink_done - one look: 0 when the link is back and the queue
 *   out of error, 1 while @deadline_ns is ahead, else -ENOTCONN with @why.
 * SSQD_RELINK_MS: how long a RECOVER waits for the peer.
 */
#define SSQD_RELINK_MS 3000
int ssqd_peer_relink_start(struct ssqd *d, unsigned qi, char *why, size_t whylen);
uint64_t ssqd_peer_relinking(const struct ssqd *d, unsigned qi);
int ssqd_peer_relink_done(struct ssqd *d, unsigned qi, uint64_t deadline_ns, char *why,
                          size_t whylen);
int ssqd_peer_down(struct ssqd *d, unsigned qi, char *why, size_t whylen);
/*
 * On demand (daemon_peer.c):
 * ssqd_peer_want - a client opens queue @qi, which is not ready: the
 *   link is wanted from now on (dialed, or the peer asked to dial), or,
 *   linked with the queue fenced and nobody holding it, started over.
 *   -EINPROGRESS with @why saying how far it got; -EBUSY when
 *   --max-active-peers are all in use; -EIO for a queue that cannot come
 *   back; 0 outside a cluster.
 * ssqd_peer_in_use - whether a client has one of @p's queues open.
 * ssqd_peer_close_idle - close @p's link though it is healthy (idle, or
 *   room for another under --max-active-peers): its queues fenced, not
 *   wanted until a client opens one again.
 */
int ssqd_peer_want(struct ssqd *d, unsigned qi, char *why, size_t whylen);
/* Peer @i as a client's PEER request shows it (0, or -ENOENT with @why). */
struct proto_msg_peer_reply;
int ssqd_peer_info(struct ssqd *d, unsigned i, struct proto_msg_peer_reply *r, char *why,
                   size_t whylen);
int ssqd_peer_in_use(const struct ssqd *d, const struct ssqd_peer *p);
void ssqd_peer_close_idle(struct ssqd *d, struct ssqd_peer *p, const char *reason);

/*
 * A queue's restart with the peer host (peer_restart.c; the message is
 * peer_msg.h's):
 * ssqd_peer_linked - nonzero when queue @qi is connected to another host's
 *   ssqd over a live link: a reset of its QP then needs the peer's QP
 *   restarted too;
 * ssqd_link_restart - after ssq_ctl_quiesce: the QP to RESET, the control
 *   block rebuilt but held RESTARTING (what was in flight flushed to its
 *   owners), and the peer asked to restart its QP at two fresh PSNs; the
 *   queue comes back READY when the peer answers (ssqd_link_input). 0, or
 *   -errno with @why (the queue then in error);
 * ssqd_link_input - read what @p's link has (restart asks and answers) and
 *   act on it; 0, 1 when the peer asks to close the link as idle (the
 *   caller closes it or answers BUSY), or -errno with @why when the peer
 *   broke the protocol or the link closed (the caller drops the peer);
 * ssqd_link_restart_overdue - 1 (and @why) when an ask to @p has gone
 *   unanswered past its deadline: the peer is not working, drop it;
 * ssqd_link_restart_abandon - every ask to @p under way given up: its
 *   queue fenced (in error, for the link's re-bring to recover).
 */
int ssqd_peer_linked(struct ssqd *d, unsigned qi);
int ssqd_link_restart(struct ssqd *d, unsigned qi, char *why, size_t whylen);
int ssqd_link_input(struct ssqd *d, struct ssqd_peer *p, char *why, size_t whylen);
int ssqd_link_restart_overdue(const struct ssqd *d, const struct ssqd_peer *p,
                              uint64_t now_ns, char *why, size_t whylen);
void ssqd_link_restart_abandon(struct ssqd *d, struct ssqd_peer *p);
/* Tell @p whether a client here has one of its queues open (@busy), if changed. */
int ssqd_link_tell_busy(struct ssqd *d, struct ssqd_peer *p, int busy, char *why,
                        size_t whylen);
/* Ask @p to close the link, idle at both ends as far as this side knows. */
int ssqd_link_ask_close(struct ssqd *d, struct ssqd_peer *p, char *why, size_t whylen);
/*
 * 1 while queue @qi's link is being closed for --idle-ms (the peer asked to
 * agree): an open waits and links it again (ssqd_peer_want).
 */
int ssqd_peer_closing(struct ssqd *d, unsigned qi);

/*
 * ssqd_handle - answer one decoded request of client @c (exposed for the
 * protocol tests and the fuzzer), and @fd, the descriptor that came with
 * it or -1, which it takes: kept by a MEM_REG, closed otherwise. Returns 0,
 * or a negative errno when the reply could not be sent.
 */
struct proto_msg;
int ssqd_handle(struct ssqd *d, struct ssqd_client *c, const struct proto_msg *m, int fd);

static inline struct ssqd_peer *ssqd_queue_peer(struct ssqd *d, unsigned qi)
{
	return d->queues[qi].loopback || !d->npeers ? NULL
	                                            : &d->peers[d->queues[qi].peer_ix];
}

/* CLOCK_MONOTONIC in ns: the daemon's deadlines (reconnect backoff, poller naps). */
static inline uint64_t ssqd_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

#endif /* SSQ_CTRL_DAEMON_H */
