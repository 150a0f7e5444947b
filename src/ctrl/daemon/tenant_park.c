/* SPDX-License-Identifier: MIT */
/*
 * Connections that wait for a closing slot (daemon.h; tenants.c): under
 * --tenants with --tenant-idle-ms, a tenant's ssqd that was let exit idle
 * keeps its slot until it is reaped. When its uid connects meanwhile and
 * no other slot is free, that connection needs this very slot: it is
 * parked here - its descriptor kept, its hello unread in its socket - and
 * ssqd's loop goes on serving everyone else. ssqd_tenants_tick hands it to
 * the new ssqd started in the slot once the old one is reaped, or kills
 * the old one when TENANT_CLOSING_WAIT_MS have passed (it agreed to go and
 * has nothing to serve: tenant_idle.c), and reaps it on a later tick.
 * So does another uid's connection when every slot is taken, none its
 * uid's, and one is closing with nobody waiting: else one uid whose
 * closing ssqd are slow to go would hold every slot (tenants.c).
 *
 * Why not wait in the loop (as it did: 10 ms naps up to 200 ms, then
 * SIGKILL and a blocking waitpid): that kept every other client, uid and
 * the peer port waiting, for each such connection, and a uid can make
 * them one after the other (connect, go idle, connect...).
 *
 * Bounded: SSQD_TENANT_PARKED per slot; one more is refused -EAGAIN,
 * told to connect again. None is dropped silently: each is handed over or
 * told why not (ssqd_tenants_tick, ssqd_tenants_stop).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <systemd/sd-daemon.h> /* SD_NOTICE: util/log.c */
#include "ctrl/daemon/daemon.h"
#include "ctrl/daemon/util/util.h"
#include "ctrl/proto/msg.h"

/* How long connections wait for a closing ssqd before it is killed. */
#define TENANT_CLOSING_WAIT_MS 200

unsigned ssqd_tenant_closing_wait_ms(void)
{
	static long ms = -1;
	const char *e;

	/*
	 * Tests only (tests/test_ctrl_tenant_settle.c):
	 * $SSQD_TEST_TENANT_CLOSING_WAIT_MS waits that long instead (up to
	 * 600 s), so that a test can show the loop serving others while a
	 * connection waits, by order rather than by a race against 200 ms.
	 */
	if (ms < 0) {
		e = getenv("SSQD_TEST_TENANT_CLOSING_WAIT_MS");
		ms = e ? strtol(e, NULL, 10) : 0;
		if (ms <= 0 || ms > 600000)
			ms = TENANT_CLOSING_WAIT_MS;
	}
	return (unsigned)ms;
}

int ssqd_tenant_park(struct ssqd *d, struct ssqd_tenant *t, uint32_t key, int fd,
                     char *why, size_t whylen)
{
	struct ssqd_tenant_park *p = &d->tenant_parks[t - d->tenants];
	int kept, e;

	if (p->n >= SSQD_TENANT_PARKED) {
		snprintf(why, whylen,
		         "tenant %u's ssqd is exiting idle and %u connections already "
		         "wait for it to be gone: connect again",
		         (unsigned)key, SSQD_TENANT_PARKED);
		return -EAGAIN;
	}
	/* Ours to keep: the caller closes its own (ssqd_tenant_pass). */
	kept = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (kept < 0) {
		e = errno;
		snprintf(why, whylen,
		         "tenant %u's ssqd is exiting idle, and ssqd cannot keep the "
		         "connection meanwhile: %s",
		         (unsigned)key, strerror(e));
		return -e;
	}
	if (!p->n) {
		p->key = key;
		p->kill_ns = ssqd_now_ns() + ssqd_tenant_closing_wait_ms() * 1000000ull;
		/*
		 * Its exit wakes the loop: a pidfd polls readable once the
		 * process is a zombie, reapable (pidfd_poll, kernel/fork.c;
		 * fs/pidfs.c since 6.9). Our child, not reaped: the pid is
		 * still its own. Without one (before Linux 5.3) the loop looks
		 * every PROGRESS_MS (ssqd_tenants_due).
		 */
		if (t->pidfd < 0)
			t->pidfd = ssqd_pidfd_open(t->pid);
	}
	p->fd[p->n++] = kept;
	if (t->pid > 0 && t->key != key)
		ssqd_log_limited(&d->client_log, ssqd_now_ns(),
		                 SD_NOTICE "ssqd: tenant %u: every slot taken; a "
		                           "connection of its uid waits for tenant "
		                           "%u's ssqd (pid %d), exiting idle, to be "
		                           "gone (killed after %u ms)\n",
		                 (unsigned)key, (unsigned)t->key, (int)t->pid,
		                 ssqd_tenant_closing_wait_ms());
	else
		ssqd_log_limited(
		    &d->client_log, ssqd_now_ns(),
		    SD_NOTICE "ssqd: tenant %u: a connection of its uid waits "
		              "for its ssqd (pid %d) to finish exiting idle "
		              "(%u waiting; killed after %u ms)\n",
		    (unsigned)key, (int)t->pid, p->n, ssqd_tenant_closing_wait_ms());
	return 0;
}

uint64_t ssqd_tenants_due(const struct ssqd *d, uint64_t now)
{
	uint64_t first = 0, at;
	unsigned i;

	/*
	 * Not polled, to be reaped: exited but not reapable yet, out of its
	 * slot (tenant_zombie.c; its pidfd stays readable). Each loop looks.
	 */
	if (ssqd_tenant_zombies(d))
		return now;
	for (i = 0; i < SSQD_MAX_TENANTS; i++) {
		const struct ssqd_tenant *t = &d->tenants[i];
		const struct ssqd_tenant_park *p = &d->tenant_parks[i];

		/*
		 * Not polled (ssqd_tenants_pollfds), to be reaped: its end
		 * closed with no pidfd to say when it is gone (before Linux
		 * 5.3). Each loop looks.
		 */
		if (t->pid > 0 && t->hup && t->pidfd < 0)
			return now;
		if (!p->n)
			continue;
		/*
		 * Reaped (handed over at the next tick), or no pidfd to wake
		 * us: now. Else its kill (0 once killed: its pidfd wakes us).
		 */
		at = t->pid <= 0 || t->pidfd < 0 ? now : p->kill_ns;
		if (at && (!first || at < first))
			first = at;
	}
	return first;
}

void ssqd_tenants_unpark_refuse(struct ssqd *d)
{
	unsigned i, k;

	for (i = 0; i < SSQD_MAX_TENANTS; i++) {
		struct ssqd_tenant_park *p = &d->tenant_parks[i];

		for (k = 0; k < p->n; k++) {
			proto_msg_send_error(p->fd[k], 0, -ESHUTDOWN,
			                     "ssqd is stopping: tenant %u's ssqd was "
			                     "exiting idle, and is not started again",
			                     (unsigned)p->key);
			close(p->fd[k]);
		}
		p->n = 0;
	}
}
