/* SPDX-License-Identifier: MIT */
/*
 * The stall watch: no live client may hold a shared queue up for longer
 * than --stall-ms. What a client can hold (tests/model/ssq_queue.pml):
 *  - an open reservation: WQEBBs it took with the fetch-add and has not
 *    published, which every producer behind it waits for (their WQEs are
 *    not rung past the hole);
 *  - the doorbell lease: others leave their doorbells to its holder;
 *  - the CQ lease: nobody else routes completions meanwhile.
 * Each is done in a few hundred instructions by a process that runs. One
 * that does not move for --stall-ms belongs to a process that is stopped
 * (SIGSTOP, a debugger), preempted that long, or buggy - or it is no hold
 * at all: every field that names a holder is in memory every client of the
 * queue writes, so a client can forge one in another's name. What ssqd
 * does depends on what the kernel (which no client can forge) says of the
 * named holder:
 *  - stopped mid-hold: a thread in state T or t outside any system call
 *    (proc_evidence.c: the fast path makes none while it holds anything)
 *    at two looks in a row, the last one at the deadline (a traced process
 *    passes through t at each system call and runs in between): it may
 *    resume at any moment and write into the ring, so its hold cannot be
 *    taken away while it lives: ssqd kills it (SIGKILL; clients of a queue
 *    are one trust domain, and whoever could stop it could kill it) and,
 *    once its socket closes, heals it like any death (ssq_ctl_heal: leases
 *    broken, holes published as NOPs). One it cannot kill (another uid) is
 *    taken back as below;
 *  - otherwise, at AWAKE_TIMES the deadline (a producer waiting that
 *    long for a CPU moves on once it gets one): nobody is killed on
 *    evidence a client could have written. ssqd takes the hold back by
 *    starting the queue over (ssqd_queue_rebuild: what was in flight
 *    completes as flushed, open reservations fail with -EIO).
 * A lease that names a record no live client holds, and a hole at the
 * published head that no live reservation covers, have no holder to
 * wait for: the queue is started over at the deadline.
 *
 * "Has not moved": each look samples the hold's state - a reservation's
 * generation, position and publish count, a lease's holder and the counters
 * it moves - and a hold counts as stalled only when every look for
 * --stall-ms (at least LOOKS_MIN of them) found the very same state. A busy
 * producer's reservations come and go, and each of its publishes moves the
 * count. The counters of a lease do not always move (a router with no CQE
 * to route), so a lease found held by the same holder is also watched for
 * up to LEASE_WATCH_NS at each look: a holder that runs lets go in far
 * less. A reservation that waits for room in the ring (ssq_reserve's S4b)
 * waits for others and is not counted.
 *
 * Only ssqd's own records are trusted: the holder of a record or a lease
 * is the client ssqd gave that record to, and the process killed is the
 * one SO_PEERCRED named when it connected (through a pidfd, so a reused
 * pid is never hit; without pidfds, by that pid once its start time is
 * found unchanged: util/util.h); a pid in shared memory is never used.
 *
 * A queue can also stop with nothing held: a producer that published and
 * never submitted (stopped, or buggy), a CQ nobody routes. A queue with
 * work outstanding (reserved > completed) and no completion for --stall-ms
 * is repaired by ssqd itself: it submits (rings the doorbell for
 * published, unrung WQEBBs) and routes the CQ, and says so.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "ctrl/daemon/util/util.h"
#include "ctrl/daemon/queues/queues.h"
#include "ctrl/daemon/watch/watch.h"
#include <systemd/sd-daemon.h> /* SD_ERR...: util/log.c */

#define LOOKS_MIN      3
#define AWAKE_TIMES    10 /* the deadline of a holder that is not stopped */
#define LEASE_WATCH_NS 50000ull
#define REPAIRS_SAY    10 /* a queue no repair moves: said once, after these */
/* --stall-ms 0: how long a queue is quiet before ssqd asks for a completion. */
#define QUIET_NS 100000000ull

/* The live client ssqd gave record @id of queue @qi to, or NULL. */
static struct ssqd_client *holder(struct ssqd *d, unsigned qi, uint32_t id)
{
	unsigned i;

	for (i = 0; i < SSQD_MAX_CLIENTS; i++) {
		struct ssqd_client *c = &d->clients[i];

		if (c->fd >= 0 && !c->refused && id < SSQ_MAX_PRODUCERS &&
		    (c->recs[qi] & (1ull << id)))
			return c->stalled ? NULL : c;
	}
	return NULL;
}

