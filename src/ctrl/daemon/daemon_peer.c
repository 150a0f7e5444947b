/* SPDX-License-Identifier: MIT */
/*
 * ssqd's body, part three: the link to the peer ssqd after the first
 * exchange. The exchange's TCP connection stays open, as rc_pingpong-style
 * programs and rdma_cm keep theirs: its close says the peer is gone even
 * when no queue is sending. Then
 *  - requests in flight end as the transport decides (retry exceeded, the
 *    rest flushed), the queues are listed as not ready, clients stay
 *    attached and are served;
 *  - --connect retries the peer with backoff (100 ms doubling to 2 s),
 *    --listen keeps accepting; whoever answers gets a fresh exchange (new
 *    PSNs, its new QPNs and wire address), and every queue is fenced,
 *    drained and taken RESET -> INIT -> RTR -> RTS against it
 *    (ssqd_queue_recover), then published READY again.
 * One peer at a time: a second one while the first is healthy is refused
 * with a reason both sides print.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "ctrl/daemon/daemon.h"

#define PEER_EXCHANGE_MS 5000 /* a connected peer answers at once */
#define BACKOFF_MIN_MS   100
#define BACKOFF_MAX_MS   2000
#define REFUSE_DRAIN_MS  1000
#define RELINK_MS        3000 /* a RECOVER waits this long for the peer */
#define CONNECT_MS       2000 /* one --connect attempt */

void ssqd_peer_fence_all(struct ssqd *d)
{
	unsigned i;

	for (i = 0; i < d->opt.nqueues; i++)
		ssqd_queue_fence(d, i);
}

int ssqd_peer_down(const struct ssqd *d, char *why, size_t whylen)
{
	if (!d->opt.listen_port && !d->opt.connect_to)
		return 0;
	if (d->peer_fd >= 0 && !d->peer_connecting)
		return 0;
	if (d->opt.connect_to)
		snprintf(why, whylen,
		         "the peer ssqd is gone; ssqd is reconnecting to %s and brings "
		         "the queue back when it answers",
		         d->opt.connect_to);
	else
		snprintf(why, whylen,
		         "no peer ssqd; ssqd waits for one on TCP port %u and brings the "
		         "queue back when it connects",
		         d->opt.listen_port);
	return 1;
}

void ssqd_peer_lost(struct ssqd *d, const char *reason)
{
	unsigned i;

	if (d->peer_fd >= 0)
		close(d->peer_fd);
	d->peer_fd = -1;
	d->peer_connecting = 0;
	/* A queue whose restart the peer never answered: in error, for the re-bring. */
	ssqd_link_restart_abandon(d);
	for (i = 0; i < d->opt.nqueues; i++)
		if (__atomic_load_n(&d->hdr->queues[i].state, __ATOMIC_ACQUIRE) ==
		    SSQ_QUEUE_READY)
			__atomic_store_n(&d->hdr->queues[i].state, SSQ_QUEUE_ERROR,
			                 __ATOMIC_RELEASE);
	d->peer_attempts = 0;
	d->peer_last_why[0] = 0;
	d->peer_backoff_ms = BACKOFF_MIN_MS;
	d->peer_retry_ns = ssqd_now_ns() + BACKOFF_MIN_MS * 1000000ull;
	if (d->opt.connect_to)
		fprintf(stderr,
		        "ssqd: peer link down (%s); clients stay attached, reconnecting "
		        "to %s every %u ms .. %u s\n",
		        reason, d->opt.connect_to, BACKOFF_MIN_MS, BACKOFF_MAX_MS / 1000);
	else
		fprintf(stderr,
		        "ssqd: peer link down (%s); clients stay attached, waiting for a "
		        "peer on TCP port %u\n",
		        reason, d->opt.listen_port);
}

