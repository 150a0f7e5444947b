/* SPDX-License-Identifier: MIT */
/*
 * ssqd's serve loop: serve clients on the unix socket - accept and
 * check credentials, answer requests, notice deaths and heal after them,
 * return a dead client's buffers once its WQEs have completed - and be the
 * progress engine of last resort while nobody polls.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>
#include "ctrl/daemon/daemon.h"
#include "ctrl/daemon/util/util.h"
#include "ctrl/daemon/nofile.h"
#include "ctrl/daemon/queues/queues.h"
#include "ctrl/daemon/peers/peers.h"
#include "ctrl/daemon/watch/watch.h"
#include "ctrl/daemon/clients/clients.h"
#include "ctrl/proto/msg.h"
#include "emu/emu.h"

/* Every buffer an MR, and every registration: the emulated device has room. */
/* ... and every grant's window, which takes a key of the same table. */
_Static_assert(SSQ_DATA_MAX_BUFS + SSQD_MAX_MRS + SSQD_MAX_GRANTS + 16 <= SSQ_EMU_MAX_MR,
               "the emulated MR table must hold every keyed buffer, registration "
               "and window");

/* Out of descriptors: how long new connections wait before accept is tried again. */
#define ACCEPT_PAUSE_NS 100000000ull

static int client_allowed(const struct ssqd *d, const struct ucred *cr)
{
	return cr->uid == 0 || cr->uid == getuid() ||
	       (d->opt.allow_uid >= 0 && cr->uid == (uid_t)d->opt.allow_uid) ||
	       (d->opt.allow_gid >= 0 && cr->gid == (gid_t)d->opt.allow_gid);
}

/* Live connections of @uid. */
static unsigned uid_clients(const struct ssqd *d, uid_t uid)
{
	unsigned i, n = 0;

	for (i = 0; i < SSQD_MAX_CLIENTS; i++)
		n += d->clients[i].fd >= 0 && d->clients[i].uid == uid;
	return n;
}

static void drop_client(struct ssqd *d, struct ssqd_client *c);

/*
 * The oldest connection that has not said hello, of @uid (or of anyone,
 * @any), or NULL. Connection ids grow with each accept.
 */
static struct ssqd_client *oldest_silent(struct ssqd *d, int any, uid_t uid)
{
	struct ssqd_client *o = NULL;
	unsigned i;

	for (i = 0; i < SSQD_MAX_CLIENTS; i++) {
		struct ssqd_client *c = &d->clients[i];

		if (c->fd >= 0 && !c->said_hello && (any || c->uid == uid) &&
		    (!o || c->id < o->id))
			o = c;
	}
	return o;
}

/*
 * Room for a newcomer, at a limit, is taken from the oldest connection
 * that never said hello, not refused to the newcomer: otherwise silent
 * connections (a stopped or hostile process's) lock their uid, or everyone,
 * out until --hello-ms ends them, and come back as fast as they are closed
 * (the peer port evicts its oldest silent knock the same way). A client
 * that said hello is never evicted. 1: one was closed; 0: none to close.
 */
static int evict_silent(struct ssqd *d, int any, uid_t uid)
{
	struct ssqd_client *o = oldest_silent(d, any, uid);

	if (!o)
		return 0;
	if (any)
		ssqd_out_error(&o->out, o->fd, 0, -ETIMEDOUT,
		               "no hello yet, and all %d client slots are taken: the "
		               "oldest silent connection is closed for a new one",
		               SSQD_MAX_CLIENTS);
	else
		ssqd_out_error(
		    &o->out, o->fd, 0, -ETIMEDOUT,
		    "no hello yet, and uid %u has --max-uid-clients %u "
		    "connections: its oldest silent one is closed for a new one",
		    (unsigned)uid, d->opt.max_uid_clients);
	drop_client(d, o);
	return 1;
}

