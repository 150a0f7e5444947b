/* SPDX-License-Identifier: MIT */
/* twohost_echo.c - the server echoes the latency tools' messages (twohost_echo.h). */
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
#include "twohost_echo.h"

/* Reap the echoes' completions (every echo is signaled). 0, or -1 (why). */
static int echo_reap(struct pt_th_echo *x)
{
	struct ssq_completion comp[32];
	uint32_t q;
	int n, k;

	for (q = 0; q < x->nprod; q++) {
		n = ssq_poll(x->prod[q], comp, 32);
		for (k = 0; k < n; k++) {
			if (comp[k].status != IBV_WC_SUCCESS) {
				snprintf(x->why, sizeof(x->why), "echo %llu: %s",
				         (unsigned long long)comp[k].wr_id,
				         ibv_wc_status_str(
				             (enum ibv_wc_status)comp[k].status));
				return -1;
			}
			x->completed++;
		}
		if (n < 0) {
			snprintf(x->why, sizeof(x->why), "echo poll: %s", strerror(-n));
			return -1;
		}
	}
	return 0;
}

/* Post one echo on @q, polling while there is no room. 0, or -1 (why). */
static int echo_post(struct pt_th_echo *x, uint32_t q, uint64_t laddr, uint32_t len,
                     uint64_t raddr)
{
	int rc;

	for (;;) {
		rc = x->send ? ssq_post_send(x->prod[q], MLX5_OPCODE_SEND, laddr, x->lkey,
		                             len, 0, x->posted, SSQ_WQE_SIGNALED)
		             : ssq_post_write(x->prod[q], laddr, x->lkey, len, raddr,
		                              x->rkey, x->posted, SSQ_WQE_SIGNALED);
		if (rc != -EAGAIN)
			break;
		if (echo_reap(x))
			return -1;
	}
	if (rc) {
		snprintf(x->why, sizeof(x->why), "echo post: %s", strerror(-rc));
		return -1;
	}
	x->posted++;
	return 0;
}

/* Echo what arrived since the last call. 1 if anything, 0, -1 (why). */
static int echo_some(struct pt_th_echo *x)
{
	struct ssq_recv_msg m;
	uint32_t i;
	int moved = 0;

	for (i = 0; !x->send && i < x->procs; i++) {
		size_t at = (size_t)i * x->slot;
		uint8_t v = __atomic_load_n(&x->dst[at + x->size - 1], __ATOMIC_ACQUIRE);

		if (v == x->last[i])
			continue;
		x->last[i] = v;
		if (echo_post(x, 0, x->laddr + at, x->size, x->raddr + at))
			return -1;
		moved = 1;
	}
	for (i = 0; x->send && i < x->nprod; i++) {
		while (ssq_recv_arrived(x->rq[i]) > x->next[i]) {
			/* Back from where it was received: the buffer is in the arena. */
			if (ssq_recv_peek(x->rq[i], x->next[i], &m) ||
			    m.status != IBV_WC_SUCCESS || !m.data) {
				snprintf(x->why, sizeof(x->why),
				         "queue q%u, received message %llu: status %u", i,
				         (unsigned long long)x->next[i], m.status);
				return -1;
			}
			if (echo_post(x, i,
			              x->laddr +
			                  (uint64_t)((const uint8_t *)m.data - x->dst),
			              m.byte_len, 0))
				return -1;
			x->next[i]++;
			moved = 1;
		}
	}
	return moved;
}

/* Echo until the client says something on @fd. 0, or -1 (said why). */
int pt_th_echo_run(const struct pt_opts *o, struct pt_th_echo *x, int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	unsigned spins = 0;
	int moved;

	memset(x->last, 0, sizeof(x->last));
	for (;;) {
		moved = echo_some(x);
		if (moved < 0 || echo_reap(x))
			goto fail;
		if (moved) {
			spins = 0;
			continue;
		}
		ssq_cpu_relax();
		/* The client's next frame ends the size; a core for the device. */
		if ((++spins & 1023) == 0) {
			if (poll(&p, 1, 0) > 0)
				return 0;
			sched_yield();
		}
	}
fail:
	fprintf(stderr, "%s --server: %s\n", o->tool, x->why);
	return -1;
}

/* Every message echoed, every echo completed? Said in @v. */
int pt_th_echo_check(struct pt_th_echo *x, uint64_t msgs, struct th_msg *v)
{
	double end = pt_now() + 10;

	while (x->completed < x->posted && pt_now() < end && !echo_reap(x))
		sched_yield();
	v->status = x->posted != msgs || x->completed != x->posted;
	snprintf(v->text, TH_TEXT,
	         "%u bytes: %llu %ss echoed back (%llu completed), %llu sent%s", x->size,
	         (unsigned long long)x->posted, x->send ? "SEND" : "WRITE",
	         (unsigned long long)x->completed, (unsigned long long)msgs,
	         v->status ? ": they differ" : "");
	return (int)v->status;
}