int ssqd_peer_rebring(struct ssqd *d, int s, char *why, size_t whylen)
{
	struct proto_peer_addr remote[SSQ_MAX_QUEUES];
	unsigned i;
	int rc;

	/*
	 * Fenced first: the peer that answers may start sending as soon as
	 * its side is up, and our QPs should be back in RTR by then, not
	 * still draining.
	 */
	ssqd_peer_fence_all(d);
	for (i = 0; i < d->opt.nqueues; i++) {
		d->psn[i] = ssqd_queue_new_psn();
		d->local_addrs[i].psn = d->psn[i];
	}
	rc = ssqd_link_exchange(s, d->local_addrs, remote, d->opt.nqueues,
	                        PEER_EXCHANGE_MS, why, whylen);
	if (rc)
		return rc;
	for (i = 0; i < d->opt.nqueues; i++) {
		struct shm_queue_layout *l = &d->hdr->queues[i];

		d->queues[i].remote = remote[i];
		/* The new peer's arena, before anyone may post again. */
		l->peer_qpn = remote[i].qpn;
		l->peer_data_iova = remote[i].data_iova;
		l->peer_key = remote[i].data_rkey;
		rc = ssqd_queue_recover(d, i, why, whylen);
		if (rc) {
			ssqd_peer_fence_all(d);
			return rc;
		}
		ssqd_queue_publish(d, i, &remote[i]);
	}
	ssqd_link_keepalive(s);
	d->peer_fd = s;
	d->peer_connecting = 0;
	d->peer_rx_len = 0;
	return 0;
}

/* A --connect attempt failed: say so if the reason changed, back off. */
static void attempt_failed(struct ssqd *d, const char *why)
{
	if (strcmp(why, d->peer_last_why)) {
		fprintf(stderr,
		        "ssqd: reconnecting to %s (attempt %u): %s; retrying, backoff up "
		        "to %u s\n",
		        d->opt.connect_to, d->peer_attempts, why, BACKOFF_MAX_MS / 1000);
		snprintf(d->peer_last_why, sizeof(d->peer_last_why), "%s", why);
	}
	d->peer_retry_ns = ssqd_now_ns() + (uint64_t)d->peer_backoff_ms * 1000000ull;
	d->peer_backoff_ms = d->peer_backoff_ms * 2 > BACKOFF_MAX_MS
	                         ? BACKOFF_MAX_MS
	                         : d->peer_backoff_ms * 2;
}

void ssqd_peer_tick(struct ssqd *d)
{
	char why[200];
	int s;

	if (d->peer_fd >= 0 && !d->peer_connecting &&
	    ssqd_link_restart_overdue(d, ssqd_now_ns(), why, sizeof(why))) {
		ssqd_peer_lost(d, why);
		return;
	}
	if (!d->opt.connect_to || ssqd_now_ns() < d->peer_retry_ns)
		return;
	if (d->peer_connecting) {
		/* A host that drops our SYNs would hold us for minutes. */
		close(d->peer_fd);
		d->peer_fd = -1;
		d->peer_connecting = 0;
		snprintf(why, sizeof(why), "no answer from %s within %u ms",
		         d->opt.connect_to, CONNECT_MS);
		attempt_failed(d, why);
		return;
	}
	if (d->peer_fd >= 0)
		return;
	d->peer_attempts++;
	s = ssqd_link_connect_start(d->opt.connect_to, why, sizeof(why));
	if (s < 0) {
		attempt_failed(d, why);
		return;
	}
	d->peer_fd = s;
	d->peer_connecting = 1;
	d->peer_retry_ns = ssqd_now_ns() + CONNECT_MS * 1000000ull; /* its deadline */
}

void ssqd_peer_events(struct ssqd *d, short revents)
{
	char why[256];
	int s = d->peer_fd, rc;

	if (s < 0)
		return;
	if (d->peer_connecting) {
		if (!(revents & (POLLOUT | POLLERR | POLLHUP)))
			return;
		d->peer_fd = -1;
		d->peer_connecting = 0;
		rc = ssqd_link_connect_finish(s, d->opt.connect_to, why, sizeof(why));
		if (!rc)
			rc = ssqd_peer_rebring(d, s, why, sizeof(why));
		if (rc) {
			close(s);
			attempt_failed(d, why);
			return;
		}
		fprintf(stderr,
		        "ssqd: reconnected to %s (attempt %u), %u queue(s) ready\n",
		        d->opt.connect_to, d->peer_attempts, d->opt.nqueues);
		d->peer_last_why[0] = 0;
		return;
	}
	if (!(revents & (POLLIN | POLLHUP | POLLERR)))
		return;
	if (ssqd_link_input(d, why, sizeof(why)))
		ssqd_peer_lost(d, why);
}

