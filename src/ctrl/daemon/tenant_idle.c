/* SPDX-License-Identifier: MIT */
/*
 * A tenant's ssqd that has nothing to serve exits (--tenant-idle-ms;
 * tenants.c): each costs a process, an arena and one of SSQD_MAX_TENANTS
 * slots, and one that no client uses any more would hold them for ever.
 * Its uid's next connection starts it again.
 *
 * Off by default (--tenant-idle-ms 0), and never for the tenant the
 * command line names (tenants.c).
 *
 * Nothing to serve: no client connection, no peer's link coming in that
 * proved itself (--peer-key), no grave, no grant out, no memory held for a bind, no peer
 * link in any state but idle - for --tenant-idle-ms on end.
 *
 * The race: the parent may be sending it a connection (SCM_RIGHTS over
 * their socketpair) just as it decides to go; exiting then would drop
 * that connection unread. So it does not decide alone: it asks, saying
 * how many connections it has received, and the parent, in its loop,
 * agrees only if that is how many it sent - none is in the socket - and
 * then sends it nothing more (the slot is closing: the tenant's next
 * connection starts a new ssqd; tenants.c). Asked after a connection came
 * in, the parent says no, and the tenant serves it. The answer is one
 * byte on the same socket: 'y' (exit) or 'n'.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h> /* SD_NOTICE: util/log.c */
#include "ctrl/daemon/daemon.h"
#include "ctrl/daemon/peers/peers.h"

/* Anything of anyone's here? */
static int tenant_busy(const struct ssqd *d)
{
	unsigned i;

	if (d->nheld)
		return 1;
	for (i = 0; i < SSQD_MAX_CLIENTS; i++)
		if (d->clients[i].fd >= 0)
			return 1;
	for (i = 0; i < SSQD_MAX_GRAVES; i++)
		if (d->graves[i].owner)
			return 1;
	for (i = 0; i < SSQD_MAX_GRANTS; i++)
		if (d->grants[i].owner)
			return 1;
	/*
	 * A knock counts once it proved itself (--peer-key's PROOF checked):
	 * before, it is anyone's - a stranger's TENANT is handed to the
	 * running tenant it names before any proof - and a silent connection
	 * now and then would keep every tenant's slot held for ever (issue
	 * 28: no stranger at the peer port fills slots). Without --peer-key
	 * nothing is proved: a peer's link counts once it is a link (below).
	 * A knock cut by the exit is a failed dial, retried by the dialer.
	 */
	for (i = 0; i < SSQD_MAX_KNOCKS; i++)
		if (d->knocks[i].fd >= 0 && d->knocks[i].stage == 2)
			return 1;
	for (i = 0; i < d->npeers; i++)
		if (d->peers[i].link != SSQD_LINK_IDLE || d->peers[i].wanted)
			return 1;
	return 0;
}

/*
 * Tests only (tests/test_ctrl_tenant_idle.c): $SSQD_TEST_TENANT_ASK_DELAY_MS
 * holds the ask that long after its count was taken, so that connections
 * the parent sends meanwhile meet an ask that does not count them - the
 * race, made wide enough to be hit. An idle tenant has nobody to keep
 * waiting.
 */
static void ask_delay(void)
{
	static long ms = -1;
	const char *e;

	if (ms < 0) {
		e = getenv("SSQD_TEST_TENANT_ASK_DELAY_MS");
		ms = e ? strtol(e, NULL, 10) : 0;
		if (ms < 0 || ms > 1000)
			ms = 0;
	}
	if (ms)
		usleep((useconds_t)ms * 1000);
}

/*
 * Tests only (tests/test_ctrl_tenant_settle.c): $SSQD_TEST_TENANT_EXIT_DELAY_MS
 * holds a tenant's ssqd that long (up to 600 s; a signal, SIGTERM, ends
 * the wait) after its parent let it exit idle, before it exits: a closing
 * slot whose ssqd is slow to go, so that its uid's connection waits for it
 * (parked; tenants.c) while the parent serves others. It has nothing to
 * serve: nobody waits on it but that connection.
 */
static void exit_delay(void)
{
	const char *e = getenv("SSQD_TEST_TENANT_EXIT_DELAY_MS");
	long ms = e ? strtol(e, NULL, 10) : 0;
	struct timespec ts;

	if (ms <= 0 || ms > 600000)
		return;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000;
	nanosleep(&ts, NULL);
}

/*
 * The ask, @m, with our arena's memfd when it is one (SCM_RIGHTS): a
 * parent that lets us go and then has to kill us because our exit took
 * too long (tenants.c, ssqd_tenants_tick) empties it for us, as our own
 * teardown would have (setup.c): else a client that kept its mapping
 * keeps the arena's pages (test_adv6t_kill_arena.c). A hugepage arena is
 * not emptied either way (shm_arena_destroy_emptied).
 */
static ssize_t ask_send(const struct ssqd *d, const uint8_t *m, size_t len)
{
	int memfd = d->arena.base && !d->arena.hugepages ? d->arena.fd : -1;

	return ssqd_fd_send(d->opt.tenant_fd, m, len, memfd, MSG_DONTWAIT);
}

static int idle_exits(const struct ssqd *d)
{
	return d->opt.tenant_fd >= 0 && d->opt.tenant_idle_ms;
}

void ssqd_tenant_idle_tick(struct ssqd *d, uint64_t now)
{
	uint8_t m[5];

	if (!idle_exits(d))
		return;
	/*
	 * Asked, and a connection came in since: the parent's answer is no
	 * (it had sent more than we said), asked again once idle again.
	 */
	if (d->tenant_asked && d->tenant_asked - 1 != d->tenant_got)
		d->tenant_asked = 0;
	if (tenant_busy(d)) {
		d->tenant_idle_ns = 0;
		return;
	}
	if (!d->tenant_idle_ns)
		d->tenant_idle_ns = now;
	if (d->tenant_asked ||
	    now - d->tenant_idle_ns < (uint64_t)d->opt.tenant_idle_ms * 1000000ull)
		return;
	m[0] = 'i';
	memcpy(m + 1, &d->tenant_got, sizeof(d->tenant_got));
	ask_delay();
	if (ask_send(d, m, sizeof(m)) == (ssize_t)sizeof(m))
		d->tenant_asked = (uint64_t)d->tenant_got + 1;
}

uint64_t ssqd_tenant_idle_due(const struct ssqd *d)
{
	if (!idle_exits(d) || !d->tenant_idle_ns || d->tenant_asked)
		return 0;
	return d->tenant_idle_ns + (uint64_t)d->opt.tenant_idle_ms * 1000000ull;
}

void ssqd_tenant_idle_answer(struct ssqd *d, char answer, uint64_t now)
{
	if (answer == 'y') {
		fprintf(stderr,
		        SD_NOTICE "ssqd: tenant: nothing to serve for %u ms "
		                  "(--tenant-idle-ms): exiting\n",
		        d->opt.tenant_idle_ms);
		d->tenant_idle_exit = 1; /* its arena emptied at teardown (setup.c) */
		d->stop = 1;
		exit_delay();
		return;
	}
	/* No: a connection is on its way; idle again for as long before asking. */
	d->tenant_asked = 0;
	d->tenant_idle_ns = now;
}
