/* SPDX-License-Identifier: MIT */
/*
 * ssq_queue_wait_fd: completions announced on an eventfd a program can put
 * in epoll. A thread of this process sleeps as ssq_wait does - on the
 * queue's shared futex, which whoever routes the CQ wakes, in slices of
 * SSQ_WAIT_SLICE_NS after each of which it routes the CQ itself - and adds
 * 1 to the eventfd whenever the producer's completion ring has grown since
 * it last did. It only routes (under the CQ lease, like any router) and
 * reads the ring's head and tail: taking completions stays the owner's
 * ssq_poll, from its own thread. It adds 1 too when the queue's link to
 * its peer goes or comes back (the layout's state and peer_gen, looked at
 * every slice), for ssq_queue_link to tell.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <ssq/queue.h>
#include "ctrl/client/client_pvt.h"
#include "dv/queue_wait.h"

/*
 * The queue's link as one word: its state and its peer_gen. Relaxed: a
 * hint to wake on; ssq_queue_link reads them again.
 */
static uint32_t link_word(const struct ssq_queue *q)
{
	return __atomic_load_n(&q->l->state, __ATOMIC_RELAXED) |
	       __atomic_load_n(&q->l->peer_gen, __ATOMIC_RELAXED) << 8;
}

static void *signaller(void *arg)
{
	struct ssq_queue *q = arg;
	struct ssq_producer *p = &q->prod;
	uint64_t told = q->wfd.told, one = 1;
	struct timespec slice = { 0, SSQ_WAIT_SLICE_NS };
	uint32_t link = q->wfd.link;

	while (!__atomic_load_n(&q->wfd.stop, __ATOMIC_ACQUIRE)) {
		/* Acquire: pairs with the router's release of the ring's head (R5). */
		uint64_t head = __atomic_load_n(&p->me->comp_head, __ATOMIC_ACQUIRE);
		uint32_t seq;

		if (__atomic_load_n(&p->gone, __ATOMIC_RELAXED)) {
			/* ssqd is gone: ssq_poll says so; wake the program to hear it. */
			(void)!write(q->wfd.efd, &one, sizeof(one));
			break;
		}
		if (head != told) {
			told = head;
			(void)!write(q->wfd.efd, &one, sizeof(one)); /* non-blocking */
			continue;
		}
		if (link_word(q) != link) {
			link = link_word(q);
			(void)!write(q->wfd.efd, &one, sizeof(one));
			continue;
		}
		if (ssq_progress(p) > 0)
			continue;
		/* As ssq_wait: the sequence before the count and the last look. */
		seq = __atomic_load_n(&p->ctl->wake_seq, __ATOMIC_ACQUIRE);
		/* Beating and counted before the last look (R6), as in ssq_wait. */
		ssq__sleeper_in(p->ctl);
		dv_sleeper_ask_arm(p);
		if (__atomic_load_n(&p->me->comp_head, __ATOMIC_ACQUIRE) == told &&
		    ssq_progress(p) <= 0)
			syscall(SYS_futex, &p->ctl->wake_seq, FUTEX_WAIT, seq, &slice,
			        NULL, 0);
		__atomic_fetch_sub(&p->ctl->waiters, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

int ssq_queue_wait_fd(struct ssq_queue *q)
{
	int rc;

	if (!q)
		return -EINVAL;
	if (q->wfd.efd >= 0)
		return q->wfd.efd;
	if (q->orphaned || __atomic_load_n(&q->prod.gone, __ATOMIC_RELAXED))
		return -ENOTCONN;
	q->wfd.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (q->wfd.efd < 0) {
		rc = -errno;
		snprintf(q->c->err, sizeof(q->c->err), "eventfd: %s", strerror(errno));
		q->wfd.efd = -1;
		return rc;
	}
	q->wfd.stop = 0;
	/* Acquire: pairs with the router's release of the ring's head (R5). */
	q->wfd.told = __atomic_load_n(&q->prod.me->comp_head, __ATOMIC_ACQUIRE);
	q->wfd.link = link_word(q);
	rc = pthread_create(&q->wfd.thread, NULL, signaller, q);
	if (rc) {
		snprintf(q->c->err, sizeof(q->c->err), "its thread: %s", strerror(rc));
		close(q->wfd.efd);
		q->wfd.efd = -1;
		return -rc;
	}
	return q->wfd.efd;
}

void client_wait_fd_stop(struct ssq_queue *q)
{
	if (q->wfd.efd < 0)
		return;
	__atomic_store_n(&q->wfd.stop, 1, __ATOMIC_RELEASE);
	/* A forked child has the descriptor, not the thread. */
	if (getpid() == q->c->self)
		pthread_join(q->wfd.thread, NULL); /* it sleeps one slice at most */
	close(q->wfd.efd);
	q->wfd.efd = -1;
}
