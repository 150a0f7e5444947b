/* SPDX-License-Identifier: MIT */
/*
 * Adversarial review h-adv5t (branch h-tenslot): a tenant's ssqd that
 * exits idle keeps its slot (closing) until it is reaped, and its uid's
 * next connection starts a new ssqd "in another slot" (tenants.c
 * tenant_slot). With the other 15 slots taken, there is no other slot:
 * that uid - which had a slot a moment ago - is refused -EUSERS "ssqd
 * serves 16 tenants besides its own" for as long as its old ssqd takes
 * to exit. The promises: no connection lost around an idle exit; slot
 * accounting not exhausted by idle churn.
 *
 * ssqd --tenants uid --allow-gid 65534 --tenant-idle-ms 1: 15 uids
 * 60000..60014 (group 65534) each hold a client (15 tenants); uid 65534
 * connects, is answered and closes, 100 times, 0..30 ms apart (as
 * test_ctrl_tenant_idle's race): every connection must be served.
 * Needs root (the clients run as other uids).
 */
#include <sys/wait.h>
#include "cluster_flow.h"

#define HOLDERS 15u
#define UID0    60000u

static char sock[108], logf[128];

static unsigned count(const char *needle)
{
	return t_log_count(logf, needle);
}

/* uid 65534: @n connections, each answered and closed, 0..@gap_ms apart. */
static int churn(unsigned n, unsigned gap_ms)
{
	struct t_uid_clients u = {
		.sock = sock, .uid = 65534, .gid = 65534, .n = n, .gap_ms = gap_ms
	};

	return t_uid_clients(&u);
}

int main(void)
{
	const char *const args[] = { "--data-mib",       "2",   "--sq-size",   "64",
		                     "--tenants",        "uid", "--allow-gid", "65534",
		                     "--tenant-idle-ms", "1",   NULL };
	int hold[HOLDERS], ready[2], st, rc, ok = 0;
	pid_t pid[HOLDERS], d;
	int up;
	unsigned i;
	char b;

	t_need_ssqd();
	if (getuid() != 0)
		SKIP("not root: the clients run as other uids");
	d = t_tenants_ssqd("adv5c", sock, logf, args, &up);
	CHECK(up, "ssqd --tenants uid --allow-gid 65534 answered root");
	if (pipe(ready))
		return test_exit("ctrl_tenant_full_churn");
	for (i = 0; i < HOLDERS; i++) {
		pid[i] = t_tenant_holder(sock, UID0 + i, 65534, &hold[i], ready[1]);
		if (read(ready[0], &b, 1) == 1 && !b)
			ok++;
	}
	CHECK(ok == (int)HOLDERS, "%d of %u holders connected", ok, HOLDERS);
	rc = churn(100, 30);
	printf("uid 65534 beside %u held tenants, --tenant-idle-ms 1: %d of 100 "
	       "connections failed; %u idle exits\n",
	       HOLDERS, rc, count("exited, idle"));
	CHECK(rc == 0,
	      "%d of 100 connections of uid 65534 failed around its tenant's idle "
	      "exits, 15 other tenants held (its old slot still closing)",
	      rc);
	/* Each holder has the earlier ones' pipes too: all closed, then reaped. */
	for (i = 0; i < HOLDERS; i++)
		close(hold[i]);
	for (i = 0; i < HOLDERS; i++)
		waitpid(pid[i], &st, 0);
	CHECK(t_ssqd_stop_ok(d, &st, sock), "ssqd exit status 0x%x", st);
	if (!test_failures)
		unlink(logf);
	return test_exit("ctrl_tenant_full_churn");
}
