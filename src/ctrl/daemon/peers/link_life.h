/* SPDX-License-Identifier: MIT */
/*
 * What the files of a peer link's life share, and nothing outside peers/
 * needs: the link's timings and the steps one file takes from another.
 * The life itself, as peers.h tells it:
 *  peer.c    - the peers, a link's state, its loss, what PEER shows;
 *  bring.c   - a peer's queues up against the addresses an exchange brought;
 *  events.c  - what poll() says of a peer's connection, state by state;
 *  tick.c    - the timers: dials due, backoff, deadlines, idle closes;
 *  closing.c - a healthy link closed (--idle-ms, --max-active-peers);
 *  demand.c  - links wanted by opens and by peers (on demand).
 * Calls run one way, so that scripts/check-cycles.sh finds no circle:
 * events -> bring, tick, closing; demand, tick -> closing; all -> peer.
 */
#ifndef SSQ_CTRL_DAEMON_PEERS_LINK_LIFE_H
#define SSQ_CTRL_DAEMON_PEERS_LINK_LIFE_H

#include <stddef.h>
#include <stdint.h>
#include "ctrl/daemon/ssqd.h"
#include "ctrl/proto/peer_msg.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 2000
#define CONNECT_MS     2000 /* one dial */
/*
 * A re-bring waits this long at most, for all of the peer's queues
 * together, for what was in flight (a client holding a reservation, say):
 * then the link is dropped and the next dial tries again, the loop having
 * served everyone meanwhile.
 */
#define REBRING_DRAIN_MS 200
#define WANT_AGAIN_MS    1000 /* a want the peer did not answer is sent again */
#define OPEN_PENDING_MS  1500 /* ssqd_peer_busy(): an open's want outlives its asking */
#define LINK_CLOSE_MS    1000 /* an idle close the peer did not answer: closed */

/* peer.c: @p is in use here or there, or being linked for an open that waits. */
int ssqd_peer_busy(const struct ssqd *d, const struct ssqd_peer *p);

/*
 * bring.c: ssqd_peer_send_addrs - our addresses for @p out on @s, its
 * queues fenced first (a re-link) and at fresh PSNs: 0, or -errno with
 * @why (its queues left fenced); ssqd_peer_finish - the peer's addresses
 * @r are in: its queues up, @s its link (LINKED), or -errno with @why (its
 * queues fenced).
 */
int ssqd_peer_send_addrs(struct ssqd *d, struct ssqd_peer *p, int s, char *why,
                         size_t whylen);
int ssqd_peer_finish(struct ssqd *d, struct ssqd_peer *p, int s,
                     const struct proto_peer_addr *r, char *why, size_t whylen);

/* tick.c: a dial failed for @why: logged if the reason changed, backed off. */
void ssqd_peer_attempt_failed(struct ssqd_peer *p, const char *why);

/*
 * closing.c: ssqd_peer_ask_close - linked @p asked to close its link
 * (CLOSING), @why what the close will say; ssqd_peer_close_unanswered -
 * closed if that ask has gone unanswered for LINK_CLOSE_MS at @now;
 * ssqd_peer_close_asked - the peer asks to close: closed, or BUSY said.
 */
void ssqd_peer_ask_close(struct ssqd *d, struct ssqd_peer *p, const char *why);
void ssqd_peer_close_unanswered(struct ssqd *d, struct ssqd_peer *p, uint64_t now);
void ssqd_peer_close_asked(struct ssqd *d, struct ssqd_peer *p);

#endif /* SSQ_CTRL_DAEMON_PEERS_LINK_LIFE_H */
