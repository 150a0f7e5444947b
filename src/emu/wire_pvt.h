/* SPDX-License-Identifier: MIT */
/*
 * wire_pvt.h - the emulated wire: RC packets between emulated devices in
 * different processes, one UDP datagram per packet, RoCE v2 transport
 * headers (IBTA vol. 1, 9.2-9.5) as the UDP payload, big-endian. Private:
 * include <ssq/emu.h>.
 *
 * wire.c      setup: socket, addresses, fault settings, counters
 * wire_io.c   packets out: BTH/AETH encoding, fault injection, ACKs
 * wire_rx.c   packets in: receive, dispatch by QPN
 * wire_peer.c whether the peer's device is off the CPU (unread datagrams)
 * wire_qp.c   per-QP wire state across QP transitions
 * wire_req.c  requester: packetize, outstanding WQEs, ACK/NAK, go-back-N,
 *             READ responses, atomic ACKs
 * wire_resp.c responder: PSN check, WRITE / SEND / READ / atomic
 *             execution, ACK/NAK
 */
#ifndef SSQ_EMU_WIRE_PVT_H
#define SSQ_EMU_WIRE_PVT_H

#include <netinet/in.h>
#include "emu/emu_pvt.h"

/* BTH opcodes, RC (IBTA table 38). */
enum {
	WIRE_SEND_FIRST = 0x00,
	WIRE_SEND_MIDDLE = 0x01,
	WIRE_SEND_LAST = 0x02,
	WIRE_SEND_LAST_IMM = 0x03,
	WIRE_SEND_ONLY = 0x04,
	WIRE_SEND_ONLY_IMM = 0x05,
	WIRE_WRITE_FIRST = 0x06,
	WIRE_WRITE_MIDDLE = 0x07,
	WIRE_WRITE_LAST = 0x08,
	WIRE_WRITE_LAST_IMM = 0x09,
	WIRE_WRITE_ONLY = 0x0a,
	WIRE_WRITE_ONLY_IMM = 0x0b,
	WIRE_READ_REQ = 0x0c,
	WIRE_READ_FIRST = 0x0d, /* READ responses: AETH on FIRST, LAST, ONLY */
	WIRE_READ_MIDDLE = 0x0e,
	WIRE_READ_LAST = 0x0f,
	WIRE_READ_ONLY = 0x10,
	WIRE_ACK = 0x11,
	WIRE_ATOMIC_ACK = 0x12, /* AETH, AtomicAckETH */
	WIRE_CMP_SWAP = 0x13,   /* AtomicETH */
	WIRE_FETCH_ADD = 0x14,
};

/* Header sizes: BTH, RETH, ImmDt, AETH. */
enum {
	WIRE_BTH = 12,
	WIRE_RETH = 16,
	WIRE_IMMDT = 4,
	WIRE_AETH = 4,
	WIRE_ATOMIC_ETH = 28,     /* VA, R_Key, swap or add, compare */
	WIRE_ATOMIC_ACK_ETH = 8,  /* the original value */
	WIRE_MAX_PKT = 4096 + 64, /* the largest path MTU plus headers */
};

/* AETH syndrome (IBTA 9.3.5): bits 7-5 kind, 4-0 credit / timer / code. */
enum {
	AETH_ACK = 0x00,
	AETH_RNR = 0x20,       /* | RNR timer code */
	AETH_NAK_SEQ = 0x60,   /* PSN sequence error */
	AETH_NAK_INVAL = 0x61, /* invalid request */
	AETH_NAK_ACCESS = 0x62,
	AETH_NAK_OP = 0x63, /* remote operational error */
	AETH_KIND = 0xe0,
};

#define WIRE_BTH_ACKREQ 0x80000000u /* BTH word 2 bit 31 */
#define PSN_MASK        0xffffffu

/* a - b on the 24-bit PSN circle, in -2^23 .. 2^23 - 1. */
static inline int32_t psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}

static inline void put_be32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, 4);
}

static inline void put_be64(uint8_t *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, 8);
}

static inline uint32_t get_be32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return be32toh(v);
}

static inline uint64_t get_be64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return be64toh(v);
}

/* A packet held back by the reorder or delay fault. */
struct wire_held {
	uint64_t due_ns;
	struct sockaddr_in to;
	uint32_t len;
	uint8_t data[WIRE_MAX_PKT];
};

#define WIRE_HELD_MAX 64

struct emu_wire {
	int fd;
	struct emu_wire_fault fault;
	struct emu_wire_stats st;
	uint64_t rng;
	uint8_t rx[WIRE_MAX_PKT + 64];
	unsigned nheld;
	struct wire_held held[WIRE_HELD_MAX];
};

