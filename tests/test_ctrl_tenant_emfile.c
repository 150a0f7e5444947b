/* SPDX-License-Identifier: MIT */
/*
 * A tenant's ssqd out of file descriptors tells its client so
 * (tenant_recv.c): its parent hands it each connection with SCM_RIGHTS,
 * and at RLIMIT_NOFILE the kernel cannot install it (scm_detach_fds,
 * net/core/scm.c: MSG_CTRUNC, the descriptor released) - the connection
 * was closed under its client, nothing said to it nor logged.
 *
 * This test, as root, starts ssqd --tenants uid --allow-gid 65534 on the
 * emulated device. uid 60000's first client starts its tenant's ssqd (T);
 * the test lowers T's RLIMIT_NOFILE (prlimit(2)) to LIMIT, then connects
 * more clients of uid 60000, each kept, until one is refused: it must get -EMFILE, and so
 * must two more, each with a sentence naming uid 60000's ssqd and its descriptors; ssqd's
 * log says so once for the three, not once each. Once one client of uid 60000 closes, the
 * next is served by T again, and the log says how many were refused. Needs root (the
 * clients run as another uid; prlimit of ssqd's child).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <grp.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include "cluster_flow.h"

#define UID  60000u
#define MAXH 100
/*
 * T's RLIMIT_NOFILE: above what its loop polls (poll(2) fails EINVAL when
 * nfds exceeds RLIMIT_NOFILE: about 27 entries and one per client here),
 * below what its clients reach: each takes two (its socket, its pidfd).
 */
#define LIMIT   64
#define CLOSE   8 /* clients closed to make room again */
#define STARTED "tenant uid 60000: its ssqd is pid "
#define REFUSED "connections refused (-EMFILE)"

static char sock[108], logf[128];

/* Process @pid's highest open descriptor, or -1. */
static int max_fd(pid_t pid)
{
	char path[64];
	struct dirent *e;
	int max = -1;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	dir = opendir(path);
	if (!dir)
		return -1;
	while ((e = readdir(dir)))
		if (e->d_name[0] != '.' && atoi(e->d_name) > max)
			max = atoi(e->d_name);
	closedir(dir);
	return max;
}

/*
 * A client of uid @uid that connects and closes, in a child: its -errno
 * (0: served), its error's text into @said.
 */
static int try_client(uid_t uid, char *said, size_t len)
{
	int p[2], rc = -EIO, st;
	ssize_t n;
	pid_t kid;

	said[0] = 0;
	if (pipe(p))
		return -errno;
	fflush(NULL);
	kid = fork();
	if (kid == 0) {
		struct ssq_client *c = NULL;
		char out[300];

		close(p[0]);
		rc = setgroups(0, NULL) || setgid(65534) || setuid(uid)
		         ? -EPERM
		         : ssq_client_connect(sock, &c);
		snprintf(out, sizeof(out), "%d %s", rc,
		         rc ? (c ? ssq_client_error(c) : ssq_client_strerror_last())
		            : "");
		if (c)
			ssq_client_close(c);
		(void)!write(p[1], out, strlen(out));
		_exit(0);
	}
	close(p[1]);
	n = kid > 0 ? read(p[0], said, len - 1) : -1;
	close(p[0]);
	if (kid > 0)
		waitpid(kid, &st, 0);
	if (n > 0) {
		char *sp;

		said[n] = 0;
		rc = (int)strtol(said, &sp, 10);
		memmove(said, sp, strlen(sp) + 1);
	}
	return rc;
}

