/* SPDX-License-Identifier: MIT */
/*
 * The peer message between two ssqd, as rc_pingpong exchanges it: per shared
 * queue, its QP's address (LID, QPN, PSN, GID), its port's link layer and
 * active MTU (the path MTU is the smaller of both ends'), how many
 * READs/atomics it takes as responder (the other end's initiator depth is
 * capped to it, as rdma_cm's responder_resources / initiator_depth
 * exchange does), and where the peer may write (data arena IOVA and rkey).
 * Fixed-size binary messages, network byte order, every field checked on
 * receipt.
 *
 * Versions: each message starts with a header (magic, version, count)
 * whose size every version keeps, so a reader learns the version before
 * it reads the rest and refuses another version with a reason instead of
 * reading a message of another size. Version 1 (80 bytes) lacked the link
 * layer, MTU and depth; version 2 is 88 bytes; version 3 adds the restart
 * message below; version 4 the authentication below (--peer-key), whose
 * MAC trailers make every message after it longer. A refusal keeps
 * version 1's 80-byte layout, so a version-1 ssqd can read one.
 */
#ifndef SSQ_CTRL_PROTO_PEER_MSG_H
#define SSQ_CTRL_PROTO_PEER_MSG_H

#include <stddef.h>
#include <stdint.h>
#include "shm/layout.h"

#define SSQ_PEER_VERSION     4u
#define SSQ_PEER_MSG_LEN     88u /* the address message, since version 2 */
#define SSQ_PEER_REFUSAL_LEN 80u
#define SSQ_PEER_HEAD_LEN    8u /* magic, version, count: the same in every version */

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
	uint8_t link_layer; /* IBV_LINK_LAYER_INFINIBAND or _ETHERNET */
	uint8_t mtu;        /* the port's active MTU, IBV_MTU_256 .. IBV_MTU_4096 */
	uint8_t rd_atom;    /* READs/atomics it takes as responder, 1 .. 255 */
};

/*
 * After the exchange the connection carries one message more, both ways:
 * one queue's restart. A host that must reset a queue's QP (ssqd found its
 * control block scribbled, or took a stalled hold back) cannot bring it
 * back alone: its first PSNs again would fall in the peer QP's duplicate
 * window, and the peer would acknowledge WRITEs it never executes. So the
 * asker picks both new PSNs and sends ASK {index, seq, psn: the asker's
 * send PSN, peer_psn: the answerer's}; the answerer resets its own QP of
 * that queue to them and sends DONE {index, seq, status: 0, or the errno
 * its restart failed with}. 24 bytes, the header as every message's.
 */
#define SSQ_PEER_RESTART_LEN 24u
enum proto_restart_kind {
	PROTO_RESTART_ASK = 1,
	PROTO_RESTART_DONE = 2,
	/*
	 * The same message tells, on a cluster's link, whether the sender has
	 * a queue of this peer open (BUSY) or none (IDLE): a link is closed
	 * for --idle-ms or --max-active-peers only when both sides are idle.
	 * Index, seq, status and PSNs 0.
	 */
	PROTO_LINK_BUSY = 3,
	PROTO_LINK_IDLE = 4,
	/*
	 * The sender would close the link, idle at both ends as far as it
	 * knows (--idle-ms): the receiver closes it if it has nothing of it
	 * open either, or answers BUSY. Either side's word on idleness may be
	 * stale (a client just attached, its BUSY under way): only the side
	 * that closes knows it has nothing open.
	 */
	PROTO_LINK_CLOSE = 5,
};
struct proto_peer_restart {
	uint16_t index;    /* the queue, below the link's count */
	uint8_t kind;      /* enum proto_restart_kind */
	uint8_t status;    /* DONE: 0 or a positive errno */
	uint32_t seq;      /* the asker's, echoed by DONE */
	uint32_t psn;      /* ASK: the asker's new send PSN (24 bits) */
	uint32_t peer_psn; /* ASK: the answerer's new send PSN (24 bits) */
};

/* Encode @r, for a link of @count queues, into SSQ_PEER_RESTART_LEN bytes. */
void proto_peer_encode_restart(const struct proto_peer_restart *r, uint16_t count,
                               uint8_t *out);

/*
 * proto_peer_decode_restart - check and decode a restart message of @n
 * bytes on a link of @count queues: -EBADMSG with @why for a wrong length
 * or magic, another count, an index not below it, an unknown kind or
 * status, a PSN over 24 bits; -EPROTO for another version.
 */
int proto_peer_decode_restart(const uint8_t *buf, size_t n, uint16_t count,
                              struct proto_peer_restart *r, char *why, size_t whylen);

/*
 * A cluster links a pair on demand, and only the daemon whose name sorts
 * first dials for the exchange. When the other one's client opens a queue
 * to it first, it connects just to send WANT {its name} and closes: the
 * first dials back. 40 bytes: the header (count: --queues), then the name
 * (SSQ_NAME_MAX, NUL-terminated).
 */
#define SSQ_PEER_WANT_LEN 40u
#define PROTO_PEER_WANT   1
void proto_peer_encode_want(const char *name, uint16_t count, uint8_t *out);

/*
 * Authentication (version 4, when both daemons have --peer-key): before
 * anything else the dialer sends HELLO {its name, a fresh nonce, the link
 * generation}; the acceptor answers CHALLENGE {its name, its nonce, its
 * MAC}; the dialer answers PROOF {its MAC}. Each MAC is HMAC-SHA256 under
 * the cluster key of a direction label, both nonces, both names and the
 * generation (ctrl/daemon/peers/auth.c), so each side proves it holds the
 * key for this connection only. From then on every message on the
 * connection (addresses, want, restarts, busy/idle/close) is followed by
 * SSQ_PEER_MAC_LEN bytes: a MAC under a key derived from the same
 * transcript, over the direction, a per-direction sequence number and the
 * message, so a message replayed, reordered or carried to another
 * connection fails. A refusal carries none (it only ends an attempt).
 * 112 bytes: the header (count: --queues), kind, 3 zero bytes, the
 * generation, a name (SSQ_NAME_MAX, NUL-terminated), a nonce, a MAC;
 * fields a kind does not use are zero.
 */