static void forget(struct ssqd_hold_seen *h)
{
	h->since_ns = 0;
	h->looks = 0;
}

/*
 * One look at a hold of @client in state @mark: 1 when it has not moved
 * for @stall_ns over LOOKS_MIN looks or more.
 */
static int unmoved(struct ssqd_hold_seen *h, uint32_t client, const uint64_t mark[3],
                   uint64_t now, uint64_t stall_ns)
{
	if (!h->since_ns || h->client != client ||
	    memcmp(h->mark, mark, sizeof(h->mark))) {
		memcpy(h->mark, mark, sizeof(h->mark));
		h->client = client;
		h->since_ns = now;
		h->looks = 1;
		h->stopped_looks = 0;
		return 0;
	}
	h->looks++;
	return h->looks >= LOOKS_MIN && now - h->since_ns >= stall_ns;
}

/*
 * A hold unmoved for the deadline: is something due? A stopped holder is
 * (it may stay stopped for ever); one that runs, waits for a CPU or sleeps
 * gets AWAKE_TIMES the deadline - on a machine loaded past its CPUs a
 * producer can wait that long for one, and it will move on once it gets
 * it.
 */
static int due(const struct ssqd_hold_seen *h, uint64_t now, uint64_t stall_ns,
               int *is_stopped)
{
	*is_stopped = h->stopped_looks >= 2;
	return *is_stopped || now - h->since_ns >= AWAKE_TIMES * stall_ns;
}

/*
 * A look found @h unmoved again: is a thread of its holder @c stopped
 * outside a system call now (watch/watch.h)? It counts as stopped once
 * two looks in a row (a look every --stall-ms / 8) found it so, the last
 * one this: a traced process passes through t at each system call it
 * makes, and runs in between.
 */
static void look_stopped(const struct ssqd_client *c, struct ssqd_hold_seen *h)
{
	if (h->looks < 2)
		return;
	if (ssqd_proc_stopped_in_user(c->pid))
		h->stopped_looks++;
	else
		h->stopped_looks = 0;
}

/*
 * Take back queue @qi's holds by starting it over: @who held @what since
 * @since. Logged; a queue that cannot restart is fenced (-EIO until a
 * recovery), never left held. Returns 1, or 0 when restarts are paced
 * (ssqd_queue_rebuild_paced): the caller keeps the hold due, for a later
 * look.
 */
static int take_back(struct ssqd *d, unsigned qi, const char *who, const char *what,
                     uint64_t since, uint64_t now)
{
	char why[200];

	if (now < d->queues[qi].restart_next_ns)
		return 0;
	fprintf(stderr,
	        SD_WARNING
	        "ssqd: q%u: %s %s for %llu ms (--stall-ms %u): taken back without a kill "
	        "(a client could have forged it): starting the queue over\n",
	        qi, who, what, (unsigned long long)((now - since) / 1000000),
	        d->opt.stall_ms);
	if (ssqd_queue_rebuild_paced(d, qi, now, why, sizeof(why))) {
		fprintf(stderr, SD_ERR "ssqd: q%u: could not start over: %s\n", qi, why);
		ssqd_queue_fence(d, qi);
		return 1;
	}
	if (!d->queues[qi].link_seq) /* else the peer's answer finishes it */
		fprintf(stderr,
		        "ssqd: q%u started over: QP 0x%x back in RTS, control block "
		        "rebuilt, epoch %u, what was in flight flushed\n",
		        qi, d->queues[qi].local.qpn, d->queues[qi].epoch);
	return 1;
}

/*
 * Client @c holds @what since @since, unmoved past due(): killed if it is
 * stopped mid-hold (its death is healed as any), else the hold is taken
 * back. Returns 1, or 0 when nothing was done yet (paced).
 */
