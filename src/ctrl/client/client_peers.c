/* SPDX-License-Identifier: MIT */
/* ssq_client_peers: ssqd's cluster peers and their links, one PEER request each. */
#include <errno.h>
#include <string.h>
#include <ssq/client.h>
#include "ctrl/client/client_pvt.h"
#include "ctrl/proto/msg.h"

int ssq_client_peers(struct ssq_client *c, struct ssq_peer_info *out, int max)
{
	struct proto_msg_peer req = { 0, 0 };
	struct proto_msg reply;
	int n = 0, rc;

	do {
		const struct proto_msg_peer_reply *r = &reply.u.peer_reply;

		rc = client_call(c, SSQ_MSG_PEER, &req, sizeof(req), &reply, NULL);
		if (rc == -ENOENT && !req.index)
			return 0; /* not a cluster */
		if (rc)
			return rc;
		n = (int)r->npeers;
		if ((int)req.index < max) {
			struct ssq_peer_info *o = &out[req.index];

			memset(o, 0, sizeof(*o));
			memcpy(o->name, r->name, sizeof(o->name));
			memcpy(o->addr, r->addr, sizeof(o->addr));
			memcpy(o->why, r->why, sizeof(o->why));
			o->state = (enum ssq_peer_state)r->state;
			o->first_queue = r->first_queue;
			o->nqueues = r->nqueues;
			o->attempts = r->attempts;
			o->links = r->links;
			o->losses = r->losses;
			o->refused = r->refused;
			o->flags = r->flags;
		}
		req.index++;
	} while ((int)req.index < n && (int)req.index < max);
	return n;
}