static void accept_client(struct ssqd *d)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	/* Non-blocking: a client that stops reading must not stall ssqd
	 * (clients/clients.h).
	 */
	char what = 'c';
	int fd = d->opt.tenant_fd >= 0
	             ? ssqd_tenant_recv(d, &what)
	             : accept4(d->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	int known = 0, i;
	uint32_t tenant;

	if (fd < 0 && d->opt.tenant_fd >= 0) {
		/* Its parent's answer to its ask to exit idle (tenant_idle.c). */
		if (what == 'y' || what == 'n')
			ssqd_tenant_idle_answer(d, what, ssqd_now_ns());
		return;
	}
	/* A link to the peer port for this tenant, its TENANT read by the parent. */
	if (fd >= 0 && what == 'p') {
		ssqd_knock_adopt(d, fd);
		return;
	}
	if (fd < 0) {
		/*
		 * Out of descriptors: the connection stays queued and the socket
		 * readable; stop looking at it for a while instead of spinning.
		 */
		if (errno == EMFILE || errno == ENFILE) {
			d->accept_pause_until_ns = ssqd_now_ns() + ACCEPT_PAUSE_NS;
			ssqd_log_limited(&d->client_log, ssqd_now_ns(),
			                 "ssqd: out of file descriptors: new connections "
			                 "wait\n");
		}
		return;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0) {
		known = 1;
		/* Another tenant's client: its own ssqd serves it (tenants.c). */
		if (client_allowed(d, &cr) && ssqd_tenant_of(d, &cr, &tenant)) {
			char why[200];
			int rc = ssqd_tenant_pass(d, tenant, fd, 'c', why, sizeof(why));

			if (rc)
				proto_msg_send_error(fd, 0, rc, "%s", why);
			close(fd);
			return;
		}
		/* One uid (refused ones too) cannot take every connection. */
		if (uid_clients(d, cr.uid) >= d->opt.max_uid_clients &&
		    !evict_silent(d, 0, cr.uid)) {
			proto_msg_send_error(fd, 0, -EUSERS,
			                     "uid %u already has %u connections to ssqd "
			                     "(--max-uid-clients %u)",
			                     (unsigned)cr.uid, d->opt.max_uid_clients,
			                     d->opt.max_uid_clients);
			close(fd);
			return;
		}
	}
	for (i = 0; i < SSQD_MAX_CLIENTS && d->clients[i].fd >= 0; i++)
		;
	if (i == SSQD_MAX_CLIENTS && evict_silent(d, 1, 0))
		for (i = 0; i < SSQD_MAX_CLIENTS && d->clients[i].fd >= 0; i++)
			;
	for (; i < SSQD_MAX_CLIENTS; i++) {
		if (d->clients[i].fd < 0) {
			memset(&d->clients[i], 0, sizeof(d->clients[i]));
			d->clients[i].fd = fd;
			d->clients[i].pidfd = -1;
			/* 0 is a free slot's owner; SSQD_OWNER_HELD no client's. */
			do
				d->clients[i].id = ++d->next_client_id;
			while (!d->clients[i].id || d->clients[i].id == SSQD_OWNER_HELD);
			d->clients[i].hello_by_ns =
			    ssqd_now_ns() + (uint64_t)d->opt.hello_ms * 1000000ull;
			/*
			 * A refused peer is told why in answer to its first message:
			 * closing now, with its hello unread, would make the kernel
			 * reset the connection and drop the explanation.
			 */
			if (!known) {
				d->clients[i].refused = 1;
			} else {
				d->clients[i].pid = cr.pid;
				d->clients[i].pidfd = ssqd_pidfd_of_peer(fd, cr.pid);
				if (d->clients[i].pidfd < 0) /* no pidfds here */
					d->clients[i].start = ssqd_pid_start(cr.pid);
				d->clients[i].uid = cr.uid;
				d->clients[i].gid = cr.gid;
				d->clients[i].refused = !client_allowed(d, &cr);
			}
			return;
		}
	}
	proto_msg_send_error(fd, 0, -EUSERS, "ssqd serves at most %d clients",
	                     SSQD_MAX_CLIENTS);
	close(fd);
}

/*
 * Try to heal every queue that has deaths not healed yet; returns how many
 * still have. The serve loop marks all the deaths one poll() reports first
 * and heals after, in short tries between polls: a heal waits for a live
 * producer seen mid-reservation, and one that is dying too must be seen
 * dead (its socket polled) rather than waited out.
 */
static int heal_deaths(struct ssqd *d)
{
	unsigned qi;
	int pending = 0;

	for (qi = 0; qi < d->opt.nqueues; qi++)
		if (d->queues[qi].ctl && d->queues[qi].heal_pending) {
			ssqd_queue_heal(d, qi);
			pending += d->queues[qi].heal_pending;
		}
	return pending;
}

/* How long a client that hung up with queues attached may take to exit. */
#define DYING_GRACE_NS (100ull * 1000000)
/*
 * With no pidfd, a dying client's exit is looked for in /proc: 1 ms after
 * it hung up, and after a kill, then twice as long each time it is found
 * alive, up to 100 ms - one that cannot be killed (another uid's) may live
 * on for hours, and the loop would otherwise wake every millisecond for it.
 */
#define LOOK_FIRST_NS (1ull * 1000000)
#define LOOK_MAX_NS   (100ull * 1000000)