static int end_stall(struct ssqd *d, unsigned qi, struct ssqd_client *c, uint32_t id,
                     const char *what, uint64_t since, uint64_t now, int is_stopped)
{
	char who[96];
	int rc;

	if (!is_stopped) {
		snprintf(who, sizeof(who), "client pid %d (producer %u, not stopped)",
		         (int)c->pid, id);
		return take_back(d, qi, who, what, since, now);
	}
	/*
	 * Never by a bare pid: one reused by another process after the client
	 * died. By its pidfd, else by pid with its start time looked at right
	 * before (util/util.h: kernels and sandboxes without pidfds).
	 */
	rc = ssqd_proc_kill(c->pidfd, c->pid, c->start);
	if (rc == 0) {
		c->stalled = 1; /* its death, or a drop, ends it */
		fprintf(stderr,
		        SD_WARNING
		        "ssqd: q%u: client pid %d (producer %u, stopped) %s for %llu ms "
		        "(--stall-ms %u): killed (SIGKILL), healing it as a death\n",
		        qi, (int)c->pid, id, what,
		        (unsigned long long)((now - since) / 1000000), d->opt.stall_ms);
		return 1;
	}
	snprintf(who, sizeof(who),
	         "client pid %d (producer %u, stopped, and could not be killed: %s)",
	         (int)c->pid, id, strerror(-rc));
	return take_back(d, qi, who, what, since, now);
}

/* Open reservations of live clients in queue @qi. */
static void watch_reservations(struct ssqd *d, unsigned qi, uint64_t now,
                               uint64_t stall_ns)
{
	struct ssqd_queue *q = &d->queues[qi];
	struct ssq_ctl *ctl = q->ctl;
	uint64_t ring = q->local.dv_qp.sq.wqe_cnt; /* ssqd's copy, not ctl->ring */
	/* Acquire: pairs with R3; a hint, any value will do. */
	uint64_t completed = __atomic_load_n(&ctl->completed, __ATOMIC_ACQUIRE);
	unsigned i;

	for (i = 0; i < SSQD_MAX_CLIENTS * SSQ_MAX_PRODUCERS; i++) {
		struct ssqd_client *c = &d->clients[i / SSQ_MAX_PRODUCERS];
		struct ssq_ctl_producer *r;
		struct ssqd_hold_seen *h;
		uint32_t id = i % SSQ_MAX_PRODUCERS, state, gen, len;
		uint64_t pos, mark[3];
		char what[160];
		int is_stopped, unmoved_long;

		if (c->fd < 0 || c->refused || c->stalled || !c->recs[qi]) {
			i |=
			    SSQ_MAX_PRODUCERS - 1; /* the next client: one test for all */
			continue;
		}
		if (!(c->recs[qi] & (1ull << id)))
			continue;
		r = &ctl->producers[id]; /* ids are ssqd's: in range */
		h = &q->stall.resv[id];
		/* Relaxed: a sample, compared with the next one. */
		state = __atomic_load_n(&r->state, __ATOMIC_RELAXED);
		gen = __atomic_load_n(&r->resv_gen, __ATOMIC_RELAXED);
		pos = __atomic_load_n(&r->pos, __ATOMIC_RELAXED);
		len = __atomic_load_n(&r->len, __ATOMIC_RELAXED);
		if (state != SSQ_PROD_RESERVING && state != SSQ_PROD_BUILDING) {
			forget(h);
			continue;
		}
		/*
		 * Waiting for room (S4b): held up by others, not holding them.
		 * Not a difference: a record's pos is the client's to write.
		 */
		if (state == SSQ_PROD_BUILDING && !(gen & 1) &&
		    pos + len > completed + ring) {
			forget(h);
			continue;
		}
		mark[0] = (uint64_t)state << 32 | gen;
		mark[1] = pos;
		mark[2] = __atomic_load_n(&r->posted, __ATOMIC_RELAXED);
		unmoved_long = unmoved(h, c->id, mark, now, stall_ns);
		look_stopped(c, h);
		if (!unmoved_long || !due(h, now, stall_ns, &is_stopped)) {
			q->stall.suspect |= h->looks > 1;
			continue;
		}
		if (state == SSQ_PROD_RESERVING || (gen & 1))
			snprintf(what, sizeof(what),
			         "was mid-reservation (between its fetch-add and "
			         "recording it)");
		else
			snprintf(what, sizeof(what),
			         "held WQEBBs %llu..%llu reserved and not all published",
			         (unsigned long long)pos,
			         (unsigned long long)(pos + len - 1));
		if (end_stall(d, qi, c, id, what, h->since_ns, now, is_stopped))
			forget(h);
		return; /* a rebuild starts every look over */
	}
}

/*
 * One lease of queue @qi: @lease, and two counters its holder moves
 * (@a, @b). @name says which in the log.
 */
