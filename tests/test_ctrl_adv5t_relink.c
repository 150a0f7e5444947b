/* SPDX-License-Identifier: MIT */
/*
 * Adversarial review h-adv5t (branch h-tenslot): a tenant's peer links
 * across its idle exits. alice's ssqd of uid U exits idle once its link to
 * bob closed idle (--idle-ms) and its client left; U's next client on
 * alice starts a new ssqd, whose link to bob goes to bob's ssqd of U -
 * the same one, still running (a client of U holds it there), which
 * linked with alice's old one. Each open must succeed again.
 *
 * alice, bob: --tenants uid --allow-gid 65534 --tenant-idle-ms 300
 * --idle-ms 300. uid 60050 holds a client on bob; 3 times: uid 60050 on
 * alice opens bob/q0 (20 s at most), closes, and alice's tenant of 60050
 * exits idle (10 s at most).
 * Needs root (the clients run as uid 60050).
 */
#define _GNU_SOURCE
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "cluster_flow.h"

#define N    2
#define UID  60050u
#define LAPS 3
static const char *const names[N] = { "alice", "bob" };
static struct t_cluster cl;

static unsigned count(unsigned i, const char *needle)
{
	return t_log_count(cl.log[i], needle);
}

static int become(void)
{
	return setgroups(0, NULL) || setgid(65534) || setuid(UID) ? -1 : 0;
}

/* uid UID's client of bob, in a child, held until @hold's write end closes. */
static pid_t holder(int *hold)
{
	int p[2], r[2];
	pid_t pid;
	char b = 1;

	if (pipe(p) || pipe(r))
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		struct ssq_client *c = NULL;

		close(p[1]);
		close(r[0]);
		b = (char)(become() ? 1 : ssq_client_connect(cl.sock[1], &c) ? 2 : 0);
		(void)!write(r[1], &b, 1);
		if (!b)
			(void)!read(p[0], &b, 1);
		if (c)
			ssq_client_close(c);
		_exit(0);
	}
	close(p[0]);
	close(r[1]);
	if (read(r[0], &b, 1) != 1 || b) {
		printf("uid %u's holder on bob: %d\n", UID, b);
		b = 1;
	}
	close(r[0]);
	*hold = p[1];
	return b ? -pid : pid;
}

/* uid UID on alice opens bob/q0 (20 s at most), in a child: 0 if it opened. */
static int open_bob(unsigned lap)
{
	int st = 0;
	pid_t kid;

	fflush(NULL);
	kid = fork();
	if (kid == 0) {
		struct ssq_client *c = NULL;
		struct ssq_queue *q = NULL;
		double t0 = now_s();
		int rc = -1;

		if (become() || ssq_client_connect(cl.sock[0], &c))
			_exit(2);
		while (now_s() - t0 < 20 && (rc = ssq_queue_try_open(c, "bob/q0", &q)))
			usleep(20000);
		printf("lap %u: uid %u on alice, bob/q0: %s after %.1f s%s%s\n", lap, UID,
		       rc ? "not open" : "open", now_s() - t0, rc ? ": " : "",
		       rc ? ssq_client_error(c) : "");
		fflush(stdout);
		if (q)
			ssq_queue_close(q);
		ssq_client_close(c);
		_exit(rc ? 1 : 0);
	}
	if (kid < 0 || waitpid(kid, &st, 0) != kid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

int main(void)
{
	const char *const extra[] = { "--tenants",        "uid", "--allow-gid", "65534",
		                      "--data-mib",       "2",   "--idle-ms",   "300",
		                      "--tenant-idle-ms", "300", NULL };
	unsigned lap, ok = 0, exits;
	int hold = -1, st;
	double t0;
	pid_t h;

	t_need_ssqd();
	if (getuid() != 0)
		SKIP("not root: the clients run as uid %u", UID);
	signal(SIGPIPE, SIG_IGN);
	cf_cluster_files(&cl, "adv5rl", N, names, 0);
	CHECK(t_cluster_start(&cl, 0, extra) > 0 && t_cluster_start(&cl, 1, extra) > 0,
	      "start alice and bob");
	ssq_client_close(t_cluster_connect(&cl, 0));
	ssq_client_close(t_cluster_connect(&cl, 1));
	chmod(cl.sock[0], 0666);
	chmod(cl.sock[1], 0666);
	h = holder(&hold);
	CHECK(h > 0, "uid %u's client of bob", UID);
	for (lap = 0; lap < LAPS; lap++) {
		exits = count(0, "exited, idle");
		st = open_bob(lap);
		ok += st == 0;
		for (t0 = now_s();
		     count(0, "exited, idle") == exits && now_s() - t0 < 10;)
			usleep(50000);
		CHECK(count(0, "exited, idle") > exits,
		      "lap %u: alice's tenant of uid %u did not exit idle within 10 s",
		      lap, UID);
	}
	printf("uid %u: %u of %u opens of bob/q0 across alice's tenant's idle exits; "
	       "bob's tenant of %u: %u idle exits (held: 0 expected)\n",
	       UID, ok, LAPS, UID, count(1, "exited, idle"));
	CHECK(ok == LAPS, "%u of %u opens across idle exits", ok, LAPS);
	CHECK(count(1, "exited, idle") == 0, "bob's held tenant exited idle");
	if (hold >= 0)
		close(hold);
	if (h > 0)
		waitpid(h, &st, 0);
	else if (h < 0)
		waitpid(-h, &st, 0);
	t_cluster_stop(&cl);
	return test_exit("ctrl_adv5t_relink");
}
