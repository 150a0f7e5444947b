/* SPDX-License-Identifier: MIT */
/*
 * ssq_buf_grant, ssq_mem_grant, ssq_desc_revoke: remote access handed out
 * by the memory's owner, to one queue's peer, and taken back. ssqd does the
 * work (clients/grant.c: a type-2 memory window bound to that queue's QP);
 * this side asks, waits while the queue's peer is being linked, and fills
 * the descriptor that ssq_desc_pack sends.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <ssq/desc.h>
#include "ctrl/client/client_pvt.h"
#include "ctrl/proto/msg.h"

#define GRANT_ACCESS                                                                     \
	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

static int grant(struct ssq_client *c, const char *queue, uint32_t kind, uint64_t mem,
                 uint64_t off, uint64_t len, int access, struct ssq_desc *out)
{
	struct proto_msg_grant req;
	struct proto_msg reply;
	struct timespec t0, t;
	int rc;

	if (!queue || !*queue || strlen(queue) >= SSQ_NAME_MAX || !out || !len ||
	    !access || (access & ~GRANT_ACCESS)) {
		snprintf(c->err, sizeof(c->err),
		         "grant: a queue name of 1..%u characters, a descriptor to "
		         "fill, a length, and access of IBV_ACCESS_REMOTE_WRITE, "
		         "_READ, _ATOMIC only",
		         SSQ_NAME_MAX - 1);
		return -EINVAL;
	}
	if (off + len < off) {
		snprintf(c->err, sizeof(c->err),
		         "grant: offset %llu + length %llu wraps around",
		         (unsigned long long)off, (unsigned long long)len);
		return -ERANGE;
	}
	memset(&req, 0, sizeof(req));
	strcpy(req.name, queue);
	req.kind = kind;
	req.access = (uint32_t)access;
	req.mem = mem;
	req.off = off;
	req.len = len;
	/* -EINPROGRESS: the queue's peer is being linked, as for an open. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		rc = client_call(c, SSQ_MSG_GRANT, &req, sizeof(req), &reply, NULL);
		if (rc != -EINPROGRESS)
			break;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >=
		    SSQ_OPEN_LINK_MS)
			return -ETIMEDOUT;
		usleep(10000);
	}
	if (rc)
		return rc;
	memset(out, 0, sizeof(*out));
	out->remote_addr = reply.u.grant_reply.remote_addr;
	out->length = reply.u.grant_reply.len;
	out->rkey = reply.u.grant_reply.rkey;
	return 0;
}

int ssq_buf_grant(struct ssq_client *c, const char *queue, const struct ssq_buf *b,
                  uint64_t off, uint64_t len, int access, struct ssq_desc *out)
{
	if (!c)
		return -EINVAL;
	if (!b) {
		snprintf(c->err, sizeof(c->err), "grant: no buffer");
		return -EINVAL;
	}
	return grant(c, queue, SSQ_GRANT_BUF, b->off, off, len, access, out);
}

int ssq_mem_grant(struct ssq_client *c, const char *queue, const struct ssq_mr *mr,
                  uint64_t off, uint64_t len, int access, struct ssq_desc *out)
{
	if (!c)
		return -EINVAL;
	if (!mr) {
		snprintf(c->err, sizeof(c->err), "grant: no registration");
		return -EINVAL;
	}
	return grant(c, queue, SSQ_GRANT_MR, mr->id, off, len, access, out);
}

int ssq_desc_revoke(struct ssq_client *c, const struct ssq_desc *d)
{
	struct proto_msg_revoke req;
	struct proto_msg reply;

	if (!c || !d)
		return -EINVAL;
	memset(&req, 0, sizeof(req));
	req.rkey = d->rkey;
	return client_call(c, SSQ_MSG_REVOKE, &req, sizeof(req), &reply, NULL);
}
