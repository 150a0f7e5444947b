/* SPDX-License-Identifier: MIT */
/*
 * ssqd inside the test process, on the emulated device with its completion
 * events on (SSQ_EMU_CQ_EVENTS=1), for the ctrl_adv_events tests, which
 * reach into its queues, receive pools and control blocks directly.
 */
#ifndef SSQ_TEST_EVENTS_FLOW_H
#define SSQ_TEST_EVENTS_FLOW_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "helpers.h"
#include "inproc_ssqd.h"
#include "ctrl/daemon/watch/watch.h"

static char ev_sock[108];

/*
 * Its options, to be changed before ev_ssqd_start: the emulated device,
 * 4 MiB of data, memfd pages, a socket in /tmp named after @tag.
 */
static inline struct ssqd *ev_ssqd_new(const char *tag)
{
	return inproc_ssqd_new(ev_sock, sizeof(ev_sock), "adv-ev", tag);
}

/* Set @d up, the device's events on. 0, or -errno (a failed CHECK says why). */
static inline int ev_ssqd_start(struct ssqd *d)
{
	char why[512] = "";
	int rc;

	setenv("SSQ_EMU_CQ_EVENTS", "1", 1);
	rc = ssqd_setup(d, why, sizeof(why));
	CHECK(rc == 0, "ssqd_setup: %d (%s)", rc, why);
	return rc;
}

static inline void ev_ssqd_down(struct ssqd *d)
{
	ssqd_teardown(d);
	free(d);
	unlink(ev_sock);
}

#endif
