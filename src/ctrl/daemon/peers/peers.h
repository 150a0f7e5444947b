/* SPDX-License-Identifier: MIT */
/*
 * peers/: the links to other hosts' ssqd - the link's life (peer.c, and
 * bring.c, events.c, tick.c, closing.c, demand.c: link_life.h), links
 * coming in (accept.c), the wire of the exchange (link.c, host_port.c),
 * address lookups off the loop (lookup.c), a cluster's options (opts.c),
 * RECOVER's relink (relink.c), a queue's restart with the peer (restart.c),
 * peers proving who they are (auth.c), tenants' links (tenant.c).
 */
#ifndef SSQ_CTRL_DAEMON_PEERS_H
#define SSQ_CTRL_DAEMON_PEERS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include "ctrl/daemon/ssqd.h"
#include "ctrl/proto/peer_msg.h"

/* How long a connected peer has for its first message or its addresses: it sends at once.
 */
#define SSQD_PEER_EXCHANGE_MS 5000

/*
 * The peers and their links (peers/peer.c; events: events.c; ticks: tick.c;
 * the queues brought up: bring.c).
 * ssqd_peers_init - d->peers from the options: none (loopback), the one
 *   peer of --listen or --connect, or --peer/--peers' cluster, each peer
 *   its opt.peer_queues queues from q0 on; in a cluster the daemon whose
 *   name sorts first dials, the other accepts.
 * ssqd_queue_peer - queue @qi's peer, or NULL for a loopback queue.
 * ssqd_peer_events - what poll() says of @p's fd (the peer closed: lost;
 *   a dial finished: exchange and (re-)bring its queues up; restart
 *   messages: peers/restart.c).
 * ssqd_peer_tick - once per serve loop: drop a peer whose restart went
 *   unanswered, start a dial that is due, drop one unanswered for 2 s.
 * ssqd_peer_lost - forget @p's link: its queues listed as not ready
 *   (requests in flight end as the transport decides, retry-exceeded); a
 *   peer ssqd dials is dialed again with backoff.
 * ssqd_peer_rebring - @p knocked on the socket @s with its addresses
 *   @remote (peers/accept.c): fresh PSNs, ours sent, then each of its
 *   queues connected (the first time) or fenced, drained and taken RESET
 *   -> INIT -> RTR -> RTS against the new addresses (ssqd_queue_recover),
 *   and published READY. On any failure its queues are left in ERROR and
 *   @s is not kept. Returns 0 (p->fd = @s) or a negative errno with @why.
 * ssqd_peer_fence_all - @p's queues to ERROR (listed, shared state, QP).
 * ssqd_peer_down - nonzero when queue @qi's peer is not linked now; @why
 *   says so.
 */
void ssqd_peers_init(struct ssqd *d);
void ssqd_peer_events(struct ssqd *d, struct ssqd_peer *p, short revents);
void ssqd_peer_tick(struct ssqd *d);
void ssqd_peer_lost(struct ssqd *d, struct ssqd_peer *p, const char *reason);
int ssqd_peer_rebring(struct ssqd *d, struct ssqd_peer *p, int s,
                      const struct proto_peer_addr *remote, char *why, size_t whylen);
void ssqd_peer_fence_all(struct ssqd *d, struct ssqd_peer *p);
/* @p's connection closed, whatever it was (a dial, a want, the link). */
void ssqd_peer_close_link(struct ssqd *d, struct ssqd_peer *p);
/*
 * ssqd_peer_link_to - the one place a link's state changes: @p's link
 * from its state to @to, on connection @fd (-1 for SSQD_LINK_IDLE; the
 * caller closes the old one, if any), logged when SSQD_TRACE_LINKS is set.
 * ssqd_link_up - the peer's queues are up over the link (LINKED, or
 * CLOSING, which is linked until the peer closes).
 */
void ssqd_peer_link_to(struct ssqd *d, struct ssqd_peer *p, enum ssqd_link_state to,
                       int fd);
static inline int ssqd_link_up(const struct ssqd_peer *p)
{
	return p->link == SSQD_LINK_LINKED || p->link == SSQD_LINK_CLOSING;
}
/* "peer NAME", or "the peer ssqd" in a one-peer mode, for the logs. */
const char *ssqd_peer_str(const struct ssqd_peer *p, char *buf, size_t len);
/* In a cluster: @remote (opt.peer_queues addresses) all came from @p. */
int ssqd_peer_check_sender(const struct ssqd *d, const struct ssqd_peer *p,
                           const struct proto_peer_addr *remote, char *why,
                           size_t whylen);
