/* SPDX-License-Identifier: MIT */
/*
 * Adversary, ssq_wait's send-CQ arm path (send_arm.c) with the device's
 * events off (a ConnectX; the emulated device with SSQ_EMU_CQ_EVENTS=0):
 * ssqd's event thread waits in poll on the send CQs' completion channel.
 * A channel whose device went away (hot unplug, a reset that disassociates
 * the context) polls EPOLLERR for good and its reads fail (kernel
 * drivers/infiniband/core/uverbs_main.c, ib_uverbs_event_poll: "else if
 * (ev_queue->is_closed) pollflags = EPOLLERR"; ib_uverbs_event_read). The
 * thread took a wake without POLLIN, or one with nothing to take, as
 * nothing and polled again at once: a spinning core for as long as ssqd
 * ran. A wake that brings no event must cost a nap.
 *
 * ssqd runs in this process; the backend's send channel fd is swapped for
 * a pipe whose writer is closed (POLLHUP for good, nothing to read), and
 * the thread's blind wakes in 200 ms are counted.
 */
#define _GNU_SOURCE
#include <unistd.h>
#include "dead_channel.h"
#include "events_flow.h"

/* A nap per blind wake is tens of them in 200 ms; a spin is millions. */
#define MAX_BLIND 100

int main(void)
{
	static struct ssqd_backend_ops ops;
	struct ssqd *d = ev_ssqd_new("armdead");
	char why[512] = "";
	uint64_t b0, n;
	int rc;

	if (!d)
		return 1;
	d->opt.recv_depth = 0;
	setenv("SSQ_EMU_CQ_EVENTS", "0", 1);
	rc = ssqd_setup(d, why, sizeof(why));
	CHECK(rc == 0, "ssqd_setup: %d (%s)", rc, why);
	if (rc)
		return test_exit("ctrl_adv_arm_dead_channel");
	CHECK(d->txa.running, "events off: the send-arm threads run");
	CHECK(dead_channel_open() == 0, "pipe");
	if (!d->txa.running || test_failures)
		goto out;
	ssqd_send_arm_stop(d);
	ops = *d->ops;
	ops.tx_event_fd = dead_channel;
	d->ops = &ops;
	CHECK(ssqd_send_arm_start(d) == 0, "the send-arm threads start again");
	usleep(50 * 1000);
	b0 = __atomic_load_n(&d->txa.blind, __ATOMIC_RELAXED);
	usleep(200 * 1000);
	n = __atomic_load_n(&d->txa.blind, __ATOMIC_RELAXED) - b0;
	printf("event thread on a dead send channel: %llu blind wake(s) in 200 ms\n",
	       (unsigned long long)n);
	CHECK(n <= MAX_BLIND,
	      "a send channel that polls ready with no event woke ssqd's event "
	      "thread %llu times in 200 ms (a spinning core)",
	      (unsigned long long)n);
	/* Stop still ends it. */
	ssqd_send_arm_stop(d);
	CHECK(!d->txa.running, "the send-arm threads stopped");
out:
	ev_ssqd_down(d);
	if (dead_fd >= 0)
		close(dead_fd);
	return test_exit("ctrl_adv_arm_dead_channel");
}
