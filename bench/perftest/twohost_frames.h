/* SPDX-License-Identifier: MIT */
/*
 * twohost_*.c - perftest-style runs across two hosts, each with its ssqd, the
 * two daemons peers (ssqd --listen on one, --connect on the other):
 *
 *   host B:  ssq_write_bw --ssq_socket=B.sock --server [-p PORT] [flags]
 *   host A:  ssq_write_bw --ssq_socket=A.sock [-p PORT] [flags] B
 *
 * RDMA through A's queue qN lands in B's data arena, at an IOVA of B's; only
 * B's clients can allocate there. So the server allocates the destination
 * in B's arena and hands its IOVA to the client over a TCP side channel
 * (perftest's port 18515, -p), the client's senders run the same loops as
 * on one host against A's ssqd, and after each size the server checks what
 * it can (write_bw: the data landed; send_bw: B's receive pool logged every
 * SEND; atomic_bw: the counter is the number of messages) and answers with
 * its verdict, which the client prints. write_lat is perftest's ping-pong:
 * the server WRITEs each message back through its own ssqd into a pong
 * buffer in the client's arena, and the client reports RTT/2.
 *
 * With peers, ssqd lets a peer reach a buffer only through a grant, bound
 * to one queue's QP (ssq_buf_grant, issue 28): the server grants its
 * destination to each queue the client posts on and sends each key (the
 * client's q0 in WELCOME, every other queue on the client's GRANT), and
 * the client grants its write_lat pong buffer to its q0, on which the
 * server's echoes arrive. So a default ssqd (grants on) serves two hosts.
 *
 * The side channel: fixed 252-byte frames, big-endian, each with a magic
 * and version; the client drives (HELLO / WELCOME, GRANT / GRANTED for each
 * queue but q0, then per size START / READY and DONE / VERDICT, then
 * BYE). Either side refuses a frame it does not expect, and the server
 * refuses a client whose tool, -s or -a differ from its own (perftest refuses mismatched
 * parameters too).
 *
 * twohost_frames.c: the frames (here); twohost_queues.c: this side's queue
 * paired with the other's, and grants; twohost_echo.c: the latency tools'
 * echoes; twohost_server.c and twohost_client.c: the two sides.
 */
#ifndef SSQ_BENCH_PERFTEST_TWOHOST_FRAMES_H
#define SSQ_BENCH_PERFTEST_TWOHOST_FRAMES_H

#include <stdint.h>
#include "perftest.h"

#define TH_MAGIC     0x48325450515353ull /* "SSQPT2H" */
#define TH_VERSION   3u /* 2: HELLO carries the pong buffer's rkey; 3: grants */
#define TH_TEXT      160u
#define TH_FRAME     (16u + 13u * 4u + 3u * 8u + TH_TEXT)
#define TH_CONNECT_S 10.0  /* the client: retry a refused connect this long */
#define TH_REPLY_S   120.0 /* either side: an answer that should come soon */

enum th_kind {
	TH_HELLO = 1, /* client: the run's parameters, its q0's QPNs, its pong buffer */
	TH_WELCOME,   /* server: status; the destination (iova, len, rkey), QPNs */
	TH_START,     /* client: size; the server clears the destination */
	TH_READY,     /* server: status */
	TH_DONE,      /* client: size, msgs completed; status 1: the run failed */
	TH_VERDICT,   /* server: status, text */
	TH_BYE,       /* client: no more sizes */
	TH_GRANT,     /* client: size = queue index, its QPNs: grant the destination */
	TH_GRANTED,   /* server: status; the grant's iova and rkey, or text */
	TH_KINDS
};

/* One frame, decoded. */
struct th_msg {
	uint32_t kind, status;
	uint32_t test, size, all_sizes, procs, qps, mode, tx_depth, check;
	uint32_t qpn, peer_qpn, rkey;
	uint32_t bidir; /* HELLO: -b */
	uint64_t iova, len, msgs;
	char text[TH_TEXT];
};

/* Write frame @m to @fd. 0 or -1 (said why). */
int pt_th_send(const struct pt_opts *o, int fd, const struct th_msg *m);

/*
 * Read one frame of kind @want (0: any) within @secs (0: no limit).
 * Returns 0, -2 (a peer tool of another version: said, its version in
 * m->test), or -1 (said why: closed, timeout, bad magic, kind).
 */
int pt_th_recv(const struct pt_opts *o, int fd, uint32_t want, double secs,
               struct th_msg *m);

/* The tool of test kind @test (HELLO's), by name. */
const char *pt_th_tool_of(uint32_t test);
/* Frame kind @kind by name ("HELLO"), or "frame" for one out of range. */
const char *pt_th_kind_name(uint32_t kind);

#endif
