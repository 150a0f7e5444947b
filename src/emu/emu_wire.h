/* SPDX-License-Identifier: MIT */
/*
 * emu/emu_wire.h - the emulated device's wire (wire*.c): RC between
 * devices in different processes, over UDP, with its fault injection and
 * counters. Part of emu/emu.h, which includes it; the devices and QPs
 * named here are made by emu.h's calls.
 */
#ifndef SSQ_EMU_WIRE_H
#define SSQ_EMU_WIRE_H

#include <ssq/common.h>

#ifdef __cplusplus
extern "C" {
#endif

struct emu_dev;
struct emu_qp;

/*
 * A QP whose peer is in another process (another device) talks to it over
 * UDP: one datagram per packet, the UDP payload a RoCE v2 transport packet
 * without ICRC (IBTA vol. 1 ch. 9, big-endian): BTH (12 bytes: opcode,
 * flags, P_Key; destination QPN; AckReq bit 31 | PSN), then RETH (16: VA,
 * R_Key, DMA length) on RDMA WRITE FIRST / ONLY and RDMA READ requests,
 * ImmDt (4) on *_IMM, AETH (4: syndrome, MSN) on ACKNOWLEDGE, ATOMIC
 * ACKNOWLEDGE and READ response FIRST / LAST / ONLY, AtomicETH (28: VA,
 * R_Key, swap or add, compare) on CMP_SWAP / FETCH_ADD, AtomicAckETH (8:
 * the original value) on ATOMIC ACKNOWLEDGE, then the payload. Messages (and READ
 * responses) longer than the path MTU go as FIRST / MIDDLE... / LAST
 * packets, AckReq on the last; a READ request takes one PSN per response
 * packet.
 *
 * Recipe, per process:
 *	emu_wire_open(dev, "127.0.0.1:0", addr, sizeof(addr));
 *	exchange addr, QPN and PSNs with the other process (out of band)
 *	emu_qp_set_remote(qp, peer_addr);   in RESET or INIT
 *	emu_modify_qp() to RTR (dest_qp_num, rq_psn), RTS (sq_psn, ...)
 *
 * Reliable connection as the QP attributes say:
 *  - PSNs start at sq_psn (requester) and rq_psn (responder); the
 *    responder acknowledges cumulatively (one ACK per process() pass and QP
 *    at most), re-acknowledges duplicates and NAKs the first out-of-sequence
 *    packet (PSN sequence error) once per expected PSN.
 *  - A send WQE stays outstanding (its SQ slot is not completed, so the
 *    producer cannot reuse it) until its last packet is acknowledged; then
 *    signaled WQEs give REQ CQEs in order, exactly as without the wire.
 *  - Go-back-N: a sequence NAK, or no progress for the local ACK timeout,
 *    sends again from the oldest unacknowledged PSN. Timeout: IB encoding,
 *    4.096 us * 2^timeout, at least 1 ms (so a loaded test host does not
 *    time out spuriously); timeout 0: infinite. retry_cnt timeouts in a row
 *    without progress, then the WQE completes in TRANSPORT_RETRY_EXC_ERR
 *    and the QP goes to ERR and flushes: a dead peer is found within
 *    timeout * (retry_cnt + 1). An expiry while the peer's socket, on this
 *    host, holds datagrams it has not read is not counted (its process is
 *    off the CPU or stopped, where a NIC's responder never is): such a
 *    peer is waited for; one whose socket is gone (it died) or drained (it
 *    runs, and ignores us) is not.
 *  - SEND / SEND_IMM / WRITE_IMM with no receive WQE posted: RNR NAK with
 *    the responder's min_rnr_timer; the requester waits that long and
 *    retries, rnr_retry times (7: forever), then RNR_RETRY_EXC_ERR.
 *  - RDMA READ and atomics: at most max_rd_atomic (0 counts as 1) of them
 *    outstanding; their responses implicitly acknowledge the requests
 *    before them; an ACK past one whose response is missing, or a response
 *    after a gap, makes the requester ask again (a READ only for the part
 *    not received). The responder executes a duplicate READ again, but
 *    answers a duplicate atomic from the original values it keeps for its
 *    last 16 atomics, without executing it twice. The REQ CQE's byte_cnt is
 *    the length read (8 for atomics, whose original value lands
 *    in host order; the AtomicAckETH carries it big-endian). A responder with
 *max_dest_rd_atomic 0, or an atomic target not 8-byte aligned: NAK invalid request.
 *  - A bad R_Key, range or access: NAK remote access error, the requester
 *    gets REMOTE_ACCESS_ERR, the responder QP goes to ERR. A receive WQE
 *    too small: responder RESP_ERR LOCAL_LENGTH_ERR, requester
 *    REMOTE_INVAL_REQ_ERR.
 * Over the wire: SEND, SEND_IMM, RDMA_WRITE, RDMA_WRITE_IMM, RDMA_READ,
 * ATOMIC_CS, ATOMIC_FA and NOP; other opcodes complete with
 * LOCAL_QP_OP_ERR. Packets to an unknown QPN, or to a QP not in RTR /
 * RTS, are dropped, as a lost packet. With a wire, emu_process() also
 * receives the datagrams waiting and sends ACKs and retransmissions; its
 * return value then counts packets received and sent as work done too.
 */

/* Wire fault injection, applied to every packet the device sends. */
struct emu_wire_fault {
	double drop;       /* fraction of packets dropped, 0 .. 1 */
	double dup;        /* fraction sent twice */
	double reorder;    /* fraction held back until after later packets */
	double delay;      /* fraction held delay_us */
	uint32_t delay_us; /* hold time of delayed packets; 0 means 100 us */
	uint64_t seed;     /* random generator seed; 0 means 1 */
};

/*
 * emu_wire_open - give @dev its wire: a non-blocking UDP socket bound to
 * @bind_addr ("a.b.c.d:port", IPv4; port 0 picks one; NULL means
 * "127.0.0.1:0"). Writes the bound "a.b.c.d:port" to @local_out (@len bytes
 * incl. NUL; may be NULL). Reads SSQ_EMU_WIRE_FAULT (same items as
 * emu_wire_parse_fault; a bad value prints a line on stderr and fails).
 * Datagrams are received and packets sent by emu_process() (or the
 * device thread); nothing blocks.
 * Returns 0, -EINVAL (bad address or environment value, NULL @dev),
 * -EEXIST (already open), -ENOSPC (@local_out too small), -ENOMEM, or the
 * negative errno of socket / bind.
 */
int emu_wire_open(struct emu_dev *dev, const char *bind_addr, char *local_out,
                  size_t len);

/*
 * emu_qp_set_remote - make @qp's peer the QP dest_qp_num at the wire
 * address @addr ("a.b.c.d:port", as emu_wire_open reported it there),
 * or, @addr NULL, a QP of this device again (the default). Only in RESET or
 * INIT, and only on a device with a wire.
 * Returns 0, -EINVAL (bad address, NULL @qp, no wire, other state), -ENOMEM.
 */
int emu_qp_set_remote(struct emu_qp *qp, const char *addr);

/*
 * emu_wire_parse_fault - parse "item[,item...]" into @f (zeroed first):
 * drop=P, dup=P, reorder=P, delay=P (fractions 0..1), delay_us=N, seed=S.
 * Returns 0, or -EINVAL naming the bad item on stderr.
 */
int emu_wire_parse_fault(const char *s, struct emu_wire_fault *f);

/*
 * emu_wire_set_fault - replace the wire faults of @dev (NULL @f: none)
 * and reseed. Returns 0, or -EINVAL (NULL @dev, no wire, a fraction out
 * of 0..1). Any thread.
 */
int emu_wire_set_fault(struct emu_dev *dev, const struct emu_wire_fault *f);

/* Wire counters since emu_wire_open, free-running. */
struct emu_wire_stats {
	uint64_t tx_pkts;     /* packets handed to the wire (before faults) */
	uint64_t rx_pkts;     /* datagrams received */
	uint64_t dropped;     /* by the drop fault */
	uint64_t duplicated;  /* by the dup fault */
	uint64_t held;        /* by the reorder and delay faults */
	uint64_t retransmits; /* request packets sent again (go-back-N) */
	uint64_t timeouts;    /* ACK timer expiries counted as retries */
	uint64_t peer_waits;  /* expiries not counted: the peer had not read */
	uint64_t seq_naks;    /* PSN sequence NAKs sent */
	uint64_t rnr_naks;    /* RNR NAKs sent */
	uint64_t duplicates;  /* duplicate requests received (re-ACKed) */
};

/* Copy @dev's wire counters to @st. Returns 0, or -EINVAL (NULL, no wire). */
int emu_wire_stats(struct emu_dev *dev, struct emu_wire_stats *st);

#ifdef __cplusplus
}
#endif

#endif /* SSQ_EMU_WIRE_H */
