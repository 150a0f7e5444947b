/* SPDX-License-Identifier: MIT */
/*
 * The peer exchange between two ssqd, as rc_pingpong does it: over one TCP
 * connection each side sends, per shared queue, its QP's address (LID, QPN,
 * PSN, GID) and where the peer may write (data arena IOVA and rkey), then
 * reads the other side's. Fixed-size binary messages, network byte order,
 * every field checked on receipt.
 */
#ifndef SSQ_CTRL_PEER_H
#define SSQ_CTRL_PEER_H

#include <stddef.h>
#include <stdint.h>
#include "shm/layout.h"

#define SSQ_PEER_VERSION 1u
#define SSQ_PEER_MSG_LEN 80u

struct ssq_peer_addr {
	uint16_t index; /* this queue's position, 0 .. count - 1 */
	uint16_t count; /* queues the sender shares */
	uint16_t lid;
	uint32_t qpn; /* 24 bits */
	uint32_t psn; /* 24 bits */
	uint8_t gid[16];
	uint64_t data_iova; /* the sender's data arena, for RDMA from the peer */
	uint32_t data_rkey;
	char name[SSQ_NAME_MAX];
};

/* Encode @a into exactly SSQ_PEER_MSG_LEN bytes at @out. */
void ssq_peer_encode(const struct ssq_peer_addr *a, uint8_t *out);

/*
 * ssq_peer_decode - check and decode one message of @n bytes. Returns 0, or
 * -EBADMSG / -EPROTO (another version) with the reason in @why: wrong
 * length or magic, QPN or PSN over 24 bits, index not below count, a count
 * of 0 or over SSQ_MAX_QUEUES, a name empty or not NUL-terminated; or
 * -ECONNREFUSED when the message is a refusal (ssq_peer_refuse), @why
 * then saying "peer refused: " and the peer's reason.
 */
int ssq_peer_decode(const uint8_t *buf, size_t n, struct ssq_peer_addr *a, char *why,
                    size_t whylen);

/*
 * ssq_peer_exchange - send @n local addresses on the connected TCP socket
 * @sock and read the peer's, which must number @n too and come in index
 * order, each within @timeout_ms. Returns 0, -ETIMEDOUT, -ENOTCONN, or a
 * decode error (with @why).
 */
int ssq_peer_exchange(int sock, const struct ssq_peer_addr *local,
                      struct ssq_peer_addr *remote, unsigned n, int timeout_ms, char *why,
                      size_t whylen);

/* A listening TCP socket on @port (all addresses), or a negative errno. */
int ssq_peer_listen(uint16_t port, char *why, size_t whylen);

/* Connect to "HOST:PORT", retrying for up to @timeout_ms. */
int ssq_peer_connect(const char *host_port, int timeout_ms, char *why, size_t whylen);

/*
 * One connection attempt that does not wait: a non-blocking socket whose
 * connect() is under way (poll it for POLLOUT, then call
 * ssq_peer_connect_finish), or a negative errno with @why.
 */
int ssq_peer_connect_start(const char *host_port, char *why, size_t whylen);

/* The attempt's outcome: 0 (the socket is now blocking), or -errno with @why. */
int ssq_peer_connect_finish(int s, const char *host_port, char *why, size_t whylen);

/* TCP keepalive on the kept connection, so a silent peer host is noticed too. */
void ssq_peer_keepalive(int s);

/*
 * Refuse the peer on @s: send one refusal message carrying @reason (its
 * exchange reports "peer refused: <reason>"), read and discard what it
 * sent for up to @drain_ms, close @s.
 */
void ssq_peer_refuse(int s, const char *reason, int drain_ms);

#endif /* SSQ_CTRL_PEER_H */