static void watch_lease(struct ssqd *d, unsigned qi, struct ssqd_hold_seen *h,
                        uint32_t *lease, const void *a, const void *b, int a64,
                        const char *name, uint64_t now, uint64_t stall_ns)
{
	/* Relaxed loads throughout: samples, compared with the next ones. */
	uint32_t v = __atomic_load_n(lease, __ATOMIC_RELAXED);
	struct ssqd_client *c;
	uint64_t mark[3], t;
	char what[80];
	int unmoved_long, is_stopped;

	if (!v || v > SSQ_MAX_PRODUCERS) {
		forget(h); /* free, or ssqd's own (ssq_ctl_check says the rest) */
		return;
	}
	c = holder(d, qi, v - 1);
	mark[0] = v;
	mark[1] = a64 ? __atomic_load_n((const uint64_t *)a, __ATOMIC_RELAXED)
	              : __atomic_load_n((const uint32_t *)a, __ATOMIC_RELAXED);
	mark[2] = __atomic_load_n((const uint64_t *)b, __ATOMIC_RELAXED);
	unmoved_long = unmoved(h, c ? c->id : 0, mark, now, stall_ns);
	if (h->looks < 2)
		return;
	/*
	 * Held by the same holder with the same counters as at the last look:
	 * a holder that runs lets go within a few microseconds. Watch it,
	 * briefly, so that one taken and let go again and again (a producer
	 * polling with nothing to route) is not mistaken for one held.
	 */
	for (t = ssqd_now_ns(); ssqd_now_ns() - t < LEASE_WATCH_NS;) {
		if (__atomic_load_n(lease, __ATOMIC_RELAXED) != v) {
			forget(h);
			return;
		}
		ssq_cpu_relax();
	}
	d->queues[qi].stall.suspect = 1;
	if (!c) {
		/*
		 * No live client has the record: a dead one's lease, which its
		 * heal breaks, one killed and not yet gone - or a value a
		 * client wrote, which nobody will ever let go.
		 */
		if (unmoved_long && !d->queues[qi].heal_pending &&
		    now - h->since_ns >= AWAKE_TIMES * stall_ns) {
			uint64_t since = h->since_ns;
			char who[32];

			snprintf(who, sizeof(who), "the %s lease", name);
			snprintf(what, sizeof(what),
			         "named record %u, which no live client holds,", v - 1);
			if (take_back(d, qi, who, what, since, now))
				forget(h);
		}
		return;
	}
	look_stopped(c, h);
	if (!unmoved_long || !due(h, now, stall_ns, &is_stopped))
		return;
	snprintf(what, sizeof(what), "held the %s lease", name);
	if (end_stall(d, qi, c, v - 1, what, h->since_ns, now, is_stopped))
		forget(h);
}

/*
 * Everything published has completed, yet WQEBBs past it are reserved and
 * the first is not published, and no live client's record is mid-
 * reservation: a hole nobody will fill (a client that reserved and then
 * wrote its record IDLE). A dead client's holes are the healer's.
 */
static int unowned_hole(struct ssqd *d, unsigned qi)
{
	struct ssqd_queue *q = &d->queues[qi];
	struct ssq_ctl *ctl = q->ctl;
	/* Relaxed samples: the hole must be there at two repairs in a row. */
	uint64_t c = __atomic_load_n(&ctl->completed, __ATOMIC_RELAXED);
	uint64_t p = __atomic_load_n(&ctl->published, __ATOMIC_RELAXED);
	uint64_t r = __atomic_load_n(&ctl->reserve, __ATOMIC_RELAXED);
	uint64_t live = ssqd_live_records(d, qi);
	unsigned i;

	if (c != p || r <= p ||
	    __atomic_load_n(&ssq__slot(&q->prod, p)->seq, __ATOMIC_RELAXED) == p + 1)
		return 0;
	for (i = 0; i < SSQ_MAX_PRODUCERS; i++) {
		uint32_t state =
		    __atomic_load_n(&ctl->producers[i].state, __ATOMIC_RELAXED);

		if ((live >> i & 1) &&
		    (state == SSQ_PROD_RESERVING || state == SSQ_PROD_BUILDING))
			return 0;
	}
	return 1;
}

/*
 * Everything reserved on queue @qi is published and rung, and nothing
 * completes: the last WQEs may have asked for no completion (one in
 * signal_every does; a heal's NOPs and clients' unsignaled WQEs do not).
 * `completed` moves only with a CQE, so until somebody posts again a dead
 * client's buffers (and their keys) would not go back, and a free of a
 * buffer those WQEs carry would be refused -EBUSY, polling or not. ssqd
 * posts one signaled NOP of its own behind them, once per such stall: its
 * CQE completes them all. Its completion is ssqd's, reaped here next time.
 */
