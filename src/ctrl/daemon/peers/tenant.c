/* SPDX-License-Identifier: MIT */
/*
 * Links of tenants (ssqd --tenants uid|gid; ctrl/daemon/tenants.c): each
 * uid (gid) has an ssqd of its own on each host, with its own device
 * context, PD, QPs and arena, and a link joins the queues of one tenant on
 * both hosts, never two tenants: a WQE of tenant U's QP on host A reaches
 * only tenant U's QP on host B, whose PD holds none of another tenant's
 * MRs or windows (a type-2 window is reached only through the QP it is
 * bound to, IB 10.6.7; rxe_lookup_mw in drivers/infiniband/sw/rxe/rxe_mw.c
 * checks the QP and the PD; the emulated device's key_get in
 * src/emu/translate.c the same).
 *
 * How a connection finds its tenant: every connection a tenant's daemon
 * makes to the peer port starts with TENANT {kind, id} (peer_msg.h). The
 * ssqd that owns the port (the first one, which serves its own uid)
 * reads it and nothing more: its own tenant's it goes on with, another
 * one's it hands to that tenant's ssqd (serve.c, SCM_RIGHTS; started on
 * demand as for a client), which goes on from the next byte as any
 * acceptor. Tenant ids are numbers: uid U on one host is uid U on the
 * other (as NFS without idmapping), and both hosts run the same --tenants
 * kind, refused by name otherwise. With --peer-key the kind and id are in
 * both MACs of the handshake (peers/auth.c): a TENANT altered on the way
 * steers the connection to a tenant whose MAC the dialer does not accept.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include "ctrl/daemon/peers/peers.h"

int ssqd_peer_tenant(const struct ssqd *d, uint32_t *id)
{
	*id = 0;
	/* A tenant's ssqd: who it serves is what its parent allowed, alone. */
	if (d->opt.tenant_fd >= 0) {
		if (d->opt.allow_uid >= 0) {
			*id = (uint32_t)d->opt.allow_uid;
			return PROTO_TENANT_UID;
		}
		*id = (uint32_t)d->opt.allow_gid;
		return PROTO_TENANT_GID;
	}
	if (d->opt.tenants == SSQD_TENANTS_UID) {
		*id = (uint32_t)getuid();
		return PROTO_TENANT_UID;
	}
	if (d->opt.tenants == SSQD_TENANTS_GID) {
		*id = (uint32_t)getgid();
		return PROTO_TENANT_GID;
	}
	return 0;
}

const char *ssqd_tenant_kind_str(int kind)
{
	return kind == PROTO_TENANT_UID   ? "uid"
	       : kind == PROTO_TENANT_GID ? "gid"
	                                  : "none";
}

int ssqd_peer_tenant_ok(const struct ssqd *d, uint32_t id)
{
	char buf[4096];
	struct passwd pw, *res = NULL;
	unsigned i;

	/*
	 * Only a tenant whose clients this ssqd would take (serve.c's
	 * client_allowed): a peer names a tenant before it proves anything,
	 * and each costs a process and an arena here (SSQD_MAX_TENANTS).
	 */
	if (id == 0)
		return 1;
	for (i = 0; i < SSQD_MAX_TENANTS; i++)
		if (d->tenants[i].pid > 0 && d->tenants[i].key == id)
			return 1;
	if (d->opt.tenants == SSQD_TENANTS_GID)
		return d->opt.allow_gid >= 0 && id == (uint32_t)d->opt.allow_gid;
	if (d->opt.allow_uid >= 0 && id == (uint32_t)d->opt.allow_uid)
		return 1;
	/* --allow-gid under --tenants uid: a uid whose primary group it is. */
	return d->opt.allow_gid >= 0 &&
	       !getpwuid_r((uid_t)id, &pw, buf, sizeof(buf), &res) && res &&
	       res->pw_gid == (gid_t)d->opt.allow_gid;
}

int ssqd_link_send_tenant(const struct ssqd *d, int s, char *why, size_t whylen)
{
	struct proto_peer_tenant t;
	uint8_t buf[SSQ_PEER_TENANT_LEN];

	memset(&t, 0, sizeof(t));
	t.kind = (uint8_t)ssqd_peer_tenant(d, &t.id);
	if (!t.kind)
		return 0;
	t.count = (uint16_t)d->opt.peer_queues;
	proto_peer_encode_tenant(&t, buf);
	/* The connection's first bytes: its send buffer is empty. */
	if (send(s, buf, sizeof(buf), MSG_NOSIGNAL | MSG_DONTWAIT) ==
	    (ssize_t)sizeof(buf))
		return 0;
	snprintf(why, whylen, "sending our tenant: %s", strerror(errno));
	return -EIO;
}
