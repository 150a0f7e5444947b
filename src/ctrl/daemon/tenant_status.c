/* SPDX-License-Identifier: MIT */
/*
 * TENANT (daemon.h): ssqd --status under --tenants shows every tenant's
 * ssqd, not this one's alone. The asker makes a socketpair and sends one
 * end with the request; this ssqd hands it to the tenant's ssqd over the
 * channel it already has to it (ssqd_tenant_send, as a client's
 * connection), and the asker speaks the client protocol to that tenant
 * itself. So this loop never waits on a tenant: the hand-over is one
 * non-blocking sendmsg, and a tenant that does not answer (stopped, busy)
 * keeps only the asker waiting, up to the asker's own bound
 * (status_cmd.c).
 *
 * Who may ask: ssqd's own uid and root. Every tenant's ssqd runs as
 * ssqd's uid, which can reach it anyway (ptrace; docs/trust.md); anyone
 * else, ssqd's own tenant's other uids under --tenants gid included, gets
 * -EACCES: a connection to another tenant is what tenants keep apart.
 * The connection reaches the tenant with the asker's own credentials
 * (SO_PEERCRED of a socketpair names the process that made it), so the
 * tenant counts and checks it as the asker's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include "ctrl/daemon/daemon.h"
#include "ctrl/daemon/clients/clients.h"
#include "ctrl/proto/msg.h"

/* Is @fd one end of a socketpair of @c's process, of the client protocol's type? */
static int asker_socket(const struct ssqd_client *c, int fd)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	int type = 0;
	socklen_t tlen = sizeof(type);

	return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tlen) == 0 &&
	       type == SOCK_SEQPACKET &&
	       getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 &&
	       cr.uid == c->uid;
}

int ssqd_on_tenant(struct ssqd *d, struct ssqd_client *c, const struct proto_msg *m,
                   int fd)
{
	struct proto_msg_tenant_reply r;
	struct ssqd_tenant *t = NULL;
	const struct ssqd_tenant_park *park = NULL;
	uint32_t seq = m->hdr.seq;
	unsigned i, n = 0;
	int rc;

	/* No tenants (--tenants none, or a tenant's own ssqd): none to show. */
	if (d->opt.tenants && c->uid != 0 && c->uid != getuid()) {
		if (fd >= 0)
			close(fd);
		return ssqd_out_error(&c->out, c->fd, seq, -EACCES,
		                      "only ssqd's uid %u or root may reach its "
		                      "tenants' ssqd",
		                      (unsigned)getuid());
	}
	if (fd < 0 || !asker_socket(c, fd)) {
		if (fd >= 0)
			close(fd);
		return ssqd_out_error(&c->out, c->fd, seq, -EBADF,
		                      "TENANT carries one end of a SOCK_SEQPACKET "
		                      "socketpair the asker made (SCM_RIGHTS)");
	}
	memset(&r, 0, sizeof(r));
	r.kind = (uint32_t)d->opt.tenants;
	for (i = 0; i < SSQD_MAX_TENANTS; i++) {
		if (d->tenants[i].pid <= 0)
			continue;
		if (n++ == m->u.tenant.index) {
			t = &d->tenants[i];
			park = &d->tenant_parks[i];
		}
	}
	/* Then those out of their slots, exited, not reapable yet (tenant_zombie.c). */
	for (i = 0; i < SSQD_TENANT_ZOMBIES; i++) {
		if (d->tenant_zombies[i].pid <= 0)
			continue;
		if (n++ == m->u.tenant.index)
			t = &d->tenant_zombies[i];
	}
	r.ntenants = n;
	if (t) {
		r.id = t->key;
		r.pid = (int32_t)t->pid;
		/* Another uid's may wait for its slot (tenants.c): not its uid's. */
		if (park && park->key == t->key)
			r.parked = (uint16_t)park->n;
		r.closing = (uint16_t)t->closing;
	}
	if (t && t->closing) {
		/* One exiting takes nothing more (tenant_idle.c, tenants.c). */
		snprintf(r.why, sizeof(r.why), "%s",
		         t->dead ? "found dead and killed, not reaped yet"
		                 : "exiting idle");
	} else if (t) {
		rc = ssqd_tenant_send(t, fd, 'c');
		r.passed = rc == 0;
		if (rc == -EAGAIN)
			snprintf(r.why, sizeof(r.why),
			         "its socket is full: it takes no connections");
		else if (rc && ssqd_tenant_gone(rc))
			snprintf(r.why, sizeof(r.why), "its ssqd is gone (%s)",
			         strerror(-rc));
		else if (rc)
			snprintf(r.why, sizeof(r.why),
			         "sending it the connection failed (%s)", strerror(-rc));
	}
	close(fd);
	return ssqd_out_send(&c->out, c->fd, SSQ_MSG_TENANT | SSQ_MSG_REPLY, seq, &r,
	                     sizeof(r), NULL, 0);
}
