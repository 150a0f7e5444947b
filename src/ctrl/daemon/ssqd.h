/* SPDX-License-Identifier: MIT */
/*
 * ssqd's state, types only: struct ssqd and every type it holds by value,
 * the limits and timings several floors share, ssqd_now_ns. No function of
 * the daemon is declared here (DPDK's rte_ring_core.h, journald's forward
 * header): each folder's header declares its own, and a file includes this
 * one plus the headers of folders below its own, never above:
 *
 *   util/ < ssqd.h < queues/ < peers/ < watch/ < clients/
 *         < the top (setup, serve, idle, status, options) < main.c
 *
 * tests/test_layout_cycles.sh checks that order; docs/architecture.md maps
 * the folders. One control thread runs all of it (the emulated device has
 * its own thread, inside the backend).
 */
#ifndef SSQ_CTRL_DAEMON_SSQD_H
#define SSQ_CTRL_DAEMON_SSQD_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include <netinet/in.h>
#include <ssq/cq.h>
#include <ssq/queue.h>
#include <ssq/rq.h>
#include "ctrl/backend/backend.h"
#include "ctrl/daemon/util/util.h"
#include "ctrl/proto/msg.h"
#include "ctrl/proto/peer_msg.h"
#include "dv/ctl.h"
#include "shm/create/arena.h"
#include "shm/layout.h"

#define SSQD_MAX_CLIENTS 256
/* Opens of one queue on one connection: its producer records (63 a queue). */
#define SSQD_OPENS_PER_CLIENT 16u

/*
 * Buffers carved from the data arena for clients: first fit over the
 * arena's range, each buffer remembering the client that owns it so a
 * client's death returns its buffers. ssqd's control thread only.
 */
#define SSQ_DATA_MAX_BUFS 4096

struct ssqd_data_buf {
	uint64_t off, len;
	uint32_t owner;
	uint32_t key; /* its own MR's key; 0 under ssqd --arena-rkey */
	void *mr;     /* that MR (the backend's), or NULL */
	/* Owner SSQD_OWNER_HELD: the client still charged for it (clients/held.c), */
	uint32_t held_by;
	uint32_t held_uid; /* and its uid, charged once that client is gone */
};

struct ssqd_data_alloc {
	uint64_t start, end; /* arena offsets of the data arena */
	uint32_t n;
	struct ssqd_data_buf bufs[SSQ_DATA_MAX_BUFS]; /* sorted by off */
};

/*
 * A client's replies, sent without ever blocking ssqd: each goes out at
 * once if the client's socket takes it, else waits in the client's own
 * queue of at most SSQD_OUT_MAX replies, sent as the socket drains (the
 * serve loop polls for POLLOUT while any wait). A client that lets more pile
 * up is not reading its replies: it is dropped, and no other client waits
 * on it meanwhile. A well-behaved client has one request outstanding; a
 * few more allow a slow reader (a process just scheduled out) without
 * dropping it.
 */
#define SSQD_OUT_MAX 16

struct ssqd_out_msg {
	uint16_t type;
	uint32_t seq;
	uint32_t len;
	int nfds;
	int fds[1]; /* ssqd's own fds (arena, UAR): they outlive the queue */
	uint8_t payload[SSQ_MSG_MAX];
};

struct ssqd_out {
	struct ssqd_out_msg *q; /* SSQD_OUT_MAX, allocated on first need */
	unsigned head, n;
};

/*
 * Clients' own memory registered with the device (ssq_mem_reg,
 * ssq_mem_reg_fd): the table, who owns what, and when a registration may
 * go - never while a WQE that may use its keys is still in flight.
 */
#define SSQD_MAX_MRS        1024u /* registrations of all clients */
#define SSQD_MRS_PER_CLIENT 64u
/*
 * Buffers with an MR of their own (every ssq_buf_alloc buffer, unless ssqd
 * runs --arena-rkey): one uid may hold this many, half of what the data
 * arena holds (SSQ_DATA_MAX_BUFS) and twice a client's default
 * --max-client-bufs, so a program of one client meets --max-client-bufs
 * first. All the arena's buffers and SSQD_MAX_MRS registrations together
 * stay under the emulated device's MR table (SSQ_EMU_MAX_MR, emu.h,
 * checked in serve.c), so buffers cannot starve ssq_mem_reg.
 */
