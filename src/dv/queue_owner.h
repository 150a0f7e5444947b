/* SPDX-License-Identifier: MIT */
/*
 * What the owner's (ssqd's) looks at a control block share: the CQ
 * consumer index the NIC was last told. Private to src/dv; the includer
 * defines _GNU_SOURCE first.
 */
#ifndef DV_QUEUE_OWNER_H
#define DV_QUEUE_OWNER_H

#include <ssq/queue.h>
#include "queue_clock.h"

/* The CQ consumer index the NIC was last told (24 bits, ssq_cq_update_ci). */
static inline uint32_t dv_cq_dbrec_ci(const struct ssq_producer *h)
{
	return be32toh(__atomic_load_n(&h->cq.dbrec[SSQ_CQ_SET_CI], __ATOMIC_ACQUIRE)) &
	       0xffffff;
}

#endif /* DV_QUEUE_OWNER_H */
