/* SPDX-License-Identifier: MIT */
/*
 * ssqd's receive pool (see queues/queues.h): receive WQEs kept posted, the
 * poller that logs their completions and re-posts, and the ordering that
 * lets clients in other processes read the log and the buffers without a
 * lock (the reader's half is ssq_recv_peek / ssq_recv_copy in client.c),
 * and wakes readers asleep in ssq_recv_wait (recv_wait.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include "ctrl/daemon/queues/queues.h"

#define REAP_BUDGET 64            /* CQEs per pool per pass: no queue starves the rest */
#define SPIN_NS     200000        /* busy-poll this long after the last CQE, */
#define NAP_NS      100000        /* then sleep this long between idle passes, */
#define DOZE_AFTER  50000000      /* and, after this long without a CQE, */
#define DOZE_NS     1000000       /* this long, */
#define SLEEP_AFTER 1000000000ull /* and after a second without one, */
#define SLEEP_NS    10000000      /* this long: an idle ssqd costs well under 1 % */
static void rx_event(void *arg, unsigned cqes);

static uint64_t pool_bytes(const struct ssqd_options *o)
{
	return ssqd_align_up((uint64_t)2 * o->recv_depth * o->recv_size, 4096);
}

uint64_t ssqd_recv_data_bytes(const struct ssqd_options *o)
{
	return o->recv_depth ? o->nqueues * pool_bytes(o) : 0;
}

uint64_t ssqd_recv_log_bytes(const struct ssqd_options *o)
{
	return o->recv_depth ? ssqd_align_up(shm_recv_log_size(2 * o->recv_depth), 4096)
	                     : 0;
}

/* The QP that receives what queue @q's other end sends. */
static struct ssqd_bqueue *rx_qp(struct ssqd_queue *q)
{
	return q->loopback ? &q->peer : &q->local;
}

int ssqd_recv_alloc(struct ssqd *d, unsigned qi, char *why, size_t whylen)
{
	const struct ssqd_options *o = &d->opt;
	struct ssqd_recv_pool *p = &d->queues[qi].rx;
	struct shm_queue_layout *l = &d->hdr->queues[qi];
	uint64_t off;

	if (!o->recv_depth)
		return 0;
	p->depth = o->recv_depth;
	p->slots = 2 * o->recv_depth;
	p->size = o->recv_size;
	p->log = shm_arena_alloc(&d->arena, shm_recv_log_size(p->slots), 4096);
	if (!p->log) {
		snprintf(why, whylen, "no room in the arena for queue q%u's receive log",
		         qi);
		return -ENOSPC;
	}
	/* The pools sit after the client part of the data arena (ssqd_setup). */
	off = d->own.data_off + (o->data_mib << 20) + qi * pool_bytes(o);
	if (off + (uint64_t)p->slots * p->size > d->own.data_off + d->own.data_len) {
		snprintf(why, whylen,
		         "queue q%u's receive buffers overrun the data arena", qi);
		return -ENOSPC;
	}
	p->buf_iova = d->own.data_iova + (off - d->own.data_off);
	p->lkey = d->own.data_key;
	pthread_mutex_init(&p->lock, NULL);
	p->inited = 1;
	ssqd_recv_layout(d, qi, l);
	/* Where the device can say when CQEs land, nothing need poll for them. */
	if (d->ops->cq_event &&
	    !d->ops->cq_event(d->backend, rx_qp(&d->queues[qi]), 1, rx_event, p))
		p->events = 1;
	return 0;
}

void ssqd_recv_layout(const struct ssqd *d, unsigned qi, struct shm_queue_layout *l)
{
	const struct ssqd_recv_pool *p = &d->queues[qi].rx;

	if (!p->inited)
		return;
	l->recv_depth = p->depth;
	l->recv_slots = p->slots;
	l->recv_size = p->size;
	l->recv_buf_off = d->own.data_off + (p->buf_iova - d->own.data_iova);
	l->recv_log_off = shm_arena_off(&d->arena, p->log);
}

