/* SPDX-License-Identifier: MIT */
/*
 * engine.h - what the perftest-style tools' files share (private to
 * bench/perftest): the run's shared page, results and rows, and each
 * file's calls. The files call each other without a circle:
 *
 *   main.c -> engine.c -> daemons.c, run.c, cluster.c, twohost.c, checks.c,
 *                          report.c
 *   cluster.c -> twohost.c -> checks.c;  every file -> opts.c (options), clock.h
 *
 * Each tool (ssq_write_bw, ssq_write_lat, ...) is main.c built with its
 * test kind.
 */
#ifndef SSQ_BENCH_PERFTEST_ENGINE_H
#define SSQ_BENCH_PERFTEST_ENGINE_H

#include <stdint.h>
#include <stdio.h>
#include <pthread.h>
#include <ssq/client.h>
#include <sys/types.h>
#include "opts.h"
#include "clock.h"

#define PT_RING      256u /* proxy mode: request records per sender ring */
#define PT_CACHELINE 64
#define PT_SAMPLES   1024u /* completion-count samples a sender keeps for BW peak */

/* One message in flight: what a sender asks for (proxy records carry it too). */
struct pt_req {
	uint64_t laddr;
	uint64_t raddr;
	uint64_t wr_id;
	uint32_t lkey;
	uint32_t rkey;
	uint32_t len;
	uint8_t opcode; /* MLX5_OPCODE_RDMA_WRITE, _RDMA_READ, _ATOMIC_FA */
	uint8_t flags;  /* SSQ_WQE_SIGNALED or 0 */
	uint8_t inl;    /* build it inline */
	uint8_t wqebbs; /* WQEBBs it takes */
	uint8_t lane;   /* proxy records: which of the -q queues */
};

/* proxy mode: one sender's single-producer/single-consumer request ring. */
struct pt_ring {
	uint64_t head; /* sender-written: records put */
	uint8_t pad0[PT_CACHELINE - 8];
	uint64_t tail; /* proxy-written: records taken (and posted) */
	uint8_t pad1[PT_CACHELINE - 8];
	/* proxy-written: per queue (lane), the sender's messages completed */
	uint64_t done[PT_MAX_LANES];
	uint32_t fin; /* sender-written: no more records, all completed */
	uint8_t pad2[PT_CACHELINE - 4];
	struct pt_req req[PT_RING];
};

/*
 * One sender's completion count over time, for the run's BW peak: (t, m)
 * pairs, a sample every @every messages; when full, every other one is
 * dropped and @every doubles, so any run length fits.
 */
struct pt_samples {
	uint32_t n;
	uint32_t every;
	uint64_t next; /* the count that takes the next sample */
	double t[PT_SAMPLES];
	uint64_t m[PT_SAMPLES];
};

/* One sender's numbers. */
struct pt_result {
	uint64_t msgs;
	uint64_t live; /* --run_infinitely: messages completed so far */
	double t0, t1; /* CLOCK_MONOTONIC seconds: first post, last completion */
	uint64_t peer_msgs[PT_MAX_PEERS]; /* --peers: its messages to each peer */
	int rc;
	char why[160];
};

/* The page every process of a run shares (MAP_SHARED, made before fork). */
struct pt_shared {
	uint32_t ready; /* processes connected and waiting for go */
	uint32_t go;
	uint32_t abort; /* someone failed: everyone stops */
	uint32_t stop;  /* --run_infinitely: interrupted, finish and report */
	uint8_t pad0[PT_CACHELINE - 16];
	/* --mode spinlock: one per queue, PTHREAD_PROCESS_SHARED */
	pthread_spinlock_t lock[PT_MAX_LANES];
	uint8_t pad1[PT_CACHELINE -
	             (PT_MAX_LANES * sizeof(pthread_spinlock_t)) % PT_CACHELINE];
	struct pt_result res[PT_MAX_PROCS + 1]; /* senders, then the proxy */
	struct pt_ring rings[PT_MAX_PROCS];
	struct pt_samples smp[PT_MAX_PROCS];
};

/* --peers: one peer's destination, in its ssqd's arena. */
struct pt_peer_dst {
	uint64_t iova; /* what WQEs carry for it, under rkey */
	uint32_t rkey; /* its own key, from whoever allocated it there */
	uint8_t *addr; /* the parent's view of it (it is a client of that ssqd) */
	uint64_t len;
};

/*
 * Where a run's senders find the daemons and the destination. Loopback:
 * one ssqd, the destination in its own arena. --wire: the senders post on
 * the connecting ssqd (socket) into the listening one's arena (dst_socket).
 */