/*
 * A client whose process still runs must not be healed (util/util.h).
 * One that hung up is usually exiting (its socket closes before its exit
 * is reported): wait for its pidfd, and kill it only if it is still there
 * after DYING_GRACE_NS (kill_late). 1: it is dying now; its connection
 * stays open until it has exited, so it never sees ssqd hang up on it.
 */
static int kill_first(struct ssqd_client *c)
{
	if (!c->attached || c->dying || c->unmapped ||
	    !ssqd_proc_alive(c->pidfd, c->pid, c->start))
		return 0;
	c->dying = 1;
	c->kill_by_ns = ssqd_now_ns() + DYING_GRACE_NS;
	c->look_ns = ssqd_now_ns() + LOOK_FIRST_NS;
	c->look_gap_ns = LOOK_FIRST_NS;
	return 1;
}

/* @t into *@first if earlier. */
static void earliest_ns(uint64_t *first, uint64_t t)
{
	if (t < *first)
		*first = t;
}

/*
 * Does dying client @c's process still map the arena or a UAR of a queue
 * it attached? Unknown (no /proc) counts as yes. One that exits meanwhile
 * maps nothing, and is healed: it cannot write any more either.
 */
static int maps_queues(const struct ssqd *d, const struct ssqd_client *c)
{
	int fds[SSQ_MAX_QUEUES + 1], n = 0, m;
	unsigned qi;

	fds[n++] = d->arena.fd;
	for (qi = 0; qi < SSQ_MAX_QUEUES; qi++)
		if (c->attached & (1ull << qi))
			fds[n++] = d->queues[qi].uar.fd;
	m = ssqd_pid_maps_any(c->pid, fds, n);
	return m != 0; /* -1, unknown: assume it does */
}

/*
 * A dying client still there past its grace: kill it. One with no pidfd
 * (nothing polls readable at its exit) is looked at here when its look is
 * due (LOOK_FIRST_NS, LOOK_MAX_NS), and dropped once gone. Returns the
 * milliseconds until the next kill or look is due (at least 1), or 0:
 * none waits.
 */
static int kill_late(struct ssqd *d, uint64_t now)
{
	uint64_t first = UINT64_MAX;
	unsigned i;
	int rc;

	for (i = 0; i < SSQD_MAX_CLIENTS; i++) {
		struct ssqd_client *c = &d->clients[i];

		if (c->fd < 0 || !c->dying)
			continue;
		if (c->pidfd < 0) {
			if (now >= c->look_ns) {
				if (!ssqd_proc_alive(c->pidfd, c->pid, c->start)) {
					drop_client(d, c); /* as its pidfd's poll would */
					continue;
				}
				c->look_ns = now + c->look_gap_ns;
				c->look_gap_ns = c->look_gap_ns * 2 > LOOK_MAX_NS
				                     ? LOOK_MAX_NS
				                     : c->look_gap_ns * 2;
			}
			earliest_ns(&first, c->look_ns);
		}
		if (!c->kill_by_ns)
			continue;
		if (now < c->kill_by_ns) {
			earliest_ns(&first, c->kill_by_ns);
			continue;
		}
		c->kill_by_ns = 0;
		if (!ssqd_proc_alive(c->pidfd, c->pid, c->start))
			continue; /* exited: the serve loop's poll of its pidfd, or
			             the look above, drops it */
		if (!maps_queues(d, c)) {
			/* It exec'd or unmapped them: nothing left to kill for. */
			fprintf(
			    stderr,
			    "ssqd: client pid %d left with queues attached and no longer "
			    "maps them: healing its records\n",
			    (int)c->pid);
			c->unmapped = 1;
			c->dying = 0;
			drop_client(d, c);
			continue;
		}
		rc = ssqd_proc_kill(c->pidfd, c->pid, c->start);
		if (!rc && c->pidfd < 0) {
			/* Killed: its exit is near, looked for soon again. */
			c->look_ns = now + LOOK_FIRST_NS;
			c->look_gap_ns = LOOK_FIRST_NS;
			earliest_ns(&first, c->look_ns);
		}
		if (c->stalled) /* killed for it already, and said so */
			continue;
		if (rc)
			fprintf(
			    stderr,
			    "ssqd: client pid %d left with queues attached and still "
			    "runs, but cannot be killed (%s): it is no longer served, "
			    "and its records stay held until it exits\n",
			    (int)c->pid, strerror(-rc));
		else
			fprintf(stderr,
			        "ssqd: client pid %d left with queues attached and still "
			        "ran %llu ms later: killed (SIGKILL); its records are "
			        "healed once it has exited\n",
			        (int)c->pid, DYING_GRACE_NS / 1000000);
	}
	if (first == UINT64_MAX)
		return 0;
	return first <= now + 1000000 ? 1 : (int)((first - now + 999999) / 1000000);
}