/* One WQE handed to the wire and not yet completed. */
struct wire_ent {
	uint32_t idx;       /* sq_cc at the WQE, free-running */
	uint32_t first_psn; /* of its first packet */
	uint32_t npkts;     /* 0: NOP or a local error, completed at the head */
	uint32_t len;       /* message bytes */
	uint16_t wqebbs;
	uint8_t opcode; /* MLX5_OPCODE_* */
	uint8_t signaled;
	uint8_t syndrome; /* nonzero: completes in error at the head */
	uint8_t rd_depth; /* READ/atomic: those outstanding, this one included */
};

/*
 * BTH byte 4 (IBTA: reserved) carries, in a READ or atomic request, how
 * many READ/atomic requests its requester had outstanding, this one
 * included. A ConnectX responder counts its responder resources itself;
 * two emulated devices in different processes cannot share that count, so
 * the requester states it, and the responder refuses a request beyond its
 * max_dest_rd_atomic as the hardware does (NAK Invalid Request).
 */
#define WIRE_BTH_RD_DEPTH 4

#define WIRE_MAX_OUT 128  /* outstanding WQEs per QP */
#define WIRE_WINDOW  1024 /* unacknowledged packets per QP */

/* Per-QP state of a QP whose peer is remote (qp->wire). */
struct emu_wire_qp {
	struct sockaddr_in peer;

	/* Requester. */
	uint32_t next_psn;   /* PSN the next new packet gets */
	uint32_t max_sent;   /* one past the highest PSN sent, for stats */
	uint32_t snd_psn;    /* next PSN to transmit (go-back-N rewinds it) */
	uint32_t una;        /* oldest unacknowledged PSN */
	uint32_t head, tail; /* outstanding ring, free-running */
	struct wire_ent ent[WIRE_MAX_OUT];
	uint32_t nak_una;      /* the PSN a sequence NAK sent us back to */
	uint8_t nak_una_valid; /* until una moves */
	uint8_t retries;       /* timeouts since the last progress */
	uint8_t rnr_tries;     /* RNR NAKs for the head */
	uint64_t timer_ns;     /* progress deadline; 0: stopped */
	uint64_t rnr_until_ns;

	/* Responder. */
	uint32_t epsn; /* expected PSN */
	uint32_t msn;
	uint8_t ack_pending;
	uint8_t nak_sent;          /* one sequence NAK per expected PSN */
	uint8_t in_send, in_write; /* a multi-packet message in progress */
	uint8_t have_rwqe;
	uint16_t rwqe_idx;
	uint64_t off; /* bytes of the message so far */
	uint64_t cap; /* receive WQE capacity */
	/*
	 * The receive WQE and the WRITE target are resolved again at every
	 * packet, never kept across a release of the device lock: between two
	 * packets an MR may be deregistered and its memory file closed, and
	 * its descriptor number reused for another process's memory.
	 */
	const uint8_t *rwqe; /* the receive WQE taken */
	unsigned rwqe_nseg;
	struct emu_sg sg[EMU_MAX_SG]; /* scratch: the receive WQE, resolved */
	uint64_t wva;                 /* WRITE target (RETH) */
	uint32_t wrkey;
	/* Atomics executed, by PSN: a duplicate gets the same reply and is
	 * not executed twice (IB 9.7.7.4). */
	struct {
		uint32_t psn;
		uint8_t valid;
		uint8_t orig[8]; /* big-endian, as sent */
	} atom[16];
	unsigned atom_next;
	uint64_t wlen; /* WRITE DMA length (RETH) */
};

/* The path MTU of @qp in bytes. */
static inline uint32_t emu_mtu_bytes(const struct emu_qp *qp)
{
	return 256u << (qp->mtu > IBV_MTU_256 ? qp->mtu - IBV_MTU_256 : 0);
}

/* ---- wire_io.c ---- */
/* Send one packet to @to, through the fault injector. */
void emu_wire_xmit(struct emu_wire *w, const struct sockaddr_in *to, const uint8_t *pkt,
                   uint32_t len);
/* BTH at @p. */
void emu_wire_bth(uint8_t *p, uint8_t opcode, uint32_t dqpn, uint32_t psn, int ackreq);
/* Send an ACK/NAK (AETH @synd, PSN @psn) from @qp to its peer. */
void emu_wire_send_aeth(struct emu_qp *qp, uint8_t synd, uint32_t psn);

/* ---- wire_peer.c ---- */
/* 1 when @peer's socket is on this host and holds datagrams not yet read:
 * its device is off the CPU. 0 otherwise (gone, drained, another host). */
int emu_wire_peer_unread(const struct sockaddr_in *peer);

/* ---- wire_req.c ---- */
void emu_wire_req_rx(struct emu_qp *qp, const uint8_t *pkt, uint32_t len);

/* ---- wire_resp.c ---- */
void emu_wire_resp_rx(struct emu_qp *qp, const uint8_t *pkt, uint32_t len);

#endif /* SSQ_EMU_WIRE_PVT_H */
