/* SPDX-License-Identifier: MIT */
/*
 * A completion channel whose device went away, for the tests that swap a
 * backend's channel fd (rx_event_fd, tx_event_fd) for it: such a channel
 * polls EPOLLERR for good and its reads fail (kernel
 * drivers/infiniband/core/uverbs_main.c, ib_uverbs_event_poll: "else if
 * (ev_queue->is_closed) pollflags = EPOLLERR"; ib_uverbs_event_read). A
 * pipe whose writer is closed stands for it: ready for good, nothing to
 * take.
 */
#ifndef SSQ_TEST_DEAD_CHANNEL_H
#define SSQ_TEST_DEAD_CHANNEL_H

#include <unistd.h>
#include "ctrl/backend/backend.h"

static int dead_fd = -1;

/* The op that hands the backend's channel out: the dead one instead. */
static int dead_channel(struct ssqd_backend *b)
{
	(void)b;
	return dead_fd;
}

/* Make the dead channel (dead_fd). 0, or -1 if no pipe could be had. */
static inline int dead_channel_open(void)
{
	int p[2];

	if (pipe(p))
		return -1;
	close(p[1]);
	dead_fd = p[0];
	return 0;
}

#endif