struct pt_env {
	const char *socket;     /* the ssqd whose queues the senders post on */
	const char *dst_socket; /* the ssqd whose arena holds the destination */
	uint64_t dst_off;       /* arena offset of the destination buffer */
	uint64_t dst_len;
	uint64_t dst_iova; /* what WQEs carry for it, under rkey */
	uint32_t rkey;     /* the destination buffer's own (remote descriptor) */
	uint32_t slot;     /* write_lat: each sender's own stretch of it */
	uint8_t *dst;      /* the parent's view of it */
	int check_data;    /* WRITEs on a device that moves data: check it came */
	struct pt_shared *sh;
	double *lat; /* latency tests: iters samples (ns) per process */
	/* send_bw in full mode (parent only): each queue's receive log */
	int check_recv;
	uint32_t nrq;
	struct ssq_queue *rq[PT_MAX_LANES];
	int th_fd; /* two hosts, the client: the side channel to the server; -1 */
	struct pt_peer_dst peer_dst[PT_MAX_PEERS]; /* --peers, in o->peers' order */
	/* --peers of a running cluster: each peer's server, in o->peers' order */
	uint32_t nsrv;
	int srv_fd[PT_MAX_PEERS];
	uint64_t peer_msgs[PT_MAX_PEERS]; /* the last size's messages to each peer */
};

/* One table row (one size, or one --run_infinitely interval), kept for JSON. */
struct pt_row {
	uint32_t size;
	uint64_t iters;
	double secs;                    /* first post to last completion */
	double peak_bps, avg_bps, mpps; /* bandwidth: bytes/s, Mpps */
	double tmin, tmax, ttyp, tavg, tstd, p99, p999; /* latency, usec */
};

/*
 * What a run is on and where, for perftest's banner and both JSON files.
 * What ssq does not expose is unknown (0, -1, NULL), and printed so.
 */
struct pt_info {
	char dev[64];
	const char *emu_mode; /* "" unless the emulated device: "full" or "sink" */
	const char *link;     /* "IB" or "Ethernet"; NULL: unknown */
	const char *why;      /* why link and MTU are unknown */
	uint32_t mtu;         /* the port's active MTU in bytes; 0: unknown */
	int lid;              /* the port's LID; -1: unknown */
	uint32_t nq;          /* queues the run posts on, q0.. */
	uint32_t qpn[PT_MAX_LANES], peer_qpn[PT_MAX_LANES];
	uint32_t rkey;  /* where the RDMA lands: the remote line's RKey, */
	uint64_t vaddr; /* and VAddr (the destination's IOVA) */
	/* The run's start, host and CPUs: every JSON record carries them. */
	char host[256];
	char time[32];  /* ISO 8601, UTC */
	char cpus[256]; /* sched_getaffinity as a CPU list, "0-1" */
};

/* daemons.c */
/* An ssqd this tool started: its process, socket and log. */
struct pt_daemon {
	pid_t pid;
	char sock[108];
	char log[128];
};

/*
 * Start what @o needs: one ssqd (loopback; @dc), or with --wire two on the
 * emulated device, the destination's --listen (@dl) and the senders'
 * --connect (@dc). *@c: the senders' ssqd, *@cd: the destination's (the
 * same in loopback). @dev gets the device. Returns 0 or -1 (said why).
 */
int pt_start_daemons(const struct pt_opts *o, char *dev, size_t devlen,
                     struct pt_daemon *dl, struct pt_daemon *dc, struct ssq_client **c,
                     struct ssq_client **cd);
/*
 * --peers: a cluster on the emulated wire, every ssqd --eager: this host's
 * (@dc, named "here", *@c) with a peer link to each of @o's peers (@dp[k],
 * *@cp[k] their clients), each with --queues pt_queues_needed(). Returns 0
 * once every queue is in RTS, or -1 (said why).
 */
int pt_start_cluster(const struct pt_opts *o, struct pt_daemon *dc, struct ssq_client **c,
                     struct pt_daemon *dp, struct ssq_client **cp);
/* Stop it (SIGTERM, wait), remove its socket and log. */
void pt_ssqd_stop(struct pt_daemon *d);
/* An mlx5 device's port @port (libibverbs): link layer, active MTU, LID into @in. */
void pt_port_facts(const char *dev, int port, struct pt_info *in);

/* checks.c: did the data arrive? */
/* After a run of @size: did the WRITEs land in e->dst? 0 or 1 (said why). */
int pt_check_dst(const struct pt_opts *o, const struct pt_env *e, uint32_t size);
/* After a send_bw run: did every SEND reach the pool, intact? 0 or 1 (said why). */
int pt_check_recv(const struct pt_opts *o, const struct pt_env *e, uint32_t size,
                  const uint64_t *base, uint64_t sent);
