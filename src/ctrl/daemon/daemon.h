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
#include <ssq/queue.h>
#include "ctrl/backend/backend.h"
#include "ctrl/daemon/data_alloc.h"
#include "ctrl/daemon/peer_link.h"
#include "ctrl/daemon/recv_pool.h"
#include "shm/create/arena.h"
#include "shm/layout.h"

#define SSQD_MAX_CLIENTS 256
#define SSQD_DATA_IOVA   0x0000550000000000ull /* where the data arena sits, for all */

struct ssqd_options {
	const char *device;      /* NULL: first mlx5 device, else "emu" */
	const char *socket_path; /* unix socket clients connect to */
	/*
	 * A listening AF_UNIX SOCK_SEQPACKET socket ssqd was handed (systemd
	 * socket activation): served instead of binding socket_path, and
	 * left in place at exit, as its owner made it. -1: bind socket_path.
	 */
	int listen_fd;
	unsigned nqueues;      /* 1 .. SSQ_MAX_QUEUES */
	uint32_t sq_wqebbs;    /* per queue, power of two */
	uint32_t cqes;         /* per queue, power of two */
	uint64_t data_mib;     /* data arena */
	uint32_t signal_every; /* forced CQE interval, WQEBBs */
	uint32_t recv_depth;   /* receive WQEs kept posted per queue; 0: no pool */
	uint32_t recv_size;    /* bytes per receive buffer */
	/*
	 * The healing bound: a death is seen at once (the client's socket
	 * closes); each heal then waits at most this long for live producers
	 * caught mid-reservation and for ring room, and is retried every
	 * PROGRESS_MS until done.
	 */
	unsigned heal_ms;
	enum shm_hugepages hugepages;
	uint16_t listen_port;   /* 0: not listening for a peer */
	const char *connect_to; /* HOST:PORT of a listening peer, or NULL */
	uint8_t port;           /* device port */
	int gid_index;          /* -1: no GRH */
	long allow_uid;         /* -1: only ssqd's own uid (and root) */
	long allow_gid;         /* -1: none */
};

/* ssqd's own producer record in every queue: heals, routes when idle. */
#define SSQD_PRODUCER_ID (SSQ_MAX_PRODUCERS - 1)

struct ssqd_queue {
	struct ssq_ctl *ctl;
	struct ssq_producer prod; /* ssqd's own, id SSQD_PRODUCER_ID */
	int heal_pending;         /* a heal timed out: run it again */
	struct ssqd_bqueue local;
	struct ssqd_bqueue peer; /* loopback only: the other end, inside ssqd */
	struct shm_uar_map uar;
	struct proto_peer_addr remote; /* what local is connected to */
	uint32_t peer_psn;             /* loopback: the other end's first PSN */
	int loopback;
	struct ssqd_recv_pool rx; /* receives for this queue (recv_pool.h) */
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
	pid_t pid;
	int said_hello;
	uid_t uid;
	gid_t gid;
	int refused;       /* not allowed: answered with EACCES, then dropped */
	uint32_t attached; /* bit per queue */
	uint32_t producer[SSQ_MAX_QUEUES]; /* its record in each attached queue */
};

