/* SPDX-License-Identifier: MIT */
/*
 * Adversary, ssqd's receive poller and send-arm event thread under an
 * RLIMIT_NOFILE lowered to 0 (prlimit on a running ssqd, hard limit too):
 * poll(2) and ppoll(2) refuse any entry over the limit with EINVAL
 * (do_sys_poll, fs/select.c), at once. The poller naps in ppoll on the
 * completion channel with its receive CQs armed, and the event thread
 * waits in poll on the send channel and, woken with nothing, naps in poll
 * on its stop eventfd: each refused wait came back at once and was
 * tried again, a core each for as long as the limit stood. A refused wait
 * must cost its nap.
 *
 * ssqd runs in this process, the device's events off (as on a ConnectX:
 * receive CQs armed, send-arm threads running); the soft limit of this
 * process is set to 0 for a second (the threads share it), the send
 * channel woken once (a wait under way before holds), and each thread's
 * share of a core must stay that of napping. Then the limit is
 * restored and a stop still ends both threads.
 */
#define _GNU_SOURCE
#include <sys/resource.h>
#include "poll_flow.h"

#define MAX_SHARE 0.2
#define WINDOW_S  1.0

/* CPU seconds thread @t has used, or -1. */
static double thread_cpu(pthread_t t)
{
	struct timespec ts;
	clockid_t id;

	if (pthread_getcpuclockid(t, &id) || clock_gettime(id, &ts))
		return -1;
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(void)
{
	struct ssqd *d = poll_ssqd_up("nofile");
	struct rlimit was, none = { 0, 0 };
	double rx0, tx0, t0, rx, tx, took;
	unsigned i, armed = 0;
	uint64_t one = 1;

	if (!d)
		return test_exit("ctrl_adv_poll_nofile");
	for (i = 0; i < d->opt.nqueues; i++)
		armed += __atomic_load_n(&d->queues[i].rx.armed, __ATOMIC_ACQUIRE) != 0;
	CHECK(armed > 0 && d->rxp.running, "receive pools armed (%u) and polled", armed);
	CHECK(d->txa.running, "the send-arm threads run");
	if (!armed || !d->rxp.running || !d->txa.running)
		goto out;
	usleep(300 * 1000); /* past the poller's first spin */
	getrlimit(RLIMIT_NOFILE, &was);
	none.rlim_max = was.rlim_max; /* the soft one alone: restored after */
	CHECK(setrlimit(RLIMIT_NOFILE, &none) == 0, "RLIMIT_NOFILE lowered to 0");
	/*
	 * The event thread's poll, under way since before, holds: a wake on
	 * its channel (as a send CQ's event would) has it poll again.
	 */
	CHECK(write(d->ops->tx_event_fd(d->backend), &one, sizeof(one)) == sizeof(one),
	      "the send channel woken");
	rx0 = thread_cpu(d->rxp.thread);
	tx0 = thread_cpu(d->txa.event_thread);
	t0 = poll_now();
	usleep((useconds_t)(WINDOW_S * 1e6));
	took = poll_now() - t0;
	rx = (thread_cpu(d->rxp.thread) - rx0) / took;
	tx = (thread_cpu(d->txa.event_thread) - tx0) / took;
	setrlimit(RLIMIT_NOFILE, &was);
	printf("under RLIMIT_NOFILE 0: the receive poller used %.1f%% of a core, the "
	       "send-arm event thread %.1f%%\n",
	       rx * 100, tx * 100);
	CHECK(rx < MAX_SHARE,
	      "the receive poller, its ppoll refused, used %.0f%% of a core", rx * 100);
	CHECK(tx < MAX_SHARE,
	      "the send-arm event thread, its poll refused, used %.0f%% of a core",
	      tx * 100);
out:
	t0 = poll_now();
	poll_ssqd_down(d);
	printf("teardown took %.0f ms\n", (poll_now() - t0) * 1e3);
	return test_exit("ctrl_adv_poll_nofile");
}
