/* SPDX-License-Identifier: MIT */
/*
 * libssq's client objects, shared by client.c (the protocol, mapping) and
 * client_watch.c (what happens when ssqd goes away).
 */
#ifndef SSQ_CTRL_CLIENT_PVT_H
#define SSQ_CTRL_CLIENT_PVT_H

#include <pthread.h>
#include <semaphore.h>
#include <stddef.h>
#include <stdint.h>
#include <ssq/client.h>
#include <ssq/queue.h>
#include "shm/layout.h"

/*
 * The thread that waits for ssqd's end of the connection to close, so that
 * a client spinning in the inline fast path learns of it too (ssq_reserve,
 * ssq_submit and ssq_poll return -ENOTCONN once it has acted).
 */
struct client_watch {
	pthread_t thread;
	sem_t ready; /* posted once the thread waits in poll() */
	int stop[2]; /* a pipe: ssq_client_close's word to the thread */
	int running;
};

struct ssq_client {
	int sock;
	uint32_t seq;      /* the last request's sequence number */
	uint32_t answered; /* the last one answered: behind seq after a timeout */
	uint8_t *arena;
	size_t arena_len;
	const struct shm_arena_header *hdr;
	char device[SSQ_NAME_MAX];
	char err[256];
	/* open ones, closed with the client; c->lock guards the list */
	struct ssq_queue *queues;
	pthread_mutex_t lock;
	/*
	 * Serialises the registration calls (client_mem.c) with the
	 * watcher's client_mem_hangup. Never held with @lock.
	 */
	pthread_mutex_t mem_lock;
	/*
	 * client_mem_hangup once ssq_mem_reg has imported ssqd's verbs
	 * context, else NULL: what the watcher calls at ssqd's hang-up (a
	 * pointer, so that the watcher needs nothing of client_mem.c, which
	 * calls client_call.c, which calls the watcher's client_orphan_all).
	 * Set with release, read with acquire.
	 */
	void (*mem_hangup)(struct ssq_client *c);
	struct client_watch watch;
	int gone;   /* ssqd hung up (c->lock): a queue opened later is orphaned */
	pid_t self; /* the process that connected: a forked child only unmaps */
	struct client_mem *mem; /* its own registrations (client_mem.c); NULL: none yet */
};

/* ssq_queue_wait_fd's eventfd and the thread that signals it (client_wait_fd.c). */
struct client_wait_fd {
	pthread_t thread;
	int efd; /* -1: none made */
	int stop;
	/*
	 * What the thread compares with, taken by ssq_queue_wait_fd before
	 * the thread runs: a change between the call and the thread's first
	 * look (a link that went meanwhile) still wakes the program.
	 */
	uint64_t told;
	uint32_t link;
};

struct ssq_queue {
	struct ssq_client *c;
	uint32_t index;
	char name[SSQ_NAME_MAX]; /* ssqd's: the one asked for, or picked for "any" */
	struct client_wait_fd wfd;
	void *uar;
	size_t uar_len;
	const struct shm_queue_layout *l;
	struct ssq_sq sq;
	struct ssq_cq cq;
	struct ssq_producer prod;
	const struct shm_recv_log *rlog; /* the receive pool's log; NULL: none */
	const uint8_t *rbuf;             /* its buffer 0 */
	uint32_t rslots, rsize;
	struct ssq_queue *next; /* the client's open queues */
	int orphaned;           /* ssqd went away: UAR replaced, producer gone */
};

/*
 * client_watch_start - start @c's watcher; 0 or -errno (the client then works,
 * but learns of ssqd's end only in its next call).
 */
int client_watch_start(struct ssq_client *c);

/*
 * client_call_wait - one request of @type to ssqd (with @send_fd when >= 0)
 * and its reply, waiting up to @timeout_ms; *@fd gets the descriptor the
 * reply carries (NULL: none expected). client_call: client_reply_ms(), no
 * descriptor sent.
 * 0 or the negative errno, c->err saying why. client_call.c.
 */
struct proto_msg;
int client_call_wait(struct ssq_client *c, uint16_t type, const void *req, uint32_t len,
                     int send_fd, struct proto_msg *reply, int *fd, int timeout_ms);
int client_call(struct ssq_client *c, uint16_t type, const void *req, uint32_t len,
                struct proto_msg *reply, int *fd);
/*
 * How long a call waits for ssqd's answer, in ms: $SSQ_REPLY_TIMEOUT_MS,
 * else 25 s (client_call.c says why). client_call waits this long.
 */
int client_reply_ms(void);
/* The next request sequence number (never 0: that is ssqd speaking unasked). */
uint32_t client_next_seq(struct ssq_client *c);

/*
 * client_call_fd - one request of @type to ssqd, passing @send_fd (>= 0)
 * with it, and its reply in *@reply: 0 or the negative errno (ssqd's, or
 * -ETIMEDOUT, -ENOTCONN, -EBADMSG), c->err saying why. client.c.
 */
struct proto_msg;
int client_call_fd(struct ssq_client *c, uint16_t type, const void *req, uint32_t len,
                   int send_fd, struct proto_msg *reply);
/* The same, for a reply that carries a descriptor: *@fd, the caller's. */
int client_call_fd_reply(struct ssq_client *c, uint16_t type, const void *req,
                         uint32_t len, struct proto_msg *reply, int *fd);
/* Let go of ssqd's imported verbs context, if ssq_mem_reg imported it. */
void client_mem_close(struct ssq_client *c);
/*
 * ssqd hung up: close the verbs context imported for ssq_mem_reg (its MRs'
 * and PD's halves first), so that this process no longer holds ssqd's
 * uverbs file and the kernel can tear down a dead ssqd's QPs and MRs.
 * Later registrations fail with -ENOTCONN. From the watcher thread.
 */
void client_mem_hangup(struct ssq_client *c);

/* Stop @q's wait-fd thread and close its eventfd (if ssq_queue_wait_fd made one). */
void client_wait_fd_stop(struct ssq_queue *q);

/* Stop and join @c's watcher (if it runs). */
void client_watch_stop(struct ssq_client *c);

/*
 * client_orphan_all - @c's ssqd is gone: swap the UAR mapping of each queue @c
 * has open, which holds the device's command fd, for an anonymous page, and
 * mark its producer handle gone (ssq_producer_gone).
 * Takes c->lock.
 */
void client_orphan_all(struct ssq_client *c);

/* client_orphan_all for one queue; caller holds c->lock. */
void client_orphan(struct ssq_queue *q);

#endif /* SSQ_CTRL_CLIENT_PVT_H */