int main(void)
{
	const char *const args[] = { "--data-mib",  "2",         "--sq-size",
		                     "64",          "--tenants", "uid",
		                     "--allow-gid", "65534",     NULL };
	int ready[2], hold[MAXH], st, up, rc = 0, top, i, n = 0, k;
	struct rlimit rl;
	pid_t d, h[MAXH], t;
	char b, said[300];

	t_need_ssqd();
	if (getuid() != 0)
		SKIP("not root: the clients run as another uid");
	signal(SIGPIPE, SIG_IGN);
	d = t_tenants_ssqd("temfile", sock, logf, args, &up);
	CHECK(up, "ssqd --tenants uid answered root");
	if (pipe(ready))
		return test_exit("ctrl_tenant_emfile");
	h[n] = t_tenant_holder(sock, UID, 65534, &hold[n], ready[1]);
	b = -1;
	CHECK(t_byte_within(ready[0], 60000, &b) && !b, "uid %u's first client: %d", UID,
	      b);
	n++;
	t = (pid_t)t_log_last_num(logf, STARTED);
	top = t > 0 ? max_fd(t) : -1;
	CHECK(top > 2 && top < LIMIT / 2, "no ssqd running for uid %u (%d)", UID, top);
	if (top <= 2 || top >= LIMIT / 2)
		goto out;

	/* T's table, LIMIT at most: its clients fill it. */
	CHECK(prlimit(t, RLIMIT_NOFILE, NULL, &rl) == 0, "prlimit: %s", strerror(errno));
	rl.rlim_cur = LIMIT;
	CHECK(prlimit(t, RLIMIT_NOFILE, &rl, NULL) == 0, "prlimit %d: %s", (int)t,
	      strerror(errno));
	printf("uid %u's ssqd (pid %d): RLIMIT_NOFILE %d, highest descriptor %d\n", UID,
	       (int)t, LIMIT, top);

	/* Clients kept until one is refused: each holds descriptors of T's. */
	for (b = 0; n < MAXH && !b;) {
		h[n] = t_tenant_holder(sock, UID, 65534, &hold[n], ready[1]);
		n++;
		b = -1;
		if (!t_byte_within(ready[0], 60000, &b))
			break;
	}
	printf("uid %u: %d clients served, the next: errno %d (%s)\n", UID, n - 1, b,
	       strerror(b));
	CHECK(b == EMFILE,
	      "uid %u's client at its ssqd's RLIMIT_NOFILE: errno %d (%s), "
	      "not EMFILE",
	      UID, b, strerror(b));
	for (k = 0; k < 2; k++) {
		rc = try_client(UID, said, sizeof(said));
		printf("uid %u's client again: %d%s\n", UID, rc, said);
		CHECK(rc == -EMFILE && strstr(said, "out of file descriptors") &&
		          strstr(said, "uid 60000"),
		      "uid %u's client at the limit: %d \"%s\"", UID, rc, said);
	}
	CHECK(t_log_count(logf, REFUSED) == 1,
	      "ssqd's log says \"%s\" %u times for 3 refusals, not once", REFUSED,
	      t_log_count(logf, REFUSED));

	/*
	 * The refused one's holder gone, and CLOSE served ones: T has room
	 * again (a connection is taken with 8 free besides it and the spare,
	 * tenant_recv.c; each client closed frees two).
	 */
	for (k = 0; k <= CLOSE && n > 1; k++) {
		close(hold[--n]);
		waitpid(h[n], &st, 0);
	}
	for (i = 0, rc = -1; i < 60 && rc; i++) {
		rc = try_client(UID, said, sizeof(said));
		if (rc)
			sleep(1);
	}
	CHECK(rc == 0, "uid %u's client after %d closed: %d%s", UID, CLOSE, rc, said);
	CHECK(t_log_wait(logf, "were refused (-EMFILE)", 1, 30),
	      "ssqd's log never said the refusals ended");
	CHECK(t_log_count(logf, STARTED) == 1 && t_log_last_num(logf, STARTED) == t,
	      "uid %u not served by its ssqd pid %d throughout", UID, (int)t);
out:
	/* All closed first: each holder has the earlier ones' write ends too. */
	for (i = 0; i < n; i++)
		close(hold[i]);
	for (i = 0; i < n; i++)
		waitpid(h[i], &st, 0);
	CHECK(t_ssqd_stop_ok(d, &st, sock), "ssqd exit status 0x%x", st);
	close(ready[0]);
	close(ready[1]);
	if (!test_failures)
		unlink(logf);
	return test_exit("ctrl_tenant_emfile");
}