/*
 * ssqd_peer_make_room - room for @p under --max-active-peers (the least
 * recently used idle link closed; with @ask, asked to close first:
 * -EINPROGRESS until it has), or -EBUSY with @why.
 * ssqd_peer_want_from - a want from daemon @name (at @from): dial it. 0,
 *   or -EBUSY with @no, a reason short enough for a refusal, when
 *   --max-active-peers leaves no room.
 */
int ssqd_peer_make_room(struct ssqd *d, struct ssqd_peer *p, int ask, char *why,
                        size_t whylen);
int ssqd_peer_want_from(struct ssqd *d, const char *name, const char *from, char *no,
                        size_t nolen);

/*
 * Links coming in, without waiting on any (peers/accept.c):
 * ssqd_accept_peer - accept on the peer port: a knock, read as it comes;
 * ssqd_knock_events - what poll() says of knock @k: read, and once its
 *   first message is whole, act on it (a want, or the exchange: tell which
 *   peer and bring its queues up, or refuse it saying why);
 * ssqd_knocks_tick - knocks past their deadline closed.
 */
void ssqd_knocks_init(struct ssqd *d);
void ssqd_accept_peer(struct ssqd *d);
/*
 * --tenants (peers/tenant.c):
 * ssqd_knock_adopt - in a tenant's ssqd: connection @s to the peer port,
 *   its TENANT read by the parent that handed it over, taken as a knock.
 * ssqd_knock_handed - knock @k (routed 2) handed to its tenant's ssqd:
 *   our copy closed, its slot free (@ok), or refused with @why.
 * ssqd_peer_tenant - the tenant this ssqd serves on its links: its kind
 *   (PROTO_TENANT_UID or _GID) and id in *@id; 0 without tenants.
 * ssqd_tenant_kind_str - "uid", "gid" or "none" for such a kind.
 * ssqd_peer_tenant_ok - whether a link may name tenant @id here: only one
 *   whose ssqd runs (a local client's connection started it, or the
 *   command line named it); a peer's link never starts one.
 * ssqd_peer_tenant_none - the refusal of a link for tenant @id (of @kind)
 *   that has no ssqd here, in @why (short enough for a refusal).
 * ssqd_link_send_tenant - a tenant's daemon: TENANT first on connection
 *   @s (nothing without tenants). 0, or -EIO with @why.
 */
void ssqd_knock_adopt(struct ssqd *d, int s);
void ssqd_knock_handed(struct ssqd *d, struct ssqd_knock *k, int ok, const char *why);
int ssqd_peer_tenant(const struct ssqd *d, uint32_t *id);
const char *ssqd_tenant_kind_str(int kind);
int ssqd_peer_tenant_ok(const struct ssqd *d, uint32_t id);
void ssqd_peer_tenant_none(int kind, uint32_t id, char *why, size_t whylen);
int ssqd_link_send_tenant(const struct ssqd *d, int s, char *why, size_t whylen);
void ssqd_knock_events(struct ssqd *d, struct ssqd_knock *k, short revents);
void ssqd_knocks_tick(struct ssqd *d, uint64_t now);
/*
 * A client's RECOVER of a queue to another host (peers/relink.c), answered
 * from the serve loop (clients/recover.c):
 * ssqd_peer_relink_start - queue @qi in error: its link closed and made
 *   again (dialed at once, or awaited), so that both hosts bring the
 *   peer's queues up with a fresh exchange. 0, or -EINVAL (not in error)
 *   with @why;
 * ssqd_peer_relinking - the deadline of a RECOVER under way on any queue
 *   of queue @qi's peer (another RECOVER of one of them joins it), or 0;
 * ssqd_peer_relink_done - one look: 0 when the link is back and the queue
 *   out of error, 1 while @deadline_ns is ahead, else -EHOSTDOWN with @why.
 * SSQD_RELINK_MS: how long a RECOVER waits for the peer.
 */
int ssqd_peer_relink_start(struct ssqd *d, unsigned qi, char *why, size_t whylen);
uint64_t ssqd_peer_relinking(const struct ssqd *d, unsigned qi);
int ssqd_peer_relink_done(struct ssqd *d, unsigned qi, uint64_t deadline_ns, char *why,
                          size_t whylen);