#define SSQD_UID_KEYED_BUFS 2048u
/*
 * Descriptors kept for everything else: each client's socket and pidfd,
 * the device, the arena, the peer link. A registration holds one (its
 * memory file or its file), so ssqd takes no more than its descriptor
 * limit leaves above this, and one uid a quarter of that.
 */
#define SSQD_FD_RESERVE (2u * SSQD_MAX_CLIENTS + 64u)

/*
 * The owner of a buffer or registration its client freed while a grant's
 * bind over it may still run: nobody's, kept until the bind cannot run
 * (clients/held.c). No client gets this id (serve.c).
 */
#define SSQD_OWNER_HELD UINT32_MAX

struct ssqd_mr {
	uint32_t owner; /* the client's id; 0: a free slot */
	uint32_t id;    /* (generation << 16) | (slot + 1): a stale id names nothing */
	uint32_t lkey, rkey;
	uint64_t len;
	void *impl;       /* the backend's */
	uint64_t handle;  /* SSQ_MEM_VERBS: the client's MR handle; else ~0 */
	uint64_t iova;    /* of its first byte */
	uint32_t access;  /* IBV_ACCESS_* the client asked for: what GRANT may give */
	uint32_t uid;     /* the owner's */
	uint64_t pinned;  /* bytes charged to the owner's RLIMIT_MEMLOCK (pin.c) */
	uint32_t held_by; /* owner SSQD_OWNER_HELD: the client still charged (held.c) */
	int32_t pid;      /* the owner's: memlock stays charged to it while held */
};

/*
 * Remote access granted by its owner (clients/grant.c): a type-2 memory
 * window over a range of one client's buffer or registration, bound to one
 * queue's QP, so that only requests from that queue's peer reach it. Goes
 * with REVOKE, with the memory (free, dereg, the owner's death), and with
 * ssqd. A client holds at most SSQD_GRANTS_PER_CLIENT; when another uid
 * may use ssqd, a uid (all its clients) at most SSQD_GRANTS_PER_UID, so
 * that one uid cannot take every slot and lock the others out of grants
 * (issue 28; the producer records' bound, item 6, is the same rule).
 */
#define SSQD_MAX_GRANTS        1024u
#define SSQD_GRANTS_PER_CLIENT 64u
#define SSQD_GRANTS_PER_UID    (SSQD_MAX_GRANTS / 2)

struct ssqd_grant {
	uint32_t owner; /* the granting client's id; 0: a free slot */
	uint32_t uid;   /* the owner's (SSQD_GRANTS_PER_UID) */
	uint32_t rkey;  /* the window's key */
	uint32_t kind;  /* SSQ_GRANT_BUF or SSQ_GRANT_MR */
	unsigned queue; /* whose QP it is bound to */
	uint64_t mem;   /* the buffer's arena offset, or the registration's id */
	void *mw;       /* the backend's window */
	/*
	 * A bind still on the ring (the backend's grant_post): it runs once
	 * every reservation ahead of it is published, so the GRANT is
	 * answered from the loop (clients/grant.c, ssqd_grants_tick) when
	 * its CQE came, and the window is freed only once it cannot run.
	 */
	uint8_t binding;   /* its CQE not seen yet, `completed` short of bind_end */
	uint8_t answer;    /* the owner still waits for the GRANT's answer */
	uint8_t gone;      /* revoked meanwhile: freed once no longer binding */
	int bind_rc;       /* once not binding: 0 bound, -EIO refused, -ECANCELED reset */
	uint32_t seq;      /* the GRANT's */
	uint32_t syndrome; /* a refused bind's CQE's */
	uint64_t wr_id;    /* the bind's completion's */
	uint64_t bind_end; /* the ring position past the bind */
	uint64_t deadline_ns; /* the GRANT answered by then, bound or not */
	uint64_t iova, len;   /* the answer's */
};

