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
#include <sys/stat.h>
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

/* uid 65534: @n connections, each answered and closed, 0..@gap_ms apart. */
static int churn(unsigned n, unsigned gap_ms)
{
	struct ssq_queue_info info[SSQ_MAX_QUEUES];
	unsigned i, bad = 0;
	int st = 0;
	pid_t kid;

	fflush(NULL);
	kid = fork();
	if (kid == 0) {
		srand((unsigned)getpid());
		if (become(65534))
			_exit(200);
		for (i = 0; i < n; i++) {
			struct ssq_client *c = NULL;
			int rc = ssq_client_connect(sock, &c);

			if (!rc) {
				rc = ssq_client_list(c, info, SSQ_MAX_QUEUES);
				rc = rc > 0 ? 0 : rc ? rc : -ENODATA;
			}
			if (rc && !bad++)
				printf("connection %u of uid 65534: %d %s\n", i, rc,
				       c ? ssq_client_error(c)
				         : ssq_client_strerror_last());
			if (c)
				ssq_client_close(c);
			usleep((unsigned)rand() % (gap_ms * 1000));
		}
		fflush(stdout);
		_exit(bad > 199 ? 199 : (int)bad);
	}
	if (kid < 0 || waitpid(kid, &st, 0) != kid || !WIFEXITED(st))
		return 255;
	return WEXITSTATUS(st);
}

int main(void)
{
	const char *args[] = { "--device",
		               "emu",
		               "--socket",
		               NULL,
		               "--hugepages=off",
		               "--data-mib",
		               "2",
		               "--sq-size",
		               "64",
		               "--tenants",
		               "uid",
		               "--allow-gid",
		               "65534",
		               "--tenant-idle-ms",
		               "1",
		               NULL };
	int hold[HOLDERS], ready[2], st, rc, ok = 0;
	pid_t pid[HOLDERS], d;
	struct ssq_client *c;
	unsigned i;
	char b;

	t_need_ssqd();
	if (getuid() != 0)
		SKIP("not root: the clients run as other uids");
	snprintf(sock, sizeof(sock), "/tmp/ssq-adv5c-%d.sock", (int)getpid());
	snprintf(logf, sizeof(logf), "/tmp/ssq-adv5c-%d.log", (int)getpid());
	signal(SIGPIPE, SIG_IGN);
	args[3] = sock;
	d = t_ssqd_exec(args, NULL, NULL, logf, 0);
	c = t_ssqd_connect(sock, d);
	CHECK(c != NULL, "connect to ssqd --tenants uid --allow-gid 65534");
	if (c)
		ssq_client_close(c);
	chmod(sock, 0666);
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
