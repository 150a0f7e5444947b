/* SPDX-License-Identifier: MIT */
/*
 * Adversary, receive poller with the device's events off (a ConnectX):
 * the poller naps in ppoll on the completion channel's fd. A channel whose
 * device went away (hot unplug, a reset that disassociates the context)
 * polls as EPOLLERR for good and reads give -EIO (kernel
 * drivers/infiniband/core/uverbs_main.c, ib_uverbs_event_poll: "else if
 * (ev_queue->is_closed) pollflags = EPOLLERR"; ib_uverbs_event_read). The
 * poller took "ready" for an event, found none, and napped again at once:
 * 100 % of a core for as long as ssqd ran. A wake that brings no event
 * must cost a nap, not end it.
 *
 * ssqd runs in this process; its backend's channel fd is swapped for a
 * pipe whose writer is closed (ready for good, nothing to take), as the
 * dead channel; the poller's share of a core must stay that of napping.
 */
#define _GNU_SOURCE
#include "dead_channel.h"
#include "poll_flow.h"

#define MAX_SHARE 0.2

int main(void)
{
	static struct ssqd_backend_ops ops;
	struct ssqd *d = poll_ssqd_up("chan");
	double share;

	if (!d)
		return test_exit("ctrl_adv_poll_dead_channel");
	if (dead_channel_open()) {
		CHECK(0, "pipe");
		return test_exit("ctrl_adv_poll_dead_channel");
	}
	ssqd_recv_stop(d);
	ops = *d->ops;
	ops.rx_event_fd = dead_channel;
	d->ops = &ops;
	CHECK(ssqd_recv_start(d) == 0, "the poller starts again");
	usleep(300 * 1000); /* past its first naps */
	share = poll_cpu_share(d, 1.0);
	printf("poller on a dead completion channel: %.1f%% of a core\n", share * 100);
	CHECK(share < MAX_SHARE,
	      "a completion channel that polls ready with no event had the poller "
	      "use %.0f%% of a core",
	      share * 100);
	poll_ssqd_down(d);
	close(dead_fd);
	return test_exit("ctrl_adv_poll_dead_channel");
}