/* The receive pool (queues/recv_pool.c; queues.h says how it works). */
struct ssqd_recv_pool {
	pthread_mutex_t lock; /* poller vs control thread */
	int inited;           /* lock initialised, log and buffers carved */
	int armed;            /* the poller may poll (atomic; changed under lock) */
	int events; /* the device calls cq_event's handler as CQEs land (no spinning) */
	int missed; /* atomic: that handler found the lock held; the poller looks */
	struct ssq_rq rq; /* the receiving QP's RQ */
	struct ssq_cq cq; /* its receive CQ */
	struct shm_recv_log *log;
	uint64_t buf_iova; /* buffer 0 */
	uint32_t lkey;     /* the data arena's */
	uint32_t depth, slots, size;
	uint64_t arrived, posted; /* the poller's copies of the log's counters */
	uint64_t flushed;         /* flush CQEs consumed (not logged) */
	uint64_t errors;          /* error records logged */
	struct ssqd_beat beat;    /* log->beat, as the poller sees it */
	struct ssqd_beat ev_beat; /* the same, as the device thread's handler sees it */
};

struct ssqd_recv_poller {
	pthread_t thread;
	int running;
	int stop;         /* atomic */
	uint32_t idle_ms; /* atomic: ssqd_recv_idle's */
	uint32_t kick;    /* atomic, a futex: bumped when idle_ms drops to 0 */
};

/*
 * Waking ssq_wait's sleepers where the device announces CQEs only on an
 * armed CQ (a ConnectX; the emulated device with SSQ_EMU_CQ_EVENTS=0):
 * two threads of ssqd, one that arms a queue's send CQ when a sleeper asks
 * (the arena header's tx_arm_seq), one that takes the events and wakes the
 * queue's sleepers. Where the device's own events reach ssqd (the backend's
 * cq_event) neither runs. Per queue, the arm thread's and event thread's
 * (under ssqd_send_arm.lock):
 */
struct ssqd_send_arm_q {
	int on;            /* this queue's sleepers ask for arms (ctl->tx_arm) */
	int armed;         /* its send CQ is armed, the event not taken yet */
	uint32_t arm_ci;   /* the routers' consumer index when it was armed */
	int fired;         /* an event came since the start, */
	uint32_t fired_ci; /* for an arm made at this consumer index, */
	uint32_t arm_at;   /* the index the CQ was armed at */
	int fired_empty;   /* and no CQE was there at the event */
	uint64_t arms;     /* arms made, events taken (ctrl_wait_arm reads */
	uint64_t events;   /* them) */
};

struct ssqd_send_arm {
	pthread_t arm_thread, event_thread;
	int running;
	int stop;       /* atomic */
	int stop_efd;   /* wakes the event thread out of its poll at stop */
	uint64_t blind; /* the event thread's wakes that brought no event */
	pthread_mutex_t lock;
};

/*
 * ssqd's watchdog over what a live client can hold up in a shared queue
 * (watch/stall.c): an open reservation, the doorbell lease, the CQ lease,
 * and the queue's progress as a whole. What it keeps between looks: one
 * hold as last looked at, what moves while it is healthy, and since when
 * it has not.
 */
struct ssqd_hold_seen {
	uint64_t mark[3];       /* the hold's state: generation, position, counts */
	uint64_t since_ns;      /* first look at this very hold; 0: not held */
	uint32_t client;        /* the holder's client id (never reused) */
	unsigned looks;         /* looks that found it unmoved, the first included */
	unsigned stopped_looks; /* looks in a row, to the last, that found the
	                         * holder stopped */
};

struct ssqd_stall {
	struct ssqd_hold_seen resv[SSQ_MAX_PRODUCERS]; /* by producer record */
	struct ssqd_hold_seen db, cq;                  /* the two leases */
	int suspect;        /* some hold was seen unmoved at the last look */
	uint64_t completed; /* the queue's `completed` at the last look */
	uint64_t stuck_ns;  /* since when work is outstanding and none completes */
	unsigned repairs;   /* repairs tried since it got stuck */
};

/*
 * A queue's recent posting rate (watch/rate.c): what the pick of "any"
 * weighs before producer counts, and --status shows. A hint read from a
 * counter clients can write, never trusted for anything else.
 */