/*
 * A client left (closed, crashed, was killed, or is dropped): give back what
 * it held - once its process can no longer touch its queues.
 */
static void drop_client(struct ssqd *d, struct ssqd_client *c)
{
	struct ssqd_grave *g = NULL;
	unsigned qi, i;
	int keep_mrs;

	if (kill_first(c))
		return;
	for (qi = 0; qi < SSQ_MAX_QUEUES; qi++)
		for (i = 0; i < SSQ_MAX_PRODUCERS; i++)
			if (c->recs[qi] & (1ull << i))
				ssqd_queue_mark_dead(d, qi,
				                     i); /* healed by heal_deaths */
	/*
	 * After marking them dead, as on_detach does: a combiner's take
	 * (POSTED -> TAKEN) that lands between a look before and
	 * ssq_ctl_mark_dead's take-back would leave the request out with its
	 * keys dropped. Marked dead, a request is either taken back or out
	 * for good. The bits in c->recs still say which records were its.
	 */
	keep_mrs = ssqd_hands_out(d, c);
	/*
	 * Its buffers may still be read or written by WQEs it posted: they go
	 * back to the arena only once every queue has completed everything
	 * reserved so far (reap_graves), never while the device could still
	 * touch them on behalf of the dead.
	 */
	for (i = 0; i < SSQD_MAX_GRAVES && !g; i++)
		if (!d->graves[i].owner)
			g = &d->graves[i];
	if (g) {
		g->owner = c->id;
		g->pid = c->pid;
		g->mrs = keep_mrs;
		for (qi = 0; qi < d->own.nqueues; qi++)
			g->fence[qi] =
			    d->queues[qi].ctl ? ssq_ctl_reserved(d->queues[qi].ctl) : 0;
	} else {
		/*
		 * Every grave waits: this one's buffers join one of them, which
		 * now waits for the later fences too (a queue's counter only
		 * grows until a start over, which clears every fence). Left
		 * owned by the gone client they would never go back, counted
		 * against no uid.
		 */
		g = &d->graves[c->id % SSQD_MAX_GRAVES];
		for (qi = 0; qi < d->own.nqueues; qi++) {
			uint64_t f =
			    d->queues[qi].ctl ? ssq_ctl_reserved(d->queues[qi].ctl) : 0;

			if (f > g->fence[qi])
				g->fence[qi] = f;
		}
		if (ssqd_data_chown(&d->data, c->id, g->owner))
			ssqd_log_limited(&d->client_log, ssqd_now_ns(),
			                 "ssqd: %u dead clients' buffers wait for their "
			                 "WQEs; pid %d's wait with pid %d's\n",
			                 SSQD_MAX_GRAVES, (int)c->pid, (int)g->pid);
		if (keep_mrs) {
			for (i = 0; i < SSQD_MAX_MRS; i++)
				if (d->mrs[i].owner == c->id)
					d->mrs[i].owner = g->owner;
			g->mrs = 1;
		}
	}
	/*
	 * What it granted goes now, though its buffers may wait in a grave
	 * for its WQEs: no peer reaches a dead client's memory.
	 */
	ssqd_grants_drop_owner(d, c->id);
	/*
	 * Its own memory goes now, WQEs in flight or not: the device resolves
	 * keys at each access, so what still comes fails with a protection
	 * error, never reaching memory the next registration brings. Not
	 * while a combined request of its is still out (ssqd_hands_out): a
	 * combiner stopped after taking it (the close that said -EAGAIN) may
	 * write it with these keys when it goes on, and a protection error
	 * then put the queue in error for every client - it did nothing
	 * wrong. Those registrations go with its buffers (reap_graves),
	 * once the queues completed what was reserved by now: the combiner
	 * reserved before it took (C10), so that WQE is among it, or a NOP
	 * in its place if the combiner dies (test_ssq_combine_taken_exit.c).
	 */
	if (keep_mrs)
		fprintf(stderr,
		        "ssqd: client pid %d gone, its memory registrations kept until "
		        "its combined requests complete\n",
		        (int)c->pid);
	else if (ssqd_mr_drop_owner(d, c->id))
		fprintf(stderr,
		        "ssqd: client pid %d gone, its memory registrations dropped\n",
		        (int)c->pid);
	close(c->fd);
	if (c->pidfd >= 0)
		close(c->pidfd);
	ssqd_out_free(&c->out);
	memset(c, 0, sizeof(*c));
	c->fd = c->pidfd = -1; /* free: 0 is a descriptor like any other */
}

