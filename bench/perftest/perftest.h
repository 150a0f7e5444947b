/* SPDX-License-Identifier: MIT */
/*
 * perftest.h - the types the perftest-style tools' files share (private to
 * bench/perftest): the run's shared page, results, rows and daemons;
 * no prototypes. Each file's calls are in its own header, and a file
 * includes only headers of files below it (tests/test_layout_cycles.sh):
 *
 *   opts.h, clock.h < perftest.h < checks.h, report.h, daemons.h, lanes.h
 *     < loops.h < run.h, proxy.h < size_run.h < twohost_frames.h,
 *     twohost_queues.h < twohost_echo.h < twohost_server.h, twohost_client.h
 *     < cluster.h < engine.h < main.c
 *
 * Each tool (ssq_write_bw, ssq_write_lat, ...) is main.c built with its
 * test kind.
 */
#ifndef SSQ_BENCH_PERFTEST_PERFTEST_H
#define SSQ_BENCH_PERFTEST_PERFTEST_H

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
	double cpu;    /* bandwidth loops: CPU seconds the sender used in between */
	uint64_t peer_msgs[PT_MAX_PEERS]; /* --peers: its messages to each peer */
	uint32_t picked;                  /* --queue-pick: k of the q<k> ssqd gave it */
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
	/* --queue-pick: the queue each sender got, "q1 q0 ..." (the last size's) */
	char picked[PT_MAX_PROCS * 4 + 1];
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
	/*
	 * A server's destination (two hosts; --peers of a running cluster):
	 * its key for each queue, a grant bound to that queue's QP, [peer, 0
	 * for two hosts][queue index k of qk, PEER/qk]; qgrants 0: rkey, or
	 * peer_dst's, for every queue.
	 */
	int qgrants;
	uint32_t qrkey[PT_MAX_PEERS][PT_MAX_LANES];
	/* -b, the two-host client: the buffer the server's senders reach here */
	uint8_t *rev;
	uint64_t rev_len;
};

/* One table row (one size, or one --run_infinitely interval), kept for JSON. */
struct pt_row {
	uint32_t size;
	uint64_t iters;
	double secs;                    /* first post to last completion */
	double peak_bps, avg_bps, mpps; /* bandwidth: bytes/s, Mpps */
	double cpu_ns;                  /* bandwidth: senders' CPU ns per message */
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

/* An ssqd this tool started: its process, socket and log. */
struct pt_daemon {
	pid_t pid;
	char sock[108];
	char log[128];
};

#endif
