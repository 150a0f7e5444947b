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
 * zombie too. Without a pidfd (before Linux 5.3, or a sandbox that refuses
 * them) its /proc/PID/stat does (ssqd_child_alive): our child, not reaped,
 * so the pid is still its own.
 *
 * Here too the reaping of every tenant's ssqd, a slot's or a zombie's
 * (ssqd_tenant_reap), which tenants.c calls: this file calls nothing of
 * tenants.c's.
 *
 * Bounded: SSQD_TENANT_ZOMBIES. One more frees its slot all the same - a
 * full list must not lock anyone out either - and is forgotten, said in
 * the log with its pid: it stays a zombie child of ssqd's till ssqd exits
 * (init then reaps it), one pid each. Never a wait, never a refusal.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h> /* SD_WARNING: util/log.c */
#include "ctrl/daemon/daemon.h"
#include "ctrl/daemon/util/util.h"

/*
 * Forget slot @t (its process reaped, or to be): close its socket. What
 * waits for it (its park) stays: ssqd_tenants_tick hands that over.
 */
void ssqd_tenant_forget(struct ssqd_tenant *t)
{
	if (t->fd >= 0)
		close(t->fd);
	if (t->pidfd >= 0)
		close(t->pidfd);
	if (t->arena_fd >= 0)
		close(t->arena_fd);
	memset(t, 0, sizeof(*t));
	t->fd = t->pidfd = t->arena_fd = -1;
}

/*
 * Slot (or zombie, tenant_zombie.c) @t's ssqd reaped if it exited: @t
 * freed. One that exited 0 after it was let go idle (closing) did what it
 * was asked: no failure; nor one killed for taking too long to
 * (ssqd_tenants_tick).
 */
int ssqd_tenant_reap(struct ssqd *d, struct ssqd_tenant *t)
{
	int st;

	if (t->pid <= 0 || waitpid(t->pid, &st, WNOHANG) != t->pid)
		return 0;
	if (t->dead) {
		/* Its failure counted when its socket was found dead. */
		fprintf(stderr,
		        SD_WARNING "ssqd: tenant %u: its ssqd (pid %d), found dead "
		                   "and killed, has exited (status 0x%x)\n",
		        (unsigned)t->key, (int)t->pid, st);
		ssqd_tenant_reaped_dead(d, t->key, st);
	} else if (t->closing && t->killed) {
		/*
		 * Killed before its teardown emptied its arena (setup.c): as
		 * it would have. Nothing of anyone's is in it: it had agreed
		 * to go with nothing to serve (tenant_idle.c). Truncating a
		 * memfd frees its pages from every mapping of it
		 * (shm_arena_destroy_emptied says how).
		 */
		if (t->arena_fd >= 0 && ftruncate(t->arena_fd, 0) < 0)
			fprintf(stderr,
			        SD_WARNING "ssqd: tenant %u: emptying the arena of its "
			                   "killed ssqd: %s\n",
			        (unsigned)t->key, strerror(errno));
		ssqd_tenant_ended_well(d, t->key); /* it had agreed to go */
	} else if (t->closing && WIFEXITED(st) && !WEXITSTATUS(st)) {
		fprintf(stderr,
		        SD_NOTICE "ssqd: tenant %u: its ssqd (pid %d) exited, idle; "
		                  "started again at its next client's connection\n",
		        (unsigned)t->key, (int)t->pid);
		ssqd_tenant_ended_well(d, t->key);
	} else {
		fprintf(stderr,
		        SD_WARNING
		        "ssqd: tenant %u: its ssqd (pid %d) has exited (status "
		        "0x%x); started again at its next connection\n",
		        (unsigned)t->key, (int)t->pid, st);
		ssqd_tenant_failed(d, t->key, st);
	}
	ssqd_tenant_forget(t);
	return 1;
}

int ssqd_tenant_bury(struct ssqd *d, struct ssqd_tenant *t)
{
	struct ssqd_tenant *z = NULL;
	unsigned i;

	if (t->pid <= 0 || ssqd_child_alive(t->pidfd, t->pid))
		return 0;
	/*
	 * Exited unasked (neither let go idle nor found dead at a send): its
	 * failure counts now, as a found dead one's does (ssqd_tenant_pass),
	 * so that its uid's next start backs off; its status is told when it
	 * is reaped (ssqd_tenant_reap). The kill is for the record: nothing
	 * to a zombie.
	 */
	if (!t->closing && !t->dead) {
		if (t->pidfd >= 0)
			(void)ssqd_pidfd_signal(t->pidfd, SIGKILL);
		else
			(void)kill(t->pid, SIGKILL); /* our child, not reaped */
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
		if (t->pidfd >= 0)
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