/* Return the buffers of dead clients whose WQEs have all completed. */
static void reap_graves(struct ssqd *d)
{
	unsigned i, qi, freed;

	for (i = 0; i < SSQD_MAX_GRAVES; i++) {
		struct ssqd_grave *g = &d->graves[i];
		int done = 1;

		if (!g->owner)
			continue;
		for (qi = 0; qi < d->own.nqueues && done; qi++)
			if (d->queues[qi].ctl &&
			    ssq_ctl_completed(d->queues[qi].ctl) < g->fence[qi])
				done = 0;
		if (!done)
			continue;
		freed = ssqd_data_free_owner(&d->data, g->owner, ssqd_release_buf, d);
		if (freed)
			fprintf(stderr,
			        "ssqd: client pid %d gone, %u data buffers returned\n",
			        (int)g->pid, freed);
		if (g->mrs && ssqd_mr_drop_owner(d, g->owner))
			fprintf(stderr,
			        "ssqd: client pid %d gone, its memory registrations "
			        "dropped\n",
			        (int)g->pid);
		memset(g, 0, sizeof(*g));
	}
}

static void serve_client(struct ssqd *d, struct ssqd_client *c)
{
	struct proto_msg m;
	char why[160];
	int fd = -1, nfds = 0;
	int rc = proto_msg_recv(c->fd, &m, &fd, 1, &nfds, 0, why, sizeof(why));

	if (!nfds)
		fd = -1;
	else if (rc || c->refused) {
		close(fd);
		fd = -1;
	}

	if (c->refused) {
		if (rc != -ETIMEDOUT && rc != -EAGAIN) {
			ssqd_out_error(&c->out, c->fd, rc ? 0 : m.hdr.seq, -EACCES,
			               "uid %u / gid %u may not use this ssqd (see "
			               "--allow-uid, --allow-gid)",
			               (unsigned)c->uid, (unsigned)c->gid);
			drop_client(d, c);
		}
		return;
	}

	if (rc == -EBADMSG || rc == -EPROTO) {
		/* Bad input gets an answer and the connection stays usable. */
		ssqd_log_limited(&d->client_log, ssqd_now_ns(),
		                 "ssqd: client pid %d: %s\n", (int)c->pid, why);
		if (ssqd_out_error(&c->out, c->fd, 0, rc, "%s", why) == 0)
			return;
	}
	if (rc == -ETIMEDOUT || rc == -EAGAIN)
		return;
	/* TENANT reaches the tenants' ssqd, above clients/ (tenant_status.c). */
	if (!rc && m.hdr.type == SSQ_MSG_TENANT && c->said_hello)
		rc = ssqd_on_tenant(d, c, &m, fd);
	else if (!rc)
		rc = ssqd_handle(d, c, &m, fd);
	if (rc == -ENOBUFS)
		fprintf(stderr,
		        "ssqd: client pid %d does not read its replies (%u waiting): "
		        "dropped\n",
		        (int)c->pid, c->out.n);
	if (rc)
		drop_client(d, c);
}

/*
 * A connection that has not said hello (or that is refused and has not
 * spoken) by its deadline is closed, told why: silent connections must not
 * hold slots other clients need.
 */
static void hello_deadline(struct ssqd *d, struct ssqd_client *c, uint64_t now)
{
	if (now < c->hello_by_ns)
		return;
	if (c->refused)
		ssqd_out_error(&c->out, c->fd, 0, -EACCES,
		               "uid %u / gid %u may not use this ssqd (see --allow-uid, "
		               "--allow-gid)",
		               (unsigned)c->uid, (unsigned)c->gid);
	else
		ssqd_out_error(&c->out, c->fd, 0, -ETIMEDOUT,
		               "no hello within %u ms (--hello-ms): closed",
		               d->opt.hello_ms);
	drop_client(d, c);
}

/*
 * The progress engine of last resort: route completions nobody is polling
 * for (so `completed` and the owners' rings advance), and retry heals that
 * had to wait.
 */
static void progress(struct ssqd *d)
{
	uint64_t now = ssqd_now_ns();
	unsigned i;

	for (i = 0; i < d->own.nqueues; i++) {
		struct ssqd_queue *q = &d->queues[i];

		/*
		 * Also while the peer is gone: flushes still go to their owners.
		 * Whether it is in use is ssqd's own word: the header's state is
		 * client memory, and one store of UNUSED there must not turn the
		 * guard off.
		 */
		if (!q->ctl || !q->published)
			continue;
		/* Before routing: what a client wrote there may stall the queue. */
		ssqd_queue_guard(d, i, now);
		ssqd_queue_rate_sample(d, i, now);
		ssq_progress(&q->prod);
	}
	reap_graves(d);
}

