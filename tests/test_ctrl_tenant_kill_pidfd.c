/* SPDX-License-Identifier: MIT */
/*
 * ssqd names a tenant's ssqd it kills by its pidfd, never by its pid
 * (tenants.c, tenant_signal): a pid names whichever process has it when
 * kill(2) runs, a pidfd the one process it was opened for or none.
 *
 * How that is seen: this test installs a seccomp filter, inherited by the
 * ssqd it starts and by every tenant's ssqd, that refuses kill(2) with
 * SIGKILL (EPERM); pidfd_send_signal(2) is let through. Then the slow-exit
 * kill of tenant_park.c: ssqd --tenants uid --allow-gid 65534
 * --tenant-idle-ms 300 on the emulated device, uids 60000..60014 each
 * holding a client (15 tenants, one slot left), every tenant's ssqd held
 * after it was let exit idle ($SSQD_TEST_TENANT_EXIT_DELAY_MS, a test hook:
 * tenant_idle.c). uid 65534 connects and closes; its ssqd exits idle, held;
 * uid 65534 connects again (A), parked on the closing slot; after 200 ms
 * ssqd kills the old ssqd and A is answered by a new one.
 * Before (kill(pid, SIGKILL) in ssqd_tenants_tick): the kill was refused,
 * the old ssqd stayed, and A was never answered ("A unanswered after 30 s").
 * Needs root (the clients run as other uids; the filter without
 * no_new_privs).
 */
#define _GNU_SOURCE
#include <poll.h>
#include <stddef.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "cluster_flow.h"

#define HOLDERS 15u
#define UID0    60000u

static char sock[108], logf[128];

static unsigned count(const char *needle)
{
	return t_log_count(logf, needle);
}

/* kill(2) with SIGKILL refused (EPERM) in this process and all it starts. */
static int refuse_kill_sigkill(void)
{
	/* args[1]'s low 32 bits: the signal (an int). */
	const unsigned sig_at = (unsigned)offsetof(struct seccomp_data, args[1]) +
	                        (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ ? 4u : 0u);
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_kill, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, sig_at),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SIGKILL, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { (unsigned short)(sizeof(f) / sizeof(f[0])), f };

	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

/* The filter holds: kill(SIGKILL) refused, pidfd_send_signal not. */
static int filter_holds(void)
{
	pid_t kid = fork();
	int pidfd, st, refused, sent;

	if (kid == 0) {
		pause();
		_exit(0);
	}
	refused = kill(kid, SIGKILL) < 0 && errno == EPERM;
	pidfd = (int)syscall(SYS_pidfd_open, kid, 0);
	sent = pidfd >= 0 && syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) == 0;
	if (!sent)
		kill(kid, SIGTERM);
	waitpid(kid, &st, 0);
	if (pidfd >= 0)
		close(pidfd);
	return refused && sent && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
}

int main(void)
{
	const char *const args[] = { "--data-mib",       "2",   "--sq-size",   "64",
		                     "--tenants",        "uid", "--allow-gid", "65534",
		                     "--tenant-idle-ms", "300", NULL };
	int hold[HOLDERS], ready[2], a_ready[2], a_hold, st, up, ok, served, exited;
	pid_t pid[HOLDERS], d, a, old;
	struct pollfd p;
	unsigned i;
	char b = -1;

	t_need_ssqd();
	if (getuid() != 0)
		SKIP("not root: the clients run as other uids");
	signal(SIGPIPE, SIG_IGN);
	if (refuse_kill_sigkill())
		SKIP("no seccomp filter: %s", strerror(errno));
	CHECK(filter_holds(), "the seccomp filter does not refuse kill(SIGKILL) alone");
	/* Every tenant's ssqd (they inherit ssqd's environment): a slow exit. */
	setenv("SSQD_TEST_TENANT_EXIT_DELAY_MS", "600000", 1);
	d = t_tenants_ssqd("tkpidfd", sock, logf, args, &up);
	CHECK(up, "ssqd --tenants uid answered root");
	if (pipe(ready) || pipe(a_ready))
		return test_exit("ctrl_tenant_kill_pidfd");
	ok = (int)t_tenant_holders(sock, UID0, 65534, HOLDERS, pid, hold, ready);
	CHECK(ok == (int)HOLDERS, "%d of %u holders connected", ok, HOLDERS);

	/* uid 65534's ssqd, started by a client, then idle: it exits, held. */
	old = t_tenant_idle_exit(sock, logf, 65534, 65534, ready, &served, &exited);
	CHECK(served, "uid 65534's first client failed");
	CHECK(exited, "uid 65534's ssqd did not exit idle within 30 s");

	/* A: parked on the closing slot, answered once the old one is killed. */
	a = t_tenant_holder(sock, 65534, 65534, &a_hold, a_ready[1]);
	p.fd = a_ready[0];
	p.events = POLLIN;
	p.revents = 0;
	b = -1;
	CHECK(poll(&p, 1, 30000) == 1 && read(a_ready[0], &b, 1) == 1 && !b,
	      "uid 65534's parked connection unanswered or failed (errno %d) "
	      "within 30 s (its old ssqd, pid %d, %s; ssqd's log: %u kill(s)): "
	      "ssqd killed it by pid, refused",
	      b, (int)old, kill(old, 0) ? "gone" : "still there",
	      count("exiting idle took over"));
	printf("uid 65534's parked connection %s; log: %u parked, %u killed\n",
	       b == 0 ? "answered" : "not answered", count("to finish exiting idle"),
	       count("exiting idle took over"));
	CHECK(count("exiting idle took over") == 1, "the old ssqd was not killed");
	CHECK(t_log_wait(logf, "tenant uid 65534: its ssqd is pid ", 2, 30),
	      "no new ssqd for uid 65534");
	/* Not left behind by a failed test: it ends at SIGTERM. */
	kill(old, SIGTERM);
	close(a_hold);
	waitpid(a, &st, 0);
	for (i = 0; i < HOLDERS; i++)
		close(hold[i]);
	for (i = 0; i < HOLDERS; i++)
		waitpid(pid[i], &st, 0);
	CHECK(t_ssqd_stop_ok(d, &st, sock), "ssqd exit status 0x%x", st);
	close(ready[0]);
	close(ready[1]);
	close(a_ready[0]);
	close(a_ready[1]);
	if (!test_failures)
		unlink(logf);
	return test_exit("ctrl_tenant_kill_pidfd");
}
