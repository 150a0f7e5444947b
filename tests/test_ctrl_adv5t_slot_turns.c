/* SPDX-License-Identifier: MIT */
/*
 * Adversarial review h-adv5t (branch h-tenslot): idle churn of 17 uids
 * (one more than SSQD_MAX_TENANTS): each uid's tenant exits idle between
 * its connections, so 16 slots must do for 17 uids taking turns. Slot
 * accounting must not run out through closing slots not yet reaped.
 *
 * ssqd --tenants uid --allow-gid 65534 --tenant-idle-ms 1: uids
 * 60100..60116 connect, are answered and close in turn, 0..30 ms apart,
 * 170 connections in all (10 each): every one must be served.
 * Needs root (the clients run as other uids).
 */
#include <sys/wait.h>
#include "cluster_flow.h"

#define UIDS 17u
#define UID0 60100u

static char sock[108], logf[128];

static unsigned count(const char *needle)
{
	return t_log_count(logf, needle);
}

/* uid @uid, in a child: one connection answered and closed; 0 if served. */
static int one(uid_t uid)
{
	struct t_uid_clients u = { .sock = sock, .uid = uid, .gid = 65534 };

	return t_uid_clients(&u);
}

int main(void)
{
	const char *const args[] = { "--data-mib",       "2",   "--sq-size",   "64",
		                     "--tenants",        "uid", "--allow-gid", "65534",
		                     "--tenant-idle-ms", "1",   NULL };
	unsigned i, bad = 0;
	int st, up;
	pid_t d;

	t_need_ssqd();
	if (getuid() != 0)
		SKIP("not root: the clients run as other uids");
	srand((unsigned)getpid());
	d = t_tenants_ssqd("adv5r", sock, logf, args, &up);
	CHECK(up, "ssqd --tenants uid --allow-gid 65534 answered root");
	for (i = 0; i < UIDS * 10; i++) {
		bad += one(UID0 + i % UIDS) != 0;
		usleep((unsigned)rand() % 30000);
	}
	printf("%u uids in turn, --tenant-idle-ms 1: %u of %u connections failed; %u "
	       "tenant starts, %u idle exits\n",
	       UIDS, bad, UIDS * 10, count("its ssqd is pid "), count("exited, idle"));
	CHECK(bad == 0, "%u of %u connections of 17 uids taking turns failed", bad,
	      UIDS * 10);
	CHECK(t_ssqd_stop_ok(d, &st, sock), "ssqd exit status 0x%x", st);
	if (!test_failures)
		unlink(logf);
	return test_exit("ctrl_adv5t_slot_turns");
}
