/* SPDX-License-Identifier: MIT */
/*
 * A client's replies, sent without ever blocking ssqd: each goes out at
 * once if the client's socket takes it, else waits in the client's own
 * queue of at most SSQD_OUT_MAX replies, sent as the socket drains (the
 * serve loop polls for POLLOUT while any wait). A client that lets more pile
 * up is not reading its replies: it is dropped, and no other client waits
 * on it meanwhile.
 */
#ifndef SSQ_CTRL_DAEMON_CLIENT_OUT_H
#define SSQ_CTRL_DAEMON_CLIENT_OUT_H

#include <stdint.h>
#include "ctrl/proto/msg.h"

/*
 * A well-behaved client has one request outstanding; a few more allow a
 * slow reader (a process just scheduled out) without dropping it.
 */
#define SSQD_OUT_MAX 16

struct ssqd_out_msg {
	uint16_t type;
	uint32_t seq;
	uint32_t len;
	int nfds;
	int fds[1]; /* ssqd's own fds (arena, UAR): they outlive the queue */
	uint8_t payload[SSQ_MSG_MAX];
};

struct ssqd_out {
	struct ssqd_out_msg *q; /* SSQD_OUT_MAX, allocated on first need */
	unsigned head, n;
};

/*
 * ssqd_out_send - send or queue one reply on the non-blocking socket @fd.
 * Returns 0 (sent or queued), -ENOBUFS (SSQD_OUT_MAX already queued: the
 * client does not read; drop it), -ENOMEM, or the socket's error (-EPIPE:
 * the client is gone).
 */
int ssqd_out_send(struct ssqd_out *o, int fd, uint16_t type, uint32_t seq,
                  const void *payload, uint32_t len, const int *fds, int nfds);

/* ssqd_out_send of an SSQ_MSG_ERROR with @err and printf-style text. */
int ssqd_out_error(struct ssqd_out *o, int fd, uint32_t seq, int err, const char *fmt,
                   ...) __attribute__((format(printf, 5, 6)));

/* Send what waits, in order, until the socket is full. 0 or the socket's error. */
int ssqd_out_flush(struct ssqd_out *o, int fd);

/* Forget what waits and free the queue. */
void ssqd_out_free(struct ssqd_out *o);

#endif /* SSQ_CTRL_DAEMON_CLIENT_OUT_H */
