/* SPDX-License-Identifier: MIT */
/*
 * ssqd's loop never waits for a tenant's ssqd to be reapable (tenants.c,
 * ssqd_tenant_pass): when a connection cannot be sent to a tenant's ssqd
 * that died (EPIPE), it is killed by its pidfd and reaped later by the
 * loop (its pidfd, WNOHANG), as a closing one is, while the connection
 * goes to a new ssqd.
 *
 * How a dead child can stay unreapable: while a process is ptraced, its
 * zombie is its tracer's to reap first ("A zombie ptracee is only visible
 * to its ptracer", wait_consider_task in kernel/exit.c); its parent's
 * waitpid(pid, 0) waits until the tracer reaped it. This test, as root,
 * starts ssqd --tenants uid --allow-gid 65534 on the emulated device;
 * uid 60000's client starts its tenant's ssqd (T); the test seizes T
 * (PTRACE_SEIZE), kills it, and holds its zombie. uid 60000 connects
 * again: ssqd finds T's socket dead. Then, with the zombie still held:
 * that connection is answered (refused for now, EAGAIN: T counts as a
 * failure, tenant_backoff.c) and root's client (served by ssqd itself)
 * is answered, and ssqd does not spin on T's pidfd (readable: exited)
 * meanwhile; once the test lets the zombie go, ssqd reaps T (its log
 * says how it ended) and uid 60000 is served by a new ssqd.
 * Before (kill and a blocking waitpid in ssqd_tenant_pass): ssqd's loop
 * sat in waitpid until the test let T go; uid 60000's second client and
 * root's failed with ETIMEDOUT (the client library's 25 s reply wait).
 * Needs root (the clients run as other uids; ptrace of ssqd's child).
 */
#define _GNU_SOURCE
#include <sys/ptrace.h>
#include <sys/wait.h>
#include "cluster_flow.h"

#define UID 60000u

static char sock[108], logf[128];

/* Root's client, in a child: LIST answered? A byte on @out: 0 yes, else errno. */
static pid_t root_client(int out)
{
	pid_t kid;

	fflush(NULL);
	kid = fork();
	if (kid == 0) {
		struct ssq_queue_info info[SSQ_MAX_QUEUES];
		struct ssq_client *c = NULL;
		int rc = ssq_client_connect(sock, &c);
		char b;

		if (!rc) {
			rc = ssq_client_list(c, info, SSQ_MAX_QUEUES);
			rc = rc > 0 ? 0 : rc ? rc : -ENODATA;
		}
		if (c)
			ssq_client_close(c);
		b = (char)-rc;
		(void)!write(out, &b, 1);
		_exit(0);
	}
	return kid;
}

