/* SPDX-License-Identifier: MIT */
/*
 * The daemon's top floor, each a caller of the folders below: the options
 * (options.c), bring-up and teardown (setup.c), the serve loop (serve.c;
 * the requests it reads are clients/request.c's), its sleep policy
 * (idle.c), ssqd --status (status_cmd.c), tenants' ssqd (tenants.c).
 * main.c drives them. Types are
 * ssqd.h's.
 */
#ifndef SSQ_CTRL_DAEMON_H
#define SSQ_CTRL_DAEMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "ctrl/daemon/ssqd.h"

/*
 * ssqd's options (options.c): ssqd_options_default - defaults for every
 * option; ssqd_options_parse - the command line into @o, the socket path
 * defaulted into @sock (@socklen bytes), *@socket_opt the --socket given
 * or NULL. Returns -1 to go on and serve, else the exit status for main to
 * return: 0 after --help, --version, --list-devices or --status, 2 after a
 * bad option (said why on stderr).
 */
void ssqd_options_default(struct ssqd_options *o);
int ssqd_options_parse(struct ssqd_options *o, int argc, char **argv, char *sock,
                       size_t socklen, const char **socket_opt);

/*
 * ssqd_setup - arena, device, data MR, queues brought to RTS (loopback, or
 * against the peer of --listen / --connect), the device's progress, the
 * client socket. Returns 0, or a negative errno with a sentence in @why;
 * on error everything made so far is torn down.
 */
int ssqd_setup(struct ssqd *d, char *why, size_t whylen);

/* Serve clients until d->stop is set (by a signal). Returns 0. */
int ssqd_serve(struct ssqd *d);

void ssqd_teardown(struct ssqd *d);

/*
 * --tenants (tenants.c): the clients of another uid (gid) than ssqd's are
 * served by an ssqd of their own, which this one starts and hands their
 * connections to.
 * ssqd_tenant_of - 1 with its tenant's uid or gid in *@key when the client
 *   @cr belongs to another tenant than ssqd's own; 0 when ssqd serves it.
 * ssqd_tenant_pass - hand connection @fd to tenant @key's ssqd, @what 'c'
 *   for a client's (its ssqd started first if it is not running), 'p' for
 *   a link to the peer port (its TENANT read: peers/tenant.c; never
 *   started for one: -ENOENT). 0 (the caller closes its copy), or -errno
 *   with @why to tell the client: -EUSERS (SSQD_MAX_TENANTS running),
 *   -EAGAIN (it does not take connections), fork's and exec's failures,
 *   a send's that is not its death (-ENOBUFS, -ENOMEM, -ETOOMANYREFS:
 *   ssqd_tenant_gone; its ssqd left alone, no failure counted).
 *   A client's connection whose uid's only slot is closing is parked
 *   (ssqd_tenant_park: 0, handed over or told why later).
 * ssqd_tenants_start - start the tenant the command line names
 *   (--allow-uid under --tenants uid, --allow-gid under gid); 0 or -errno.
 * ssqd_tenants_stop - stop every tenant's ssqd (SIGTERM to all, 10 s at
 *   most for all together, then SIGKILL) and reap it, 2 s at most more:
 *   one not reapable by then (ptraced) is left.
 * ssqd_tenant_recv - in a tenant's ssqd (--tenant-fd; tenant_recv.c): the
 *   next connection its parent handed over, its kind in *@what ('c' or
 *   'p', as passed), or -1 (none now; one refused, out of descriptors,
 *   its client told -EMFILE; or the parent is gone, which sets d->stop).
 * ssqd_tenant_send - hand connection @fd (@what: 'c' a client's, 'p' a
 *   peer's link) to @t's ssqd without blocking (a copy: the caller closes
 *   its own): 0, or -errno (-EAGAIN: its socket is full, it takes no
 *   connections; -EPIPE, -ECONNREFUSED: it is gone; -EPIPE too for a
 *   closing one, which takes nothing more).
 * ssqd_tenant_gone - 1 when ssqd_tenant_send's -errno @rc says the
 *   tenant's end is closed (its ssqd dead), 0 for one that passes
 *   (-EAGAIN, -ENOBUFS, -ENOMEM, -ETOOMANYREFS): its ssqd is left alone.
 * ssqd_tenants_pollfds - the tenants' sockets into @pfd (SSQD_MAX_TENANTS
 *   entries, -1 where none), for the parent's loop; returns how many.
 * ssqd_tenants_events - what poll said of them: a tenant's ask to exit
 *   idle answered (tenant_idle.c), one that hung up reaped once it exited.
 */
