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
#include <ssq/client.h>
#include <sys/types.h>

#define PT_MAX_PROCS 32u        /* -P; qp-per-process also needs <= 16 queues */
#define PT_MAX_SIZE  (1u << 20) /* -s and the top of -a */
#define PT_TX_DEPTH  128u       /* default -t: messages a sender keeps in flight */
#define PT_MAX_TX    1024u      /* the largest -t */
#define PT_RING      256u       /* proxy mode: request records per sender ring */
#define PT_CACHELINE 64
#define PT_MAX_LANES 16u   /* -q: queues a sender round-robins over (ssqd's limit) */
#define PT_SAMPLES   1024u /* completion-count samples a sender keeps for BW peak */

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
	int wire;             /* --wire: two ssqd over the emulated wire */
	const char *json;     /* --json FILE */
	uint32_t size;        /* -s */
	int all_sizes;        /* -a */
	uint64_t iters;       /* -n, per process */
	double duration;      /* -D seconds, 0: -n instead */
	uint32_t qps;         /* -q: queues each sender round-robins over */
	uint32_t inline_size; /* -I */
	uint32_t post_list;   /* -l */
	uint32_t cq_mod;      /* -Q */
	uint32_t tx_depth;    /* -t */
	int gbits;            /* --report_gbits */
	uint32_t procs;       /* -P */
	/* Two hosts (twohost.c), perftest style: a server and a client. */
	int server;            /* --server: serve a client on -p (this host's ssqd) */
	const char *peer_host; /* the host argument: be the client of its server */
	uint16_t port;         /* -p: the side channel's TCP port (18515) */
	double timeout;        /* --timeout: wait for the other side; 0: default */
};

#define PT_PORT 18515 /* perftest's default side-channel port */

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
	double t0, t1; /* CLOCK_MONOTONIC seconds: first post, last completion */
	int rc;
	char why[160];
};

/* The page every process of a run shares (MAP_SHARED, made before fork). */
struct pt_shared {
	uint32_t ready; /* processes connected and waiting for go */
	uint32_t go;
	uint32_t abort; /* someone failed: everyone stops */
	uint8_t pad0[PT_CACHELINE - 12];
	/* --mode spinlock: one per queue, PTHREAD_PROCESS_SHARED */
	pthread_spinlock_t lock[PT_MAX_LANES];
	uint8_t pad1[PT_CACHELINE -
	             (PT_MAX_LANES * sizeof(pthread_spinlock_t)) % PT_CACHELINE];
	struct pt_result res[PT_MAX_PROCS + 1]; /* senders, then the proxy */
	struct pt_ring rings[PT_MAX_PROCS];
	struct pt_samples smp[PT_MAX_PROCS];
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
	uint32_t rkey;
	uint32_t slot;  /* write_lat: each sender's own stretch of it */
	uint8_t *dst;   /* the parent's view of it */
	int check_data; /* WRITEs on a device that moves data: check it came */
	struct pt_shared *sh;
	double *lat; /* latency tests: iters samples (ns) per process */
	/* send_bw in full mode (parent only): each queue's receive log */
	int check_recv;
	uint32_t nrq;
	struct ssq_queue *rq[PT_MAX_LANES];
	int th_fd; /* two hosts, the client: the side channel to the server; -1 */
};

/* One table row (one size), kept for --json. */
struct pt_row {
	uint32_t size;
	uint64_t iters;
	double peak_mbs, avg_mbs, mpps;                 /* bandwidth */
	double tmin, tmax, ttyp, tavg, tstd, p99, p999; /* latency, usec */
};

/* engine.c */
int pt_parse(int argc, char **argv, enum pt_test test, const char *tool,
             struct pt_opts *o);
int pt_main(const struct pt_opts *o);
double pt_now(void);
void pt_usage(FILE *f, const struct pt_opts *o);
/* The queue sender @idx posts on as its lane @lane: "q<n>". */
void pt_queue_name(const struct pt_opts *o, uint32_t idx, uint32_t lane, char *out,
                   size_t len);
/* Queues ssqd needs for @o. */
uint32_t pt_queues_needed(const struct pt_opts *o);

int pt_is_lat(const struct pt_opts *o);
extern const char *const pt_mode_names[];

/* daemons.c */
/* An ssqd this tool started: its process, socket and log. */
struct pt_daemon {
	pid_t pid;
	char sock[108];
	char log[128];
};

int pt_is_send(const struct pt_opts *o);
/* The receive pool SEND tests ask ssqd for: --recv-depth, --recv-size. */
void pt_recv_pool(const struct pt_opts *o, uint32_t *depth, uint32_t *bytes);
/*
 * Start what @o needs: one ssqd (loopback; @dc), or with --wire two on the
 * emulated device, the destination's --listen (@dl) and the senders'
 * --connect (@dc). *@c: the senders' ssqd, *@cd: the destination's (the
 * same in loopback). @dev gets the device. Returns 0 or -1 (said why).
 */
int pt_start_daemons(const struct pt_opts *o, char *dev, size_t devlen,
                     struct pt_daemon *dl, struct pt_daemon *dc, struct ssq_client **c,
                     struct ssq_client **cd);
/* Stop it (SIGTERM, wait), remove its socket and log. */
void pt_ssqd_stop(struct pt_daemon *d);

/* report.c: the run's peak rate over every sender's samples (messages/s). */
double pt_peak_rate(const struct pt_shared *sh, uint32_t nsend);
/* After a send_bw run: did every SEND reach the pool, intact? 0 or 1 (said why). */
int pt_check_recv(const struct pt_opts *o, const struct pt_env *e, uint32_t size,
                  const uint64_t *base, uint64_t sent);
/* Sorts @s (n samples, ns) and fills @r's latency columns (usec). */
void pt_lat_stats(double *s, uint64_t n, struct pt_row *r);
void pt_print_header(const struct pt_opts *o);
void pt_print_row(const struct pt_opts *o, const struct pt_row *r);
/* --json: one record per row. Returns 0 or 1 (said why). */
int pt_write_json(const struct pt_opts *o, const char *dev, const char *emu_mode,
                  const struct pt_row *rows, unsigned n);

/* engine.c, shared with twohost.c */
/* After a run of @size: did the WRITEs land in e->dst? 0 or 1 (said why). */
int pt_check_dst(const struct pt_opts *o, const struct pt_env *e, uint32_t size);
/* SEND: open every queue's receive log of @cd into @e and check its pool. */
int pt_open_recv_logs(const struct pt_opts *o, struct ssq_client *c,
                      struct ssq_client *cd, struct ssq_queue *q0, struct pt_env *e);

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

/* run.c: one process's part of a run of @size bytes; returns its exit code. */
int pt_sender(const struct pt_opts *o, const struct pt_env *e, uint32_t idx,
              uint32_t size);
int pt_proxy(const struct pt_opts *o, const struct pt_env *e);

#endif
