/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the peer exchange message decoder, fed any bytes a peer
 * ssqd (or anyone reaching its TCP port) could send. Accepted messages must
 * satisfy every documented bound and survive re-encoding unchanged.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ctrl/daemon/peers/peers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_peer_addr a, b;
	struct proto_peer_tenant t, u;
	uint8_t again[SSQ_PEER_MSG_LEN], tagain[SSQ_PEER_TENANT_LEN];
	char why[200];

	/* A TENANT (--tenants): a kind of 1 or 2, and it encodes back the same. */
	if (proto_peer_decode_tenant(data, size, &t, why, sizeof(why)) == 0) {
		if (t.kind != PROTO_TENANT_UID && t.kind != PROTO_TENANT_GID)
			abort();
		proto_peer_encode_tenant(&t, tagain);
		if (proto_peer_decode_tenant(tagain, sizeof(tagain), &u, why,
		                             sizeof(why)) != 0 ||
		    memcmp(&t, &u, sizeof(t)) || memcmp(tagain, data, sizeof(tagain)))
			abort();
	}
	if (proto_peer_decode(data, size, &a, why, sizeof(why)) != 0)
		return 0;
	if (a.qpn > 0xffffff || a.psn > 0xffffff || !a.count ||
	    a.count > SSQ_MAX_QUEUES || a.index >= a.count || !a.name[0] ||
	    strnlen(a.name, SSQ_NAME_MAX) == SSQ_NAME_MAX || a.link_layer < 1 ||
	    a.link_layer > 2 || a.mtu < 1 || a.mtu > 5 || !a.rd_atom)
		abort();
	proto_peer_encode(&a, again);
	if (proto_peer_decode(again, sizeof(again), &b, why, sizeof(why)) != 0 ||
	    memcmp(&a, &b, sizeof(a)))
		abort();
	return 0;
}
