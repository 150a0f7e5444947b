/* SPDX-License-Identifier: MIT */
/*
 * Completion events (emu_cq_set_event): a CQ with a handler that got CQEs
 * in a pass is marked due under the device's lock (cq_publish), and the
 * handlers of the due CQs are called once the lock is dropped, so a handler
 * may take its own locks and make system calls without holding up the
 * device's other callers.
 *
 * A handler and its argument are copied out under the lock and called
 * after it, so a caller that replaces or clears a handler, or destroys its
 * CQ, waits for the batches taken before (emu_cq_events_settle): once
 * emu_cq_set_event or emu_destroy_cq returns, the old handler is not
 * running and will not be called, and its owner may free its argument.
 */
#include <errno.h>
#include <limits.h>
#include "emu/emu_pvt.h"

int emu_cq_set_event(struct emu_cq *cq, void (*fn)(void *arg, unsigned cqes), void *arg)
{
	if (!cq)
		return -EINVAL;
	if (cq->dev->no_cq_events)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&cq->dev->lock);
	cq->event_fn = fn;
	cq->event_arg = arg;
	emu_cq_events_settle(cq->dev);
	pthread_mutex_unlock(&cq->dev->lock);
	return 0;
}

void emu_cq_event_due(struct emu_cq *cq)
{
	struct emu_dev *dev = cq->dev;

	if (cq->event_cqes < UINT_MAX)
		cq->event_cqes++;
	if (cq->event_due || dev->ndue >= SSQ_EMU_MAX_CQ)
		return;
	cq->event_due = 1;
	dev->due[dev->ndue++] = cq;
}

unsigned emu_cq_events_take(struct emu_dev *dev, struct emu_cq_event *out)
{
	unsigned i, n = dev->ndue;

	/*
	 * Someone waits for the batches in flight to end: take none, so that
	 * a device streaming events cannot keep it waiting; the due CQs stay
	 * due for the next pass.
	 */
	if (!n || __atomic_load_n(&dev->fire_waiters, __ATOMIC_RELAXED))
		return 0;
	for (i = 0; i < n; i++) {
		out[i].fn = dev->due[i]->event_fn;
		out[i].arg = dev->due[i]->event_arg;
		out[i].cqes = dev->due[i]->event_cqes;
		dev->due[i]->event_due = 0;
		dev->due[i]->event_cqes = 0;
	}
	dev->ndue = 0;
	__atomic_fetch_add(&dev->firing, 1, __ATOMIC_RELAXED); /* lock held */
	return n;
}

void emu_cq_events_fire(struct emu_dev *dev, const struct emu_cq_event *ev, unsigned n)
{
	unsigned i;

	if (!n)
		return;
	for (i = 0; i < n; i++)
		if (ev[i].fn)
			ev[i].fn(ev[i].arg, ev[i].cqes);
	/*
	 * F1 (pairs with F2): the batch is done before the waiter count is
	 * read, and a waiter counts itself before it reads `firing`: one of
	 * the two sees the other, so no waiter sleeps on a batch that ended
	 * unseen. Without a waiter (the usual case) no lock is taken here.
	 */
	if (__atomic_sub_fetch(&dev->firing, 1, __ATOMIC_SEQ_CST) ||
	    !__atomic_load_n(&dev->fire_waiters, __ATOMIC_SEQ_CST))
		return;
	/* Under the lock: the waiter reads `firing` under it before sleeping. */
	pthread_mutex_lock(&dev->lock);
	pthread_cond_broadcast(&dev->fired);
	pthread_mutex_unlock(&dev->lock);
}

void emu_cq_events_settle(struct emu_dev *dev)
{
	__atomic_fetch_add(&dev->fire_waiters, 1, __ATOMIC_SEQ_CST); /* F2 */
	while (__atomic_load_n(&dev->firing, __ATOMIC_SEQ_CST))
		pthread_cond_wait(&dev->fired, &dev->lock);
	__atomic_fetch_sub(&dev->fire_waiters, 1, __ATOMIC_RELAXED);
}
