/* SPDX-License-Identifier: MIT */
/*
 * Armed CQs (emu_cq_arm): a ConnectX's completion channel. An arm asks
 * for one event once the CQ holds a CQE at or past the consumer index it
 * names - at once if one is there already, as mlx5 hardware raises an EQE
 * for a CQ armed behind its producer - and the event disarms it: one event
 * per arm, and a consumer that does not arm again gets no more
 * (ibv_req_notify_cq(3), ibv_get_cq_event(3)). The event is 1 added to the
 * eventfd the arm named, which stands for the channel's fd.
 */
#include <errno.h>
#include <unistd.h>
#include "emu/emu_pvt.h"

static void fire(struct emu_cq *cq)
{
	uint64_t one = 1;

	cq->armed = 0;
	/* A full eventfd (2^64 - 2 events untaken) still reads as ready. */
	(void)!write(cq->arm_fd, &one, sizeof(one));
}

int emu_cq_arm(struct emu_cq *cq, uint32_t ci, int fd)
{
	if (!cq || fd < 0)
		return -EINVAL;
	pthread_mutex_lock(&cq->dev->lock);
	cq->arm_fd = fd;
	cq->armed = 1;
	/* CQE ci written already (the 24-bit index the doorbell carries). */
	if ((cq->pi - ci) & 0xffffff)
		fire(cq);
	pthread_mutex_unlock(&cq->dev->lock);
	return 0;
}

int emu_cq_arm_pending(struct emu_cq *cq)
{
	int armed;

	if (!cq)
		return -EINVAL;
	pthread_mutex_lock(&cq->dev->lock);
	armed = cq->armed;
	pthread_mutex_unlock(&cq->dev->lock);
	return armed;
}

void emu_cq_arm_written(struct emu_cq *cq)
{
	if (cq->armed)
		fire(cq);
}