/*
 * Log completion @c as record `arrived`. Lock held.
 *
 * W1 (pairs with the reader's acquire fence, R2 in client.c): the release
 * fence puts every earlier store of this thread - in particular the
 * `posted` store that handed out WQE k + slots, the only one whose
 * completion can overwrite record k - before the field stores below. A
 * reader whose field loads see this record's values, and who then fences
 * and loads `posted`, sees posted > k, i.e. knows the slot moved on. The
 * fields are relaxed atomics so that this fence-to-fence argument is C11.
 * W2 (pairs with the reader's acquire of seq, R1): seq last.
 */
static void log_one(struct ssqd_recv_pool *p, const struct ssq_cqe *c)
{
	uint64_t k = p->arrived;
	struct shm_recv_record *r = &p->log->rec[k & (p->slots - 1)];
	int ok = c->status == IBV_WC_SUCCESS;

	__atomic_thread_fence(__ATOMIC_RELEASE); /* W1 */
	__atomic_store_n(&r->byte_len, ok ? c->byte_len : 0, __ATOMIC_RELAXED);
	__atomic_store_n(&r->imm, ok ? (uint32_t)c->imm : 0, __ATOMIC_RELAXED);
	__atomic_store_n(&r->opcode, c->opcode, __ATOMIC_RELAXED);
	__atomic_store_n(&r->status, (uint8_t)c->status, __ATOMIC_RELAXED);
	__atomic_store_n(&r->syndrome, c->syndrome, __ATOMIC_RELAXED);
	__atomic_store_n(&r->vendor_err, c->vendor_err, __ATOMIC_RELAXED);
	__atomic_store_n(&r->qpn, c->qpn, __ATOMIC_RELAXED);
	__atomic_store_n(&r->seq, k + 1, __ATOMIC_RELEASE); /* W2 */
	p->arrived = k + 1;
	/* W3: after the record, so arrived never names a record not yet there. */
	__atomic_store_n(&p->log->arrived, k + 1, __ATOMIC_RELEASE);
	if (!ok)
		p->errors++;
}

/*
 * Post receive WQEs until depth are outstanding (posted = arrived + depth),
 * then hand them to the device. Lock held.
 */
static void refill(struct ssqd_recv_pool *p)
{
	int n = 0;

	while (p->posted < p->arrived + p->depth) {
		struct ibv_sge sg;

		sg.addr = p->buf_iova + (p->posted & (p->slots - 1)) * (uint64_t)p->size;
		sg.length = p->size;
		sg.lkey = p->lkey;
		(void)ssq_rq_post_recv(&p->rq, &sg, 1); /* one SGE always fits */
		p->posted++;
		n++;
	}
	if (!n)
		return;
	/*
	 * W4 (the buffer half of the reader's check, R2/R3 in client.c): the
	 * buffer of message k is written again only for WQE k + slots, which
	 * the device can see only after this doorbell. `posted` is stored
	 * before the WQEs are rung (ssq_rq_ring: udma_to_device_barrier, then
	 * the DBR), so any device write into that buffer follows a visible
	 * posted > k + slots, and a reader who copied, fenced and then saw
	 * posted <= k + slots copied bytes no device wrote for a later
	 * message.
	 */
	__atomic_store_n(&p->log->posted, p->posted, __ATOMIC_RELEASE);
	ssq_rq_ring(&p->rq);
}

/*
 * Consume up to @budget CQEs of @p's receive CQ: log each (flushes aside),
 * then, with @repost, refill. Lock held. Returns CQEs consumed.
 */
static int reap(struct ssqd_recv_pool *p, int budget, int repost)
{
	struct mlx5_cqe64 *raw;
	struct ssq_cqe c;
	int n = 0;

	while (n < budget && (raw = ssq_cq_peek(&p->cq)) != NULL) {
		ssq_cqe_decode(raw, &c);
		p->cq.ci++;
		n++;
		if (c.status == IBV_WC_WR_FLUSH_ERR) {
			p->flushed++; /* no message; its WQE is not re-posted */
			continue;
		}
		log_one(p, &c);
	}
	if (!n)
		return 0;
	/* The slots are free before new receives can complete into them. */
	ssq_cq_update_ci(&p->cq);
	if (repost)
		refill(p);
	return n;
}