/*
 * --tenants: links to the peer port that said they are another tenant's
 * (peers/tenant.c), handed to that tenant's ssqd as its clients are if it
 * runs; refused if not (a peer's link starts no tenant: tenants.c).
 */
static void hand_knocks_over(struct ssqd *d)
{
	char why[SSQ_PEER_REFUSAL_LEN];
	int i, rc;

	for (i = 0; i < SSQD_MAX_KNOCKS; i++) {
		struct ssqd_knock *k = &d->knocks[i];

		if (k->fd < 0 || k->draining || k->routed != 2)
			continue;
		rc = ssqd_tenant_pass(d, k->tenant, k->fd, 'p', why, sizeof(why));
		ssqd_knock_handed(d, k, rc == 0, why);
	}
}

/* What one poll() reported: the peer link, clients, new connections. */
static void serve_events(struct ssqd *d, const struct pollfd *pfd,
                         struct ssqd_client **who, int n)
{
	int i;

	for (i = 0; i < (int)d->npeers; i++)
		if (pfd[2 + i].revents && pfd[2 + i].fd == d->peers[i].fd)
			ssqd_peer_events(d, &d->peers[i], pfd[2 + i].revents);
	for (i = 0; i < SSQD_MAX_KNOCKS; i++) {
		const struct pollfd *k = &pfd[2 + d->npeers + i];

		if (k->revents && k->fd >= 0 && k->fd == d->knocks[i].fd)
			ssqd_knock_events(d, &d->knocks[i], k->revents);
	}
	for (i = 2 + (int)d->npeers + SSQD_MAX_KNOCKS + SSQD_MAX_TENANTS; i < n; i++) {
		if (who[i]->dying) {
			if (pfd[i].revents) /* its pidfd: the process has exited */
				drop_client(d, who[i]);
			continue;
		}
		if ((pfd[i].revents & POLLOUT) &&
		    ssqd_out_flush(&who[i]->out, who[i]->fd))
			drop_client(d, who[i]);
		else if (pfd[i].revents & POLLIN)
			serve_client(d, who[i]);
		else if (pfd[i].revents & (POLLHUP | POLLERR | POLLNVAL))
			drop_client(d, who[i]);
	}
	/* A tenant's ssqd: its parent's hang-up too (ssqd_tenant_recv stops). */
	if ((pfd[0].revents & POLLIN) || (d->opt.tenant_fd >= 0 && pfd[0].revents))
		accept_client(d);
	if (pfd[1].revents & POLLIN)
		ssqd_accept_peer(d);
	hand_knocks_over(d);
}

/* The most entries the loop polls. */
#define SERVE_POLL_MAX                                                                   \
	(SSQD_MAX_CLIENTS + SSQD_MAX_PEERS + SSQD_MAX_KNOCKS + SSQD_MAX_TENANTS + 3)
/*
 * While not every connection fits under RLIMIT_NOFILE: the longest poll,
 * so that those left out this pass are looked at soon.
 */
#define ROTATE_POLL_MS 10

/*
 * Under a limit @lim lower than the loop's entries: poll those with a
 * descriptor (-1's take a place of nfds too), the ones not a client's
 * (@first_client up to the last, the device's async fd) first, and as many
 * clients as fit after them, taken in turn by their slots from
 * d->poll_next on (ssqd_turns_pick), so that each is polled at least once
 * in every ceil(SSQD_MAX_CLIENTS / room) passes, whoever else comes or
 * goes; where
 * no client fits after the others, all of them in turn. Their events go
 * back into @pfd; the entries left out get none this pass. A silent
 * client's hello deadline does not run while it is not polled: its hello
 * may be waiting unread. Returns poll's.
 */
