/* SPDX-License-Identifier: MIT */
/*
 * ssq_wait's sleepers on a device that raises a CQ event only once armed
 * (see queues/queues.h). A ConnectX arms through the CQ's arm doorbell and
 * reports on a completion channel (ibv_req_notify_cq(3); libmlx5's
 * mlx5_arm_cq, providers/mlx5/cq.c); the backend's tx_arm / tx_event_fd /
 * tx_events_take do that. An arm yields one event: arming every send CQ
 * after every event would cost an event per CQE while nobody sleeps, so a
 * CQ is armed only while a producer sleeps on it and asked.
 *
 * The arm thread sleeps on the arena header's tx_arm_seq, a futex word
 * every client maps: a sleeper that finds its queue's CQ unarmed
 * (ctl->tx_arm WANTED) bumps it and wakes the thread (dv_sleeper_ask_arm),
 * which arms each such queue that has sleepers at the CQ's consumer index.
 * The event thread waits on the channel; for each event it marks the
 * queue unarmed and wakes its sleepers (ssqd_queue_send_event). Both are
 * separate from the serve loop and the receive poller: neither waits on a
 * client, and what a client writes (the word, the counts, the consumer
 * index, tx_arm) can only make them look, arm or wake more often.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include "ctrl/daemon/queues/queues.h"

/* The event thread's nap after a wake that brought no event. */
#define BLIND_NAP_MS 10

static int stopping(struct ssqd *d)
{
	return __atomic_load_n(&d->txa.stop, __ATOMIC_ACQUIRE);
}

/* 1 if the device has written @q's send CQE @idx in its current lap. */
static int written(const struct ssqd_queue *q, uint32_t idx)
{
	struct ssq_cq cq = q->prod.cq; /* ssqd's copy of the geometry */

	cq.ci = idx;
	return ssq_cq_peek(&cq) != NULL;
}

/*
 * Where to arm @q's send CQ, from consumer index @ci: there, unless the
 * last event came for an arm made at @ci and nobody has consumed since: a CQE
 * that raised it waits for a router that holds the lease and does not
 * route (stopped, or slow), and the sleepers cannot take it. Armed there
 * again the CQ would raise its event at once, again and again, and ssqd
 * and the sleepers would spin; past the CQEs written, it raises it for the
 * next one, and the router that takes the lease back wakes the sleepers
 * itself. The CQ is client memory: a forged owner byte moves the arm, and
 * the walk stops after one lap.
 */
static uint32_t arm_index(const struct ssqd_queue *q, uint32_t ci)
{
	uint32_t n;

	if (!q->txa.fired || ci != q->txa.fired_ci)
		return ci;
	for (n = 0; n < q->prod.cq.cqe_cnt && written(q, ci); n++)
		ci++;
	return ci;
}

/* Arm the send CQ of every queue that asks for it and has a sleeper. Lock held. */
static void arm_asked(struct ssqd *d)
{
	unsigned i;

	for (i = 0; i < d->opt.nqueues; i++) {
		struct ssqd_queue *q = &d->queues[i];
		struct ssqd_send_arm_q *a = &q->txa;
		uint32_t ci;

		/* Acquire: pairs with the sleeper's count (seq_cst add). */
		if (!a->on || a->armed ||
		    !__atomic_load_n(&q->ctl->waiters, __ATOMIC_ACQUIRE))
			continue;
		/*
		 * At the routers' consumer index: a CQE already past it (one
		 * the sleeper's look missed, or nobody routed yet) raises the
		 * event at once, as a ConnectX does for a CQ armed behind its
		 * producer. The index is client memory: a wrong one only makes
		 * the event come early (a look) or with the next CQE.
		 */
		ci = __atomic_load_n(&q->ctl->cq_ci, __ATOMIC_RELAXED);
		/*
		 * The last arm at this index raised its event with no CQE
		 * there: the device's producer is not where the index says (a
		 * client wrote it ahead, or back into an old lap), and an arm
		 * there fires at once, every time. Until the index moves, the
		 * sleepers route at the end of their slices.
		 */
		if (a->fired && ci == a->fired_ci && a->fired_empty)
			continue;
		a->arm_at = arm_index(q, ci);
		if (d->ops->tx_arm(d->backend, &q->local, a->arm_at))
			continue;
		a->armed = 1;
		a->arm_ci = ci;
		a->arms++;
		__atomic_store_n(&q->ctl->tx_arm, SSQ_TX_ARM_SET, __ATOMIC_RELAXED);
	}
}

