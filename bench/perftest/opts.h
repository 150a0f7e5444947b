/* SPDX-License-Identifier: MIT */
/*
 * opts.h - the perftest-style tools' options (private to bench/perftest):
 * their limits, parsing, the usage text, and what follows from them alone
 * (queue names, queue count, the receive pool a SEND run needs), held by
 * opts.c and the opts_*.c beside it (opts.c says which holds what). They
 * depend on no other file of the tools; every other file may use this.
 */
#ifndef SSQ_BENCH_PERFTEST_OPTS_H
#define SSQ_BENCH_PERFTEST_OPTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PT_MAX_PROCS    32u /* -P; qp-per-process also needs -P x -q <= PT_MAX_LANES */
#define PT_MAX_SIZE     (1u << 23) /* -s and the top of -a: perftest's MAX_SIZE */
#define PT_TX_DEPTH     128u       /* default -t: messages a sender keeps in flight */
#define PT_MAX_TX       1024u      /* the largest -t */
#define PT_MAX_LANES    64u   /* -q: queues a sender round-robins over (ssqd's limit) */
#define PT_PORT         18515 /* perftest's default side-channel port */
#define PT_MAX_SL       15u   /* perftest's MAX_SL */
#define PT_INF_DURATION 5u    /* --run_infinitely without -D: perftest's DEF_DURATION */
#define PT_OUT_JSON     "perftest_out.json" /* perftest's DEFAULT_JSON_FILE_NAME */
#define PT_MAX_PEERS    64u /* --peers: ssqd's 64 queues, one each at least */
#define PT_PEER_NAME    24u /* ssqd's peer names: 1..23 characters */
#define PT_SRV_HOST     64u /* --peers NAME@HOST: where its server runs */

/*
 * SEND tools: a receive buffer's most, ssqd's SSQ_RECV_SIZE_MAX
 * (src/shm/layout.h, --recv-size), so the top of their -a and -s.
 */
#define PT_MAX_SEND_SIZE (1u << 20)

enum pt_test {
	PT_WRITE_BW,
	PT_WRITE_LAT,
	PT_SEND_BW,
	PT_SEND_LAT,
	PT_READ_BW,
	PT_ATOMIC_BW,
	/* Appended: the two-host frames carry the number. */
	PT_READ_LAT,
	PT_ATOMIC_LAT
};

enum pt_mode { PT_LOCKFREE, PT_SPINLOCK, PT_QP_PER_PROCESS, PT_PROXY, PT_COMBINE };

/* --output: perftest's verbosity; all but FULL print one number a size. */
enum pt_output { PT_OUT_FULL, PT_OUT_BW, PT_OUT_MR, PT_OUT_LAT };

struct pt_opts {
	enum pt_test test;
	enum pt_mode mode;
	const char *tool;   /* "ssq_write_bw" */
	const char *device; /* -d: NULL (first mlx5, else emu), "emu" or mlx5_N */
	const char
	    *socket; /* --ssq_socket or $SSQ_SOCKET: a running ssqd; NULL: start one */
	int wire;    /* --wire: two ssqd over the emulated wire */
	/*
	 * --peers: the senders spread over these peers' queues PEER/q<k>: of
	 * a cluster of ssqd this tool starts on the emulated wire, or with
	 * --ssq_socket of that running ssqd's cluster, each peer's host
	 * running a --server (at peer_srv, else the peer's name; peer_port,
	 * else -p).
	 */
	uint32_t npeers;
	char peers[PT_MAX_PEERS][PT_PEER_NAME];
	char peer_srv[PT_MAX_PEERS][PT_SRV_HOST];
	uint16_t peer_port[PT_MAX_PEERS];
	int peers_counted;    /* --peers N: named peer1..peerN */
	int peers_file;       /* --peers FILE: a cluster's peers file */
	const char *json;     /* --json FILE: ssq's records */
	const char *out_json; /* --out_json[_file]: perftest's report; NULL: none */
	uint32_t size;        /* -s */
	int all_sizes;        /* -a */
	uint64_t iters;       /* -n, per process */
	double duration;      /* -D seconds, 0: -n instead */
	int run_inf;          /* --run_infinitely: a row every -D seconds until SIGINT */
	uint32_t qps;         /* -q: queues each sender round-robins over */
	/*
	 * --queue-pick: ssqd has the -q queues, and each sender opens "any"
	 * once (ssq_queue_open): ssqd gives it one of them, the fewest
	 * producers first, and it posts only there.
	 */
	int queue_pick;
	uint32_t inline_size; /* -I */
	uint32_t post_list;   /* -l */
	uint32_t cq_mod;      /* -Q */
	uint32_t tx_depth;    /* -t */
	int gbits;            /* --report_gbits */
	int events;     /* -e: send_lat's receiver sleeps (ssq_recv_wait), bw senders in
	                   ssq_wait */
	uint32_t procs; /* -P */
	uint32_t sl;    /* -S: the service level (ssqd's QPs: 0) */
	int gid_index;  /* -x: ssqd --gid-index for the ssqd started here; -1 */
	int ib_port;    /* -i: ssqd --ib-port for the ssqd started here; 0 */
	int qp_timeout; /* -u: ssqd --qp-timeout for the ssqd started here; -1 */
	/* Two hosts (twohost_client.c), perftest style: a server and a client. */
	int server;            /* --server: serve a client on -p (this host's ssqd) */
	const char *peer_host; /* the host argument: be the client of its server */
	uint16_t port;         /* -p: the side channel's TCP port (18515) */
	double timeout;        /* --timeout: wait for the other side; 0: default */
	/* perftest's report and QP flags (linux-rdma/perftest, perftest_parameters.c). */
	enum pt_output output; /* --output=bandwidth|message_rate|latency */
	int no_peak;           /* -N: BW peak not measured, printed 0 */
	int report_both;       /* --report-both */
	int bidir;             /* -b: two hosts, both sides send (perftest's duplex) */
	int lat_cycles;        /* -C: latencies in TSC cycles, not usec */
	int lat_hist;          /* -H: every sample, sorted, after the row */
	int lat_unsorted;      /* -U: every sample in the order taken */
	uint32_t out_reads;    /* -o: READs/atomics in flight per sender; 0: -t */
	int atomic_cas;        /* -A CMP_AND_SWAP (else FETCH_AND_ADD) */
	uint32_t mtu;          /* -m: the emulated ssqd's MTU; 0: its default */
	int size_given;        /* -s was given */
	/*
	 * Two hosts as perftest launches them, with neither --ssq_socket nor
	 * $SSQ_SOCKET: this host's ssqd at the default socket, held here.
	 */
	char default_sock[108];
};

