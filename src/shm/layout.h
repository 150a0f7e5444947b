/* SPDX-License-Identifier: MIT */
/*
 * The arena layout: what sits where in the shared segment ssqd creates and
 * every client maps. Offset 0 holds struct shm_arena_header; each queue's
 * pieces (SQ ring, CQ ring, doorbell records, control block) and the data
 * arena are described by offsets from the arena start, never by pointers,
 * because every process maps the arena at its own address.
 *
 * Written by ssqd only, before it publishes a queue (state = READY with a
 * release store); read by clients after an acquire load of that state.
 * Clients check magic, version and every size before using anything.
 */
#ifndef SSQ_SHM_LAYOUT_H
#define SSQ_SHM_LAYOUT_H

#include <stdint.h>
#include <stddef.h>
#include <ssq/common.h>

/* "SSQARENA" little-endian */
#define SSQ_LAYOUT_MAGIC 0x414e455241515353ull
/* 3: flags (SSQ_ARENA_PEER); 4: recv log wait line; 5: 64 queues;
 * 6: completions carry verbs' opcode, wc_flags, qp_num, imm_data; peer_gen;
 * 7: the control block's combining words on a line of their own;
 * 8: a hand-over slot holds a batch (SSQ_HAND_REQS requests): each producer
 *    record is 9 lines, not 3, and its word counts the batch */
#define SSQ_LAYOUT_VERSION 8u
/* A cluster of 63 peers and this host, a queue each, or 64 peers. */
#define SSQ_MAX_QUEUES 64u
#define SSQ_NAME_MAX   32u

#define SSQ_RECV_DEPTH_MAX 32768u     /* --recv-depth: receive WQEs per queue */
#define SSQ_RECV_SIZE_MAX  (1u << 20) /* --recv-size: bytes per buffer */

enum shm_queue_state {
	SSQ_QUEUE_UNUSED = 0,
	SSQ_QUEUE_READY = 1, /* QP in RTS, every field below valid */
	SSQ_QUEUE_ERROR = 2, /* QP in ERR until the daemon recovers it */
};

struct shm_queue_layout {
	char name[SSQ_NAME_MAX]; /* NUL-terminated */
	uint32_t state;          /* enum shm_queue_state; release-stored last */
	uint32_t qpn;
	uint32_t peer_qpn;
	uint32_t cqn;
	uint32_t sq_wqe_cnt; /* WQEBBs, a power of two */
	uint32_t cqe_cnt;    /* a power of two */
	uint32_t max_inline;
	uint32_t max_sge;
	uint64_t sq_off;       /* SQ ring: sq_wqe_cnt * 64 bytes */
	uint64_t qp_dbrec_off; /* 2 x __be32: [MLX5_RCV_DBR], [MLX5_SND_DBR] */
	uint64_t cq_off;       /* CQ ring: cqe_cnt * 64 bytes */
	uint64_t cq_dbrec_off; /* 2 x __be32: consumer index, arm */
	uint64_t uar_off;      /* page in the UAR fd holding bf.reg */
	uint32_t bf_reg_off;   /* bf.reg's offset within that page */
	uint32_t bf_size;
	uint64_t peer_data_iova; /* where the peer's data arena starts */
	uint32_t peer_key;       /* rkey of the peer's data arena */
	/*
	 * +1 each time ssqd brings the queue up against its peer's addresses
	 * (the first link, every re-link: the peer may have restarted, and
	 * its descriptors with it); 0 for a loopback queue.
	 */
	uint32_t peer_gen;
	uint64_t ctl_off; /* struct ssq_ctl: the shared queue's control block */
	uint64_t ctl_len; /* ssq_ctl_size(sq_wqe_cnt) */
	/*
	 * The receive pool (ssqd --recv-depth / --recv-size; all zero when
	 * off): recv_depth receive WQEs kept posted at the QP that receives
	 * what this queue's peer sends, over recv_slots = 2 * recv_depth
	 * buffers of recv_size bytes in the data arena (message k in buffer
	 * k % recv_slots) and as many log records (struct shm_recv_log).
	 */
	uint32_t recv_depth; /* 0: no pool; else a power of two */
	uint32_t recv_slots; /* 2 * recv_depth */
	uint32_t recv_size;  /* bytes per buffer, a multiple of 64 */
	uint32_t reserved2;
	uint64_t recv_buf_off; /* buffer 0, inside the data arena */
	uint64_t recv_log_off; /* struct shm_recv_log, 64-byte aligned */
};

/*
 * One log record per message that arrived for a queue: record k (k = 0,
 * 1, ...) sits at rec[k % recv_slots]. Written by ssqd's receive poller
 * only: every other field (relaxed atomic stores after a release fence),
 * then seq = k + 1 with a release store. A reader checks seq, reads the
 * fields, then proves they were not overwritten by checking recv_posted
 * (ssq_recv_peek in src/ctrl/client.c).
 */
