/* SPDX-License-Identifier: MIT */
/*
 * Client protocol: encode, send, receive and, above all, check. Everything
 * that arrives on the socket goes through proto_msg_decode() before any field
 * is used, on both sides: a hostile or broken peer gets an error, never a
 * crash (tests/fuzz covers this decoder).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <ssq/client.h>
#include <ssq/queue.h>
#include "ctrl/proto/msg.h"

int proto_msg_payload_len(uint32_t type)
{
	switch (type) {
	case SSQ_MSG_HELLO:
		return sizeof(struct proto_msg_hello);
	case SSQ_MSG_HELLO | SSQ_MSG_REPLY:
		return sizeof(struct proto_msg_hello_reply);
	case SSQ_MSG_LIST:
		return 0;
	case SSQ_MSG_LIST | SSQ_MSG_REPLY:
		return sizeof(struct proto_msg_list_reply);
	case SSQ_MSG_ATTACH:
		return sizeof(struct proto_msg_attach);
	case SSQ_MSG_ATTACH | SSQ_MSG_REPLY:
		return sizeof(struct proto_msg_attach_reply);
	case SSQ_MSG_ALLOC:
		return sizeof(struct proto_msg_alloc);
	case SSQ_MSG_ALLOC | SSQ_MSG_REPLY:
		return sizeof(struct proto_msg_alloc_reply);
	case SSQ_MSG_FREE:
		return sizeof(struct proto_msg_free);
	case SSQ_MSG_DETACH:
	case SSQ_MSG_RECOVER:
		return sizeof(struct proto_msg_detach);
	case SSQ_MSG_FREE | SSQ_MSG_REPLY:
	case SSQ_MSG_DETACH | SSQ_MSG_REPLY:
	case SSQ_MSG_RECOVER | SSQ_MSG_REPLY:
		return 0;
	case SSQ_MSG_MEM_REG:
		return sizeof(struct proto_msg_mem_reg);
	case SSQ_MSG_MEM_REG | SSQ_MSG_REPLY:
		return sizeof(struct proto_msg_mem_reg_reply);
	case SSQ_MSG_MEM_DEREG:
		return sizeof(struct proto_msg_mem_dereg);
	case SSQ_MSG_MEM_DEREG | SSQ_MSG_REPLY:
	case SSQ_MSG_VERBS:
		return 0;
	case SSQ_MSG_VERBS | SSQ_MSG_REPLY:
		return sizeof(struct proto_msg_verbs_reply);
	case SSQ_MSG_PEER:
		return sizeof(struct proto_msg_peer);
	case SSQ_MSG_PEER | SSQ_MSG_REPLY:
		return sizeof(struct proto_msg_peer_reply);
	case SSQ_MSG_GRANT:
		return sizeof(struct proto_msg_grant);
	case SSQ_MSG_GRANT | SSQ_MSG_REPLY:
		return sizeof(struct proto_msg_grant_reply);
	case SSQ_MSG_REVOKE:
		return sizeof(struct proto_msg_revoke);
	case SSQ_MSG_REVOKE | SSQ_MSG_REPLY:
		return 0;
	case SSQ_MSG_TENANT:
		return sizeof(struct proto_msg_tenant);
	case SSQ_MSG_TENANT | SSQ_MSG_REPLY:
		return sizeof(struct proto_msg_tenant_reply);
	case SSQ_MSG_ERROR:
		return sizeof(struct proto_msg_error);
	default:
		return -1;
	}
}

static int has_nul(const char *s, size_t n)
{
	return memchr(s, 0, n) != NULL;
}

int proto_msg_decode(const void *buf, size_t n, struct proto_msg *out, char *why,
                     size_t whylen)
{
	const struct proto_msg_hdr *h = (const struct proto_msg_hdr *)buf;
	struct proto_msg_hdr hdr;
	int want;
	uint32_t i;

	if (n < sizeof(hdr)) {
		snprintf(why, whylen,
		         "message of %zu bytes is shorter than its %zu-byte header", n,
		         sizeof(hdr));
		return -EBADMSG;
	}
	memcpy(&hdr, h, sizeof(hdr));
	if (hdr.magic != SSQ_PROTO_MAGIC) {
		snprintf(why, whylen, "bad magic 0x%08x", hdr.magic);
		return -EBADMSG;
	}
	if (hdr.version != SSQ_PROTO_VERSION) {
		snprintf(why, whylen, "protocol version %u, this side speaks %u",
		         hdr.version, SSQ_PROTO_VERSION);
		return -EPROTO;
	}
	want = proto_msg_payload_len(hdr.type);
	if (want < 0) {
		snprintf(why, whylen, "unknown message type 0x%x", hdr.type);
		return -EBADMSG;
	}
	if (hdr.len != (uint32_t)want || n != sizeof(hdr) + (size_t)want) {
		snprintf(why, whylen,
		         "type 0x%x wants a %d-byte payload, header says %u, got %zu",
		         hdr.type, want, hdr.len, n - sizeof(hdr));
		return -EBADMSG;
	}
	memset(out, 0, sizeof(*out));
	out->hdr = hdr;
	memcpy(&out->u, (const uint8_t *)buf + sizeof(hdr), (size_t)want);

	switch (hdr.type) {
	case SSQ_MSG_HELLO | SSQ_MSG_REPLY:
		if (!has_nul(out->u.hello_reply.device, SSQ_NAME_MAX))
			goto unterminated;
		if (!out->u.hello_reply.arena_len ||
		    out->u.hello_reply.arena_offset < 0) {
			snprintf(why, whylen,
			         "hello reply with an empty or negative arena");
			return -EBADMSG;
		}
		break;
	case SSQ_MSG_LIST | SSQ_MSG_REPLY:
		if (out->u.list_reply.nqueues > SSQ_MAX_QUEUES) {
			snprintf(why, whylen, "list of %u queues, at most %u",
			         out->u.list_reply.nqueues, SSQ_MAX_QUEUES);
			return -EBADMSG;
		}
		for (i = 0; i < out->u.list_reply.nqueues; i++)
			if (!has_nul(out->u.list_reply.queues[i].name, SSQ_NAME_MAX))
				goto unterminated;
		break;
	case SSQ_MSG_PEER | SSQ_MSG_REPLY:
		if (!has_nul(out->u.peer_reply.name, SSQ_NAME_MAX) ||
		    !has_nul(out->u.peer_reply.addr, SSQ_PEER_ADDR_MAX) ||
		    !has_nul(out->u.peer_reply.why, SSQ_PEER_WHY_MAX))
			goto unterminated;
		if (out->u.peer_reply.state > SSQ_PEER_READY ||
		    out->u.peer_reply.first_queue > SSQ_MAX_QUEUES ||
		    out->u.peer_reply.nqueues >
		        SSQ_MAX_QUEUES - out->u.peer_reply.first_queue) {
			snprintf(why, whylen, "peer reply with state %u, queues %u+%u",
			         out->u.peer_reply.state, out->u.peer_reply.first_queue,
			         out->u.peer_reply.nqueues);
			return -EBADMSG;
		}
		break;
	case SSQ_MSG_TENANT | SSQ_MSG_REPLY:
		if (!has_nul(out->u.tenant_reply.why, SSQ_TENANT_WHY_MAX))
			goto unterminated;
		break;
	case SSQ_MSG_GRANT: {
		const struct proto_msg_grant *g = &out->u.grant;

		if (!has_nul(g->name, SSQ_NAME_MAX))
			goto unterminated;
		if (!g->name[0] || g->kind < SSQ_GRANT_BUF || g->kind > SSQ_GRANT_MR ||
		    !g->access || (g->access & ~(uint32_t)SSQ_MEM_ACCESS_REMOTE) ||
		    !g->len || g->len > SSQ_ALLOC_MAX || g->off + g->len < g->off) {
			snprintf(why, whylen,
			         "grant of kind %u, %llu bytes at +%llu, access 0x%x: a "
			         "queue name, kind 1 or 2, length 1..2^40, access one or "
			         "more of REMOTE_WRITE, REMOTE_READ, REMOTE_ATOMIC",
			         g->kind, (unsigned long long)g->len,
			         (unsigned long long)g->off, g->access);
			return -EBADMSG;
		}
		break;
	}
	case SSQ_MSG_ATTACH:
		if (!has_nul(out->u.attach.name, SSQ_NAME_MAX))
			goto unterminated;
		if (!out->u.attach.name[0]) {
			snprintf(why, whylen, "attach with an empty queue name");
			return -EBADMSG;
		}
		break;
	case SSQ_MSG_ATTACH | SSQ_MSG_REPLY:
		if (out->u.attach_reply.queue >= SSQ_MAX_QUEUES ||
		    out->u.attach_reply.producer >= SSQ_MAX_PRODUCERS ||
		    out->u.attach_reply.uar_offset < 0 || !out->u.attach_reply.uar_len ||
		    out->u.attach_reply.uar_reg_off + 8 > out->u.attach_reply.uar_len ||
		    !out->u.attach_reply.qpn || out->u.attach_reply.qpn > 0xffffff) {
			snprintf(why, whylen, "attach reply out of range (queue %u)",
			         out->u.attach_reply.queue);
			return -EBADMSG;
		}
		break;
	case SSQ_MSG_ALLOC:
		if (!out->u.alloc.len || out->u.alloc.len > SSQ_ALLOC_MAX ||
		    out->u.alloc.align < 64 || out->u.alloc.align > (2u << 20) ||
		    (out->u.alloc.align & (out->u.alloc.align - 1))) {
			snprintf(why, whylen,
			         "alloc of %llu bytes aligned to %llu: length must be "
			         "1..2^40, "
			         "alignment a power of two 64..2 MiB",
			         (unsigned long long)out->u.alloc.len,
			         (unsigned long long)out->u.alloc.align);
			return -EBADMSG;
		}
		break;
	case SSQ_MSG_MEM_REG: {
		const struct proto_msg_mem_reg *r = &out->u.mem_reg;

		if (r->kind < SSQ_MEM_PROCESS || r->kind > SSQ_MEM_VERBS || !r->len ||
		    r->len > SSQ_ALLOC_MAX || r->addr + r->len < r->addr ||
		    r->iova + r->len < r->iova ||
		    (r->access &
		     ~(uint32_t)(SSQ_MEM_ACCESS_ALL |
		                 (r->kind == SSQ_MEM_VERBS ? SSQ_MEM_VERBS_BINDABLE
		                                           : 0)))) {
			snprintf(
			    why, whylen,
			    "memory registration of kind %u, %llu bytes at 0x%llx, "
			    "access 0x%x: kind must be 1, 2 or 3, length 1..2^40, the "
			    "range must not wrap, access only LOCAL_WRITE, "
			    "REMOTE_WRITE, REMOTE_READ, REMOTE_ATOMIC (and 0x10, "
			    "bindable, for kind 3)",
			    r->kind, (unsigned long long)r->len,
			    (unsigned long long)r->addr, r->access);
			return -EBADMSG;
		}
		break;
	}
	case SSQ_MSG_DETACH:
	case SSQ_MSG_RECOVER:
		if (out->u.detach.queue >= SSQ_MAX_QUEUES ||
		    out->u.detach.producer >= SSQ_MAX_PRODUCERS) {
			snprintf(why, whylen,
			         "detach of queue %u, producer %u: at most %u queues, %u "
			         "producers",
			         out->u.detach.queue, out->u.detach.producer,
			         SSQ_MAX_QUEUES, SSQ_MAX_PRODUCERS);
			return -EBADMSG;
		}
		break;
	case SSQ_MSG_ERROR:
		if (!has_nul(out->u.error.msg, SSQ_ERRMSG_MAX))
			goto unterminated;
		if (out->u.error.err >= 0 || out->u.error.err < -4095) {
			snprintf(why, whylen, "error reply with errno %d",
			         out->u.error.err);
			return -EBADMSG;
		}
		break;
	default:
		break;
	}
	return 0;
unterminated:
	snprintf(why, whylen, "type 0x%x: a string field is not NUL-terminated",
	         hdr.type);
	return -EBADMSG;
}

int proto_msg_send(int sock, uint16_t type, uint32_t seq, const void *payload,
                   uint32_t len, const int *fds, int nfds)
{
	uint8_t buf[sizeof(struct proto_msg_hdr) + SSQ_MSG_MAX];
	struct proto_msg_hdr h = { SSQ_PROTO_MAGIC, SSQ_PROTO_VERSION, type, len, seq };
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov;
	struct msghdr mh;
	ssize_t rc;

	if (len > SSQ_MSG_MAX || nfds < 0 || nfds > 4)
		return -EINVAL;
	memcpy(buf, &h, sizeof(h));
	if (len)
		memcpy(buf + sizeof(h), payload, len);
	iov.iov_base = buf;
	iov.iov_len = sizeof(h) + len;
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	if (nfds) {
		struct cmsghdr *c;

		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	do
		rc = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (rc < 0 && errno == EINTR);
	if (rc < 0)
		return errno == ECONNRESET ? -EPIPE : -errno;
	return 0;
}

int proto_msg_recv(int sock, struct proto_msg *out, int *fds, int maxfds, int *nfds,
                   int timeout_ms, char *why, size_t whylen)
{
	uint8_t buf[sizeof(struct proto_msg_hdr) + SSQ_MSG_MAX + 1];
	union {
		char buf[CMSG_SPACE(sizeof(int) * 8)];
		struct cmsghdr align;
	} ctl;
	struct pollfd pfd = { sock, POLLIN, 0 };
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr mh;
	struct cmsghdr *c;
	ssize_t n;
	int rc, got = 0;

	if (nfds)
		*nfds = 0;
	do
		rc = poll(&pfd, 1, timeout_ms);
	while (rc < 0 && errno == EINTR);
	if (rc < 0)
		return -errno;
	if (rc == 0) {
		snprintf(why, whylen, "no reply within %d ms", timeout_ms);
		return -ETIMEDOUT;
	}
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = ctl.buf;
	mh.msg_controllen = sizeof(ctl.buf);
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	/*
	 * A peer that closed with our last message unread (ssqd refusing a
	 * client whose hello it never read) sets ECONNRESET on this socket
	 * (unix_release_sock, linux net/unix/af_unix.c), and the next receive
	 * reports it - once: sock_error clears it - ahead of any message the
	 * peer queued before closing (__skb_try_recv_datagram checks the
	 * error first, net/core/datagram.c). That message, a parting error,
	 * is the answer: look again without waiting.
	 */
	if (n < 0 && errno == ECONNRESET)
		do
			n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
		while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == ECONNRESET || errno == EAGAIN ? -ENOTCONN : -errno;
	/* Take every passed descriptor first, so none leaks on a bad message. */
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		size_t k, cnt;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		cnt = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (k = 0; k < cnt; k++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + k * sizeof(int), sizeof(int));
			if (got < maxfds && fds)
				fds[got++] = fd;
			else
				close(fd);
		}
	}
	if (n == 0) {
		snprintf(why, whylen, "peer closed the connection");
		rc = -ENOTCONN;
	} else if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
		snprintf(why, whylen, "message or its descriptors truncated");
		rc = -EBADMSG;
	} else {
		rc = proto_msg_decode(buf, (size_t)n, out, why, whylen);
	}
	if (rc) {
		while (got)
			close(fds[--got]);
		return rc;
	}
	if (nfds)
		*nfds = got;
	return 0;
}

void proto_msg_verror(struct proto_msg_error *e, int err, const char *fmt, va_list ap)
{
	memset(e, 0, sizeof(*e));
	e->err = err < 0 ? err : -EINVAL;
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
}

int proto_msg_send_error(int sock, uint32_t seq, int err, const char *fmt, ...)
{
	struct proto_msg_error e;
	va_list ap;

	va_start(ap, fmt);
	proto_msg_verror(&e, err, fmt, ap);
	va_end(ap);
	return proto_msg_send(sock, SSQ_MSG_ERROR, seq, &e, sizeof(e), NULL, 0);
}
