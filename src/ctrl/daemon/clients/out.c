/* SPDX-License-Identifier: MIT */
/* A client's replies without blocking ssqd (clients/clients.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "ctrl/daemon/clients/clients.h"

int ssqd_out_flush(struct ssqd_out *o, int fd)
{
	while (o->n) {
		struct ssqd_out_msg *m = &o->q[o->head];
		int rc = proto_msg_send(fd, m->type, m->seq, m->payload, m->len, m->fds,
		                        m->nfds);

		if (rc == -EAGAIN || rc == -EWOULDBLOCK)
			return 0;
		if (rc)
			return rc;
		o->head = (o->head + 1) % SSQD_OUT_MAX;
		o->n--;
	}
	return 0;
}

int ssqd_out_send(struct ssqd_out *o, int fd, uint16_t type, uint32_t seq,
                  const void *payload, uint32_t len, const int *fds, int nfds)
{
	struct ssqd_out_msg *m;
	int rc;

	if (len > SSQ_MSG_MAX || nfds < 0 || nfds > 1)
		return -EINVAL;
	/* In order: nothing overtakes a reply that waits. */
	if (!o->n) {
		rc = proto_msg_send(fd, type, seq, payload, len, fds, nfds);
		if (rc != -EAGAIN && rc != -EWOULDBLOCK)
			return rc;
	}
	if (o->n == SSQD_OUT_MAX)
		return -ENOBUFS;
	if (!o->q) {
		o->q = calloc(SSQD_OUT_MAX, sizeof(*o->q));
		if (!o->q)
			return -ENOMEM;
	}
	m = &o->q[(o->head + o->n) % SSQD_OUT_MAX];
	m->type = type;
	m->seq = seq;
	m->len = len;
	m->nfds = nfds;
	if (nfds)
		m->fds[0] = fds[0];
	if (len)
		memcpy(m->payload, payload, len);
	o->n++;
	return 0;
}

int ssqd_out_error(struct ssqd_out *o, int fd, uint32_t seq, int err, const char *fmt,
                   ...)
{
	struct proto_msg_error e;
	va_list ap;

	va_start(ap, fmt);
	proto_msg_verror(&e, err, fmt, ap);
	va_end(ap);
	return ssqd_out_send(o, fd, SSQ_MSG_ERROR, seq, &e, sizeof(e), NULL, 0);
}

void ssqd_out_free(struct ssqd_out *o)
{
	free(o->q);
	memset(o, 0, sizeof(*o));
}
