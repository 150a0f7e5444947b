/* SPDX-License-Identifier: MIT */
/*
 * ssqd inside the test process, on the emulated device with its completion
 * events off (SSQ_EMU_CQ_EVENTS=0), as on a ConnectX: the receive poller
 * alone logs what arrives, napping with each receive CQ armed (rx_arm).
 * For the ctrl_adv_poll tests, which reach into its receive pools and time
 * the poller's thread.
 */
#ifndef SSQ_TEST_POLL_FLOW_H
#define SSQ_TEST_POLL_FLOW_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "helpers.h"
#include "inproc_ssqd.h"

static char poll_sock[108];

static inline double poll_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/*
 * Set up an ssqd on the emulated device, the device's events off, 4 MiB of
 * data, memfd pages, a socket in /tmp named after @tag; NULL after a failed
 * CHECK.
 */
static inline struct ssqd *poll_ssqd_up(const char *tag)
{
	struct ssqd *d = inproc_ssqd_new(poll_sock, sizeof(poll_sock), "adv-poll", tag);
	char why[512] = "";
	int rc;

	if (!d)
		return NULL;
	setenv("SSQ_EMU_CQ_EVENTS", "0", 1);
	rc = ssqd_setup(d, why, sizeof(why));
	CHECK(rc == 0, "ssqd_setup: %d (%s)", rc, why);
	if (rc) {
		free(d);
		return NULL;
	}
	CHECK(!d->queues[0].rx.events && d->ops->rx_arm,
	      "the device's events are off and the backend arms receive CQs");
	return d;
}

static inline void poll_ssqd_down(struct ssqd *d)
{
	ssqd_teardown(d);
	free(d);
	unlink(poll_sock);
}

/* CPU seconds the receive poller's thread has used. */
static inline double poll_cpu(struct ssqd *d)
{
	struct timespec ts;
	clockid_t id;

	if (pthread_getcpuclockid(d->rxp.thread, &id) || clock_gettime(id, &ts))
		return -1;
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The poller's share of one core over the next @secs seconds. */
static inline double poll_cpu_share(struct ssqd *d, double secs)
{
	double c0 = poll_cpu(d), t0 = poll_now();

	usleep((useconds_t)(secs * 1e6));
	return (poll_cpu(d) - c0) / (poll_now() - t0);
}

#endif