/* Fills @o from the command line; a bad flag: says which, usage, exit(1). */
int pt_parse(int argc, char **argv, enum pt_test test, const char *tool,
             struct pt_opts *o);
void pt_usage(FILE *f, const struct pt_opts *o);

int pt_is_lat(const struct pt_opts *o);
int pt_is_send(const struct pt_opts *o);
/* READs (ssq_read_bw, ssq_read_lat); atomics (ssq_atomic_bw, ssq_atomic_lat). */
int pt_is_read(const struct pt_opts *o);
int pt_is_atomic(const struct pt_opts *o);
/*
 * A latency tool timed by its own completion (read_lat, atomic_lat: the
 * answer comes back in the CQE, as perftest's, whose rtt_factor is 1 for
 * READ and ATOMIC), not by a byte landing or an echo.
 */
int pt_is_cqe_lat(const struct pt_opts *o);
extern const char *const pt_mode_names[];
/*
 * The queue sender @idx posts on as its lane @lane: "q<n>" (n: its index,
 * pt_queue_index); with --peers
 * "PEER/q<n>", the lanes going round the peers first, so consecutive
 * batches go to different peers.
 */
uint32_t pt_queue_index(const struct pt_opts *o, uint32_t idx, uint32_t lane);
void pt_queue_name(const struct pt_opts *o, uint32_t idx, uint32_t lane, char *out,
                   size_t len);
/*
 * The socket ssqd and its clients take by default (without $SSQ_SOCKET):
 * $XDG_RUNTIME_DIR/ssqd.sock, else /run/ssqd/ssqd.sock for root, else
 * /tmp/ssqd-<uid>/ssqd.sock.
 */
void pt_default_socket(char *out, size_t len);
/*
 * A bare command (no --server, no server name, no --ssq_socket) whose
 * host's ssqd at the default socket has a peer: be perftest's server on
 * it. Sets o->server and o->socket; a flag a server refuses exits as
 * pt_parse does.
 */
void pt_become_server(struct pt_opts *o);
/* The run's largest message: -s, or the top of -a (2^23; SEND 2^20). */
uint32_t pt_top_size(const struct pt_opts *o);
/* Queues ssqd needs for @o (--peers: for each peer). */
uint32_t pt_queues_needed(const struct pt_opts *o);
/* Lanes a sender round-robins over: -q, times the peers; 1 with --queue-pick. */
uint32_t pt_lanes(const struct pt_opts *o);
/* The sending host's QPs in the run: what --mode costs the NIC's QP cache. */
uint32_t pt_host_qps(const struct pt_opts *o);
/* The @i-th of those queues, by name (the banner's lines). */
void pt_host_queue_name(const struct pt_opts *o, uint32_t i, char *out, size_t len);
/* The receive pool SEND tests ask ssqd for: --recv-depth, --recv-size. */
void pt_recv_pool(const struct pt_opts *o, uint32_t *depth, uint32_t *bytes);

#endif