/*
 * Wake the readers asleep on @p's log, if any, after its poller logged
 * messages. The waiter count is client memory: it only decides whether to
 * make the (never blocking) FUTEX_WAKE, so a scribbled one costs a system
 * call per logged batch.
 *
 * W5 (pairs with the sleeper's R5 in recv_wait.c): the fence orders the
 * W3 store of `arrived` before the load of `waiters`; the sleeper
 * increments `waiters` (seq_cst) before any of its looks at `arrived`
 * (seq_cst loads). One of the two sees the other: we wake it, or it does
 * not sleep. It reads wake_seq before each look, so our bump after the
 * load makes a FUTEX_WAIT that comes after its look return at once.
 */
static void wake(struct ssqd_recv_pool *p)
{
	/* Release: the records logged are visible to whoever wakes. */
	__atomic_fetch_add(&p->log->wake_seq, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &p->log->wake_seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static void wake_readers(struct ssqd_recv_pool *p)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST); /* W5 */
	if (__atomic_load_n(&p->log->waiters, __ATOMIC_RELAXED))
		wake(p);
}

/*
 * wake_readers from the device's thread, which runs every queue's WQEs:
 * only while the sleepers' beat moved within SSQD_WAIT_BEAT_NS. A count left by a
 * reader killed asleep (or scribbled, and never beaten for) would
 * otherwise cost that thread a system call per logged batch for good; a
 * live reader descheduled that long finds its message at the end of its
 * slice. Acquire on the count: the beat a reader moved before counting
 * itself (ssq_recv_wait) is seen with it.
 */
static void wake_live_readers(struct ssqd_recv_pool *p)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST); /* W5 */
	if (__atomic_load_n(&p->log->waiters, __ATOMIC_ACQUIRE) &&
	    ssqd_beat_live(&p->ev_beat, __atomic_load_n(&p->log->beat, __ATOMIC_RELAXED),
	                   ssqd_now_ns()))
		wake(p);
}

/*
 * The device's word that receive CQEs landed in @arg's CQ (the backend's
 * cq_event), from the thread that wrote them: log and re-post at once, so
 * a message reaches the log, and a reader asleep on it, in the time of
 * this call rather than of the poller's next look. The poller may be
 * reaping too: the lock decides who logs each CQE, and a CQE the poller
 * took is one this call need not.
 */
static void rx_event(void *arg, unsigned cqes)
{
	struct ssqd_recv_pool *p = arg;
	int got = 0;

	/*
	 * At most the @cqes the device wrote since the last call (and never
	 * more than depth, all the receives ever posted): the CQ is in the
	 * arena clients map, and CQEs a client forged after the device's must
	 * not have the device's thread, which runs every queue's WQEs, log
	 * and re-post for them; one it forged in the device's place costs that
	 * CQE's share, as the real one would have. The poller takes the rest.
	 */
	if (cqes > p->depth)
		cqes = p->depth;
	/*
	 * Never wait for the lock: its holder (the poller, or the control
	 * thread arming or pausing the pool) may be descheduled for
	 * milliseconds, or draining CQEs clients can write, and every queue's
	 * WQEs would wait with this thread. The holder is at the CQ already;
	 * `missed` has the poller look again at once rather than nap.
	 */
	if (pthread_mutex_trylock(&p->lock)) {
		__atomic_store_n(&p->missed, 1, __ATOMIC_RELEASE);
		return;
	}
	if (__atomic_load_n(&p->armed, __ATOMIC_RELAXED))
		got = reap(p, (int)cqes, 1);
	pthread_mutex_unlock(&p->lock);
	if (got)
		wake_live_readers(p);
}

/*
 * 1 if the device's event found a pool's lock held since the last look
 * (rx_event): the CQEs it came for may still be there, so no nap.
 */
static int events_missed(struct ssqd *d)
{
	int any = 0;
	unsigned i;

	for (i = 0; i < d->opt.nqueues; i++)
		if (__atomic_load_n(&d->queues[i].rx.missed, __ATOMIC_RELAXED))
			any |= __atomic_exchange_n(&d->queues[i].rx.missed, 0,
			                           __ATOMIC_ACQUIRE);
	return any;
}