int ssqd_peer_down(struct ssqd *d, unsigned qi, char *why, size_t whylen);
/*
 * On demand (peers/demand.c; closing an idle link: peers/closing.c):
 * ssqd_peer_want - a client opens queue @qi, which is not ready: the
 *   link is wanted from now on (dialed, or the peer asked to dial), or,
 *   linked with the queue fenced and nobody holding it, started over.
 *   -EINPROGRESS with @why saying how far it got; -EBUSY when
 *   --max-active-peers are all in use; -EIO for a queue that cannot come
 *   back; 0 outside a cluster.
 * ssqd_peer_in_use - whether a client has one of @p's queues open.
 * ssqd_peer_close_idle - close @p's link though it is healthy (idle, or
 *   room for another under --max-active-peers): its queues fenced, not
 *   wanted until a client opens one again.
 */
int ssqd_peer_want(struct ssqd *d, unsigned qi, char *why, size_t whylen);
/* Peer @i as a client's PEER request shows it (0, or -ENOENT with @why). */
struct proto_msg_peer_reply;
int ssqd_peer_info(struct ssqd *d, unsigned i, struct proto_msg_peer_reply *r, char *why,
                   size_t whylen);
int ssqd_peer_in_use(const struct ssqd *d, const struct ssqd_peer *p);
void ssqd_peer_close_idle(struct ssqd *d, struct ssqd_peer *p, const char *reason);

/*
 * A queue's restart with the peer host (peers/restart.c; the message is
 * peer_msg.h's):
 * ssqd_peer_linked - nonzero when queue @qi is connected to another host's
 *   ssqd over a live link: a reset of its QP then needs the peer's QP
 *   restarted too;
 * ssqd_link_restart - after ssq_ctl_quiesce: the QP to RESET, the control
 *   block rebuilt but held RESTARTING (what was in flight flushed to its
 *   owners), and the peer asked to restart its QP at two fresh PSNs; the
 *   queue comes back READY when the peer answers (ssqd_link_input). 0, or
 *   -errno with @why (the queue then in error);
 * ssqd_link_input - read what @p's link has (restart asks and answers) and
 *   act on it; 0, 1 when the peer asks to close the link as idle (the
 *   caller closes it or answers BUSY), or -errno with @why when the peer
 *   broke the protocol or the link closed (the caller drops the peer);
 * ssqd_link_restart_overdue - 1 (and @why) when an ask to @p has gone
 *   unanswered past its deadline: the peer is not working, drop it;
 * ssqd_link_restart_abandon - every ask to @p under way given up: its
 *   queue fenced (in error, for the link's re-bring to recover).
 */
int ssqd_peer_linked(struct ssqd *d, unsigned qi);
int ssqd_link_restart(struct ssqd *d, unsigned qi, char *why, size_t whylen);
int ssqd_link_input(struct ssqd *d, struct ssqd_peer *p, char *why, size_t whylen);
int ssqd_link_restart_overdue(const struct ssqd *d, const struct ssqd_peer *p,
                              uint64_t now_ns, char *why, size_t whylen);
void ssqd_link_restart_abandon(struct ssqd *d, struct ssqd_peer *p);
/* Tell @p whether a client here has one of its queues open (@busy), if changed. */
int ssqd_link_tell_busy(struct ssqd *d, struct ssqd_peer *p, int busy, char *why,
                        size_t whylen);
/* Ask @p to close the link, idle at both ends as far as this side knows. */
int ssqd_link_ask_close(struct ssqd *d, struct ssqd_peer *p, char *why, size_t whylen);
/*
 * 1 while queue @qi's link is being closed for --idle-ms (the peer asked to
 * agree): an open waits and links it again (ssqd_peer_want).
 */
int ssqd_peer_closing(struct ssqd *d, unsigned qi);

