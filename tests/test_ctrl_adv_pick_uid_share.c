/* SPDX-License-Identifier: MIT */
/*
 * "PEER/any" (clients/queue_pick.c pick_queue) passes over a queue whose
 * records this uid may no longer take when another queue of that peer has
 * room for it (found by an adversarial review: before, it picked the least
 * loaded queue and ATTACH then refused it -EUSERS).
 *
 * When another uid may use a queue, one uid holds at most SSQD_UID_RECORDS
 * (31) of its producer records.
 *
 * bob --queues 2 --allow-uid 65534 (one trust domain, shared queues). uid 0
 * holds 31 records of bob/q0 and 1 of bob/q1; uid 65534 holds 31 of bob/q1
 * (load 32). uid 0 opens "bob/any": q0 (load 31) is picked and refused;
 * q1 had room for uid 0 (1 of its 31, 32 of 63 taken).
 * Expected: the open succeeds on bob/q1. Before: -EUSERS.
 */
#define _GNU_SOURCE
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "cluster_flow.h"

#define N 2
static const char *const names[N] = { "alice", "bob" };
static struct t_cluster cl;

/* @n opens of @name on @c: how many succeeded. */
static int opens(struct ssq_client *c, const char *name, int n)
{
	struct ssq_queue *q;
	int i;

	for (i = 0; i < n; i++)
		if (ssq_queue_open(c, name, &q)) {
			printf("open %d of %s: %s\n", i, name, ssq_client_error(c));
			break;
		}
	return i;
}

/* uid 65534's 31 records of bob/q1, held until told (a byte on @go). */
static int nobody(int go, int said)
{
	struct ssq_client *c1 = NULL, *c2 = NULL;
	char x = 0;
	int n;

	if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
		return 2;
	if (ssq_client_connect(cl.sock[1], &c1) || ssq_client_connect(cl.sock[1], &c2))
		return 3;
	n = opens(c1, "bob/q1", 16) + opens(c2, "bob/q1", 15);
	x = (char)n;
	if (write(said, &x, 1) != 1 || read(go, &x, 1) != 1)
		return 4;
	return 0;
}

int main(void)
{
	struct ssq_client *r1, *r2, *r3;
	struct ssq_queue *q = NULL;
	int go[2], said[2], n, rc, st;
	pid_t pid;
	char x = 0;

	t_need_ssqd();
	if (geteuid() != 0)
		SKIP("needs root (a client of uid 65534)");
	signal(SIGPIPE, SIG_IGN);
	cf_cluster_files(&cl, "adv-pick", N, names, 0);
	CHECK(t_cluster_start(&cl, 1, T_ARGS("--queues", "2", "--allow-uid", "65534")) >
	          0,
	      "start bob");
	r1 = t_cluster_connect(&cl, 1);
	r2 = t_cluster_connect(&cl, 1);
	r3 = t_cluster_connect(&cl, 1);
	if (!r1 || !r2 || !r3 || pipe(go) || pipe(said)) {
		CHECK(0, "bob's clients");
		goto out;
	}
	chmod(cl.sock[1], 0666);
	n = opens(r1, "bob/q0", 16) + opens(r2, "bob/q0", 15);
	CHECK(n == 31, "uid 0 holds 31 records of bob/q0: %d", n);
	CHECK(opens(r2, "bob/q1", 1) == 1, "uid 0 holds 1 record of bob/q1");
	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(nobody(go[0], said[1]));
	CHECK(pid > 0 && read(said[0], &x, 1) == 1 && x == 31,
	      "uid 65534 holds 31 records of bob/q1: %d", x);
	rc = ssq_queue_open(r3, "bob/any", &q);
	printf("uid 0 opens bob/any: %d %s%s\n", rc, rc ? ssq_client_error(r3) : "",
	       rc ? "" : ssq_queue_name(q));
	CHECK(rc == 0,
	      "\"bob/any\" refused (%d) though bob/q1 has room for uid 0 (it holds 1 "
	      "of the 31 it may, 32 of 63 taken)",
	      rc);
	if (pid > 0) {
		(void)!write(go[1], &x, 1);
		waitpid(pid, &st, 0);
	}
out:
	ssq_client_close(r1);
	ssq_client_close(r2);
	ssq_client_close(r3);
	t_cluster_stop(&cl);
	return test_exit("ctrl_adv_pick_uid_share");
}