/*
 * 1 while a reader sleeps in ssq_recv_wait on an armed pool: its count
 * nonzero and its beat moved within SSQD_WAIT_BEAT_NS of @now. A count
 * left behind by a reader killed in its sleep stops counting once its beat
 * stands (it costs that much spinning once).
 */
static int readers_waiting(struct ssqd *d, uint64_t now)
{
	int any = 0;
	unsigned i;

	for (i = 0; i < d->opt.nqueues; i++) {
		struct ssqd_recv_pool *p = &d->queues[i].rx;

		/* A pool the device's events log needs no spinning for. */
		if (p->events || !__atomic_load_n(&p->armed, __ATOMIC_ACQUIRE) ||
		    !__atomic_load_n(&p->log->waiters, __ATOMIC_RELAXED))
			continue;
		any |= ssqd_beat_live(
		    &p->beat, __atomic_load_n(&p->log->beat, __ATOMIC_RELAXED), now);
	}
	return any;
}

int ssqd_recv_arm(struct ssqd *d, unsigned qi, char *why, size_t whylen)
{
	struct ssqd_queue *q = &d->queues[qi];
	struct ssqd_recv_pool *p = &q->rx;
	struct ssqd_bqueue *b = rx_qp(q);
	int rc = 0, again = p->cq.buf != NULL, logged = 0, n;

	if (!p->inited)
		return 0;
	pthread_mutex_lock(&p->lock);
	__atomic_store_n(&p->armed, 0, __ATOMIC_RELAXED);
	if (!again) {
		rc = ssq_cq_init(&p->cq, &b->dv_rcq);
		if (rc) {
			snprintf(why, whylen, "queue q%u: receive CQ: %s", qi,
			         strerror(-rc));
			goto out;
		}
	}
	/*
	 * What the CQ still holds is from before the reset: log it, post
	 * nothing. At most a CQ's worth: the device cannot have written more
	 * since the last reap, and a client forging CQEs ahead of us in the
	 * arena must not hold ssqd's control thread here.
	 */
	while (logged < (int)p->cq.cqe_cnt &&
	       (n = reap(p, (int)p->cq.cqe_cnt - logged, 0)) > 0)
		logged += n;
	rc = ssq_rq_init(&p->rq, &b->dv_qp); /* head 0, as the reset left the RQ */
	if (!rc && p->rq.wqe_cnt < p->depth)
		rc = -EINVAL;
	if (rc) {
		snprintf(why, whylen, "queue q%u: an RQ of %u WQEs cannot hold %u", qi,
		         b->dv_qp.rq.wqe_cnt, p->depth);
		goto out;
	}
	/*
	 * WQEs arrived .. arrived + depth - 1, in buffers that follow on from
	 * the last logged message: numbering stays gap-free, and `posted`
	 * never goes back (before the reset it was at most arrived + depth).
	 */
	p->posted = p->arrived;
	refill(p);
	__atomic_store_n(&p->armed, 1, __ATOMIC_RELEASE);
	if (again)
		fprintf(stderr,
		        "ssqd: q%u: receive pool posted again from message %llu (so far "
		        "%llu error records, %llu flushed receives)\n",
		        qi, (unsigned long long)p->arrived, (unsigned long long)p->errors,
		        (unsigned long long)p->flushed);
out:
	pthread_mutex_unlock(&p->lock);
	if (logged)
		wake_readers(p);
	return rc;
}

void ssqd_recv_pause(struct ssqd *d, unsigned qi)
{
	struct ssqd_recv_pool *p = &d->queues[qi].rx;

	if (!p->inited)
		return;
	pthread_mutex_lock(&p->lock);
	__atomic_store_n(&p->armed, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&p->lock);
}

/*
 * While nothing can arrive (ssqd_recv_idle): sleep up to idle_ms, or until
 * kicked. 1: kicked, 0: slept, -1: something may arrive, no sleep here.
 *
 * K1 (pairs with K2 in ssqd_recv_idle): kick is read before idle_ms, and
 * ssqd_recv_idle stores idle_ms = 0 before it bumps kick: a poller that
 * read the old kick sleeps on it and FUTEX_WAIT returns at once (the value
 * moved) or is woken; one that read the new kick sees idle_ms = 0.
 */