/* SEND: open every queue's receive log of @cd into @e and check its pool. */
int pt_open_recv_logs(const struct pt_opts *o, struct ssq_client *c,
                      struct ssq_client *cd, struct ssq_queue *q0, struct pt_env *e);

/* report.c: what a run's numbers become. */
/* The run's peak rate over every sender's samples (messages/s). */
double pt_peak_rate(const struct pt_shared *sh, uint32_t nsend);
/* Sorts @s (n samples, ns) and fills @r's latency columns (usec). */
void pt_lat_stats(double *s, uint64_t n, struct pt_row *r);
/* @in's host, time (now) and CPU list. */
void pt_info_where(struct pt_info *in);
/* perftest's parameter banner and the local/remote address lines. */
void pt_print_banner(const struct pt_opts *o, const struct pt_info *in);
void pt_print_header(const struct pt_opts *o);
void pt_print_row(const struct pt_opts *o, const struct pt_row *r);
/* --json (ssq's records, one per row) and --out_json (perftest's): 0 or 1. */
int pt_write_json(const struct pt_opts *o, const struct pt_info *in,
                  const struct pt_row *rows, unsigned n);
int pt_write_out_json(const struct pt_opts *o, const struct pt_info *in,
                      const struct pt_row *rows, unsigned n);

/*
 * twohost.c: the side channel of a two-host run (TCP, -p). The server
 * (--server) holds the destination in its ssqd's arena and checks what
 * arrived; the client runs the senders against its own ssqd, whose peer
 * is the server's. pt_th_server runs the whole server side (0 or 1).
 * The client: open (connect, agree on the run, get the destination into
 * @e), then per size start (the server clears the destination) and done
 * (the server checks; its verdict into @verdict; @ok 0: the client failed),
 * then close. Each returns 0 or -1 (said why). write_lat: @pong, the
 * client's buffer the server WRITEs each sender's slot back into (perftest's
 * ping-pong); the client times until the echo lands and reports RTT/2.
 */
int pt_th_server(const struct pt_opts *o, struct ssq_client *c);
int pt_th_client_open(const struct pt_opts *o, struct ssq_queue *q0, uint32_t top,
                      int check, const struct ssq_buf *pong, struct pt_env *e);
int pt_th_client_start(const struct pt_opts *o, const struct pt_env *e, uint32_t size);
int pt_th_client_done(const struct pt_opts *o, const struct pt_env *e, uint32_t size,
                      uint64_t msgs, int ok, char *verdict, size_t len);
void pt_th_client_close(const struct pt_opts *o, struct pt_env *e);

/*
 * cluster.c: --peers. On the cluster this tool started: a destination of
 * @top bytes in each peer's arena (@cp[k], a client of each) into
 * @e->peer_dst, reached through this host's PEER/q0 on @c (*@q0, *@dst0:
 * the first peer's). 0 or -1 (said why).
 */
int pt_cl_local_open(const struct pt_opts *o, struct ssq_client *c,
                     struct ssq_client *const *cp, uint32_t top, struct pt_env *e,
                     struct ssq_queue **q0, struct ssq_buf *dst0);
/*
 * Against a running cluster (--ssq_socket), a server on each peer's host.
 * Open: each peer's PEER/q0 (linking it), its server's
 * side channel, its destination into @e->peer_dst (*@q0, *@dst0: the
 * first's); then per size start and done (each server checks its share,
 * @e->peer_msgs; their verdicts into @verdicts, a line each), then close
 * (@bye 0: the run failed, no BYE). Each returns 0 or -1 (said why).
 */
int pt_cl_open(const struct pt_opts *o, struct ssq_client *c, uint32_t top, int check,
               struct pt_env *e, struct ssq_queue **q0, struct ssq_buf *dst0);
int pt_cl_start(const struct pt_opts *o, const struct pt_env *e, uint32_t size);
int pt_cl_done(const struct pt_opts *o, const struct pt_env *e, uint32_t size, int ok,
               char *verdicts, size_t len);
void pt_cl_close(const struct pt_opts *o, struct pt_env *e, int bye);

/* run.c: one process's part of a run of @size bytes; returns its exit code. */
int pt_sender(const struct pt_opts *o, const struct pt_env *e, uint32_t idx,
              uint32_t size);
int pt_proxy(const struct pt_opts *o, const struct pt_env *e);

/* engine.c: the whole run of @o (after pt_parse); the tool's exit code. */
int pt_main(const struct pt_opts *o);

#endif
