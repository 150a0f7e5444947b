/* SPDX-License-Identifier: MIT */
/*
 * When ssqd goes away. Its QPs do not: on a ConnectX a client's UAR mapping
 * holds the uverbs command fd open, so the QPs stay in RTS and execute
 * whatever is rung while nobody heals dead producers, routes completions
 * or refills receives. ssqd fences its queues when it is stopped (SIGTERM),
 * not when it is killed; so each client watches its connection, and on the
 * hang-up it stops using the queues it has open: each UAR mapping becomes an
 * anonymous page, which lets the uverbs file go and catches a doorbell still
 * in flight, and each producer handle is marked gone (ssq_producer_gone:
 * this process's ssq_reserve, ssq_submit and ssq_poll return -ENOTCONN).
 *
 * Only this process's mappings and handles change, never the shared queue:
 * a hang-up also comes when the process shut its own connection, and a live
 * ssqd answers that by killing it (util/util.h), not by letting one
 * client declare the queue dead for all. Every other client of a dead ssqd
 * sees its own hang-up.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>
#include <sys/mman.h>
#include "dv/ctl.h"
#include "ctrl/client/client_pvt.h"

void client_orphan(struct ssq_queue *q)
{
	void *anon;

	if (q->orphaned)
		return;
	q->orphaned = 1;
	/*
	 * The doorbell page first, then the flag the fast path reads. MAP_FIXED
	 * replaces the mapping in one step: a store racing with it lands in
	 * the old page or the new one, never in a hole.
	 */
	anon = mmap(q->uar, q->uar_len, PROT_READ | PROT_WRITE,
	            MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	(void)anon; /* on failure the old mapping stays; the producer is gone anyway */
	ssq_producer_gone(&q->prod);
}

void client_orphan_all(struct ssq_client *c)
{
	struct ssq_queue *q;

	pthread_mutex_lock(&c->lock);
	c->gone = 1;
	for (q = c->queues; q; q = q->next)
		client_orphan(q);
	pthread_mutex_unlock(&c->lock);
}

static void *watch(void *arg)
{
	struct ssq_client *c = arg;
	/*
	 * POLLRDHUP alone: replies (POLLIN) do not wake us, ssqd's end closing
	 * does (and POLLHUP / POLLERR, which poll always reports).
	 */
	struct pollfd p[2] = { { c->sock, POLLRDHUP, 0 },
		               { c->watch.stop[0], POLLIN, 0 } };

	sem_post(&c->watch.ready);
	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return NULL;
		}
		if (p[1].revents)
			return NULL;
		if (p[0].revents & (POLLRDHUP | POLLHUP | POLLERR)) {
			void (*hangup)(struct ssq_client *) =
			    __atomic_load_n(&c->mem_hangup, __ATOMIC_ACQUIRE);

			client_orphan_all(c);
			if (hangup)
				hangup(c);
			return NULL;
		}
		if (p[0].revents & POLLNVAL)
			return NULL;
	}
}

int client_watch_start(struct ssq_client *c)
{
	sigset_t all, old;
	int rc;

	if (pipe2(c->watch.stop, O_CLOEXEC))
		return -errno;
	sem_init(&c->watch.ready, 0, 0);
	/* The application's signals go to its own threads, never to ours. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&c->watch.thread, NULL, watch, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		close(c->watch.stop[0]);
		close(c->watch.stop[1]);
		sem_destroy(&c->watch.ready);
		return -rc;
	}
	/*
	 * Return only once the thread is about to block in poll(), holding no
	 * lock: a process that forks after connecting (many do) must not fork
	 * while our thread is still starting up inside the allocator or the
	 * sanitizer's runtime, whose locks the child would inherit held.
	 */
	while (sem_wait(&c->watch.ready) && errno == EINTR)
		;
	c->watch.running = 1;
	return 0;
}

void client_watch_stop(struct ssq_client *c)
{
	if (!c->watch.running)
		return;
	if (getpid() != c->self) {
		/*
		 * A forked child: the thread is its parent's (fork copies only
		 * the caller), and the pipe is shared with it. Close our copies.
		 */
		close(c->watch.stop[0]);
		close(c->watch.stop[1]);
		c->watch.running = 0;
		return;
	}
	(void)!write(c->watch.stop[1], "x", 1);
	pthread_join(c->watch.thread, NULL);
	sem_destroy(&c->watch.ready);
	close(c->watch.stop[0]);
	close(c->watch.stop[1]);
	c->watch.running = 0;
}