/*
 * Authenticated peers, --peer-key (peers/auth.c; the messages: peer_msg.h):
 * ssqd_peer_key_load - @path into d->peer_key: refused (-EPERM, -EINVAL,
 *   or open's errno, with @why naming the file and what is wrong) unless a
 *   regular file owned by ssqd's uid, of mode no wider than 0600, of 32 to
 *   1024 bytes.
 * ssqd_peer_auth_init - at start: the key loaded and each peer's host
 *   looked up once (the sources its links may come from); without
 *   --peer-key, one warning that peers are unauthenticated. 0 or -errno.
 * ssqd_peer_src_ok - whether a connection from @ip may be peer @p's.
 * ssqd_auth_failed - one failed authentication from @ip, counted and
 *   logged with the sentence @fmt: @ip's 1st to 4th, then its 8th, 16th...
 *   (rate-limited besides); returns its count.
 * ssqd_auth_hello - the dialer's first message on @s, a fresh nonce.
 * ssqd_auth_answer - the dialer: the acceptor's CHALLENGE @c checked
 *   (-EACCES: it does not hold the key; -EBADMSG: not for this dial), our
 *   PROOF sent on p->fd, p->auth on.
 * ssqd_auth_challenge - the acceptor: HELLO @h in, CHALLENGE sent.
 * ssqd_auth_check_proof - the acceptor: PROOF @pr checked (-EACCES: a wrong
 *   key), k->auth on.
 * ssqd_link_auth_dial (peers/link.c) - the dialer's whole handshake on
 *   connected @s, waiting (--connect's first link, made at start): HELLO,
 *   CHALLENGE checked, PROOF; p->auth on. 0, or -errno with @why
 *   (-ECONNREFUSED: refused).
 * ssqd_auth_seal - the MAC of message @msg of @n bytes out on @a's
 *   connection, into @mac (SSQ_PEER_MAC_LEN bytes); the next seq.
 * ssqd_auth_open - message @msg in on @a's connection: its @mac checked
 *   against the next seq. 0, or -EBADMSG with @why.
 * ssqd_auth_trailer - the bytes a MAC adds to each message on @a: 0 off.
 */
