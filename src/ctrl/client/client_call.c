/* SPDX-License-Identifier: MIT */
/*
 * One request to ssqd and its answer: sequence numbers, the reply's
 * deadline, answers that come late (recognised by their sequence number,
 * what they granted given back), ssqd's parting words. Every other
 * client file talks to ssqd through here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <ssq/client.h>
#include "ctrl/proto/msg.h"
#include "ctrl/client/client_pvt.h"

/*
 * How long a call waits for ssqd's answer. One that died is seen at once,
 * whatever this bound: its end of the connection closes with it, and the
 * wait ends -ENOTCONN (recv_one). So the bound only gives up on an ssqd
 * that lives but does not answer - stopped, or starved of CPU - and a
 * live one on a busy machine, or stopped a while by a debugger, must not
 * fail its clients' calls: 25 s, libdbus's default wait for a method
 * call's reply (_DBUS_DEFAULT_TIMEOUT_VALUE,
 * dbus/dbus-connection-internal.h), not the 1 s of before, which a loaded
 * machine exceeded. $SSQ_REPLY_TIMEOUT_MS sets another (1 .. 3600000;
 * anything else is ignored).
 */
#define REPLY_TIMEOUT_MS     25000
#define REPLY_TIMEOUT_MS_MAX 3600000

int client_reply_ms(void)
{
	const char *e = getenv("SSQ_REPLY_TIMEOUT_MS");
	char *end;
	long v;

	if (!e || !*e)
		return REPLY_TIMEOUT_MS;
	errno = 0;
	v = strtol(e, &end, 10);
	if (errno || *end || v < 1 || v > REPLY_TIMEOUT_MS_MAX)
		return REPLY_TIMEOUT_MS;
	return (int)v;
}

/* Request sequence numbers: never 0, which is ssqd speaking unasked. */
uint32_t client_next_seq(struct ssq_client *c)
{
	if (++c->seq == 0)
		c->seq = 1;
	return c->seq;
}

int ssq_client_alive(struct ssq_client *c)
{
	struct pollfd pfd = { c->sock, POLLRDHUP, 0 };

	if (poll(&pfd, 1, 0) < 0 ||
	    !(pfd.revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL)))
		return 1;
	/*
	 * The sentence too: a program that checks here, rather than in a call
	 * that failed, reads ssq_client_error() next (newcomer review F4 found
	 * "" there).
	 */
	snprintf(c->err, sizeof(c->err),
	         "ssqd closed the connection (it exited or was killed); "
	         "ssq_client_connect() again once it is back");
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/*
 * Give back what a reply that came too late granted: its caller timed out
 * and returned an error, so nobody will ever free the buffer, revoke the
 * window or detach the producer it names. The undo's own reply is read
 * and dropped like any late one.
 */
static void undo_late(struct ssq_client *c, const struct proto_msg *r)
{
	if (r->hdr.type == (SSQ_MSG_ALLOC | SSQ_MSG_REPLY)) {
		struct proto_msg_free req = { r->u.alloc_reply.off };

		proto_msg_send(c->sock, SSQ_MSG_FREE, client_next_seq(c), &req,
		               sizeof(req), NULL, 0);
	} else if (r->hdr.type == (SSQ_MSG_MEM_REG | SSQ_MSG_REPLY)) {
		struct proto_msg_mem_dereg req = { r->u.mem_reg_reply.id, 0 };

		proto_msg_send(c->sock, SSQ_MSG_MEM_DEREG, client_next_seq(c), &req,
		               sizeof(req), NULL, 0);
	} else if (r->hdr.type == (SSQ_MSG_GRANT | SSQ_MSG_REPLY)) {
		/* A window its caller never got the key of: nobody would revoke it. */
		struct proto_msg_revoke req = { r->u.grant_reply.rkey, 0 };

		proto_msg_send(c->sock, SSQ_MSG_REVOKE, client_next_seq(c), &req,
		               sizeof(req), NULL, 0);
	} else if (r->hdr.type == (SSQ_MSG_ATTACH | SSQ_MSG_REPLY)) {
		struct proto_msg_detach req = { r->u.attach_reply.queue,
			                        r->u.attach_reply.producer };

		proto_msg_send(c->sock, SSQ_MSG_DETACH, client_next_seq(c), &req,
		               sizeof(req), NULL, 0);
	}
}

/* One message from ssqd, waiting until @deadline; the error says which call. */
static int recv_one(struct ssq_client *c, struct proto_msg *m, int *fd, int *nfds,
                    int64_t deadline, uint16_t type, int timeout_ms)
{
	int64_t left = deadline - now_ms();
	int rc;

	*nfds = 0;
	rc = left <= 0 ? -ETIMEDOUT
	               : proto_msg_recv(c->sock, m, fd, 1, nfds, (int)left, c->err,
	                                sizeof(c->err));
	if (rc == -ETIMEDOUT && !ssq_client_alive(c))
		rc = -ENOTCONN;
	if (rc == -ENOTCONN) {
		snprintf(c->err, sizeof(c->err), "ssqd closed the connection");
		client_orphan_all(c); /* the watcher's work, if it has not yet */
	} else if (rc == -ETIMEDOUT)
		snprintf(c->err, sizeof(c->err),
		         "ssqd did not answer request 0x%x within %d ms, though it "
		         "holds the connection (stopped or stuck?); "
		         "$SSQ_REPLY_TIMEOUT_MS sets the wait",
		         type, timeout_ms);
	return rc;
}