struct ssqd_rate {
	uint64_t at_ns; /* the last sample (CLOCK_MONOTONIC); 0: none yet */
	uint64_t seen;  /* the queue's `reserve` at that sample */
	uint32_t per_s; /* WQEBBs reserved per second, smoothed over samples */
};

#define SSQD_DATA_IOVA 0x0000550000000000ull /* where the data arena sits, for all */

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

/* --tenants (tenants.c). */
#define SSQD_TENANTS_NONE 0
#define SSQD_TENANTS_UID  1
#define SSQD_TENANTS_GID  2
#define SSQD_MAX_TENANTS  16  /* tenants' ssqd besides this one */
#define SSQD_MAX_ARGS     256 /* a command line --tenants can pass on */
/* Exited tenants' ssqd not reapable yet, kept to reap (tenant_zombie.c). */
#define SSQD_TENANT_ZOMBIES 32
/*
 * --tenant-idle-ms's default: 0, a tenant's ssqd never exits idle. Idle
 * exit is opt-in: what it opens (a client that keeps its arena mapped
 * after hanging up keeps that arena's memory past the exit, one arena per
 * exit; docs/trust.md) is then the operator's choice, not every ssqd's.
 */
#define SSQD_TENANT_IDLE_MS 0

/* One tenant's ssqd (tenants.c): its uid or gid, its process, its socket. */
struct ssqd_tenant {
	uint32_t key;
	pid_t pid; /* 0: a free slot */
	int fd;    /* where its connections go (SCM_RIGHTS) */
	/*
	 * Connections sent over @fd so far; @closing: it asked to exit idle
	 * with as many received, and was let (nothing more goes to it);
	 * @hup: its end closed (not polled; reaped once it exited).
	 */
	uint32_t sent;
	int closing, hup;
	/*
	 * While connections wait for it to be gone (closing; its park, below),
	 * or once ssqd signalled it (tenants.c, tenant_signal: a signal goes
	 * by it, never by pid): @pidfd, polled instead of @fd, readable once
	 * it has exited (-1 if none could be had: then looked at every loop);
	 * @killed: ssqd killed it when the wait ran out (its end then no
	 * failure).
	 */
	int pidfd, killed;
	/*
	 * @dead: a connection could not be sent to it (its end closed), or it
	 * exited unasked: it was killed and counted failed then
	 * (ssqd_tenant_pass, tenant_zombie.c), and is closing, reaped later,
	 * never waited for.
	 */
	int dead;
	/*
	 * Its arena's memfd, sent with its ask to exit idle and kept while it
	 * is closing (-1: none): emptied if it had to be killed before its
	 * own teardown did that (tenants.c, tenant_reap).
	 */
	int arena_fd;
};

/*
 * Connections that wait for a closing slot (tenants.c): its uid's, come
 * while its ssqd exits idle with no other slot free. Kept here, not in
 * the slot: they outlive its process, and the slot stays theirs between
 * its reaping and their hand-over to the new ssqd started there.
 */
#define SSQD_TENANT_PARKED 4 /* per slot; more are refused, -EAGAIN */
struct ssqd_tenant_park {
	uint32_t key; /* their uid (gid): the slot's, or any where none was its */
	unsigned n;
	int fd[SSQD_TENANT_PARKED];
	uint64_t kill_ns; /* the slot's ssqd killed then if still there; 0: done */
};

/*
 * How a tenant's ssqd that failed is started again (tenant_backoff.c):
 * not before @until_ns, a wait that doubles with each failure after a
 * short run and starts over after a long one.
 */