struct shm_recv_record {
	uint64_t seq;      /* k + 1 once record k is complete */
	uint32_t byte_len; /* bytes received (WRITE_IMM: bytes written at raddr) */
	uint32_t imm;      /* __be32 immediate data, as the CQE carries it */
	uint8_t opcode;    /* MLX5_CQE_RESP_SEND / _SEND_IMM / _WR_IMM / _RESP_ERR */
	uint8_t status;    /* enum ibv_wc_status */
	uint8_t syndrome;  /* error records: MLX5_CQE_SYNDROME_* */
	uint8_t vendor_err;
	uint32_t qpn; /* the receiving QP */
	uint64_t reserved;
};

/*
 * The shared log of a queue's receive pool: two counters, each on its own
 * cache line (both written by the poller; readers only load them), the
 * sleepers' line (ssq_recv_wait), then recv_slots records.
 */
struct shm_recv_log {
	uint64_t arrived; /* records written: messages 0 .. arrived - 1 logged */
	uint8_t pad0[56];
	/*
	 * Receive WQEs handed to the RQ, numbered like the messages: WQE j
	 * scatters into buffer j % recv_slots. Stored (release) before the RQ
	 * doorbell that hands WQE posted - 1 to the device.
	 */
	uint64_t posted;
	uint8_t pad1[56];
	/*
	 * Readers asleep in ssq_recv_wait (src/ctrl/client/recv_wait.c).
	 * Every client writes this line, so ssqd treats it as a hint only:
	 * `waiters` nonzero makes the poller wake wake_seq after logging and
	 * spin instead of napping, but only while `beat` keeps moving (each
	 * sleeper bumps it before it counts itself and before every slice),
	 * so a count left behind by a reader killed in its sleep, or
	 * scribbled, costs the poller a FUTEX_WAKE per logged batch and no
	 * spinning, and the emulated device's thread (rx_event) nothing once
	 * its beat stands.
	 */
	uint32_t waiters;  /* readers inside ssq_recv_wait */
	uint32_t wake_seq; /* the shared futex word: ssqd bumps it, then wakes */
	uint32_t beat;     /* bumped by each sleeper before each slice */
	uint8_t pad2[52];
	struct shm_recv_record rec[];
};

SSQ_STATIC_ASSERT(sizeof(struct shm_recv_record) == 32, "record is 32 bytes");
SSQ_STATIC_ASSERT(offsetof(struct shm_recv_log, posted) == 64, "posted line");
SSQ_STATIC_ASSERT(offsetof(struct shm_recv_log, waiters) == 128, "sleepers line");
SSQ_STATIC_ASSERT(offsetof(struct shm_recv_log, rec) == 192, "records line");

/* Bytes of the log of a pool of @slots records. */
static inline uint64_t shm_recv_log_size(uint32_t slots)
{
	return sizeof(struct shm_recv_log) +
	       (uint64_t)slots * sizeof(struct shm_recv_record);
}

/*
 * shm_arena_header.flags: SSQ_ARENA_PEER - ssqd runs with --listen or
 * --connect, so RDMA through its queues lands in another ssqd's arena (a
 * buffer allocated here is not where the peer IOVA of the same offset goes).
 */
#define SSQ_ARENA_PEER 1u
/* Each buffer its own keys, data_key local-only (ssqd without --arena-rkey). */
#define SSQ_ARENA_BUFFER_KEYS 2u

struct shm_arena_header {
	uint64_t magic;             /* SSQ_LAYOUT_MAGIC */
	uint32_t version;           /* SSQ_LAYOUT_VERSION */
	uint32_t header_size;       /* sizeof(struct shm_arena_header) */
	uint32_t queue_layout_size; /* sizeof(struct shm_queue_layout) */
	uint32_t nqueues;           /* entries of queues[] in use */
	uint64_t arena_len;         /* bytes the arena fd maps */
	uint64_t data_off;          /* data arena: offset, length, fixed IOVA */
	uint64_t data_len;
	uint64_t data_iova;
	uint32_t data_key;  /* lkey (and rkey) of the data arena MR */
	uint32_t hugepages; /* 1: 2 MiB hugepages, 0: 4 KiB memfd pages */
	uint32_t flags;     /* SSQ_ARENA_* */
	/*
	 * A futex word ssqd's send-CQ arm thread sleeps on: a producer about
	 * to sleep on a queue whose ctl->tx_arm is SSQ_TX_ARM_WANTED bumps
	 * and wakes it. Any change only makes the thread look at the queues'
	 * sleepers (ssqd_hdr_restore moves it on and wakes the thread, rather
	 * than put it back).
	 */
	uint32_t tx_arm_seq;
	char device[SSQ_NAME_MAX]; /* "emu" or an mlx5 device name */
	struct shm_queue_layout queues[SSQ_MAX_QUEUES];
};

/*
 * shm_layout_check - validate a mapped header of an arena @len bytes long:
 * magic, version, struct sizes, queue count and every offset + length
 * inside the arena. Returns 0, or -EPROTO (not an ssq arena, or another
 * version: @why says which), -EBADMSG (a field out of bounds).
 */
int shm_layout_check(const struct shm_arena_header *h, size_t len, char *why,
                     size_t whylen);

#endif /* SSQ_SHM_LAYOUT_H */