static int poll_in_turn(struct ssqd *d, struct pollfd *pfd, struct ssqd_client **who,
                        int n, int first_client, int timeout_ms, rlim_t lim)
{
	struct pollfd cp[SERVE_POLL_MAX];
	short polled[SERVE_POLL_MAX];
	int ix[SERVE_POLL_MAX], live[SERVE_POLL_MAX], pick[SERVE_POLL_MAX];
	unsigned keys[SERVE_POLL_MAX];
	int k = 0, nfixed = 0, nlive = 0, base, turn, take, i, rc;
	uint64_t t0, waited;

	for (i = 0; i < n; i++) {
		pfd[i].revents = 0;
		polled[i] = 0;
		if (pfd[i].fd >= 0 && (i < first_client || i == n - 1))
			live[nlive++] = i;
	}
	nfixed = nlive;
	for (i = first_client; i < n - 1; i++)
		if (pfd[i].fd >= 0)
			live[nlive++] = i;
	/* The others always when a client fits after them, else all in turn. */
	base = lim > (rlim_t)nfixed ? nfixed : 0;
	turn = nlive - base;
	take = lim >= (rlim_t)nlive ? turn : (int)lim - base;
	for (i = 0; i < base; i++)
		ix[k++] = live[i];
	/*
	 * Keyed by what stays an entry's own while others come and go - a
	 * client's slot, after every other entry's place - so that one that
	 * leaves does not move the cursor past the next (ssqd_turns_pick).
	 */
	for (i = 0; i < turn; i++) {
		int e = live[base + i];

		keys[i] = who[e]       ? SERVE_POLL_MAX + (unsigned)(who[e] - d->clients)
		          : e == n - 1 ? SERVE_POLL_MAX - 1
		                       : (unsigned)e;
	}
	ssqd_turns_pick(keys, turn, take, &d->poll_next, pick);
	for (i = 0; i < take && i < turn; i++)
		ix[k++] = live[base + pick[i]];
	for (i = 0; i < k; i++) {
		cp[i] = pfd[ix[i]];
		polled[ix[i]] = 1;
	}
	if (k < nlive && timeout_ms > ROTATE_POLL_MS)
		timeout_ms = ROTATE_POLL_MS;
	t0 = ssqd_now_ns();
	rc = poll(cp, (nfds_t)k, timeout_ms);
	waited = ssqd_now_ns() - t0;
	for (i = 0; rc > 0 && i < k; i++)
		pfd[ix[i]].revents = cp[i].revents;
	for (i = first_client; i < n - 1; i++)
		if (!polled[i] && who[i])
			who[i]->hello_by_ns += waited;
	if (!d->poll_limited || d->poll_limit != lim) {
		int conns = 0, served = 0;

		for (i = first_client; i < n - 1; i++) {
			conns += pfd[i].fd >= 0;
			served += polled[i];
		}
		if (base)
			fprintf(stderr,
			        SD_WARNING
			        "ssqd: poll(2) refuses the loop's %d descriptors: more "
			        "than RLIMIT_NOFILE (%llu), its hard limit too: serving "
			        "%d of %d connections per pass, in turn, until the limit "
			        "is raised\n",
			        n, (unsigned long long)lim, take < turn ? take : turn,
			        conns);
		else
			fprintf(stderr,
			        SD_ERR
			        "ssqd: poll(2) refuses the loop's %d descriptors: "
			        "more than RLIMIT_NOFILE (%llu), its hard limit too: "
			        "serving %d of %d connections per pass, polling %d "
			        "of its %d descriptors in turn, until the limit is "
			        "raised\n",
			        n, (unsigned long long)lim, served, conns, k, nlive);
		d->poll_limited = 1;
		d->poll_limit = lim;
	}
	return rc;
}

/*
 * The loop's poll(2), @n entries, the clients' from @first_client to the
 * last but one: the kernel refuses more than RLIMIT_NOFILE of them with
 * EINVAL (do_sys_poll, fs/select.c), a limit anyone with the right to
 * (prlimit) may lower under a running ssqd, and the loop polls about 27
 * fixed entries besides its clients. Then the soft limit goes back up to
 * the hard one where that is enough; where not, the loop goes on with what
 * fits (poll_in_turn) until it is raised, and says so each way.
 */
static int serve_poll(struct ssqd *d, struct pollfd *pfd, struct ssqd_client **who, int n,
                      int first_client, int timeout_ms)
{
	struct rlimit rl;
	int rc;

	if (!d->poll_limited) {
		rc = poll(pfd, (nfds_t)n, timeout_ms);
		if (rc >= 0 || errno != EINVAL)
			return rc;
	}
	ssqd_nofile_retry(n, &rl);
	if (rl.rlim_cur < (rlim_t)n)
		return poll_in_turn(d, pfd, who, n, first_client, timeout_ms,
		                    rl.rlim_cur);
	if (d->poll_limited) {
		fprintf(stderr,
		        SD_NOTICE "ssqd: poll(2) takes the loop's %d descriptors again "
		                  "(RLIMIT_NOFILE %llu): serving every connection each "
		                  "pass\n",
		        n, (unsigned long long)rl.rlim_cur);
		d->poll_limited = 0;
	}
	return poll(pfd, (nfds_t)n, timeout_ms);
}