static void ask_completion(struct ssqd *d, unsigned qi, uint64_t reserved)
{
	struct ssqd_queue *q = &d->queues[qi];
	struct ssq_completion comp[16];
	uint64_t pos;
	int n;

	/* A grant's bind among them: its GRANT waits for it (queues/grants.c). */
	while ((n = ssq_poll(&q->prod, comp, 16)) > 0)
		ssqd_grants_seen(d, qi, comp, n);
	if (__atomic_load_n(&q->ctl->published, __ATOMIC_RELAXED) != reserved ||
	    ssq_reserve(&q->prod, 1, &pos))
		return;
	ssq_prep_nop(ssq_producer_sq(&q->prod), (uint32_t)pos,
	             ssq_wqe_flags(&q->prod, pos, 1, SSQ_WQE_SIGNALED));
	if (ssq_publish(&q->prod, pos, 1, 0, SSQ_WQE_SIGNALED) == 0)
		ssq_submit(&q->prod);
}

/*
 * Whether queue @q moved since the progress watch's last look: 1, and the
 * watch's clock restarted, when nothing is outstanding, something
 * completed, or a suspect hold or a recovery (error) owns the queue; 0
 * while it stands where it stood. A pending heal is no progress: it may
 * wait on this very watch (room for its NOPs behind WQEs that asked for no
 * completion, which only ask_completion's CQE completes), and one that
 * waits for ever - on a record that says "mid-reservation" under
 * --stall-ms 0, where nothing ends it - restarted the clock at every look:
 * no repair, no signaled NOP, a dead client's buffers and a free of a
 * buffer in flight held for as long (test_ctrl_stall_heal_pending.c).
 * What the watch does meanwhile is what it does to any queue: ring, route,
 * its own NOP once everything reserved is published (a hole is not: the
 * heal's, or unowned_hole's), all on the thread that heals.
 */
static int progress_moved(struct ssqd_queue *q, uint64_t now, uint64_t reserved,
                          uint64_t completed)
{
	struct ssqd_stall *s = &q->stall;

	if (reserved != completed && completed == s->completed && !s->suspect &&
	    !ssq_ctl_in_error(q->ctl))
		return 0;
	s->completed = completed;
	s->stuck_ns = reserved != completed ? now : 0;
	s->repairs = 0;
	return 1;
}

/*
 * Queue @qi has work outstanding and nothing completes, with no hold to
 * blame: ring what is published and unrung, route what the CQ holds; a
 * hole nobody owns is taken back at the second repair.
 */
static void watch_progress(struct ssqd *d, unsigned qi, uint64_t now, uint64_t stall_ns)
{
	struct ssqd_queue *q = &d->queues[qi];
	struct ssq_ctl *ctl = q->ctl;
	struct ssqd_stall *s = &q->stall;
	uint64_t reserved = ssq_ctl_reserved(ctl), completed = ssq_ctl_completed(ctl);
	uint64_t pub0, rung0, pub1, rung1;
	int cqes;

	if (progress_moved(q, now, reserved, completed))
		return;
	if (!s->stuck_ns) {
		s->stuck_ns = now;
		return;
	}
	if (now - s->stuck_ns < stall_ns * (s->repairs + 1))
		return; /* one repair per deadline */
	/* Relaxed: for the log; the lease orders what ssq_submit reads. */
	pub0 = __atomic_load_n(&ctl->published, __ATOMIC_RELAXED);
	rung0 = __atomic_load_n(&ctl->db_value, __ATOMIC_RELAXED);
	ssq_submit(&q->prod);
	cqes = ssq_progress(&q->prod);
	pub1 = __atomic_load_n(&ctl->published, __ATOMIC_RELAXED);
	rung1 = __atomic_load_n(&ctl->db_value, __ATOMIC_RELAXED);
	if (pub1 != pub0 || rung1 != rung0 || cqes)
		fprintf(stderr,
		        SD_WARNING
		        "ssqd: q%u: %llu WQEBBs outstanding (reserved %llu, completed "
		        "%llu), none completed for %llu ms (--stall-ms %u): published "
		        "head %llu -> %llu, doorbell %llu -> %llu, %d CQEs routed\n",
		        qi, (unsigned long long)(reserved - completed),
		        (unsigned long long)reserved, (unsigned long long)completed,
		        (unsigned long long)((now - s->stuck_ns) / 1000000),
		        d->opt.stall_ms, (unsigned long long)pub0,
		        (unsigned long long)pub1, (unsigned long long)rung0,
		        (unsigned long long)rung1, cqes);
	else if (s->repairs >= 1 && unowned_hole(d, qi)) {
		uint64_t since = s->stuck_ns;
		char what[120];

		snprintf(
		    what, sizeof(what),
		    "waited at WQEBB %llu, reserved (to %llu) by no live reservation "
		    "and never published,",
		    (unsigned long long)pub1, (unsigned long long)reserved);
		take_back(d, qi, "the published head", what, since, now);
		return;
	} else if (s->repairs == 0) {
		ask_completion(d, qi, reserved);
	} else if (s->repairs == REPAIRS_SAY)
		fprintf(stderr,
		        SD_ERR
		        "ssqd: q%u: still none of %llu outstanding WQEBBs completed "
		        "after %llu ms, with the CQ routed and %s: the device is not "
		        "completing them (a WQE that asks for no completion, or a "
		        "device or peer that stopped)\n",
		        qi, (unsigned long long)(reserved - completed),
		        (unsigned long long)((now - s->stuck_ns) / 1000000),
		        __atomic_load_n(&ctl->db_lease, __ATOMIC_RELAXED)
		            ? "the doorbell lease held by a producer (its ring may "
		              "be late)"
		            : "everything published rung");
	s->repairs++;
}