struct ucred;
struct pollfd;
int ssqd_tenant_of(const struct ssqd *d, const struct ucred *cr, uint32_t *key);
int ssqd_tenant_pass(struct ssqd *d, uint32_t key, int fd, char what, char *why,
                     size_t whylen);
int ssqd_tenants_start(struct ssqd *d, char *why, size_t whylen);
void ssqd_tenants_stop(struct ssqd *d);
int ssqd_tenant_recv(struct ssqd *d, char *what);
int ssqd_tenant_send(struct ssqd_tenant *t, int fd, char what);
int ssqd_tenant_gone(int rc);
unsigned ssqd_tenants_pollfds(const struct ssqd *d, struct pollfd *pfd);
void ssqd_tenants_events(struct ssqd *d, const struct pollfd *pfd);

/*
 * A client's connection that needs a closing slot (its uid's ssqd exiting
 * idle, or, no slot its uid's, another uid's; no other slot free) waits
 * parked, never the loop (tenant_park.c).
 * ssqd_tenant_park - keep a copy of @fd, tenant @key's, for closing slot
 *   @t (the caller closes its own): 0, or -errno with @why (-EAGAIN:
 *   SSQD_TENANT_PARKED wait already).
 * ssqd_tenants_tick - once a serve loop: hand parked connections over
 *   once their slot's ssqd is reaped (or room came elsewhere); kill one
 *   still there after ssqd_tenant_closing_wait_ms, reaped on a later tick.
 * ssqd_tenants_due - when the loop must look again for them (0: nothing
 *   parked, or only their ssqd's exit, which its pidfd reports).
 * ssqd_tenants_unpark_refuse - tell each parked connection ssqd stops,
 *   and close it.
 * ssqd_tenant_closing_wait_ms - how long they wait (200 ms).
 */
int ssqd_tenant_park(struct ssqd *d, struct ssqd_tenant *t, uint32_t key, int fd,
                     char *why, size_t whylen);
void ssqd_tenants_tick(struct ssqd *d, uint64_t now);
uint64_t ssqd_tenants_due(const struct ssqd *d, uint64_t now);
void ssqd_tenants_unpark_refuse(struct ssqd *d);
unsigned ssqd_tenant_closing_wait_ms(void);

/*
 * A tenant's ssqd that exited but is not reapable yet (a ptraced zombie
 * is its tracer's to reap first) leaves its slot at once (tenant_zombie.c):
 * else a uid that holds zombies would keep every other uid out.
 * ssqd_tenant_reap - reap slot (or zombie) @t's ssqd if it exited, its
 *   end logged and counted, @t forgotten: 1; 0 if not reaped.
 * ssqd_tenant_forget - free @t (its process reaped, or to be): its socket,
 *   pidfd and arena's memfd closed. What waits for a slot (its park) stays:
 *   ssqd_tenants_tick hands that over.
 * ssqd_tenant_bury - slot @t's ssqd, exited (its pidfd says so) but not
 *   reaped by ssqd_tenant_reap: moved to d->tenant_zombies, the slot freed
 *   (the list full: freed all the same, the process left unreaped, said
 *   in the log). 1 if freed.
 * ssqd_tenant_zombies_reap - each loop: reap those let go (WNOHANG).
 * ssqd_tenant_zombies - how many wait to be reaped.
 */
int ssqd_tenant_reap(struct ssqd *d, struct ssqd_tenant *t);
void ssqd_tenant_forget(struct ssqd_tenant *t);
int ssqd_tenant_bury(struct ssqd *d, struct ssqd_tenant *t);
void ssqd_tenant_zombies_reap(struct ssqd *d);
unsigned ssqd_tenant_zombies(const struct ssqd *d);