int main(void)
{
	const char *const args[] = { "--data-mib",  "2",         "--sq-size",
		                     "64",          "--tenants", "uid",
		                     "--allow-gid", "65534",     NULL };
	int ready[2], rpipe[2], hold1, hold2, hold3 = -1, st, up, seized, held = 0;
	pid_t d, h1, h2, h3 = -1, r, t;
	siginfo_t si;
	unsigned tries;
	double cpu;
	char b = -1;

	t_need_ssqd();
	if (getuid() != 0)
		SKIP("not root: the clients run as other uids");
	signal(SIGPIPE, SIG_IGN);
	d = t_tenants_ssqd("tdeadsend", sock, logf, args, &up);
	CHECK(up, "ssqd --tenants uid answered root");
	if (pipe(ready) || pipe(rpipe))
		return test_exit("ctrl_tenant_dead_send");
	h1 = t_tenant_holder(sock, UID, 65534, &hold1, ready[1]);
	CHECK(t_byte_within(ready[0], 30000, &b) && !b, "uid %u's first client: %d", UID,
	      b);
	t = (pid_t)t_log_last_num(logf, "tenant uid 60000: its ssqd is pid ");
	CHECK(t > 0, "no ssqd started for uid %u", UID);

	/* T dead, its zombie ours to reap first: ssqd's waitpid cannot have it. */
	seized = t > 0 && ptrace(PTRACE_SEIZE, t, NULL, NULL) == 0;
	CHECK(seized, "PTRACE_SEIZE of uid %u's ssqd (pid %d): %s", UID, (int)t,
	      strerror(errno));
	if (!seized)
		goto out;
	kill(t, SIGKILL);
	memset(&si, 0, sizeof(si));
	held = waitid(P_PID, (id_t)t, &si, WEXITED | WNOWAIT | __WALL) == 0;
	CHECK(held && si.si_code == CLD_KILLED, "uid %u's ssqd (pid %d) not killed", UID,
	      (int)t);
	close(hold1);
	waitpid(h1, &st, 0);

	/* uid 60000 again: T's socket is dead, T not reapable. */
	h2 = t_tenant_holder(sock, UID, 65534, &hold2, ready[1]);
	b = -1;
	CHECK(t_byte_within(ready[0], 40000, &b) && (b == 0 || b == EAGAIN),
	      "uid %u's second client, its dead ssqd's zombie held: %s (errno %d): "
	      "ssqd's loop waits for the zombie",
	      UID, b == -1 ? "unanswered within 40 s" : "failed", b);
	printf("uid %u's second client, its dead ssqd held: errno %d (%s)\n", UID, b,
	       b == EAGAIN ? "refused for now: its ssqd failed"
	       : b == 0    ? "served"
	                   : "failed");
	r = root_client(rpipe[1]);
	b = -1;
	CHECK(t_byte_within(rpipe[0], 40000, &b) && !b,
	      "root's client, uid %u's dead ssqd held: %s (errno %d)", UID,
	      b == -1 ? "unanswered within 40 s" : "failed", b);
	waitpid(r, &st, 0);
	printf("root's client %s, uid %u's dead ssqd (pid %d) still held\n",
	       b ? "not answered" : "answered", UID, (int)t);
	/*
	 * Its pidfd says it exited, waitpid cannot have it: ssqd must not
	 * spin on that (it looks every 10 ms instead). A loop spinning 2 s
	 * takes all the CPU it gets; ssqd idle takes next to none.
	 */
	cpu = t_proc_cpu_s(d);
	sleep(2);
	cpu = t_proc_cpu_s(d) - cpu;
	printf("ssqd's CPU over 2 s with the zombie held: %.2f s\n", cpu);
	CHECK(cpu < 1.0,
	      "ssqd used %.2f s of CPU in 2 s: its loop spins on the "
	      "unreapable tenant's pidfd",
	      cpu);

	/* Let it go: ssqd reaps it, and its next client is served. */
	CHECK(waitpid(t, &st, __WALL) == t, "the test could not reap pid %d", (int)t);
	held = 0;
	CHECK(t_log_wait(logf, "has exited (status", 1, 30),
	      "ssqd never reaped uid %u's dead ssqd (pid %d)", UID, (int)t);
	close(hold2);
	waitpid(h2, &st, 0);
	/* Its restart waits out the failure's backoff: EAGAIN till then. */
	for (tries = 0, b = -1; tries < 60 && b; tries++) {
		if (h3 > 0) {
			close(hold3);
			waitpid(h3, &st, 0);
			usleep(500000);
		}
		h3 = t_tenant_holder(sock, UID, 65534, &hold3, ready[1]);
		if (!t_byte_within(ready[0], 30000, &b))
			break;
	}
	CHECK(!b, "uid %u not served again after its ssqd died: errno %d", UID, b);
	CHECK(t_log_count(logf, "tenant uid 60000: its ssqd is pid ") == 2,
	      "%u starts of uid %u's ssqd, not 2",
	      t_log_count(logf, "tenant uid 60000: its ssqd is pid "), UID);
	if (h3 > 0) {
		close(hold3);
		waitpid(h3, &st, 0);
	}
out:
	if (held)
		waitpid(t, &st, __WALL);
	CHECK(t_ssqd_stop_ok(d, &st, sock), "ssqd exit status 0x%x", st);
	close(ready[0]);
	close(ready[1]);
	close(rpipe[0]);
	close(rpipe[1]);
	if (!test_failures)
		unlink(logf);
	return test_exit("ctrl_tenant_dead_send");
}
