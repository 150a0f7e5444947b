/* SPDX-License-Identifier: MIT */
/*
 * Memory freed while a grant's bind over it may still run. On a ConnectX
 * ssqd's bind is a WQE on the queue's shared ring (backend_mlx5_mw.c),
 * run only once every reservation ahead of it is published; its UMR
 * names the MR by its lkey in the KLM (rdma-core v44 providers/mlx5/qp.c:
 * set_bind_wr, set_umr_data_seg) and the window by its key
 * (_mlx5_post_send: ctrl->imm). Nothing ties either to the WQE: the
 * kernel destroys a window's mkey at once (mlx5_ib_dealloc_mw,
 * drivers/infiniband/hw/mlx5/mr.c: mlx5_core_destroy_mkey) and an MR's
 * the same way, or revokes it into its mkey cache for the next
 * registration to reuse (mlx5_ib_dereg_mr: "Stop DMA",
 * mlx5r_umr_revoke_mr / destroy_mkey), neither looking for binds on any
 * ring. So a bind that runs after its MR went names an mkey that is gone,
 * completes MW_BIND_ERR and puts the QP - every client's queue to that
 * peer - in error; or, the mkey reused by ssqd's next registration in the
 * same PD, binds the window over memory of someone else. And a buffer's
 * arena range given to a new buffer meanwhile is what the window covers.
 *
 * So a FREE or MEM_DEREG (or a client's death) that finds such a bind
 * revokes every grant over the memory as ever - the window of one whose
 * bind ran goes at once - and the memory becomes SSQD_OWNER_HELD's: its
 * client no longer has it, its MR and range stay, and while that client
 * lives they still count against its quotas (buffers, bytes, registrations,
 * pinned bytes: freeing behind a hole of its own is no way past them; nor
 * is hanging up then: a gone client's held memory counts against its uid's
 * arena quotas and its pid's memlock until it goes). Once
 * no grant is over it (ssqd_grants_tick frees a revoked grant's window as
 * soon as its bind completed, or a reset discarded it), the MR goes, then
 * the range. ssqd's loop waits on nothing: it looks every millisecond
 * while a bind is out (ssqd_grants_binding).
 *
 * What the client's free promises holds at its return: no key it was
 * given reaches the memory (a grant still binding was never answered with
 * its key). The window of a bind still out is bound when the bind runs,
 * with a key byte drawn at random that nobody was told, until the next
 * loop turn deallocates it: it covers only this held memory, never reused
 * before that.
 *
 * Bounds: a client's binds that may still run are its grants (64; a gone
 * one counts until its bind ends), so is what it can have held; a hole
 * lasts until the stall repair starts the queue over (10 x --stall-ms for
 * a running client), which ends every bind on its ring - under
 * --stall-ms 0 a hole never published holds the memory until ssqd ends.
 * A gone client's held memory counts against its uid's arena quotas and
 * its pid's memlock meanwhile (ssqd_held_uid_use, pin.c).
 */
#include <stdio.h>
#include "ctrl/daemon/clients/clients.h"

/* Client @id while connected (dying or not), or NULL: ids are never reused. */
static struct ssqd_client *client_by_id(struct ssqd *d, uint32_t id)
{
	unsigned i;

	for (i = 0; i < SSQD_MAX_CLIENTS; i++)
		if (d->clients[i].fd >= 0 && d->clients[i].id == id)
			return &d->clients[i];
	return NULL;
}

void ssqd_held_release(struct ssqd *d)
{
	struct ssqd_data_buf gone;
	struct ssqd_client *c;
	unsigned i;

	if (!d->nheld)
		return;
	for (i = 0; i < SSQD_MAX_MRS; i++)
		if (d->mrs[i].owner == SSQD_OWNER_HELD &&
		    !ssqd_grants_on(d, SSQ_GRANT_MR, d->mrs[i].id))
			ssqd_mr_release(d, &d->mrs[i]);
	/* Freeing one moves those after it: look at the same index again. */
	for (i = 0; i < d->data.n;) {
		struct ssqd_data_buf *b = &d->data.bufs[i];

		if (b->owner != SSQD_OWNER_HELD ||
		    ssqd_grants_on(d, SSQ_GRANT_BUF, b->off)) {
			i++;
			continue;
		}
		if (ssqd_data_free(&d->data, b->off, SSQD_OWNER_HELD, &gone))
			break; /* cannot be: it is there, HELD's */
		d->nheld--;
		ssqd_release_buf(d, &gone);
		c = client_by_id(d, gone.held_by);
		if (c) {
			c->bytes -= gone.len;
			c->nbufs--;
		}
	}
}
