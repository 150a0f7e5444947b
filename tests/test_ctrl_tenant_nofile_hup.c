/* SPDX-License-Identifier: MIT */
/*
 * ssqd --tenants uid under an RLIMIT_NOFILE (hard too) lowered below its
 * 16 tenants' sockets: poll(2) refuses more entries than the limit
 * (EINVAL, do_sys_poll in fs/select.c), and the loop polls what fits, in
 * turn (serve.c, poll_in_turn) - its tenants' sockets among them. A
 * tenant's ssqd killed meanwhile must still be seen to exit (reaped,
 * said), not only once the limit is raised.
 * 16 holders (uids 60000..60015, group 65534) take every tenant slot; the
 * limit goes to 8; the last tenant's ssqd is killed (SIGKILL).
 * Needs root (the clients run as other uids).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include "cluster_flow.h"

#define HOLDERS 16u
#define UID0    60000u
#define LOW     8
#define WAIT_S  15.0

static char sock[108], logf[128];

int main(void)
{
	const char *const args[] = { "--data-mib",  "2",         "--sq-size",
		                     "64",          "--tenants", "uid",
		                     "--allow-gid", "65534",     NULL };
	struct rlimit low = { LOW, LOW };
	int hold[HOLDERS], ready[2], st, up;
	pid_t pid[HOLDERS], d, t;
	unsigned i, n;
	char said[96];

	t_need_ssqd();
	setvbuf(stdout, NULL, _IONBF, 0);
	if (getuid() != 0)
		SKIP("not root: the clients run as other uids");
	d = t_tenants_ssqd("tnofile", sock, logf, args, &up);
	CHECK(up, "ssqd --tenants uid --allow-gid 65534 answered root");
	if (pipe(ready))
		return test_exit("ctrl_tenant_nofile_hup");
	n = t_tenant_holders(sock, UID0, 65534, HOLDERS, pid, hold, ready);
	CHECK(n == HOLDERS, "%u of %u holders connected", n, HOLDERS);
	t = (pid_t)t_log_last_num(logf, "its ssqd is pid ");
	CHECK(n == HOLDERS && t > 0, "the last tenant's ssqd: pid %d", (int)t);
	if (n != HOLDERS || t <= 0)
		goto out;
	CHECK(prlimit(d, RLIMIT_NOFILE, &low, NULL) == 0,
	      "ssqd's RLIMIT_NOFILE lowered to %d, hard too", LOW);
	CHECK(t_log_wait(logf, "more than RLIMIT_NOFILE (8)", 1, WAIT_S),
	      "ssqd says poll refuses its entries under %d", LOW);
	kill(t, SIGKILL);
	snprintf(said, sizeof(said), "its ssqd (pid %d) has exited (status 0x9)", (int)t);
	CHECK(t_log_wait(logf, said, 1, WAIT_S),
	      "ssqd says its tenant's ssqd pid %d, killed, has exited, under "
	      "RLIMIT_NOFILE %d",
	      (int)t, LOW);
	printf("under RLIMIT_NOFILE %d with %u tenants, a tenant's ssqd killed: %s\n",
	       LOW, HOLDERS, cf_file_has(logf, said) ? "seen to exit" : "not seen");
out:
	for (i = 0; i < n; i++)
		close(hold[i]);
	for (i = 0; i < n; i++)
		waitpid(pid[i], &st, 0);
	/* The limit raised again (root), for its stop. */
	low.rlim_cur = low.rlim_max = 4096;
	prlimit(d, RLIMIT_NOFILE, &low, NULL);
	CHECK(t_ssqd_stop_ok(d, &st, sock), "ssqd exit status 0x%x", st);
	if (!test_failures)
		unlink(logf);
	return test_exit("ctrl_tenant_nofile_hup");
}