int ssqd_peer_key_load(struct ssqd *d, const char *path, char *why, size_t whylen);
int ssqd_peer_auth_init(struct ssqd *d, char *why, size_t whylen);
int ssqd_peer_src_ok(const struct ssqd_peer *p, const struct in6_addr *ip);
unsigned ssqd_auth_failed(struct ssqd *d, const struct in6_addr *ip, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int ssqd_auth_hello(struct ssqd *d, struct ssqd_peer *p, int s, char *why, size_t whylen);
int ssqd_auth_answer(struct ssqd *d, struct ssqd_peer *p, const struct proto_peer_auth *c,
                     char *why, size_t whylen);
int ssqd_auth_challenge(struct ssqd *d, struct ssqd_knock *k,
                        const struct proto_peer_auth *h, char *why, size_t whylen);
int ssqd_auth_check_proof(struct ssqd *d, struct ssqd_knock *k,
                          const struct proto_peer_auth *pr, char *why, size_t whylen);
int ssqd_link_auth_dial(struct ssqd *d, struct ssqd_peer *p, int s, int timeout_ms,
                        char *why, size_t whylen);
int ssqd_auth_seal(struct ssqd_link_auth *a, const uint8_t *msg, size_t n, uint8_t *mac);
int ssqd_auth_open(struct ssqd_link_auth *a, const uint8_t *msg, size_t n,
                   const uint8_t *mac, char *why, size_t whylen);
static inline unsigned ssqd_auth_trailer(const struct ssqd_link_auth *a)
{
	return a && a->on ? SSQ_PEER_MAC_LEN : 0;
}

/*
 * ssqd_peer_lookup (peers/lookup.c) - @p's address for a dial into
 * p->lk_sa without waiting on a lookup: 0, -EINPROGRESS while a host name
 * is looked up (ask again at the next tick), or -errno, saying why in @why.
 * ssqd_peer_lookup_stale: a dial failed; the next dial looks it up again
 * (using the old answer meanwhile).
 */
int ssqd_peer_lookup(struct ssqd_peer *p, char *why, size_t whylen);
void ssqd_peer_lookup_stale(struct ssqd_peer *p);

/*
 * A cluster's options: --name, --peer NAME=HOST:PORT and --peers FILE (one
 * "NAME HOST:PORT" a line, '#' comments: the hostfile convention of MPI
 * launchers, this daemon's own line giving it loopback queues). Each returns 0 or
 * -EINVAL with a sentence naming what was wrong in @why.
 */

/* One --peer NAME=HOST:PORT; @where names it in errors. */
int ssqd_peer_opt(struct ssqd_options *o, const char *spec, char *why, size_t whylen);

/* Every line of --peers @path. */
int ssqd_peers_file(struct ssqd_options *o, const char *path, char *why, size_t whylen);

/*
 * After all options: --connect's HOST:PORT checked; with peers, this
 * daemon's name (--name, else the host name up to its first dot), its own
 * entry taken out (o->self_queues), --listen required and --connect
 * refused, names unique, and --queues times the peers within
 * SSQ_MAX_QUEUES; o->peer_queues and o->nqueues set.
 */
int ssqd_peer_opts_check(struct ssqd_options *o, char *why, size_t whylen);

/* 1 when @name may name a daemon: 1..SSQD_PEER_NAME_MAX-1 of [A-Za-z0-9._-]. */
int ssqd_peer_name_ok(const char *name);

/*
 * A peer's address as ssqd's options give it: "HOST:PORT", HOST an IPv4
 * address, a DNS name or an IPv6 address in brackets ("[ADDR]:PORT", as
 * URLs write it: its colons would make the port ambiguous).
 */

#define SSQD_HOST_MAX 256 /* HOST of a HOST:PORT, and its NUL */
#define SSQD_PORT_MAX 8

/*
 * Split @host_port into @host (brackets taken off) and @port (1..65535,
 * as decimal digits), checking that a lookup could answer the host: an
 * IPv4 address in dotted quads, an IPv6 one in brackets, or a DNS name
 * (labels of letters, digits, '-' and '_', no label all digits at the
 * end). Neither address is the unspecified one. No lookup is made. 0, or
 * -EINVAL with what was wrong in *@bad.
 */
int ssqd_link_split(const char *host_port, char host[SSQD_HOST_MAX],
                    char port[SSQD_PORT_MAX], const char **bad);

/*
 * The TCP link between two ssqd: over one connection each side sends, per
 * shared queue, its peer message (ctrl/proto/peer_msg.h), then reads the
 * other side's; the connection stays open so its close tells of the
 * peer's death.
 */

/*
 * The exchange's halves: ssqd_link_send - our @n addresses; ssqd_link_recv
 * - the peer's @n, each in index order within @timeout_ms (each names its
 * sender in a cluster, its queue "qK" in the one-peer modes). The dialer
 * sends first; the accepting side reads first, to learn which peer
 * it is, then sends that peer's queues.
 */
int ssqd_link_send(int sock, const struct proto_peer_addr *local, unsigned n,
                   struct ssqd_link_auth *auth, char *why, size_t whylen);
int ssqd_link_recv(int sock, struct proto_peer_addr *remote, unsigned n, int timeout_ms,
                   struct ssqd_link_auth *auth, char *why, size_t whylen);
/*
 * A cluster's want (peer_msg.h): ssqd_link_send_want sends @name's on a
 * connected socket, without waiting; ssqd_link_recv returns
 * PROTO_PEER_WANT when the first message is one (its sender in
 * remote[0].name).
 */
int ssqd_link_send_want(int sock, const char *name, unsigned n,
                        struct ssqd_link_auth *auth, char *why, size_t whylen);

/*
 * ssqd_link_exchange - send @n local addresses on the connected TCP socket
 * @sock and read the peer's, which must number @n too and come in index
 * order, each within @timeout_ms. Returns 0, -ETIMEDOUT, -ENOTCONN, or a
 * decode error (with @why).
 */
int ssqd_link_exchange(int sock, const struct proto_peer_addr *local,
                       struct proto_peer_addr *remote, unsigned n, int timeout_ms,
                       struct ssqd_link_auth *auth, char *why, size_t whylen);

/* Address @a, received @i-th of @n: its index and count as expected, or -EBADMSG. */
int ssqd_link_check_addr(const struct proto_peer_addr *a, unsigned i, unsigned n,
                         char *why, size_t whylen);

/*
 * @n address messages, SSQ_PEER_MSG_LEN bytes each (and a MAC each when
 * @auth is on: ssqd_auth_trailer), at @buf (read without waiting, as they
 * came): each MAC checked, each decoded and checked into @remote. 0, or a
 * MAC, decode or order error with @why.
 */
/*
 * ssqd_link_refusal - the refusal at @buf (SSQ_PEER_REFUSAL_LEN bytes, its
 * MAC after them when @auth is on): -ECONNREFUSED with its reason in @why,
 * or -EBADMSG when its MAC fails (not the peer's word: a reset).
 */
int ssqd_link_refusal(const uint8_t *buf, struct ssqd_link_auth *auth, char *why,
                      size_t whylen);
int ssqd_link_decode_addrs(const uint8_t *buf, unsigned n, struct ssqd_link_auth *auth,
                           struct proto_peer_addr *remote, char *why, size_t whylen);

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

#endif /* SSQ_CTRL_DAEMON_PEERS_H */