/*
 * A tenant's ssqd with nothing to serve for --tenant-idle-ms exits, once
 * its parent agreed (tenant_idle.c).
 * ssqd_tenant_idle_tick - once a serve loop: idle long enough, ask.
 * ssqd_tenant_idle_due - when it asks if nothing changes (0: not counting).
 * ssqd_tenant_idle_answer - the parent's answer @answer ('y': stop).
 */
void ssqd_tenant_idle_tick(struct ssqd *d, uint64_t now);
uint64_t ssqd_tenant_idle_due(const struct ssqd *d);
void ssqd_tenant_idle_answer(struct ssqd *d, char answer, uint64_t now);

/*
 * A tenant's ssqd that fails (exits at start, crashes) is not started again
 * at once for each connection of its uid (tenant_backoff.c): a crash loop
 * would cost a fork and exec per connection.
 * ssqd_tenant_started - tenant @key's ssqd was started now.
 * ssqd_tenant_failed - it exited (wait status @status): the next start of
 *   @key waits SSQD_TENANT_BACKOFF_MIN_MS, twice the last wait after each
 *   failure that follows a run shorter than SSQD_TENANT_HEALTHY_MS, at
 *   most SSQD_TENANT_BACKOFF_MAX_MS; none after a longer run.
 * ssqd_tenant_ended_well - it exited idle, as asked: a good run, its wait
 *   starts over (the next failure waits SSQD_TENANT_BACKOFF_MIN_MS).
 * ssqd_tenant_backoff - 0 when tenant @key's ssqd may be started now;
 *   else -EAGAIN, @why saying when it may, for its client.
 * ssqd_tenant_failed - it failed with wait status @status, or
 *   SSQD_TENANT_FOUND_DEAD (its socket found closed at a send, not reaped
 *   yet: ssqd_tenant_reaped_dead gives its status once it is).
 */
#define SSQD_TENANT_BACKOFF_MIN_MS 100
#define SSQD_TENANT_BACKOFF_MAX_MS 10000
#define SSQD_TENANT_HEALTHY_MS     10000
#define SSQD_TENANT_FOUND_DEAD     (-1) /* no wait status: those are 16 bits */
void ssqd_tenant_started(struct ssqd *d, uint32_t key);
void ssqd_tenant_failed(struct ssqd *d, uint32_t key, int status);
void ssqd_tenant_reaped_dead(struct ssqd *d, uint32_t key, int status);
void ssqd_tenant_ended_well(struct ssqd *d, uint32_t key);
int ssqd_tenant_backoff(struct ssqd *d, uint32_t key, char *why, size_t whylen);

/*
 * ssqd_on_tenant - TENANT (tenant_status.c): hand connection @fd (taken)
 * to the m->u.tenant.index'th running tenant's ssqd and tell client @c
 * which tenant that is (ssqd --status under --tenants). Only ssqd's own
 * uid and root may ask. 0, or -errno: drop @c (its replies do not go).
 */
struct ssqd_client;
struct proto_msg;
int ssqd_on_tenant(struct ssqd *d, struct ssqd_client *c, const struct proto_msg *m,
                   int fd);

/*
 * An idle ssqd (idle.c): no client has a queue attached, nothing is in
 * flight. ssqd_idle_poll_ms - how long the serve loop may wait in poll
 * from @now: 10 ms while busy; while idle up to SSQD_IDLE_MS, less for a
 * deadline (hello, reconnect). It tells the device and the receive poller
 * whether they may sleep that long too (ssqd_queues_idle).
 */
int ssqd_idle_poll_ms(struct ssqd *d, uint64_t now);

/*
 * ssqd --status: a running ssqd's queues and, in a cluster, its peers and
 * their links, printed as a table by a client of the ssqd at @socket_path.
 */

/* 0, or 1 with the reason on stderr (no ssqd there, or it refused). */
int ssqd_status_print(const char *socket_path, FILE *out);
/* ssqd --status --json: the same as one JSON object (status_cmd.c). */
int ssqd_status_json(const char *socket_path, FILE *out);

#endif /* SSQ_CTRL_DAEMON_H */
