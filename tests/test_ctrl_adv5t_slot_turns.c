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
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "cluster_flow.h"

#define UIDS 17u
#define UID0 60100u

static char sock[108], logf[128];

static unsigned count(const char *needle)
{
	return t_log_count(logf, needle);
}

/* uid @uid, in a child: one connection answered and closed; 0 or -errno. */
static int one(uid_t uid)
{
	struct ssq_queue_info info[SSQ_MAX_QUEUES];
	int st = 0;
	pid_t kid;

	fflush(NULL);
	kid = fork();
	if (kid == 0) {
		struct ssq_client *c = NULL;
		int rc;

		if (setgroups(0, NULL) || setgid(65534) || setuid(uid))
			_exit(200);
		rc = ssq_client_connect(sock, &c);
		if (!rc)
			rc = ssq_client_list(c, info, SSQ_MAX_QUEUES) > 0 ? 0 : -ENODATA;
		if (rc)
			printf("uid %u: %d %s\n", (unsigned)uid, rc,
			       c ? ssq_client_error(c) : ssq_client_strerror_last());
		if (c)
			ssq_client_close(c);
		fflush(stdout);
		_exit(rc < 0 ? -rc : 0);
	}
	if (kid < 0 || waitpid(kid, &st, 0) != kid || !WIFEXITED(st))
		return -255;
	return -WEXITSTATUS(st);
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
	unsigned i, bad = 0;
	struct ssq_client *c;
	int st;
	pid_t d;

	t_need_ssqd();
	if (getuid() != 0)
		SKIP("not root: the clients run as other uids");
	snprintf(sock, sizeof(sock), "/tmp/ssq-adv5r-%d.sock", (int)getpid());
	snprintf(logf, sizeof(logf), "/tmp/ssq-adv5r-%d.log", (int)getpid());
	signal(SIGPIPE, SIG_IGN);
	srand((unsigned)getpid());
	args[3] = sock;
	d = t_ssqd_exec(args, NULL, NULL, logf, 0);
	c = t_ssqd_connect(sock, d);
	CHECK(c != NULL, "connect to ssqd --tenants uid --allow-gid 65534");
	if (c)
		ssq_client_close(c);
	chmod(sock, 0666);
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
