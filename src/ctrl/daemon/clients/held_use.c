/* SPDX-License-Identifier: MIT */
/*
 * What memory held for a gone client (held.c) still counts against: its
 * uid's arena quotas (request.c) and its pid's memlock (pin.c). Apart from
 * held.c, which releases through request.c and mr.c, so that they can ask
 * without calling each other in a circle.
 */
#include "ctrl/daemon/clients/clients.h"

int ssqd_held_orphan(const struct ssqd *d, uint32_t id)
{
	unsigned i;

	for (i = 0; i < SSQD_MAX_CLIENTS; i++)
		if (d->clients[i].fd >= 0 && d->clients[i].id == id)
			return 0;
	return 1;
}

void ssqd_held_uid_use(const struct ssqd *d, uid_t uid, unsigned *bufs, uint64_t *bytes)
{
	unsigned i;

	*bufs = 0;
	*bytes = 0;
	for (i = 0; d->nheld && i < d->data.n; i++) {
		const struct ssqd_data_buf *b = &d->data.bufs[i];

		if (b->owner == SSQD_OWNER_HELD && b->held_uid == (uint32_t)uid &&
		    ssqd_held_orphan(d, b->held_by)) {
			(*bufs)++;
			*bytes += b->len;
		}
	}
}
