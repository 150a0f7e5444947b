/* SPDX-License-Identifier: MIT */
/*
 * Two processes' model devices talk over the emulated wire (emu's RoCE v2
 * packets over UDP): each context's device opens its own wire socket on
 * 127.0.0.1, and its GIDs carry that socket's port, so a peer that puts
 * one of them in its address vector (ah_attr.grh.dgid, as ssq's peer
 * exchange does) reaches this device. A real fabric routes by the GID's
 * IP address; the model routes by the two bytes it put there.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mlx5model.h"

int mm_wire_open(struct mm_ctx *c)
{
	char addr[64];
	const char *colon;
	int rc = emu_wire_open(c->dev, "127.0.0.1:0", addr, sizeof(addr));

	if (rc)
		return -rc;
	colon = strrchr(addr, ':');
	c->wire_port = colon ? (uint16_t)atoi(colon + 1) : 0;
	return c->wire_port ? 0 : EIO;
}

/*
 * This device's GIDs with the wire port in bytes 13 and 14: the
 * link-local ones' interface id (fe80::<GUID>), the IPv4-mapped ones'
 * address (::ffff:10.<hi>.<lo>.<port number>).
 */
void mm_gid_fix(struct mm_ctx *c, struct ibv_gid_entry *e)
{
	e->gid.raw[13] = (uint8_t)(c->wire_port >> 8);
	e->gid.raw[14] = (uint8_t)c->wire_port;
}

/*
 * Before INIT -> RTR with an address vector: the peer QP is on this
 * device (a GID of its own: loopback, emu's default) or on the device
 * whose wire port the GID carries. A GID of no model device, or an
 * InfiniBand path with no GRH to another process (LIDs are the port
 * numbers in every model device), is not modelled: EINVAL (on a fabric
 * the QP would go to RTR and its first request would time out).
 */
int mm_qp_wire(struct mm_ctx *c, struct mm_qp *qp, const struct ibv_qp_attr *a, int mask)
{
	char peer[32];
	uint16_t port;

	if (!(mask & IBV_QP_STATE) || a->qp_state != IBV_QPS_RTR || !(mask & IBV_QP_AV))
		return 0;
	if (!a->ah_attr.is_global)
		return -emu_qp_set_remote(qp->eqp, NULL);
	port = (uint16_t)(a->ah_attr.grh.dgid.raw[13] << 8 | a->ah_attr.grh.dgid.raw[14]);
	/* A GID a model device gives: fe80::..., or ::ffff:10.x.x.x. */
	if (!(a->ah_attr.grh.dgid.raw[0] == 0xfe && a->ah_attr.grh.dgid.raw[1] == 0x80) &&
	    !(a->ah_attr.grh.dgid.raw[10] == 0xff &&
	      a->ah_attr.grh.dgid.raw[11] == 0xff && a->ah_attr.grh.dgid.raw[12] == 10))
		return EINVAL;
	if (!port)
		return EINVAL;
	if (port == c->wire_port)
		return -emu_qp_set_remote(qp->eqp, NULL);
	snprintf(peer, sizeof(peer), "127.0.0.1:%u", port);
	return -emu_qp_set_remote(qp->eqp, peer);
}