#define SSQ_PEER_AUTH_LEN  112u
#define SSQ_PEER_NONCE_LEN 32u
#define SSQ_PEER_MAC_LEN   32u /* HMAC-SHA256 */
enum proto_auth_kind {
	PROTO_AUTH_HELLO = 1,
	PROTO_AUTH_CHALLENGE = 2,
	PROTO_AUTH_PROOF = 3,
};
struct proto_peer_auth {
	uint8_t kind;   /* enum proto_auth_kind */
	uint16_t count; /* the sender's --queues */
	uint32_t gen;   /* HELLO: the dialer's link generation; echoed */
	char name[SSQ_NAME_MAX];
	uint8_t nonce[SSQ_PEER_NONCE_LEN];
	uint8_t mac[SSQ_PEER_MAC_LEN];
};
void proto_peer_encode_auth(const struct proto_peer_auth *a, uint8_t *out);
/*
 * proto_peer_decode_auth - check and decode an authentication message of
 * @n bytes: -EBADMSG with @why for a wrong length or magic, an unknown
 * kind, a name not NUL-terminated; -EPROTO for another version.
 */
int proto_peer_decode_auth(const uint8_t *buf, size_t n, struct proto_peer_auth *a,
                           char *why, size_t whylen);

/*
 * Tenants (ssqd --tenants uid|gid, ctrl/daemon/tenants.c): on a host that
 * runs them, each uid (gid) has an ssqd of its own with its own QPs, and
 * a link joins one tenant's queues on both hosts. So a daemon of a tenant
 * sends TENANT {kind, id} before anything else on each connection it
 * makes to the peer port; the ssqd that owns the port reads it (and not a
 * byte more) and hands the connection to that tenant's ssqd, which goes
 * on with the rest (HELLO, or addresses, or a want) as any acceptor.
 * With --peer-key the kind and id are in what both sides MAC
 * (peers/auth.c), so a connection steered to another tenant fails its
 * authentication. A daemon without --tenants refuses a TENANT, and one
 * with --tenants a first message that is not one, saying which runs what.
 * 16 bytes: the header (count: --queues), kind, 3 zero bytes, the id.
 */
#define SSQ_PEER_TENANT_LEN 16u
enum proto_tenant_kind {
	PROTO_TENANT_UID = 1, /* id: a uid (the same number means the same user
	                         on both hosts, as NFS without idmapping) */
	PROTO_TENANT_GID = 2, /* id: a gid */
};
struct proto_peer_tenant {
	uint8_t kind; /* enum proto_tenant_kind */
	uint16_t count;
	uint32_t id;
};
void proto_peer_encode_tenant(const struct proto_peer_tenant *t, uint8_t *out);
/*
 * proto_peer_decode_tenant - check and decode a TENANT of @n bytes:
 * -EBADMSG with @why for a wrong length or magic, an unknown kind, nonzero
 * padding; -EPROTO for another version.
 */
int proto_peer_decode_tenant(const uint8_t *buf, size_t n, struct proto_peer_tenant *t,
                             char *why, size_t whylen);

/* Encode @a into exactly SSQ_PEER_MSG_LEN bytes at @out. */
void proto_peer_encode(const struct proto_peer_addr *a, uint8_t *out);

/*
 * proto_peer_msg_len - from a message's first SSQ_PEER_HEAD_LEN bytes, how
 * long the whole message is: SSQ_PEER_MSG_LEN for an address,
 * SSQ_PEER_REFUSAL_LEN for a refusal, SSQ_PEER_RESTART_LEN for a restart,
 * SSQ_PEER_WANT_LEN for a want, SSQ_PEER_AUTH_LEN for an authentication
 * message, SSQ_PEER_TENANT_LEN for a tenant's (none of them counting a MAC
 * trailer);
 * or -EBADMSG (no magic) / -EPROTO (another version: "peer speaks exchange
 * version N, this ssqd 4") with
 * the reason in @why.
 */
int proto_peer_msg_len(const uint8_t *head, char *why, size_t whylen);

/*
 * proto_peer_decode - check and decode one address message of @n bytes.
 * Returns 0, or -EBADMSG / -EPROTO (another version) with the reason in
 * @why: a restart message where an address is due, wrong
 * length or magic, QPN or PSN over 24 bits, index not below count, a count
 * of 0 or over SSQ_MAX_QUEUES, a name empty or not NUL-terminated, a link
 * layer, MTU or responder depth out of range; or -ECONNREFUSED when the
 * message is a refusal (ssqd_link_refuse, SSQ_PEER_REFUSAL_LEN bytes), @why
 * then saying "peer refused: " and the peer's reason; or PROTO_PEER_WANT
 * (positive) for a want, @a->name and @a->count then its only fields.
 */
int proto_peer_decode(const uint8_t *buf, size_t n, struct proto_peer_addr *a, char *why,
                      size_t whylen);

/*
 * Encode a refusal carrying @reason (cut to fit) into exactly
 * SSQ_PEER_REFUSAL_LEN bytes at @out; the peer's decode returns
 * -ECONNREFUSED with it.
 */
void proto_peer_encode_refusal(const char *reason, uint8_t *out);

#endif /* SSQ_CTRL_PROTO_PEER_MSG_H */