static int idle_sleep(struct ssqd *d)
{
	uint32_t k = __atomic_load_n(&d->rxp.kick, __ATOMIC_SEQ_CST); /* K1 */
	uint32_t ms = __atomic_load_n(&d->rxp.idle_ms, __ATOMIC_SEQ_CST);
	struct timespec ts;

	if (!ms)
		return -1;
	/* K3 (pairs with K4 in ssqd_recv_stop): as K1, stop in idle_ms's place. */
	if (__atomic_load_n(&d->rxp.stop, __ATOMIC_SEQ_CST))
		return 1;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (long)(ms % 1000) * 1000000L;
	syscall(SYS_futex, &d->rxp.kick, FUTEX_WAIT_PRIVATE, k, &ts, NULL, 0);
	return __atomic_load_n(&d->rxp.kick, __ATOMIC_SEQ_CST) != k;
}

/* End the poller's idle sleep: after a store it must see (K2, K4). */
static void kick(struct ssqd *d)
{
	__atomic_fetch_add(&d->rxp.kick, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &d->rxp.kick, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void ssqd_recv_idle(struct ssqd *d, unsigned max_ms)
{
	__atomic_store_n(&d->rxp.idle_ms, max_ms, __ATOMIC_SEQ_CST);
	if (!max_ms)
		kick(d); /* K2 */
}

/*
 * Nap up to @nap, or until a receive CQ's completion event, where the
 * backend raises them (a ConnectX: rx_arm): each armed pool's CQ is armed
 * at the index this poller consumed to, so a CQE already there, or the
 * next one, ends the nap at once instead of waiting it out. Pools the
 * device's own events log (p->events) need no arming. @blind: nap without
 * the channel (after a wake that brought nothing, see poller_main).
 * Returns 1 when an event came, -1 when the channel woke the nap with no
 * event to take, 0 after a plain nap.
 */
static int event_nap(struct ssqd *d, const struct timespec *nap, int blind)
{
	const struct ssqd_backend_ops *ops = d->ops;
	int fd = !blind && ops->rx_event_fd ? ops->rx_event_fd(d->backend) : -1;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int armed = 0, rc;
	unsigned i;

	for (i = 0; fd >= 0 && ops->rx_arm && i < d->opt.nqueues; i++) {
		struct ssqd_queue *q = &d->queues[i];
		struct ssqd_recv_pool *p = &q->rx;

		if (p->events || !__atomic_load_n(&p->armed, __ATOMIC_ACQUIRE))
			continue;
		pthread_mutex_lock(&p->lock);
		if (p->armed && !ops->rx_arm(d->backend, rx_qp(q), p->cq.ci))
			armed++;
		pthread_mutex_unlock(&p->lock);
	}
	if (!armed) {
		nanosleep(nap, NULL);
		return 0;
	}
	rc = ppoll(&pfd, 1, nap, NULL);
	/*
	 * Refused (EINVAL: an entry over an RLIMIT_NOFILE lowered under ssqd
	 * to 0, do_sys_poll in fs/select.c): the nap is slept all the same,
	 * or the poller spins.
	 */
	if (rc < 0 && errno == EINVAL)
		nanosleep(nap, NULL);
	if (rc <= 0)
		return 0;
	/*
	 * Ready with nothing to take: a channel whose device went away polls
	 * EPOLLERR for good and its reads fail (kernel
	 * drivers/infiniband/core/uverbs_main.c, ib_uverbs_event_poll,
	 * ib_uverbs_event_read).
	 */
	return ops->rx_events_take(d->backend) > 0 ? 1 : -1;
}

/*
 * The poller: every armed pool in turn, REAP_BUDGET CQEs at most each. It
 * keeps up with a sender by never sleeping while CQEs come, nor while a
 * reader waits in ssq_recv_wait (readers_waiting), and costs little when
 * idle: after SPIN_NS without either it naps NAP_NS per pass, and DOZE_NS
 * once idle for DOZE_AFTER, SLEEP_NS after SLEEP_AFTER (the first message
 * after a long silence then waits up to that nap to be logged, even for a
 * reader who started waiting during the nap; the sender does not wait:
 * its receive WQE was posted long before). While nothing can arrive
 * (ssqd_recv_idle) it sleeps longer, until told something may.
 */
static void *poller_main(void *arg)
{
	struct ssqd *d = arg;
	uint64_t last = ssqd_now_ns();
	unsigned i, passes = 0;
	/*
	 * The last nap's wake brought no CQE yet: an event for a CQE already
	 * reaped, one for a CQ whose consumer index a forged CQE moved past
	 * the device's producer (an arm there fires at once, every time), or a
	 * dead channel's endless "ready". The next nap is then blind, so such
	 * wakes cost a nap each, not a core; a CQE reaped clears it.
	 */
	int blind = 0;

	while (!__atomic_load_n(&d->rxp.stop, __ATOMIC_ACQUIRE)) {
		uint64_t now;
		int n = 0, got, slept;

		for (i = 0; i < d->opt.nqueues; i++) {
			struct ssqd_recv_pool *p = &d->queues[i].rx;

			/* Pairs with the release in ssqd_recv_arm: rq, cq and log set. */
			if (!__atomic_load_n(&p->armed, __ATOMIC_ACQUIRE))
				continue;
			pthread_mutex_lock(&p->lock);
			got = p->armed ? reap(p, REAP_BUDGET, 1) : 0;
			pthread_mutex_unlock(&p->lock);
			if (got)
				wake_readers(p); /* not under the lock: a system call */
			n += got;
		}
		if (n || events_missed(d)) {
			last = 0;
			blind = 0;
			continue;
		}
		now = ssqd_now_ns();
		if (readers_waiting(d, now)) {
			/*
			 * Spin while they wait (the naps restart after), but let
			 * a runnable thread have the core now and then, as the
			 * emulated device does (src/emu/engine.c): on a machine
			 * with fewer cores than busy threads the sender, or the
			 * reader being woken, may be queued behind this one.
			 */
			last = now;
			if ((++passes & 63) == 0)
				sched_yield();
			else
				ssq_cpu_relax();
			continue;
		}
		if (!last)
			last = now;
		if (now - last < SPIN_NS) {
			ssq_cpu_relax();
		} else if (now - last >= SLEEP_AFTER && (slept = idle_sleep(d)) >= 0) {
			/* Woken for a sender: poll afresh. */
			if (slept)
				last = ssqd_now_ns();
		} else {
			uint64_t idle_ns = now - last;
			struct timespec nap = { 0, idle_ns < DOZE_AFTER    ? NAP_NS
				                   : idle_ns < SLEEP_AFTER ? DOZE_NS
				                                           : SLEEP_NS };

			/*
			 * After a wake, poll afresh at once: a message reaped
			 * restarts the idle clock (n above); none leaves it
			 * running, and the next nap blind.
			 */
			blind = event_nap(d, &nap, blind) != 0;
		}
	}
	return NULL;
}

int ssqd_recv_start(struct ssqd *d)
{
	int rc;

	if (!d->opt.recv_depth || d->rxp.running)
		return 0;
	__atomic_store_n(&d->rxp.stop, 0, __ATOMIC_RELAXED);
	rc = pthread_create(&d->rxp.thread, NULL, poller_main, d);
	if (rc)
		return -rc;
	/* Named for top -H, and for tests that count its naps (ctrl_recv_wait). */
	(void)pthread_setname_np(d->rxp.thread, "ssqd-recv");
	d->rxp.running = 1;
	return 0;
}

void ssqd_recv_stop(struct ssqd *d)
{
	if (!d->rxp.running)
		return;
	/*
	 * K4: a poller asleep while idle would otherwise finish its sleep
	 * (SSQD_IDLE_MS) before it saw stop, and every idle ssqd's exit with it.
	 */
	__atomic_store_n(&d->rxp.stop, 1, __ATOMIC_SEQ_CST);
	kick(d);
	pthread_join(d->rxp.thread, NULL);
	d->rxp.running = 0;
}
