/* SPDX-License-Identifier: MIT */
/*
 * Completion events (emu_cq_set_event): a CQ with a handler that got CQEs
 * in a pass is marked due under the device's lock (cq_publish), and the
 * handlers of the due CQs are called once the lock is dropped, so a handler
 * may take its own locks and make system calls without holding up the
 * device's other callers.
 */
#include <errno.h>
#include "emu/emu_pvt.h"

int emu_cq_set_event(struct emu_cq *cq, void (*fn)(void *arg), void *arg)
{
	if (!cq)
		return -EINVAL;
	if (cq->dev->no_cq_events)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&cq->dev->lock);
	cq->event_fn = fn;
	cq->event_arg = arg;
	pthread_mutex_unlock(&cq->dev->lock);
	return 0;
}

void emu_cq_event_due(struct emu_cq *cq)
{
	struct emu_dev *dev = cq->dev;

	if (cq->event_due || dev->ndue >= SSQ_EMU_MAX_CQ)
		return;
	cq->event_due = 1;
	dev->due[dev->ndue++] = cq;
}

unsigned emu_cq_events_take(struct emu_dev *dev, struct emu_cq_event *out)
{
	unsigned i, n = dev->ndue;

	for (i = 0; i < n; i++) {
		out[i].fn = dev->due[i]->event_fn;
		out[i].arg = dev->due[i]->event_arg;
		dev->due[i]->event_due = 0;
	}
	dev->ndue = 0;
	return n;
}

void emu_cq_events_fire(const struct emu_cq_event *ev, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		if (ev[i].fn)
			ev[i].fn(ev[i].arg);
}
