/* SPDX-License-Identifier: MIT */
/*
 * ssq_queue_open_start / _fd / _finish / _free: ssq_queue_try_open with a
 * descriptor to wait on, for an event loop (issue 30, newcomer review F5).
 * The first ask is made at start (it is what makes ssqd link a cluster's
 * peer on demand); while it answers -EINPROGRESS a thread of this process
 * watches the queue's layout in the shared header (its state and peer_gen,
 * as ssq_queue_wait_fd's thread does for an open queue, found by name: a
 * peer's queue may be listed only once linked) and adds 1 to an eventfd
 * when it changes, when ssqd goes, and once a second regardless. The
 * layout is a hint any client could scribble on: the answer is always the
 * next ATTACH (ssq_queue_open_finish), never the hint.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <ssq/client.h>
#include "ctrl/client/client_pvt.h"

/*
 * How often the thread looks: a peer's link takes a TCP exchange and QP
 * transitions (milliseconds at best), so 10 ms adds little to it and costs
 * 100 wake-ups a second only while an open is pending.
 */
#define OPEN_LOOK_NS 10000000L
/*
 * A wake-up this often in any case (100 looks): a way to become openable
 * that the layout does not show (ssqd's own word is the ATTACH) is still
 * asked about within a second.
 */
#define OPEN_BACKSTOP_LOOKS 100u

struct ssq_open {
	struct ssq_client *c;
	char name[SSQ_NAME_MAX];
	int efd;
	pthread_t thread;
	int thread_on;
	int stop;                /* release-stored by finish or free, acquire-read */
	int first_rc;            /* the start's answer when it was not -EINPROGRESS */
	struct ssq_queue *first; /* ... and its queue, handed over by finish */
	int done;                /* finish has returned its final answer */
	uint64_t word;           /* the layout word the thread compares with */
};

/*
 * The named queue's layout as one word: listed or not, its state, its
 * peer_gen. Relaxed loads of a bounded, NUL-checked copy: a hint.
 */
static uint64_t layout_word(const struct ssq_client *c, const char *name)
{
	uint32_t n = __atomic_load_n(&c->hdr->nqueues, __ATOMIC_RELAXED), i;
	char nm[SSQ_NAME_MAX];

	if (n > SSQ_MAX_QUEUES)
		n = SSQ_MAX_QUEUES;
	for (i = 0; i < n; i++) {
		const struct shm_queue_layout *l = &c->hdr->queues[i];

		memcpy(nm, l->name, sizeof(nm));
		nm[sizeof(nm) - 1] = 0;
		if (strcmp(nm, name))
			continue;
		return 1ull << 63 | (uint64_t)i << 48 |
		       (__atomic_load_n(&l->state, __ATOMIC_RELAXED) & 0xff) |
		       (uint64_t)__atomic_load_n(&l->peer_gen, __ATOMIC_RELAXED) << 8;
	}
	return 0;
}

static int client_gone(struct ssq_client *c)
{
	int gone;

	pthread_mutex_lock(&c->lock);
	gone = c->gone;
	pthread_mutex_unlock(&c->lock);
	return gone;
}

static void *watcher(void *arg)
{
	struct ssq_open *op = arg;
	struct timespec look = { 0, OPEN_LOOK_NS };
	uint64_t word = op->word, one = 1, w;
	unsigned looks = 0;

	while (!__atomic_load_n(&op->stop, __ATOMIC_ACQUIRE)) {
		nanosleep(&look, NULL);
		if (client_gone(op->c)) {
			/* finish's ATTACH says -ENOTCONN; wake the program to hear it. */
			(void)!write(op->efd, &one, sizeof(one));
			break;
		}
		w = layout_word(op->c, op->name);
		if (w != word || ++looks >= OPEN_BACKSTOP_LOOKS) {
			word = w;
			looks = 0;
			(void)!write(op->efd, &one, sizeof(one)); /* non-blocking */
		}
	}
	return NULL;
}

static void stop_watcher(struct ssq_open *op)
{
	if (!op->thread_on)
		return;
	__atomic_store_n(&op->stop, 1, __ATOMIC_RELEASE);
	pthread_join(op->thread, NULL); /* it sleeps one look at most */
	op->thread_on = 0;
}

int ssq_queue_open_start(struct ssq_client *c, const char *name, struct ssq_open **out)
{
	struct ssq_open *op;
	uint64_t one = 1;
	int rc;

	if (!c || !name || !out)
		return -EINVAL;
	*out = NULL;
	if (strlen(name) >= SSQ_NAME_MAX || !*name) {
		snprintf(c->err, sizeof(c->err), "queue name must be 1..%u characters",
		         SSQ_NAME_MAX - 1);
		return -EINVAL;
	}
	op = calloc(1, sizeof(*op));
	if (!op)
		return -ENOMEM;
	op->c = c;
	strcpy(op->name, name);
	op->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (op->efd < 0) {
		rc = -errno;
		snprintf(c->err, sizeof(c->err), "eventfd: %s", strerror(errno));
		free(op);
		return rc;
	}
	/*
	 * The word before the ask: a change between the ask and the thread's
	 * first look (the peer linked meanwhile) still wakes the program.
	 */
	op->word = layout_word(c, name);
	rc = ssq_queue_try_open(c, name, &op->first);
	if (rc != -EINPROGRESS) {
		/* Answered already: readable at once, finish hands it over. */
		op->first_rc = rc;
		(void)!write(op->efd, &one, sizeof(one));
		*out = op;
		return 0;
	}
	rc = pthread_create(&op->thread, NULL, watcher, op);
	if (rc) {
		snprintf(c->err, sizeof(c->err), "its thread: %s", strerror(rc));
		close(op->efd);
		free(op);
		return -rc;
	}
	op->thread_on = 1;
	*out = op;
	return 0;
}

int ssq_queue_open_fd(const struct ssq_open *op)
{
	return op ? op->efd : -EINVAL;
}

int ssq_queue_open_finish(struct ssq_open *op, struct ssq_queue **out)
{
	uint64_t v;
	int rc;

	if (!op || !out)
		return -EINVAL;
	*out = NULL;
	if (op->done)
		return -EALREADY;
	/* The wakes so far are answered by this ask. */
	(void)!read(op->efd, &v, sizeof(v));
	if (!op->thread_on) {
		rc = op->first_rc;
		*out = op->first;
		op->first = NULL;
	} else {
		rc = ssq_queue_try_open(op->c, op->name, out);
	}
	if (rc == -EINPROGRESS)
		return rc;
	stop_watcher(op);
	op->done = 1;
	return rc;
}

void ssq_queue_open_free(struct ssq_open *op)
{
	if (!op)
		return;
	stop_watcher(op);
	/* Opened at start, never handed over: give it back. */
	if (op->first)
		ssq_queue_close(op->first);
	close(op->efd);
	free(op);
}