/*
 * --stall-ms 0: no deadline, so nobody is killed and nothing taken back;
 * but a queue whose last WQEs asked for no completion still gets ssqd's
 * signaled NOP once it has been quiet QUIET_NS (ask_completion), or a dead
 * client's buffers, and a free of a buffer such a WQE carried, would wait
 * until somebody posted again - for good on a quiet queue.
 */
static void watch_quiet(struct ssqd *d, uint64_t now)
{
	unsigned qi;

	for (qi = 0; qi < d->opt.nqueues; qi++) {
		struct ssqd_queue *q = &d->queues[qi];
		struct ssqd_stall *s = &q->stall;
		uint64_t reserved, completed;

		if (!q->ctl || q->link_seq)
			continue;
		reserved = ssq_ctl_reserved(q->ctl);
		completed = ssq_ctl_completed(q->ctl);
		if (progress_moved(q, now, reserved, completed))
			continue;
		if (!s->stuck_ns)
			s->stuck_ns = now;
		if (s->repairs || now - s->stuck_ns < QUIET_NS)
			continue;
		ask_completion(d, qi, reserved); /* once per quiet spell */
		s->repairs = 1;
	}
}

void ssqd_stall_watch(struct ssqd *d, uint64_t now)
{
	uint64_t stall_ns = (uint64_t)d->opt.stall_ms * 1000000ull;
	unsigned qi;

	if (now < d->stall_next_ns)
		return;
	if (!d->opt.stall_ms) {
		d->stall_next_ns = now + QUIET_NS / 8;
		watch_quiet(d, now);
		return;
	}
	d->stall_next_ns = now + stall_ns / 8;
	for (qi = 0; qi < d->opt.nqueues; qi++) {
		struct ssqd_queue *q = &d->queues[qi];
		struct ssq_ctl *ctl = q->ctl;

		uint32_t listed;

		/* A restart the peer host has yet to answer holds the queue. */
		if (!ctl || q->link_seq)
			continue;
		/*
		 * Holds are watched in error too: a recovery waits for them. The
		 * progress is not: there the recovery drains, then resets.
		 */
		listed = q->listed; /* ssqd's word, not the header's */
		/*
		 * A heal held up that long waits on a record no watch below
		 * ends (a live producer's is ended sooner): one that says
		 * "mid-reservation" and is nobody's, or a forgery.
		 */
		if (q->heal_pending && q->heal_since_ns &&
		    now - q->heal_since_ns >= AWAKE_TIMES * stall_ns) {
			take_back(d, qi, "the heal after a death",
			          "waited on a reservation nobody finishes",
			          q->heal_since_ns, now);
			continue;
		}
		q->stall.suspect = 0;
		watch_reservations(d, qi, now, stall_ns);
		watch_lease(d, qi, &q->stall.db, &ctl->db_lease, &ctl->published,
		            &ctl->db_value, 1, "doorbell", now, stall_ns);
		watch_lease(d, qi, &q->stall.cq, &ctl->cq_lease, &ctl->cq_ci,
		            &ctl->completed, 0, "CQ", now, stall_ns);
		if (listed == SSQ_QUEUE_READY)
			watch_progress(d, qi, now, stall_ns);
	}
}
