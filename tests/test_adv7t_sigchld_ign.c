/* SPDX-License-Identifier: MIT */
/*
 * ssqd under --tenants reaps its tenants' ssqd itself (tenants.c: waitpid
 * WNOHANG once a socket hangs up or a pidfd says exited), and signals a
 * slot's ssqd by its pid on the grounds that it is "our child not reaped
 * yet, whose pid no other process can have". Both fail when ssqd was
 * started with SIGCHLD ignored - a disposition execve keeps (execve(2):
 * "ignored signals stay ignored"; flush_signal_handlers, kernel/signal.c):
 * then the kernel reaps each child as it exits (do_notify_parent,
 * kernel/signal.c: "autoreap" when the parent's SIGCHLD is SIG_IGN), every
 * waitpid fails ECHILD, the slot is never freed, and its pid is free for
 * any process to get - which ssqd's stop then signals (pidfd_open of the
 * stale pid opens the newcomer's).
 *
 * This test, as root, starts ssqd --tenants uid --allow-gid 65534
 * --tenant-idle-ms 300 on the emulated device with SIGCHLD ignored (as a
 * launcher that ignores it leaves it). uid 60000 connects once; its
 * tenant's ssqd (T) exits idle. ssqd must reap it (its log says so) and
 * free the slot. Then the test makes a process of its own take T's pid
 * (ns_last_pid; retried, as other processes fork too) and stops ssqd:
 * that process must not be signalled.
 * Before: "uid 60000's ssqd (pid T) never reaped: its slot stays taken";
 * ssqd's stop took 12 s and SIGTERMed the test's process holding pid T.
 * Needs root (the clients run as other uids; ns_last_pid).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/wait.h>
#include "cluster_flow.h"

#define UID 60000u

static char sock[108], logf[128];

/* A child of ours with pid @want (ns_last_pid), or -1: none got it. */
static pid_t take_pid(pid_t want)
{
	unsigned tries;
	char v[32];
	pid_t kid;
	int fd, st;

	for (tries = 0; tries < 50; tries++) {
		fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			return -1;
		snprintf(v, sizeof(v), "%d", (int)want - 1);
		if (write(fd, v, strlen(v)) < 0) {
			close(fd);
			return -1;
		}
		close(fd);
		fflush(NULL);
		kid = fork();
		if (kid == 0) {
			pause();
			_exit(0);
		}
		if (kid == want)
			return kid;
		if (kid > 0) {
			kill(kid, SIGKILL);
			waitpid(kid, &st, 0);
		}
	}
	return -1;
}

int main(void)
{
	const char *const args[] = { "--data-mib",       "2",   "--sq-size",   "64",
		                     "--tenants",        "uid", "--allow-gid", "65534",
		                     "--tenant-idle-ms", "300", NULL };
	struct t_uid_clients u = { 0 };
	int st, up, reaped;
	pid_t d, t, other;

	t_need_ssqd();
	if (getuid() != 0)
		SKIP("not root: the clients run as other uids");
	/* ssqd inherits it through fork and exec: as from such a launcher. */
	signal(SIGCHLD, SIG_IGN);
	d = t_tenants_ssqd("a7sigchld", sock, logf, args, &up);
	signal(SIGCHLD, SIG_DFL); /* ours: the test waits for its children */
	CHECK(up, "ssqd --tenants uid answered root");

	u.sock = sock;
	u.uid = UID;
	u.gid = 65534;
	CHECK(t_uid_clients(&u) == 0, "uid %u's client: %s", UID, u.said);
	t = (pid_t)t_log_last_num(logf, "tenant uid 60000: its ssqd is pid ");
	CHECK(t > 0, "no ssqd started for uid %u", UID);
	CHECK(t_log_wait(logf, "(--tenant-idle-ms): exiting", 1, 30),
	      "uid %u's ssqd did not exit idle within 30 s", UID);
	reaped = t_log_wait(logf, "exited, idle; started again", 1, 20);
	printf("uid %u's ssqd (pid %d) exited idle: %s\n", UID, (int)t,
	       reaped ? "reaped, its slot freed" : "never reaped: its slot stays taken");
	CHECK(reaped,
	      "uid %u's ssqd (pid %d) never reaped (20 s): ssqd runs with SIGCHLD "
	      "ignored, its waitpid fails ECHILD, the slot stays taken",
	      UID, (int)t);

	/* A process of ours with T's pid: ssqd's stop must leave it alone. */
	other = take_pid(t);
	if (other < 0)
		printf("pid %d not had again (ns_last_pid): that part not tried\n",
		       (int)t);
	CHECK(t_ssqd_stop_ok(d, &st, sock), "ssqd exit status 0x%x", st);
	if (other > 0) {
		pid_t w = waitpid(other, &st, WNOHANG);

		printf("the test's process with pid %d after ssqd's stop: %s\n",
		       (int)other, w == 0 ? "alive" : "ended");
		CHECK(w == 0,
		      "ssqd's stop signalled the test's process that has its gone "
		      "tenant's pid %d (status 0x%x)",
		      (int)other, w == other ? st : 0);
		kill(other, SIGKILL);
		waitpid(other, &st, 0);
	}
	if (!test_failures)
		unlink(logf);
	return test_exit("adv7t_sigchld_ign");
}
