/* SPDX-License-Identifier: MIT */
/*
 * ssqd --status under --tenants: every tenant's ssqd, asked in parallel.
 * For each tenant the parent runs, a socketpair: one end goes with a
 * TENANT request to the parent, which hands it on to that tenant's ssqd
 * as a client's connection (tenant_status.c); on ours we say HELLO and
 * LIST as any client does. All tenants are asked at once and waited for
 * together, SSQD_STATUS_TENANT_MS at most, so a stopped tenant costs one
 * bound, not one per tenant, and never holds up the parent's loop (it only
 * passed a descriptor on).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include "ctrl/daemon/status_tenants.h"
#include "ctrl/client/client_pvt.h"

/* Where one tenant's exchange is. */
enum { ASK_HELLO, ASK_LIST, ASK_DONE };

const char *status_tenant_kind(const struct status_tenant *t)
{
	return t->info.kind == SSQD_TENANTS_GID ? "gid" : "uid";
}

static long long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/*
 * Ask the parent for its tenants one index at a time, each with a fresh
 * socketpair end; fds[i] keeps ours (-1: the parent could not hand it on).
 */
static void tenants_list(struct ssq_client *c, struct status_tenants *ts, int *fds)
{
	struct proto_msg reply;
	unsigned i;
	int sv[2], rc;

	for (i = 0; i < SSQD_MAX_TENANTS; i++) {
		struct proto_msg_tenant req = { i, 0 };

		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
			snprintf(ts->err, sizeof(ts->err), "socketpair: %s",
			         strerror(errno));
			return;
		}
		rc = client_call_fd(c, SSQ_MSG_TENANT, &req, sizeof(req), sv[1], &reply);
		close(sv[1]);
		if (rc || i >= reply.u.tenant_reply.ntenants) {
			close(sv[0]);
			if (rc)
				snprintf(ts->err, sizeof(ts->err), "%s",
				         ssq_client_error(c));
			return;
		}
		ts->t[ts->n].info = reply.u.tenant_reply;
		if (reply.u.tenant_reply.passed) {
			fds[ts->n] = sv[0];
		} else {
			fds[ts->n] = -1;
			close(sv[0]);
			snprintf(ts->t[ts->n].why, sizeof(ts->t[ts->n].why), "%s",
			         reply.u.tenant_reply.why);
		}
		ts->n++;
	}
}

/* @t's next answer on @fd: advance its exchange *@step. 0, or -1: it failed. */
static int tenant_answer(struct status_tenant *t, int fd, int *step)
{
	struct proto_msg m;
	int got = -1, nfds = 0, rc;

	rc = proto_msg_recv(fd, &m, &got, 1, &nfds, 0, t->why, sizeof(t->why));
	if (nfds)
		close(got); /* HELLO's arena: we map nothing */
	if (rc == -ETIMEDOUT || rc == -EAGAIN)
		return 0;
	if (rc) {
		if (rc == -ENOTCONN)
			snprintf(t->why, sizeof(t->why), "it closed the connection");
		return -1;
	}
	if (m.hdr.type == SSQ_MSG_ERROR) {
		snprintf(t->why, sizeof(t->why), "%s", m.u.error.msg);
		return -1;
	}
	if (*step == ASK_HELLO && m.hdr.type == (SSQ_MSG_HELLO | SSQ_MSG_REPLY)) {
		rc = proto_msg_send(fd, SSQ_MSG_LIST, 2, NULL, 0, NULL, 0);
		if (rc) {
			snprintf(t->why, sizeof(t->why), "LIST: %s", strerror(-rc));
			return -1;
		}
		*step = ASK_LIST;
		return 0;
	}
	if (*step == ASK_LIST && m.hdr.type == (SSQ_MSG_LIST | SSQ_MSG_REPLY)) {
		t->list = m.u.list_reply;
		t->answered = 1;
		*step = ASK_DONE;
		return 0;
	}
	snprintf(t->why, sizeof(t->why), "it answered type 0x%x", m.hdr.type);
	return -1;
}

void status_tenants_fetch(struct ssq_client *c, struct status_tenants *ts)
{
	struct proto_msg_hello hello = { (uint32_t)getpid(), 0 };
	int fds[SSQD_MAX_TENANTS], step[SSQD_MAX_TENANTS];
	long long deadline;
	unsigned i;

	memset(ts, 0, sizeof(*ts));
	tenants_list(c, ts, fds);
	for (i = 0; i < ts->n; i++) {
		step[i] = ASK_HELLO;
		if (fds[i] >= 0 && proto_msg_send(fds[i], SSQ_MSG_HELLO, 1, &hello,
		                                  sizeof(hello), NULL, 0)) {
			snprintf(ts->t[i].why, sizeof(ts->t[i].why),
			         "it closed the connection");
			close(fds[i]);
			fds[i] = -1;
		}
	}
	deadline = now_ms() + SSQD_STATUS_TENANT_MS;
	for (;;) {
		struct pollfd pfd[SSQD_MAX_TENANTS];
		unsigned map[SSQD_MAX_TENANTS], n = 0, k;
		long long left = deadline - now_ms();

		for (i = 0; i < ts->n; i++)
			if (fds[i] >= 0 && step[i] != ASK_DONE) {
				pfd[n].fd = fds[i];
				pfd[n].events = POLLIN;
				pfd[n].revents = 0;
				map[n++] = i;
			}
		if (!n || left <= 0)
			break;
		if (poll(pfd, n, (int)left) < 0 && errno != EINTR)
			break;
		for (k = 0; k < n; k++) {
			i = map[k];
			if (pfd[k].revents &&
			    tenant_answer(&ts->t[i], fds[i], &step[i])) {
				close(fds[i]);
				fds[i] = -1;
			}
		}
	}
	for (i = 0; i < ts->n; i++) {
		if (fds[i] < 0)
			continue;
		if (step[i] != ASK_DONE)
			snprintf(ts->t[i].why, sizeof(ts->t[i].why),
			         "no answer within %d ms: stopped, or its loop is stuck",
			         SSQD_STATUS_TENANT_MS);
		close(fds[i]);
	}
}
