/* SPDX-License-Identifier: MIT */
/*
 * Adversarial review h-adv5t (branch h-tenslot): the tenant the command
 * line names (--allow-uid under --tenants uid) is started with
 * --tenant-idle-ms 0 (tenants.c ssqd_tenants_start): "it never exits idle
 * (peers' links find it)" - a peer's link is handed only to a tenant
 * whose ssqd runs (peers/tenant.c). Once its ssqd died (crashed, killed)
 * the next client's connection starts it again through
 * ssqd_tenant_pass, with the parent's --tenant-idle-ms: from then on it
 * exits idle like any other, and peers' links for it are refused until a
 * local client comes back.
 *
 * ssqd --tenants uid --allow-uid 65534 --tenant-idle-ms 300: the named
 * tenant's ssqd is killed; uid 65534 connects (started again) and closes;
 * 3 s later the tenant's ssqd must still run.
 * Needs root (the client runs as uid 65534).
 */
#include <sys/wait.h>
#include "cluster_flow.h"

static char sock[108], logf[128];

static unsigned count(const char *needle)
{
	return t_log_count(logf, needle);
}

/* The pid in the last "tenant uid 65534: its ssqd is pid N"; -1: none. */
static pid_t last_tenant(void)
{
	return (pid_t)t_log_last_num(logf, "tenant uid 65534: its ssqd is pid ");
}

/* uid 65534 connects, lists, closes, in a child: 0 if served. */
static int client(void)
{
	struct t_uid_clients u = { .sock = sock, .uid = 65534, .gid = 65534 };

	return t_uid_clients(&u);
}

int main(void)
{
	const char *const args[] = { "--data-mib",  "8",     "--tenants",        "uid",
		                     "--allow-uid", "65534", "--tenant-idle-ms", "300",
		                     NULL };
	pid_t d, named, again;
	int up;
	double t0;
	int st;

	t_need_ssqd();
	if (getuid() != 0)
		SKIP("not root: the tenant's client runs as uid 65534");
	d = t_tenants_ssqd("adv5n", sock, logf, args, &up);
	CHECK(up, "ssqd --tenants uid --allow-uid 65534 answered root");
	for (t0 = now_s(); last_tenant() < 0 && now_s() - t0 < 20;)
		usleep(20000);
	named = last_tenant();
	CHECK(named > 0, "the named tenant's ssqd did not start");
	/* It does not exit idle: 1 s with no client. */
	usleep(1000000);
	CHECK(named > 0 && kill(named, 0) == 0 && !count("exited, idle"),
	      "the named tenant exited idle at once");
	/* Its ssqd dies (a crash, the OOM killer): the next client starts it. */
	if (named > 0)
		kill(named, SIGKILL);
	/* Its restart waits (tenant_backoff.c): -EAGAIN until then. */
	for (t0 = now_s(); (st = client()) != 0 && now_s() - t0 < 10;)
		usleep(200000);
	CHECK(st == 0, "uid 65534's client after its ssqd died");
	again = last_tenant();
	CHECK(again > 0 && again != named, "its ssqd was not started again");
	for (t0 = now_s(); !count("exited, idle") && now_s() - t0 < 3;)
		usleep(20000);
	printf("the named tenant (uid 65534) restarted by a client: %s (3 s at most, "
	       "--tenant-idle-ms 300)\n",
	       count("exited, idle") ? "exited idle" : "still runs");
	CHECK(!count("exited, idle"),
	      "the tenant the command line names exited idle once a client had "
	      "started it again: peers' links for uid 65534 are refused from then on");
	CHECK(t_ssqd_stop_ok(d, &st, sock), "ssqd exit status 0x%x", st);
	if (!test_failures)
		unlink(logf);
	return test_exit("ctrl_tenant_named_never_idle");
}