struct ssqd_tenant_backoff {
	uint32_t key;
	uint32_t delay_ms;   /* the last wait; 0: none (it ran well, or never failed) */
	uint64_t started_ns; /* its last start */
	uint64_t until_ns;   /* no start before; 0: none to wait for */
	int status;          /* its last exit's wait status, or SSQD_TENANT_FOUND_DEAD */
	int found_dead;      /* its last failure: its socket found closed (tenants.c) */
	int used;
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
	int log_level;         /* --log-level: 0..7, syslog's (util/log.c) */
	int status_json;       /* --status --json */
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
	 * (watch/watch.h). 0: no deadline.
	 */
	unsigned stall_ms;
	/*
	 * --arena-rkey: the data arena one MR that peers may reach, its key
	 * every buffer's. 0 (the default): each arena buffer an MR of its own,
	 * the arena's for local access only.
	 */
	int arena_rkey;
	/*
	 * --no-grants: with peers, buffers and registrations keep remote keys
	 * of their own, as before grants (clients/grant.c).
	 */
	int no_grants;
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
	/*
	 * --peer-key FILE: the cluster's secret (peers/auth.c); every link
	 * authenticated with it. NULL: peers unauthenticated (one warning).
	 */
	const char *peer_key;
	uint8_t port;                  /* device port */
	int gid_index;                 /* SSQD_GID_AUTO, SSQD_GID_NONE or an index */
	uint8_t qp_timeout;            /* --qp-timeout: RTS local ACK timeout, 0..31 */
	struct ssqd_backend_conf conf; /* --emu-link-layer, --emu-mtu */
	long allow_uid;                /* -1: only ssqd's own uid (and root) */
	long allow_gid;                /* -1: none */
	/*
	 * --tenants (tenants.c): SSQD_TENANTS_NONE, every client in one
	 * trust domain (the default); _UID / _GID, the clients of each uid
	 * (or primary gid) other than ssqd's own served by an ssqd of their
	 * own, which ssqd starts and hands their connections to.
	 * tenant_fd >= 0: this ssqd is such a tenant's (--tenant-fd, set by
	 * its parent): its connections come as descriptors over that socket
	 * instead of from a listening one. argc/argv and arg_drop: the
	 * command line, and which words of it a tenant's ssqd does not get.
	 */
	int tenants;
	int tenant_fd;
	/*
	 * --tenant-idle-ms: a tenant's ssqd with nothing of anyone's for
	 * this long exits (0: never; tenants.c). The parent passes its own
	 * on, 0 to the tenant the command line names.
	 */
	unsigned tenant_idle_ms;
	int argc;
	char **argv;
	uint8_t arg_drop[SSQD_MAX_ARGS];
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
	 * copy is client memory, so ssqd acts on this one (queues/queue.c).
	 */
	uint32_t listed;
	/*
	 * Requests from this queue's peer refused at our QP for a key not
	 * granted to it (IBV_EVENT_QP_ACCESS_ERR): its guesses, counted.
	 */
	uint32_t refused;
	uint32_t peer_gen;      /* the layout's peer_gen: bring_queue counts links */
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
	struct ssqd_recv_pool rx; /* receives for this queue (queues/queues.h) */
	struct ssqd_recovery rec;
	struct ssqd_stall stall; /* watch/stall.c's looks */
	struct ssqd_rate rate;   /* watch/rate.c's samples */
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
	 * A restart of this queue asked of the peer host (peers/restart.c):
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
	/*
	 * Its memory registrations go with its buffers, not at its death: a
	 * combined request of its was still out (ssq_ctl_hand_out), whose WQE
	 * a combiner may write with its keys after it died.
	 */
	int mrs;
};

struct ssqd_client {
	int fd;      /* -1: a free slot (fd 0 is a client when stdin is closed) */
	uint32_t id; /* owner tag for data buffers, never reused */
	pid_t pid;   /* SO_PEERCRED's, never what the client claims */
	int pidfd;   /* the same process (util/util.h), or -1 */
	int stalled; /* killed for a stall: waiting for its death */
	int said_hello;
	/* With no pidfd: its process's start time (util/util.h), or 0. */
	uint64_t start;
	uid_t uid;
	gid_t gid;
	int refused;       /* not allowed: answered with EACCES, then dropped */
	uint64_t attached; /* bit per queue: recs[q] != 0 */
	/* Its producer records in each queue, a bit per id: one per open. */
	uint64_t recs[SSQ_MAX_QUEUES];
	/*
	 * Records it detached and nobody claimed since (on_detach): a bit per
	 * id. Their WQEs still in flight and their last combined request still
	 * out (ssq_ctl_hand_out) hold its frees and deregistrations, and at
	 * its death its registrations while that request is out.
	 */
	uint64_t hand_recs[SSQ_MAX_QUEUES];
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
	/*
	 * Dying with no pidfd: when /proc is next looked at for its exit, and
	 * the gap after that look (serve.c, kill_late).
	 */
	uint64_t look_ns, look_gap_ns;
	int unmapped; /* its process maps no queue any more: heal it */
};