struct ssqd {
	struct ssqd_options opt;
	struct shm_arena arena;
	const struct ssqd_backend_ops *ops;
	struct ssqd_backend *backend;
	struct shm_arena_header *hdr;
	struct ssqd_queue queues[SSQ_MAX_QUEUES];
	struct ssqd_data_alloc data;
	uint32_t psn[SSQ_MAX_QUEUES];                       /* our QPs' first PSNs */
	struct proto_peer_addr local_addrs[SSQ_MAX_QUEUES]; /* what we tell the peer */
	int peer_listen_fd; /* --listen: open for as long as ssqd runs */
	/*
	 * The TCP connection of the exchange, kept open: its close (or error)
	 * is how ssqd learns the peer is gone, idle queues included. -1: no
	 * peer. With peer_connecting, a --connect attempt under way.
	 */
	int peer_fd;
	int peer_connecting;
	int peer_ever; /* queues were up once: a new peer re-brings them */
	/* --connect, CLOCK_MONOTONIC: the next attempt; connecting: its deadline */
	uint64_t peer_retry_ns;
	unsigned peer_backoff_ms; /* 100, doubling to 2000 */
	unsigned peer_attempts;   /* since the peer was lost */
	char peer_last_why[200];  /* last attempt's outcome: logged when it changes */
	int listen_fd;
	struct ssqd_client clients[SSQD_MAX_CLIENTS];
	struct ssqd_grave graves[SSQD_MAX_GRAVES];
	uint32_t next_client_id;
	struct ssqd_recv_poller rxp; /* the receive pools' thread */
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

/* --listen: a peer ssqd is knocking; exchange and bring the queues up. */
void ssqd_accept_peer(struct ssqd *d);

/* The state a queue's layout entry says clients can use: fields, then READY. */
struct proto_peer_addr;
void ssqd_publish_queue(struct ssqd *d, unsigned i, const struct proto_peer_addr *peer);

/*
 * The peer link (daemon_peer.c). ssqd_peer_events: what poll() says of
 * d->peer_fd (the peer closed: lost; a --connect attempt finished: exchange
 * and re-bring the queues up). ssqd_peer_tick: once per serve loop, start
 * a --connect attempt when one is due, or drop one unanswered for 2 s.
 * ssqd_peer_lost: forget the peer
 * (queues listed as not ready; requests in flight end as the transport
 * decides, retry-exceeded); --connect starts retrying with backoff.
 */
void ssqd_peer_events(struct ssqd *d, short revents);
void ssqd_peer_tick(struct ssqd *d);
void ssqd_peer_lost(struct ssqd *d, const char *reason);

/*
 * ssqd_peer_rebring - a new peer on the connected socket @s: fresh PSNs, the
 * exchange, then every queue fenced (ERROR, QP to ERR), drained and taken
 * RESET -> INIT -> RTR -> RTS against the new peer (ssqd_recover_queue),
 * and published READY. On any failure every queue is left in ERROR and @s
 * is not kept. Returns 0 (d->peer_fd = @s) or a negative errno with @why.
 */
int ssqd_peer_rebring(struct ssqd *d, int s, char *why, size_t whylen);

/*
 * --listen: accept the knocking peer (its address in @from). Returns the
 * socket, or -1 when it was refused because the present peer is healthy.
 */
int ssqd_peer_accept(struct ssqd *d, char *from, size_t fromlen);

/* Every queue to ERROR (listed, shared state, QP): nothing half-up. */
void ssqd_peer_fence_all(struct ssqd *d);

/*
 * RECOVER of queue @qi between two hosts with the peer connected: close the
 * link and reopen it (see daemon_peer.c), so that both hosts bring their
 * queues up again with a fresh exchange. Returns 0, -EINVAL (the queue is
 * not in error), or a negative errno with @why.
 */
int ssqd_peer_relink(struct ssqd *d, unsigned qi, char *why, size_t whylen);

/* Nonzero when ssqd has a peer mode and no peer now; @why says so. */
int ssqd_peer_down(const struct ssqd *d, char *why, size_t whylen);

/*
 * ssqd_recover_queue - bring queue @qi from ERR back to RTS once every
 * request in flight has been flushed and routed (see daemon.c). Returns 0
 * or a negative errno with the reason in @why.
 */
int ssqd_recover_queue(struct ssqd *d, unsigned qi, char *why, size_t whylen);

/*
 * ssqd_handle - answer one decoded request of client @c (exposed for the
 * protocol tests and the fuzzer). Returns 0, or a negative errno when the
 * reply could not be sent.
 */
struct proto_msg;
int ssqd_handle(struct ssqd *d, struct ssqd_client *c, const struct proto_msg *m);

/* CLOCK_MONOTONIC in ns: the daemon's deadlines (reconnect backoff, poller naps). */
static inline uint64_t ssqd_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

#endif /* SSQ_CTRL_DAEMON_H */
