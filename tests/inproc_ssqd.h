/* SPDX-License-Identifier: MIT */
/*
 * ssqd inside the test process (ssqd_setup, no serve loop unless the test
 * runs one), for the tests that reach into its queues, receive pools and
 * control blocks directly: events_flow.h, poll_flow.h, ctrl_wait_arm,
 * ctrl_adv_arm_two_queues, ctrl_client_fd0.
 */
#ifndef SSQ_TEST_INPROC_SSQD_H
#define SSQ_TEST_INPROC_SSQD_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "ctrl/daemon/daemon.h"
#include "ctrl/daemon/queues/queues.h"

/* CLOCK_MONOTONIC in seconds. */
static inline double mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/*
 * A struct ssqd whose options are the defaults but for the emulated device,
 * 4 MiB of data and memfd pages, serving @sock (@len bytes), which is
 * named "/tmp/ssq-@what-@tag-PID.sock": to be changed, then ssqd_setup. NULL
 * when out of memory.
 */
static inline struct ssqd *inproc_ssqd_new(char *sock, size_t len, const char *what,
                                           const char *tag)
{
	struct ssqd *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	snprintf(sock, len, "/tmp/ssq-%s-%s-%d.sock", what, tag, (int)getpid());
	ssqd_options_default(&d->opt);
	d->opt.device = "emu";
	d->opt.socket_path = sock;
	d->opt.data_mib = 4;
	d->opt.hugepages = SSQ_HUGEPAGES_OFF;
	return d;
}

/* Messages the receive pool @p has logged, read under its lock. */
static inline uint64_t pool_arrived(struct ssqd_recv_pool *p)
{
	uint64_t a;

	pthread_mutex_lock(&p->lock);
	a = p->arrived;
	pthread_mutex_unlock(&p->lock);
	return a;
}

#endif