/*
 * Another host's ssqd and the link to it: the exchange's TCP connection,
 * kept open (its close, or error, is how ssqd learns the peer is gone,
 * idle queues included), and that peer's share of the queues.
 */
struct ssqd_lookup; /* peers/lookup.c */

/*
 * A connection's authentication (peers/auth.c), with --peer-key: once both
 * sides proved they hold the key, every message carries a MAC under @key,
 * derived for this connection, over the direction and a sequence number
 * each direction counts from 0.
 */
#define SSQD_LINK_KEY_LEN 32 /* SHA-256's output */
struct ssqd_link_auth {
	int on;     /* MACs on this connection's messages */
	int dialer; /* this side dialed: what it sends is labelled so */
	uint8_t key[SSQD_LINK_KEY_LEN];
	uint64_t tx_seq, rx_seq;
};
/* Addresses a peer's host looked up to at start: the only sources it may come from. */
#define SSQD_PEER_SRC_MAX 8

/*
 * A peer link's state (peers/peer.c; ssqd_peer_link_to is the one place it
 * changes, logging each change when SSQD_TRACE_LINKS is set). fd is -1 in
 * IDLE and the connection in every other state.
 *   IDLE        no connection: dialed (or a want sent) when due;
 *   DIALING     our connect() under way, its deadline retry_ns;
 *   AUTHING     with --peer-key: our HELLO went out on the dial; the
 *               peer's CHALLENGE (or refusal) read into xbuf;
 *   WANT_SENT   a side that does not dial (on demand) sent its want on the
 *               dial: the peer's answer, its close (it dials back) or a
 *               refusal, read into xbuf;
 *   EXCHANGING  our addresses went out on the dial; the peer's read into
 *               xbuf as they come;
 *   LINKED      the peer's queues are up over this link;
 *   CLOSING     still linked, and we asked the peer to close the link
 *               (closing_ns, closing_why): it closes, or says BUSY, which
 *               takes the link back to LINKED.
 */
enum ssqd_link_state {
	SSQD_LINK_IDLE,
	SSQD_LINK_DIALING,
	SSQD_LINK_AUTHING,
	SSQD_LINK_WANT_SENT,
	SSQD_LINK_EXCHANGING,
	SSQD_LINK_LINKED,
	SSQD_LINK_CLOSING,
};
struct ssqd_peer {
	char name[SSQD_PEER_NAME_MAX]; /* "" for the one peer of --listen/--connect */
	const char *addr;              /* its HOST:PORT; NULL: unknown (--listen) */
	/* Its address as looked up for dials, off the loop (peers/lookup.c). */
	struct sockaddr_storage lk_sa;
	socklen_t lk_salen;
	int lk_have, lk_stale;
	struct ssqd_lookup *lk; /* a host name's lookup, kept for the next */
	int dials;              /* this ssqd dials for the exchange */
	/*
	 * Its link is wanted: a client opened one of its queues (or --eager,
	 * or a one-peer mode). A dialer dials a wanted peer; the other side
	 * sends it a want (SSQD_LINK_WANT_SENT). Whether a link is wanted is
	 * apart from the link's state: a wanted link may be in any of them,
	 * and an unwanted one stays up until it is closed.
	 */
	int wanted;
	uint64_t refused_ns; /* when our want was last refused (last_why: why) */
	uint64_t used_ns;    /* the last time one of its queues was open: LRU */
	/* An open here (or the peer's, by its want) waits for the link: busy. */
	uint64_t open_wait_ns;
	/*
	 * When we asked the peer to close the link (--idle-ms, or room for
	 * another under --max-active-peers), and why; 0: not asked.
	 */
	uint64_t closing_ns; /* SSQD_LINK_CLOSING's start */
	char closing_why[160];
	unsigned links, losses; /* times linked, times the link was lost */
	/* Linked: whether the peer has one of our queues open; what we told it. */
	int remote_busy;
	int busy_told; /* -1: nothing yet */
	unsigned q0;   /* its queues: q0 .. q0 + opt.peer_queues - 1 */
	enum ssqd_link_state link;
	int fd;        /* the link's connection; -1 in SSQD_LINK_IDLE */
	unsigned xlen; /* AUTHING, WANT_SENT, EXCHANGING: bytes of xbuf read */
	uint8_t xbuf[SSQ_MAX_QUEUES * (SSQ_PEER_MSG_LEN + SSQ_PEER_MAC_LEN)];
	/* --peer-key: this connection's MACs; our HELLO's nonce and generation. */
	struct ssqd_link_auth auth;
	uint8_t nonce[SSQ_PEER_NONCE_LEN];
	uint32_t gen;
	/* --peer-key: where its host looked up to at start (peers/auth.c). */
	struct in6_addr src[SSQD_PEER_SRC_MAX];
	unsigned nsrc;
	int ever; /* its queues were up once: re-bring them */
	/* CLOCK_MONOTONIC: the next dial; DIALING and on: its deadline */
	uint64_t retry_ns;
	unsigned backoff_ms; /* 100, doubling to 2000 */
	unsigned attempts;   /* since the peer was lost */
	char last_why[200];  /* last attempt's outcome: logged when it changes */
	/* After the exchange: a restart message read so far (peers/restart.c). */
	uint8_t rx[SSQ_PEER_RESTART_LEN + SSQ_PEER_MAC_LEN];
	unsigned rx_len;
};