/* Whether the present peer still counts: connected, and no queue failed. */
static int peer_healthy(struct ssqd *d)
{
	struct pollfd p = { d->peer_fd, POLLIN, 0 };
	unsigned i;

	if (poll(&p, 1, 0) > 0)
		ssqd_peer_events(d, p.revents);
	if (d->peer_fd < 0)
		return 0;
	for (i = 0; i < d->opt.nqueues; i++)
		if (d->queues[i].ctl && ssq_ctl_in_error(d->queues[i].ctl)) {
			ssqd_peer_lost(d, "its queues failed and a new peer connected");
			return 0;
		}
	return 1;
}

int ssqd_peer_accept(struct ssqd *d, char *from, size_t fromlen)
{
	struct sockaddr_in6 sa;
	socklen_t len = sizeof(sa);
	char ip[INET6_ADDRSTRLEN];
	int s = accept4(d->peer_listen_fd, (struct sockaddr *)&sa, &len, SOCK_CLOEXEC);

	if (s < 0)
		return -1;
	if (sa.sin6_family != AF_INET6 ||
	    !inet_ntop(AF_INET6, &sa.sin6_addr, ip, sizeof(ip)))
		snprintf(ip, sizeof(ip), "?");
	snprintf(from, fromlen, "[%s]:%u", ip, ntohs(sa.sin6_port));
	if (d->peer_fd >= 0 && peer_healthy(d)) {
		fprintf(stderr,
		        "ssqd: refused a second peer %s: the connected peer is healthy "
		        "(one peer at a time)\n",
		        from);
		ssqd_link_refuse(s,
		                 "this ssqd already has a healthy peer (one peer at a "
		                 "time)",
		                 REFUSE_DRAIN_MS);
		return -1;
	}
	return s;
}

/*
 * RECOVER of queue @qi with the peer alive. Resetting only our QP, as
 * loopback recovery does, is not enough between two hosts: the error may
 * have moved the peer's QP to ERR too (a remote access or invalid-request
 * error does), and even if not, our restarted PSNs would fall in its
 * duplicate window and be acknowledged without being executed. So both
 * sides start over: the link is closed, and reopened at once (--connect)
 * or awaited (--listen: the peer sees the close and reconnects after its
 * first backoff step); the fresh exchange brings every queue up on both
 * hosts. Returns 0 once the queues are READY again, -EINVAL (not in
 * error), or -ENOTCONN etc. with @why (the link then keeps being retried).
 */
int ssqd_peer_relink(struct ssqd *d, unsigned qi, char *why, size_t whylen)
{
	char reason[96], from[80];
	uint64_t end = ssqd_now_ns() + RELINK_MS * 1000000ull;
	int s, rc;

	if (!ssq_ctl_in_error(d->queues[qi].ctl)) {
		snprintf(why, whylen, "queue q%u is not in error: nothing to recover",
		         qi);
		return -EINVAL;
	}
	snprintf(reason, sizeof(reason),
	         "a client asked to recover q%u: both hosts start over", qi);
	ssqd_peer_lost(d, reason);
	if (d->opt.connect_to) {
		s = ssqd_link_connect(d->opt.connect_to, RELINK_MS, why, whylen);
		if (s < 0)
			return -ENOTCONN;
		d->peer_attempts++;
		rc = ssqd_peer_rebring(d, s, why, whylen);
		if (rc) {
			close(s);
			return rc;
		}
		fprintf(stderr, "ssqd: re-linked with %s, %u queue(s) ready\n",
		        d->opt.connect_to, d->opt.nqueues);
		return 0;
	}
	for (;;) {
		struct pollfd p = { d->peer_listen_fd, POLLIN, 0 };
		uint64_t t = ssqd_now_ns();

		if (t >= end || poll(&p, 1, (int)((end - t) / 1000000) + 1) <= 0)
			break;
		s = ssqd_peer_accept(d, from, sizeof(from));
		if (s < 0)
			continue;
		rc = ssqd_peer_rebring(d, s, why, whylen);
		if (rc) {
			close(s);
			return rc;
		}
		fprintf(stderr, "ssqd: re-linked with peer %s, %u queue(s) ready\n", from,
		        d->opt.nqueues);
		return 0;
	}
	snprintf(why, whylen,
	         "the peer did not reconnect within %d ms; ssqd keeps waiting for it on "
	         "TCP port %u",
	         RELINK_MS, d->opt.listen_port);
	return -ENOTCONN;
}
