/* SPDX-License-Identifier: MIT */
/*
 * engine.h - the perftest-style benchmark tools' shared engine (private to
 * bench/perftest): options, ssqd start-up, the process fan-out of every
 * --mode, result aggregation, the perftest tables and --json.
 *
 * Each tool (ssq_write_bw, ssq_write_lat, ...) is main.c built with its
 * test kind; everything else lives here and in run.c.
 */
#ifndef SSQ_BENCH_PERFTEST_ENGINE_H
#define SSQ_BENCH_PERFTEST_ENGINE_H

#include <stdint.h>
#include <stdio.h>
#include <pthread.h>

#define PT_MAX_PROCS 32u        /* -P; qp-per-process also needs <= 16 queues */
#define PT_MAX_SIZE  (1u << 20) /* -s and the top of -a */
#define PT_TX_DEPTH  128u       /* default -t: messages a sender keeps in flight */
#define PT_MAX_TX    1024u      /* the largest -t */
#define PT_RING      256u       /* proxy mode: request records per sender ring */
#define PT_CACHELINE 64

enum pt_test {
	PT_WRITE_BW,
	PT_WRITE_LAT,
	PT_SEND_BW,
	PT_SEND_LAT,
	PT_READ_BW,
	PT_ATOMIC_BW
};

enum pt_mode { PT_LOCKFREE, PT_SPINLOCK, PT_QP_PER_PROCESS, PT_PROXY };

struct pt_opts {
	enum pt_test test;
	enum pt_mode mode;
	const char *tool;     /* "ssq_write_bw" */
	const char *device;   /* -d: NULL (first mlx5, else emu), "emu" or mlx5_N */
	const char *socket;   /* -S or $SSQ_SOCKET: a running ssqd; NULL: start one */
	const char *json;     /* --json FILE */
	uint32_t size;        /* -s */
	int all_sizes;        /* -a */
	uint64_t iters;       /* -n, per process */
	double duration;      /* -D seconds, 0: -n instead */
	uint32_t qps;         /* -q: must be 1 (one shared queue is the point) */
	uint32_t inline_size; /* -I */
	uint32_t post_list;   /* -l */
	uint32_t cq_mod;      /* -Q */
	uint32_t tx_depth;    /* -t */
	int gbits;            /* --report_gbits */
	uint32_t procs;       /* -P */
};

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
};

/* proxy mode: one sender's single-producer/single-consumer request ring. */
struct pt_ring {
	uint64_t head; /* sender-written: records put */
	uint8_t pad0[PT_CACHELINE - 8];
	uint64_t tail; /* proxy-written: records taken (and posted) */
	uint64_t done; /* proxy-written: the sender's messages completed */
	uint8_t pad1[PT_CACHELINE - 16];
	uint32_t fin; /* sender-written: no more records, all completed */
	uint8_t pad2[PT_CACHELINE - 4];
	struct pt_req req[PT_RING];
};

/* One sender's numbers. */
struct pt_result {
	uint64_t msgs;
	double t0, t1;   /* CLOCK_MONOTONIC seconds: first post, last completion */
	double peak_mps; /* best rate over a window of messages */
	int rc;
	char why[160];
};

/* The page every process of a run shares (MAP_SHARED, made before fork). */
struct pt_shared {
	uint32_t ready; /* processes connected and waiting for go */
	uint32_t go;
	uint32_t abort; /* someone failed: everyone stops */
	uint8_t pad0[PT_CACHELINE - 12];
	pthread_spinlock_t lock; /* --mode spinlock: PTHREAD_PROCESS_SHARED */
	uint8_t pad1[PT_CACHELINE - sizeof(pthread_spinlock_t)];
	struct pt_result res[PT_MAX_PROCS + 1]; /* senders, then the proxy */
	struct pt_ring rings[PT_MAX_PROCS];
};

/* Where a run's senders find the destination and the daemon. */
struct pt_env {
	const char *socket;
	uint64_t dst_off; /* arena offset of the destination buffer */
	uint64_t dst_len;
	uint8_t *dst;   /* the parent's view of it */
	int check_data; /* WRITEs on a device that moves data: check it came */
	struct pt_shared *sh;
	double *lat; /* latency tests: iters samples (ns) per process */
};

/* engine.c */
int pt_parse(int argc, char **argv, enum pt_test test, const char *tool,
             struct pt_opts *o);
int pt_main(const struct pt_opts *o);
double pt_now(void);

/* run.c: one process's part of a run of @size bytes; returns its exit code. */
int pt_sender(const struct pt_opts *o, const struct pt_env *e, uint32_t idx,
              uint32_t size);
int pt_proxy(const struct pt_opts *o, const struct pt_env *e);

#endif
