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
 * one's it hands to that tenant's ssqd (serve.c, SCM_RIGHTS) if one runs
 * here - a client of this host started it - and refuses otherwise: a
 * peer's link never starts a tenant (tenants.c). That ssqd goes on from
 * the next byte as any acceptor. Tenant ids are numbers: uid U on one host is uid U on
 * the other (as NFS without idmapping), and both hosts run the same --tenants kind,
 * refused by name otherwise. With --peer-key the kind and id are in both MACs of the
 * handshake (peers/auth.c): a TENANT altered on the way steers the connection to a tenant
 * whose MAC the dialer does not accept.
 */
#define _GNU_SOURCE
#include <errno.h>
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
	unsigned i;

	/*
	 * Only a tenant whose ssqd runs here already, started by a client of
	 * this host (or the one the command line names, at start): a peer
	 * names a tenant before it proves anything, and each tenant costs a
	 * process, an arena and one of SSQD_MAX_TENANTS slots, none of which a
	 * stranger may take from this host's own users. Nor is an id looked
	 * up here (getpwuid_r's NSS may block on LDAP or sssd): whose it is
	 * was asked when its first client connected, by the kernel's
	 * SO_PEERCRED, not by a database.
	 */
	for (i = 0; i < SSQD_MAX_TENANTS; i++)
		if (d->tenants[i].pid > 0 && d->tenants[i].key == id &&
		    !d->tenants[i].closing)
			return 1;
	return 0;
}

void ssqd_peer_tenant_none(int kind, uint32_t id, char *why, size_t whylen)
{
	snprintf(why, whylen, "%s %u has no ssqd here: none of its clients has connected",
	         ssqd_tenant_kind_str(kind), (unsigned)id);
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
