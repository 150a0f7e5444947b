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
#include <grp.h>
#include <sys/wait.h>
#include "cluster_flow.h"

#define HOLDERS 15u
#define UID0    60000u

static char sock[108], logf[128];

static unsigned count(const char *needle)
{
	return t_log_count(logf, needle);
}

static int become(uid_t uid)
{
	return setgroups(0, NULL) || setgid(65534) || setuid(uid) ? -1 : 0;
}

/*
 * uid @uid's client, in a child, held until @hold's write end closes;
 * writes its connect's result (0 or -errno, one byte's worth) on @ready.
 */
static pid_t holder(uid_t uid, int *hold, int ready)
{
	int p[2];
	pid_t pid;

	if (pipe(p))
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		struct ssq_client *c = NULL;
		char b;
		int rc;

		close(p[1]);
		rc = become(uid) ? -EPERM : ssq_client_connect(sock, &c);
		if (rc)
			printf("holder uid %u: %d %s\n", (unsigned)uid, rc,
			       c ? ssq_client_error(c) : ssq_client_strerror_last());
		fflush(stdout);
		b = (char)-rc;
		(void)!write(ready, &b, 1);
		if (!rc)
			(void)!read(p[0], &b, 1);
		if (c)
			ssq_client_close(c);
		_exit(0);
	}
	close(p[0]);
	*hold = p[1];
	return pid;
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
		pid[i] = holder(UID0 + i, &hold[i], ready[1]);
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