/*
 * A connection to the peer port that has yet to send its first message
 * (peers/accept.c), or one refused and being drained before its close. A
 * newcomer to a full table takes the slot of the oldest knock of the
 * source that holds the most: one that keeps them all full keeps only its
 * own knocks out, not a peer's. One source holds SSQD_KNOCKS_PER_SOURCE at
 * most; with --peer-key a knock whose HELLO passed is never taken, and in
 * a cluster a source that is no peer's host takes none.
 */
#define SSQD_MAX_KNOCKS        8
#define SSQD_KNOCKS_PER_SOURCE 4
struct ssqd_knock {
	int fd; /* -1: free */
	int draining;
	uint64_t deadline_ns;
	uint64_t accepted_ns;
	unsigned len;
	char from[80];
	struct in6_addr ip; /* from's address, to tell sources apart */
	/*
	 * --peer-key: 0 until its HELLO, then 1 (our CHALLENGE sent) until its
	 * PROOF, then 2: authenticated as peer @claimed (peers/auth.c).
	 */
	int stage;
	/*
	 * --tenants (peers/tenant.c): 0 until its TENANT is read (the ssqd
	 * that owns the peer port reads that and not a byte more), then 1: a
	 * link of this ssqd's own tenant, read on here; 2: another tenant's
	 * (uid or gid @tenant), for serve.c to hand to that tenant's ssqd.
	 * 1 from the start where ssqd routes no tenants.
	 */
	int routed;
	uint32_t tenant;
	struct ssqd_link_auth auth;
	uint8_t nonce_d[SSQ_PEER_NONCE_LEN], nonce_a[SSQ_PEER_NONCE_LEN];
	char claimed[SSQ_NAME_MAX];
	uint32_t gen;
	uint8_t buf[SSQ_MAX_QUEUES * (SSQ_PEER_MSG_LEN + SSQ_PEER_MAC_LEN)];
};

/* Failed authentications from one source address (peers/auth.c). */
#define SSQD_AUTH_SOURCES 16
struct ssqd_auth_fails {
	struct in6_addr ip;
	unsigned n;
	uint64_t last_ns;
};