static void *arm_main(void *arg)
{
	struct ssqd *d = arg;
	uint32_t *word = &d->hdr->tx_arm_seq;

	while (!stopping(d)) {
		/* Before the look: a bump after it makes the wait return at once. */
		uint32_t v = __atomic_load_n(word, __ATOMIC_ACQUIRE);

		pthread_mutex_lock(&d->txa.lock);
		arm_asked(d);
		pthread_mutex_unlock(&d->txa.lock);
		/*
		 * Shared (not private): sleepers in other processes wake it.
		 * The word is client memory, so a client could put back the
		 * value stop's bump moved it from: the timeout bounds how long
		 * ssqd_send_arm_stop can wait for that.
		 */
		syscall(SYS_futex, word, FUTEX_WAIT, v, &(struct timespec){ 1, 0 }, NULL,
		        0);
	}
	return NULL;
}

/*
 * An event of @bq's send CQ (tx_events_take's callback, lock held): it is
 * unarmed now. A2 (pairs with A1 in dv_sleeper_ask_arm): WANTED is stored
 * before ssqd_queue_send_event's fence and load of the sleepers' count, so
 * a sleeper that counted itself after this finds WANTED and asks again,
 * and one counted before is woken here.
 */
static void on_event(void *arg, struct ssqd_bqueue *bq)
{
	struct ssqd *d = arg;
	unsigned i;

	for (i = 0; i < d->opt.nqueues; i++) {
		struct ssqd_queue *q = &d->queues[i];

		if (&q->local != bq || !q->txa.on)
			continue;
		q->txa.armed = 0;
		q->txa.fired = 1;
		q->txa.fired_ci = q->txa.arm_ci;
		q->txa.fired_empty = !written(q, q->txa.arm_at);
		q->txa.events++;
		__atomic_store_n(&q->ctl->tx_arm, SSQ_TX_ARM_WANTED, __ATOMIC_SEQ_CST);
		ssqd_queue_send_event(q, 1); /* A2 */
	}
}

/*
 * poll(2) refused event_main's two entries (EINVAL: more than an
 * RLIMIT_NOFILE lowered under ssqd, do_sys_poll in fs/select.c; it comes
 * back at once): the channel alone for a blind nap where one entry fits,
 * else the nap slept, so that the thread does not spin; a stop is seen
 * after it. 1: the channel is readable.
 */
static int refused_wait(struct pollfd *chan)
{
	struct timespec nap = { 0, BLIND_NAP_MS * 1000000L };

	chan->revents = 0;
	if (poll(chan, 1, BLIND_NAP_MS) > 0)
		return (chan->revents & POLLIN) != 0;
	if (errno == EINVAL)
		nanosleep(&nap, NULL);
	return 0;
}

static void *event_main(void *arg)
{
	struct ssqd *d = arg;
	struct pollfd pfd[2] = {
		{ .fd = d->ops->tx_event_fd(d->backend), .events = POLLIN },
		{ .fd = d->txa.stop_efd, .events = POLLIN },
	};

	while (!stopping(d)) {
		int n = 0, ready = 0, refused = 0, rc = poll(pfd, 2, -1);

		if (rc > 0) {
			ready = (pfd[0].revents & POLLIN) != 0;
		} else if (rc < 0 && errno == EINVAL) {
			refused = 1;
			ready = refused_wait(pfd);
		}
		if (ready) {
			pthread_mutex_lock(&d->txa.lock);
			n = d->ops->tx_events_take(d->backend, on_event, d);
			pthread_mutex_unlock(&d->txa.lock);
		}
		if (n > 0 || stopping(d) || refused) /* refused: napped already */
			continue;
		/*
		 * Woken with no event to take: a channel whose device went away
		 * polls EPOLLERR for good and its reads fail (kernel
		 * drivers/infiniband/core/uverbs_main.c, ib_uverbs_event_poll,
		 * ib_uverbs_event_read). Polled again at once that is a spinning
		 * core; a nap (stop still ends it) costs the sleepers at most
		 * their slices' early wakes, which such a device gives no more.
		 */
		__atomic_fetch_add(&d->txa.blind, 1, __ATOMIC_RELAXED);
		(void)poll(&pfd[1], 1, BLIND_NAP_MS);
	}
	return NULL;
}

