/* SPDX-License-Identifier: MIT */
/*
 * A client's memory registration held by a combined request of its own
 * (<ssq/combine.h>): the registration, the owner's completion with its
 * combined requests flushed meanwhile, and the deregistration retried
 * while it is refused -EBUSY. For the tests of ssqd_key_in_flight's
 * looks at the hand-over slots (test_ssq_combine_posted_dereg.c,
 * test_adv9_*_dereg.c); a unit that includes it defines _GNU_SOURCE
 * (memfd_create) before any system header.
 */
#ifndef SSQ_TEST_DEREG_FLOW_H
#define SSQ_TEST_DEREG_FLOW_H

#include <sys/mman.h>
#include <ssq/combine.h>
#include "stall_flow.h"

/* A 4096-byte memfd named @name registered by @k into *@mr: 0, or -1. */
static inline int stall_reg_memfd(struct conn *k, const char *name, struct ssq_mr *mr)
{
	int fd = memfd_create(name, MFD_CLOEXEC);
	int rc = fd < 0 || ftruncate(fd, 4096) ||
	         ssq_mem_reg_fd(k->c, fd, 0, 4096, IBV_ACCESS_LOCAL_WRITE, mr);

	if (fd >= 0)
		close(fd);
	return rc ? -1 : 0;
}

/*
 * @k's next completion into *@comp, flushing its combined requests
 * meanwhile, for up to 10 s, passing over successful ones of wr_id @skip
 * (~0ull: none): ssq_poll's last answer (1, or 0 when none came).
 */
static inline int flushed_comp(struct conn *k, struct ssq_completion *comp, uint64_t skip)
{
	double t0;
	int rc = 0;

	for (t0 = now_s(); now_s() - t0 < 10;) {
		(void)ssq_combine_flush(k->p);
		rc = ssq_poll(k->p, comp, 1);
		if (rc == 1 && comp->wr_id == skip && comp->status == IBV_WC_SUCCESS)
			continue;
		if (rc)
			break;
		usleep(1000);
	}
	return rc;
}

/* @k's ssq_mem_dereg of @mr, again while -EBUSY for up to 10 s: its last answer. */
static inline int dereg_when_free(struct conn *k, const struct ssq_mr *mr)
{
	double t0;
	int rc = -EBUSY;

	for (t0 = now_s(); rc == -EBUSY && now_s() - t0 < 10;) {
		rc = ssq_mem_dereg(k->c, mr);
		if (rc == -EBUSY)
			usleep(10000);
	}
	return rc;
}

#endif