/* A parting SSQ_MSG_ERROR (sequence 0: ssqd speaking unasked) as the call's result. */
static int parting_error(struct ssq_client *c, const struct proto_msg *m)
{
	if (m->hdr.type != SSQ_MSG_ERROR) {
		snprintf(c->err, sizeof(c->err), "ssqd sent type 0x%x unasked",
		         m->hdr.type);
		return -EBADMSG;
	}
	snprintf(c->err, sizeof(c->err), "ssqd: %s", m->u.error.msg);
	return m->u.error.err;
}

/*
 * One request, one reply: send, then wait up to @timeout_ms for the reply
 * carrying our sequence number; an SSQ_MSG_ERROR reply becomes its errno
 * and sentence.
 *
 * A call that timed out leaves its request unanswered (c->answered behind
 * c->seq). ssqd answers in order, so the late replies come first: they are
 * read before anything new is asked, any fd they carry closed and what they
 * granted given back (undo_late) - first, so that the new request does not
 * find a buffer or a producer slot still held. A reply is never taken for
 * another call's. Sequence 0 is ssqd speaking unasked (a parting error
 * before it closes the connection): that answers any call.
 */
int client_call_wait(struct ssq_client *c, uint16_t type, const void *req, uint32_t len,
                     int send_fd, struct proto_msg *reply, int *fd, int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;
	int got = -1, nfds = 0, rc;
	uint32_t seq;

	while (c->answered != c->seq) {
		rc = recv_one(c, reply, &got, &nfds, deadline, type, timeout_ms);
		if (rc)
			return rc;
		if (nfds)
			close(got);
		if (reply->hdr.seq == 0)
			return parting_error(c, reply);
		/* Only a request still unanswered may be answered. */
		if (reply->hdr.seq - c->answered - 1 >= c->seq - c->answered) {
			snprintf(c->err, sizeof(c->err),
			         "ssqd answered seq %u; unanswered are %u..%u",
			         reply->hdr.seq, c->answered + 1, c->seq);
			return -EBADMSG;
		}
		c->answered = reply->hdr.seq;
		undo_late(c, reply);
	}
	seq = client_next_seq(c);
	rc = proto_msg_send(c->sock, type, seq, req, len, send_fd >= 0 ? &send_fd : NULL,
	                    send_fd >= 0);
	if (rc) {
		/*
		 * ssqd may have said why before closing (a refused uid): a
		 * parting error message still waits in the socket.
		 */
		if (proto_msg_recv(c->sock, reply, NULL, 0, NULL, 0, c->err,
		                   sizeof(c->err)) == 0 &&
		    reply->hdr.type == SSQ_MSG_ERROR)
			return parting_error(c, reply);
		snprintf(c->err, sizeof(c->err), "ssqd is gone: %s", strerror(-rc));
		return rc == -EPIPE ? -ENOTCONN : rc;
	}
	rc = recv_one(c, reply, &got, &nfds, deadline, type, timeout_ms);
	if (rc)
		return rc;
	if (reply->hdr.seq == 0) {
		if (nfds)
			close(got);
		return parting_error(c, reply);
	}
	c->answered = reply->hdr.seq;
	if (reply->hdr.seq != seq) {
		snprintf(c->err, sizeof(c->err), "ssqd answered seq %u to seq %u",
		         reply->hdr.seq, seq);
		rc = -EBADMSG;
	} else if (reply->hdr.type == SSQ_MSG_ERROR) {
		snprintf(c->err, sizeof(c->err), "ssqd: %s", reply->u.error.msg);
		rc = reply->u.error.err;
	} else if (reply->hdr.type != (type | SSQ_MSG_REPLY)) {
		snprintf(c->err, sizeof(c->err), "ssqd answered type 0x%x to 0x%x",
		         reply->hdr.type, type);
		rc = -EBADMSG;
	} else if (fd && nfds != 1) {
		snprintf(c->err, sizeof(c->err),
		         "ssqd's reply lacks its file descriptor");
		rc = -EBADMSG;
	}
	if (rc || !fd) {
		if (nfds)
			close(got);
		return rc;
	}
	*fd = got;
	return 0;
}

int client_call(struct ssq_client *c, uint16_t type, const void *req, uint32_t len,
                struct proto_msg *reply, int *fd)
{
	return client_call_wait(c, type, req, len, -1, reply, fd, client_reply_ms());
}

int client_call_fd(struct ssq_client *c, uint16_t type, const void *req, uint32_t len,
                   int send_fd, struct proto_msg *reply)
{
	return client_call_wait(c, type, req, len, send_fd, reply, NULL,
	                        client_reply_ms());
}

int client_call_fd_reply(struct ssq_client *c, uint16_t type, const void *req,
                         uint32_t len, struct proto_msg *reply, int *fd)
{
	return client_call_wait(c, type, req, len, -1, reply, fd, client_reply_ms());
}
