/* SPDX-License-Identifier: MIT */
/*
 * A tenant's ssqd that exited but cannot be reaped yet leaves its slot at
 * once (daemon.h). How one stays unreapable: while a process is ptraced,
 * its zombie is its tracer's to reap first ("A zombie ptracee is only
 * visible to its ptracer", wait_consider_task in kernel/exit.c), and our
 * waitpid(WNOHANG) gets nothing till the tracer reaps or detaches. Whoever
 * may ptrace a tenant's ssqd could so hold its slot for as long as it
 * likes, slot after slot, and a dead one cannot be killed to free it (the
 * fix for another uid's closing slot, tenants.c, skips it): every other
 * uid would get -EUSERS (tests/test_adv8t_zombie_slots.c).
 *
 * So its pid, pidfd and how it ended (dead, closing, killed; its arena's
 * memfd to empty) move here, the slot is freed for anyone, and each loop
 * reaps those let go (WNOHANG, never a wait: ssqd_tenants_due looks every
 * loop while one is here; its pidfd is not polled, it stays readable).
 * Exited: its pidfd polls readable (pidfd_poll, kernel/fork.c; fs/pidfs.c
 * since 6.9: thread_group_exited, a zombie's exit_state set), a ptraced
 * zombie too. Without a pidfd (before Linux 5.3) nothing says it exited:
 * its slot stays taken till it is reaped, as before.
 *
 * Bounded: SSQD_TENANT_ZOMBIES. One more frees its slot all the same - a
 * full list must not lock anyone out either - and is forgotten, said in
 * the log with its pid: it stays a zombie child of ssqd's till ssqd exits
 * (init then reaps it), one pid each. Never a wait, never a refusal.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <systemd/sd-daemon.h> /* SD_WARNING: util/log.c */
#include "ctrl/daemon/daemon.h"
#include "ctrl/daemon/util/util.h"

int ssqd_tenant_bury(struct ssqd *d, struct ssqd_tenant *t)
{
	struct ssqd_tenant *z = NULL;
	unsigned i;

	if (t->pid <= 0 || t->pidfd < 0 || ssqd_pidfd_alive(t->pidfd))
		return 0;
	/*
	 * Exited unasked (neither let go idle nor found dead at a send): its
	 * failure counts now, as a found dead one's does (ssqd_tenant_pass),
	 * so that its uid's next start backs off; its status is told when it
	 * is reaped (ssqd_tenant_reap). The kill is for the record: nothing
	 * to a zombie.
	 */
	if (!t->closing && !t->dead) {
		(void)ssqd_pidfd_signal(t->pidfd, SIGKILL);
		t->closing = t->dead = 1;
		ssqd_tenant_failed(d, t->key, SSQD_TENANT_FOUND_DEAD);
	}
	/* Nothing goes to it any more: its socket is closed now. */
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
	for (i = 0; i < SSQD_TENANT_ZOMBIES && !z; i++)
		if (d->tenant_zombies[i].pid <= 0)
			z = &d->tenant_zombies[i];
	if (z) {
		*z = *t;
		ssqd_log_limited(&d->client_log, ssqd_now_ns(),
		                 SD_NOTICE "ssqd: tenant %u: its ssqd (pid %d) has "
		                           "exited but is not reapable yet "
		                           "(ptraced?): its slot freed, reaped "
		                           "later\n",
		                 (unsigned)t->key, (int)t->pid);
	} else {
		fprintf(stderr,
		        SD_ERR "ssqd: tenant %u: its ssqd (pid %d) has exited but is "
		               "not reapable (ptraced?), and %u others wait to be "
		               "reaped already: its slot freed, the process left "
		               "unreaped (a zombie of ssqd's till ssqd exits)\n",
		        (unsigned)t->key, (int)t->pid, SSQD_TENANT_ZOMBIES);
		/* Its arena emptied as its reaping would have (tenants.c). */
		if (t->closing && t->killed && t->arena_fd >= 0)
			(void)!ftruncate(t->arena_fd, 0);
		close(t->pidfd);
		if (t->arena_fd >= 0)
			close(t->arena_fd);
	}
	memset(t, 0, sizeof(*t));
	t->fd = t->pidfd = t->arena_fd = -1;
	return 1;
}

void ssqd_tenant_zombies_reap(struct ssqd *d)
{
	unsigned i;

	for (i = 0; i < SSQD_TENANT_ZOMBIES; i++)
		if (d->tenant_zombies[i].pid > 0)
			(void)ssqd_tenant_reap(d, &d->tenant_zombies[i]);
}

unsigned ssqd_tenant_zombies(const struct ssqd *d)
{
	unsigned i, n = 0;

	for (i = 0; i < SSQD_TENANT_ZOMBIES; i++)
		n += d->tenant_zombies[i].pid > 0;
	return n;
}