int ssqd_serve(struct ssqd *d)
{
	struct pollfd pfd[SERVE_POLL_MAX];
	struct ssqd_client *who[SERVE_POLL_MAX];
	int i, n, rc, first_client, recovering = 0, healing = 0, dying = 0, timeout_ms;
	/* The device's async events wake the loop (QP_FATAL, CQ_ERR, PORT_ERR). */
	int async_fd = d->backend && d->ops->async_fd ? d->ops->async_fd(d->backend) : -1;

	while (!d->stop) {
		uint64_t now = ssqd_now_ns();

		ssqd_log_tick(&d->client_log, now);
		ssqd_log_tick(&d->auth_log, now);
		ssqd_log_tick(&d->guess_log, now);
		n = 0;
		pfd[n].fd = now < d->accept_pause_until_ns ? -1 : d->listen_fd;
		pfd[n].events = POLLIN;
		who[n++] = NULL;
		pfd[n].fd = d->peer_listen_fd; /* -1 unless --listen: poll skips it */
		pfd[n].events = POLLIN;
		who[n++] = NULL;
		for (i = 0; i < (int)d->npeers; i++) {
			/* A peer's close or message, or a dial finishing. */
			pfd[n].fd = d->peers[i].fd;
			pfd[n].events =
			    d->peers[i].link == SSQD_LINK_DIALING ? POLLOUT : POLLIN;
			who[n++] = NULL;
		}
		for (i = 0; i < SSQD_MAX_KNOCKS; i++) {
			/* Links coming in, each read as it comes (-1: poll skips it). */
			pfd[n].fd = d->knocks[i].fd;
			pfd[n].events = POLLIN;
			who[n++] = NULL;
		}
		/* The tenants' ssqd (-1 where none, or in a tenant's ssqd). */
		ssqd_tenants_pollfds(d, &pfd[n]);
		for (i = 0; i < SSQD_MAX_TENANTS; i++)
			who[n++] = NULL;
		first_client = n;
		for (i = 0; i < SSQD_MAX_CLIENTS; i++) {
			if (d->clients[i].fd >= 0 && d->clients[i].failed &&
			    !d->clients[i].dying)
				drop_client(d, &d->clients[i]);
			if (d->clients[i].fd >= 0 && !d->clients[i].dying &&
			    (!d->clients[i].said_hello || d->clients[i].refused))
				hello_deadline(d, &d->clients[i], now);
			if (d->clients[i].fd < 0)
				continue;
			if (d->clients[i].dying) {
				pfd[n].fd = d->clients[i].pidfd;
				pfd[n].events = POLLIN;
				who[n++] = &d->clients[i];
				continue;
			}
			pfd[n].fd = d->clients[i].fd;
			pfd[n].events = POLLIN | (d->clients[i].out.n ? POLLOUT : 0);
			who[n++] = &d->clients[i];
		}
		/*
		 * Last, after the clients: serve_events reads only the n before
		 * it; ssqd_async_poll below takes the events after every wake.
		 */
		pfd[n].fd = async_fd;
		pfd[n].events = POLLIN;
		pfd[n].revents = 0;
		who[n] = NULL;
		/* A recovery, a heal or a grant's bind under way: looked at every
		 * millisecond. */
		timeout_ms = recovering || healing || ssqd_grants_binding(d)
		                 ? 1
		                 : ssqd_idle_poll_ms(d, now);
		/* A dying client's kill or look (kill_late), when due. */
		if (dying && dying < timeout_ms)
			timeout_ms = dying;
		rc = serve_poll(d, pfd, who, n + 1, first_client, timeout_ms);
		if (rc > 0 && pfd[n].revents)
			rc--; /* the async fd's: not serve_events' to see */
		/* Failures no CQE reports, before anything routes or recovers. */
		ssqd_async_poll(d);
		progress(d);
		ssqd_stall_watch(d, ssqd_now_ns());
		ssqd_grants_tick(d, ssqd_now_ns());
		/* Memory a freed window was the last to hold goes now (held.c). */
		ssqd_held_release(d);
		recovering = ssqd_recover_step(d);
		ssqd_peer_tick(d);
		ssqd_knocks_tick(d, ssqd_now_ns());
		/*
		 * The tenants' ssqd: asks to exit idle, hang-ups, each loop (one
		 * that hung up is reaped once it has exited: tenants.c).
		 */
		ssqd_tenants_events(d, &pfd[2 + d->npeers + SSQD_MAX_KNOCKS]);
		if (rc > 0)
			serve_events(d, pfd, who, n);
		/* Connections waiting for a closing tenant's slot (tenant_park.c). */
		ssqd_tenants_tick(d, ssqd_now_ns());
		healing = heal_deaths(d);
		dying = kill_late(d, ssqd_now_ns());
		/* After the events: a client just gone starts the idle count now. */
		ssqd_tenant_idle_tick(d, ssqd_now_ns());
	}
	return 0;
}
