/* SPDX-License-Identifier: MIT */
/* twohost_queues.c - queues paired across two hosts, and grants (twohost_queues.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <endian.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <ssq/ssq.h>
#include <ssq/client.h>
#include "twohost_queues.h"

/* q0 of @c once it is up (the peer ssqd connected), within @secs. */
int pt_th_open_q0(const struct pt_opts *o, struct ssq_client *c, double secs,
                  struct ssq_queue **q)
{
	double end = pt_now() + secs;
	int rc;

	while ((rc = ssq_queue_open(c, "q0", q)) == -EAGAIN && pt_now() < end)
		usleep(50 * 1000);
	if (rc)
		fprintf(stderr, "%s: q0 of ssqd at %s: %s\n", o->tool, o->socket,
		        rc == -EAGAIN ? "not up: is the peer ssqd running?"
		                      : ssq_client_error(c));
	return rc ? -1 : 0;
}

/*
 * Does @c's ssqd name its queues PEER/qK (ssqd --peers), so that the
 * server finds its queue to the client by QPN, once the client says it?
 */
int pt_th_named_by_peer(struct ssq_client *c)
{
	struct ssq_queue_info qi[PT_MAX_LANES];
	int k, n = ssq_client_list(c, qi, PT_MAX_LANES);

	for (k = 0; k < n; k++)
		if (!strcmp(qi[k].name, "q0"))
			return 0;
	return n > 0;
}

/*
 * The queue of @c paired with one of the client's (its q0, or the queue a
 * GRANT names): its QPN is @qpn (the client queue's peer) and its peer's
 * QPN @peer (the client's queue). Two daemons may number QPs alike, so
 * both ends must match. Its name into @name (32 bytes). 0 or -1 (@why).
 */
int pt_th_open_by_qpn(struct ssq_client *c, uint32_t qpn, uint32_t peer,
                      struct ssq_queue **q, char *name, char *why, size_t len)
{
	struct ssq_queue_info qi[PT_MAX_LANES];
	int k, n = ssq_client_list(c, qi, PT_MAX_LANES);

	for (k = 0; k < n; k++) {
		if (qi[k].qpn != qpn)
			continue;
		if (ssq_queue_open(c, qi[k].name, q)) {
			snprintf(why, len, "%.31s: %.120s", qi[k].name,
			         ssq_client_error(c));
			return -1;
		}
		if (ssq_queue_peer_qpn(*q) == peer) {
			snprintf(name, 32, "%.31s", qi[k].name);
			return 0;
		}
		ssq_queue_close(*q);
	}
	snprintf(why, len,
	         "no queue of this ssqd is paired with the client's (QPN 0x%x, its "
	         "peer 0x%x): the client's ssqd is not this one's peer",
	         peer, qpn);
	return -1;
}

/* The remote access a test's requests need: 0 for SENDs (they carry no key). */
int pt_th_access(const struct pt_opts *o)
{
	if (pt_is_send(o))
		return 0;
	if (pt_is_read(o))
		return IBV_ACCESS_REMOTE_READ;
	if (pt_is_atomic(o))
		return IBV_ACCESS_REMOTE_ATOMIC;
	return IBV_ACCESS_REMOTE_WRITE;
}

/*
 * The key requests arriving on @c's queue @name reach @b with: a grant of
 * all of @b with @access, bound to that queue's QP (ssq_buf_grant), so a
 * peer reaches it through that queue only. @access 0 (SENDs), or
 * -EOPNOTSUPP (ssqd --arena-rkey, a device without memory windows): the
 * buffer's own key, the only one there is. 0, or -1 (@why).
 */
int pt_th_grant_key(struct ssq_client *c, const char *name, const struct ssq_buf *b,
                    int access, uint32_t *rkey, char *why, size_t len)
{
	struct ssq_desc d;
	int rc;

	*rkey = b->rkey;
	if (!access)
		return 0;
	rc = ssq_buf_grant(c, name, b, 0, b->len, access, &d);
	if (rc == -EOPNOTSUPP)
		return 0;
	if (rc) {
		snprintf(why, len, "grant on %.31s: %.100s", name, ssq_client_error(c));
		return -1;
	}
	if (d.remote_addr != b->remote_addr) {
		snprintf(why, len, "grant on %.31s: at 0x%llx, the buffer at 0x%llx",
		         name, (unsigned long long)d.remote_addr,
		         (unsigned long long)b->remote_addr);
		return -1;
	}
	*rkey = d.rkey;
	return 0;
}

int pt_th_grant_all(const struct pt_opts *o, struct ssq_client *c, const char *prefix,
                    const struct ssq_buf *b, uint32_t *rkeys)
{
	struct ssq_queue *q;
	char name[48], why[200];
	uint32_t k;

	if (!pt_th_access(o))
		return 0; /* SENDs carry no key */
	for (k = 0; k < pt_queues_needed(o); k++) {
		snprintf(name, sizeof(name), "%sq%u", prefix, k);
		/* The grant's queue is one this client has open (ssqd's ATTACH). */
		if (ssq_queue_open(c, name, &q)) {
			fprintf(stderr, "%s: %s: %s\n", o->tool, name,
			        ssq_client_error(c));
			return -1;
		}
		if (pt_th_grant_key(c, name, b, pt_th_access(o), &rkeys[k], why,
		                    sizeof(why))) {
			fprintf(stderr, "%s: the destination's %s\n", o->tool, why);
			return -1;
		}
	}
	return 0;
}