struct ssqd {
	struct ssqd_options opt;
	struct shm_arena arena;
	const struct ssqd_backend_ops *ops;
	struct ssqd_backend *backend;
	int async_failed; /* reading async events failed: said so once */
	int trace_links;  /* SSQD_TRACE_LINKS set: each link state change logged */
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
	uint32_t link_next_seq; /* the next restart ask's (peers/restart.c) */
	struct ssqd_knock knocks[SSQD_MAX_KNOCKS];
	/* --peer-key's secret (peers/auth.c); peer_key_len 0: none. */
	uint8_t peer_key[1024];
	unsigned peer_key_len;
	uint32_t link_gen; /* the last link generation a HELLO of ours carried */
	struct ssqd_auth_fails auth_fails[SSQD_AUTH_SOURCES];
	struct ssqd_log_limit auth_log; /* failed authentications' lines */
	int listen_fd;
	int socket_lock_fd; /* the claim on the socket's path (util/util.h) */
	struct ssqd_tenant tenants[SSQD_MAX_TENANTS]; /* --tenants: the others' ssqd */
	struct ssqd_tenant_backoff tenant_backoff[SSQD_MAX_TENANTS];
	struct ssqd_tenant_park tenant_parks[SSQD_MAX_TENANTS]; /* by slot */
	/*
	 * Tenants' ssqd that exited but are not reapable yet (a ptraced
	 * zombie is its tracer's to reap first): out of their slots, which
	 * are free at once, reaped from here (tenant_zombie.c). pid 0: free.
	 */
	struct ssqd_tenant tenant_zombies[SSQD_TENANT_ZOMBIES];
	/*
	 * A tenant's ssqd: connections received from its parent, since when
	 * it has had nothing to serve (0: it has), and 1 + tenant_got when it
	 * asked to exit (0: not asked).
	 */
	uint32_t tenant_got;
	uint64_t tenant_idle_ns;
	uint64_t tenant_asked;
	/* Its parent agreed to its idle exit: teardown empties the arena. */
	int tenant_idle_exit;
	struct ssqd_client clients[SSQD_MAX_CLIENTS];
	struct ssqd_grave graves[SSQD_MAX_GRAVES];
	struct ssqd_mr mrs[SSQD_MAX_MRS]; /* clients' own memory (clients/clients.h) */
	struct ssqd_grant grants[SSQD_MAX_GRANTS]; /* remote access given out */
	/*
	 * Buffers and registrations freed while a grant's bind over them may
	 * still run, owned by SSQD_OWNER_HELD until it cannot (clients/held.c).
	 */
	unsigned nheld;
	/*
	 * Buffers and registrations reach no peer until granted (windows):
	 * set at start-up when peers exist, the device has windows and the
	 * data arena is not one remote key (--arena-rkey).
	 */
	int grants_only;
	struct ssqd_log_limit guess_log; /* peers' requests with keys not granted */
	uint32_t next_client_id;
	struct ssqd_log_limit client_log; /* lines clients' bad input causes */
	/*
	 * poll(2) refused the loop's descriptors (EINVAL: more than
	 * RLIMIT_NOFILE, lowered under us, its hard limit too): the loop
	 * polls what fits, the clients in turn from the slot key poll_next
	 * on (util/turns.c), until it is raised; poll_limit is the limit it
	 * said it polls under (serve.c).
	 */
	int poll_limited;
	unsigned long long poll_limit;
	unsigned poll_next;
	struct ssqd_recv_poller rxp;    /* the receive pools' thread */
	struct ssqd_send_arm txa;       /* the send CQs' arm and event threads */
	uint64_t stall_next_ns;         /* the stall watch's next look */
	uint64_t accept_pause_until_ns; /* out of descriptors: accept later */
	int idle;                       /* sleeping up to SSQD_IDLE_MS (idle.c) */
	/* Registrations ssqd may hold, and one uid: from RLIMIT_NOFILE
	 * (clients/clients.h). */
	unsigned mr_cap, mr_uid_cap;
	volatile sig_atomic_t stop;
};

/* How long a recovery waits for the peer (peers/relink.c). */
#define SSQD_RELINK_MS 3000
/*
 * How long a rebuild waits for a live client routing or ringing now
 * (queues/start_over.c, watch/guard.c).
 */
#define SSQD_LEASE_MS 20
/* The queue guard's period (watch/guard.c). */
#define SSQD_GUARD_MS 10
/* The longest nap of an idle serve loop (idle.c). */
#define SSQD_IDLE_MS 250

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

#endif /* SSQ_CTRL_DAEMON_SSQD_H */