/* Have the arm thread stop: the word moves, so a wait about to start returns. */
static void stop_arm_thread(struct ssqd *d)
{
	__atomic_store_n(&d->txa.stop, 1, __ATOMIC_RELEASE);
	__atomic_fetch_add(&d->hdr->tx_arm_seq, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &d->hdr->tx_arm_seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/*
 * The threads are gone (or never ran): every queue back to NONE, so that
 * sleepers left route at the end of their slices and ask nobody.
 */
static void release(struct ssqd *d)
{
	unsigned i;

	for (i = 0; i < d->opt.nqueues; i++) {
		d->queues[i].txa.on = 0;
		__atomic_store_n(&d->queues[i].ctl->tx_arm, SSQ_TX_ARM_NONE,
		                 __ATOMIC_RELEASE);
	}
	close(d->txa.stop_efd);
	d->txa.stop_efd = -1;
	pthread_mutex_destroy(&d->txa.lock);
}

int ssqd_send_arm_start(struct ssqd *d)
{
	unsigned i, n = 0;
	int rc;

	if (d->txa.running || !d->ops->tx_arm || !d->ops->tx_event_fd ||
	    !d->ops->tx_events_take || d->ops->tx_event_fd(d->backend) < 0)
		return 0;
	for (i = 0; i < d->opt.nqueues; i++)
		n += !d->queues[i].tx_native;
	if (!n)
		return 0;
	d->txa.stop_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d->txa.stop_efd < 0)
		return -errno;
	pthread_mutex_init(&d->txa.lock, NULL);
	__atomic_store_n(&d->txa.stop, 0, __ATOMIC_RELAXED);
	for (i = 0; i < d->opt.nqueues; i++) {
		struct ssqd_queue *q = &d->queues[i];

		if (q->tx_native)
			continue;
		q->txa.on = 1;
		__atomic_store_n(&q->ctl->tx_arm, SSQ_TX_ARM_WANTED, __ATOMIC_RELEASE);
	}
	rc = pthread_create(&d->txa.arm_thread, NULL, arm_main, d);
	if (rc)
		goto fail;
	rc = pthread_create(&d->txa.event_thread, NULL, event_main, d);
	if (rc) {
		stop_arm_thread(d);
		pthread_join(d->txa.arm_thread, NULL);
		goto fail;
	}
	/* Named for top -H. */
	(void)pthread_setname_np(d->txa.arm_thread, "ssqd-tx-arm");
	(void)pthread_setname_np(d->txa.event_thread, "ssqd-tx-event");
	d->txa.running = 1;
	return 0;
fail:
	release(d);
	return -rc;
}

void ssqd_send_arm_restore(struct ssqd *d, unsigned qi)
{
	struct ssqd_queue *q = &d->queues[qi];
	uint32_t want;

	if (!d->txa.running || !q->txa.on || pthread_mutex_trylock(&d->txa.lock))
		return;
	want = q->txa.armed ? SSQ_TX_ARM_SET : SSQ_TX_ARM_WANTED;
	if (__atomic_load_n(&q->ctl->tx_arm, __ATOMIC_RELAXED) != want)
		__atomic_store_n(&q->ctl->tx_arm, want, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&d->txa.lock);
}

void ssqd_send_arm_stop(struct ssqd *d)
{
	uint64_t one = 1;

	if (!d->txa.running)
		return;
	stop_arm_thread(d);
	(void)!write(d->txa.stop_efd, &one, sizeof(one));
	pthread_join(d->txa.arm_thread, NULL);
	pthread_join(d->txa.event_thread, NULL);
	release(d);
	d->txa.running = 0;
}
