/* SPDX-License-Identifier: MIT */
/*
 * The TCP link between two ssqd: over one connection each side sends, per
 * shared queue, its peer message (ctrl/proto/peer_msg.h), then reads the
 * other side's; the connection stays open so its close tells of the
 * peer's death.
 */
#ifndef SSQ_CTRL_DAEMON_PEER_LINK_H
#define SSQ_CTRL_DAEMON_PEER_LINK_H

#include <sys/socket.h>
#include "ctrl/proto/peer_msg.h"
#include "ctrl/daemon/peers/host_port.h"

/*
 * The exchange's halves: ssqd_link_send - our @n addresses; ssqd_link_recv
 * - the peer's @n, each in index order within @timeout_ms (each names its
 * sender in a cluster, its queue "qK" in the one-peer modes). The dialer
 * sends first; the accepting side reads first, to learn which peer
 * it is, then sends that peer's queues.
 */
int ssqd_link_send(int sock, const struct proto_peer_addr *local, unsigned n, char *why,
                   size_t whylen);
int ssqd_link_recv(int sock, struct proto_peer_addr *remote, unsigned n, int timeout_ms,
                   char *why, size_t whylen);
/*
 * A cluster's want (peer_msg.h): ssqd_link_send_want sends @name's on a
 * connected socket, without waiting; ssqd_link_recv returns
 * PROTO_PEER_WANT when the first message is one (its sender in
 * remote[0].name).
 */
int ssqd_link_send_want(int sock, const char *name, unsigned n, char *why, size_t whylen);

/*
 * ssqd_link_exchange - send @n local addresses on the connected TCP socket
 * @sock and read the peer's, which must number @n too and come in index
 * order, each within @timeout_ms. Returns 0, -ETIMEDOUT, -ENOTCONN, or a
 * decode error (with @why).
 */
int ssqd_link_exchange(int sock, const struct proto_peer_addr *local,
                       struct proto_peer_addr *remote, unsigned n, int timeout_ms,
                       char *why, size_t whylen);

/* Address @a, received @i-th of @n: its index and count as expected, or -EBADMSG. */
int ssqd_link_check_addr(const struct proto_peer_addr *a, unsigned i, unsigned n,
                         char *why, size_t whylen);

/*
 * @n address messages, SSQ_PEER_MSG_LEN bytes each, at @buf (read without
 * waiting, as they came): each decoded and checked into @remote. 0, or a
 * decode or order error with @why.
 */
int ssqd_link_decode_addrs(const uint8_t *buf, unsigned n, struct proto_peer_addr *remote,
                           char *why, size_t whylen);

/* A listening TCP socket on @port (all addresses), or a negative errno. */
int ssqd_link_listen(uint16_t port, char *why, size_t whylen);

/* Connect to "HOST:PORT", retrying for up to @timeout_ms. */
int ssqd_link_connect(const char *host_port, int timeout_ms, char *why, size_t whylen);

/*
 * One connection attempt that does not wait: a non-blocking socket whose
 * connect() is under way (poll it for POLLOUT, then call
 * ssqd_link_connect_finish), or a negative errno with @why.
 */
int ssqd_link_connect_start(const struct sockaddr *sa, socklen_t salen,
                            const char *host_port, char *why, size_t whylen);

/* The attempt's outcome: 0 (the socket is now blocking), or -errno with @why. */
int ssqd_link_connect_finish(int s, const char *host_port, char *why, size_t whylen);

/* TCP keepalive on the kept connection, so a silent peer host is noticed too. */
void ssqd_link_keepalive(int s);

/*
 * Refuse the peer on @s: send one refusal message carrying @reason (its
 * exchange reports "peer refused: <reason>"), read and discard what it
 * sent for up to @drain_ms, close @s.
 */
void ssqd_link_refuse(int s, const char *reason, int drain_ms);

#endif /* SSQ_CTRL_DAEMON_PEER_LINK_H */
