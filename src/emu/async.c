/* SPDX-License-Identifier: MIT */
/*
 * Asynchronous events: the errors a ConnectX reports without a CQE, which
 * a consumer reads with ibv_get_async_event (libibverbs, the context's
 * async fd). The device queues them here in order, for emu_get_async_event.
 * A leaf: it calls nothing else in the device.
 */
#include <errno.h>
#include <unistd.h>
#include "emu/emu_pvt.h"

void emu_async_post(struct emu_dev *dev, enum ibv_event_type type, uint32_t qpn,
                    uint32_t cqn)
{
	struct emu_async_event *e;
	uint64_t one = 1;

	if (dev->ev_tail - dev->ev_head == EMU_ASYNC_MAX) {
		/* The kernel's event queue has no bound; ours says what it lost. */
		fprintf(stderr, "ssq_emu: async event queue full: %s dropped\n",
		        ibv_event_type_str(type));
		return;
	}
	e = &dev->events[dev->ev_tail++ % EMU_ASYNC_MAX];
	e->type = type;
	e->qpn = qpn;
	e->cqn = cqn;
	/*
	 * The async fd turns readable, as the context's async_fd does while
	 * the kernel's event list is not empty (uverbs_main.c,
	 * ib_uverbs_event_poll): a poll() that waits on it wakes now.
	 */
	(void)!write(dev->async_fd, &one, sizeof(one));
}

int emu_get_async_event(struct emu_dev *dev, struct emu_async_event *ev)
{
	int rc = -EAGAIN;

	if (!dev || !ev)
		return -EINVAL;
	pthread_mutex_lock(&dev->lock);
	if (dev->ev_head != dev->ev_tail) {
		*ev = dev->events[dev->ev_head++ % EMU_ASYNC_MAX];
		rc = 0;
	}
	if (dev->ev_head == dev->ev_tail) {
		uint64_t n;

		/* Empty: not readable any more (a nonblocking read clears it). */
		(void)!read(dev->async_fd, &n, sizeof(n));
	}
	pthread_mutex_unlock(&dev->lock);
	return rc;
}

int emu_async_fd(struct emu_dev *dev)
{
	return dev ? dev->async_fd : -EINVAL;
}
