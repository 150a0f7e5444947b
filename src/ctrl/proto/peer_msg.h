/* SPDX-License-Identifier: MIT */
/*
 * The peer message between two ssqd, as rc_pingpong exchanges it: per shared
 * queue, its QP's address (LID, QPN, PSN, GID) and where the peer may write
 * (data arena IOVA and rkey). Fixed-size binary messages, network byte
 * order, every field checked on receipt.
 */
#ifndef SSQ_CTRL_PROTO_PEER_MSG_H
#define SSQ_CTRL_PROTO_PEER_MSG_H

#include <stddef.h>
#include <stdint.h>
#include "shm/layout.h"

#define SSQ_PEER_VERSION 1u
#define SSQ_PEER_MSG_LEN 80u

struct proto_peer_addr {
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
void proto_peer_encode(const struct proto_peer_addr *a, uint8_t *out);

/*
 * proto_peer_decode - check and decode one message of @n bytes. Returns 0, or
 * -EBADMSG / -EPROTO (another version) with the reason in @why: wrong
 * length or magic, QPN or PSN over 24 bits, index not below count, a count
 * of 0 or over SSQ_MAX_QUEUES, a name empty or not NUL-terminated; or
 * -ECONNREFUSED when the message is a refusal (ssqd_link_refuse), @why
 * then saying "peer refused: " and the peer's reason.
 */
int proto_peer_decode(const uint8_t *buf, size_t n, struct proto_peer_addr *a, char *why,
                      size_t whylen);

/*
 * Encode a refusal carrying @reason (cut to fit) into exactly
 * SSQ_PEER_MSG_LEN bytes at @out; the peer's decode returns -ECONNREFUSED
 * with it.
 */
void proto_peer_encode_refusal(const char *reason, uint8_t *out);

#endif /* SSQ_CTRL_PROTO_PEER_MSG_H */
