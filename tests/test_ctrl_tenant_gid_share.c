/* SPDX-License-Identifier: MIT */
/*
 * Under --tenants gid two uids of one group share that group's tenant
 * ssqd: one of them must not fill the tenant's tables for the other.
 * ssqd --tenants gid --allow-gid 65534 --max-uid-clients 4: uid 65534 and
 * uid 65533, both of primary gid 65534, are served by gid 65534's ssqd.
 *  - uid 65534 opens q0 over 4 connections until refused: it gets 31 of
 *    the queue's 63 producer records (-EUSERS saying "the most one uid
 *    may"), and its 5th connection is refused (--max-uid-clients);
 *  - uid 65533 meanwhile connects and opens q0 16 times: all of it works.
 * Needs root (the clients run as uids 65534 and 65533).
 */
#include <grp.h>
#include <sys/stat.h>
#include "cluster_flow.h"

static char sock[108], logf[128];

/* A child's word: how many opens worked, and how the last one failed. */
struct report {
	int conns, opens, fifth, last_rc;
	char last[256];
};

/*
 * As @uid (gid 65534): up to @nconn connections, each opening q0 up to 16
 * times while it works; a 5th connection is tried when @fifth. Writes its
 * report to @wfd, then holds everything until @hold_fd reads EOF.
 */
static void child(uid_t uid, int nconn, int fifth, int wfd, int hold_fd)
{
	struct ssq_client *c[5] = { NULL };
	struct ssq_queue *q;
	struct report r;
	char b;
	int i, k, rc = 0;

	memset(&r, 0, sizeof(r));
	if (setgroups(0, NULL) || setgid(65534) || setuid(uid))
		_exit(2);
	for (i = 0; i < nconn && rc == 0; i++) {
		rc = ssq_client_connect(sock, &c[i]);
		if (rc) {
			r.last_rc = rc;
			snprintf(r.last, sizeof(r.last), "connect: %s",
			         ssq_client_strerror_last());
			break;
		}
		r.conns++;
		for (k = 0; k < 16; k++) {
			rc = ssq_queue_open(c[i], "q0", &q);
			if (rc) {
				r.last_rc = rc;
				snprintf(r.last, sizeof(r.last), "open: %s",
				         ssq_client_error(c[i]));
				break;
			}
			r.opens++;
		}
		if (rc == -EUSERS && i + 1 < nconn)
			rc = 0; /* the uid's share, not the connection's: go on */
	}
	if (fifth) {
		struct ssq_client *x;

		r.fifth = ssq_client_connect(sock, &x);
		if (!r.fifth)
			ssq_client_close(x);
	}
	if (write(wfd, &r, sizeof(r)) != sizeof(r))
		_exit(3);
	if (read(hold_fd, &b, 1) < 0)
		_exit(4);
	for (i = 0; i < 5; i++)
		if (c[i])
			ssq_client_close(c[i]);
	_exit(0);
}

/* Start child(@uid...) and read its report into @r; *@hold: its holding pipe. */
static pid_t start(uid_t uid, int nconn, int fifth, struct report *r, int *hold)
{
	int rp[2], hp[2];
	pid_t pid;

	memset(r, 0, sizeof(*r));
	if (pipe(rp) || pipe(hp))
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		close(rp[0]);
		close(hp[1]);
		child(uid, nconn, fifth, rp[1], hp[0]);
	}
	close(rp[1]);
	close(hp[0]);
	if (read(rp[0], r, sizeof(*r)) != sizeof(*r))
		r->last_rc = -999;
	close(rp[0]);
	*hold = hp[1];
	return pid;
}

int main(void)
{
	const char *args[] = { "--tenants",         "gid", "--allow-gid", "65534",
		               "--max-uid-clients", "4",   NULL };
	struct ssq_client *c;
	struct report a, b;
	int ha = -1, hb = -1, st;
	pid_t d, ka = -1, kb = -1;

	t_need_ssqd();
	if (getuid() != 0)
		SKIP("not root: the clients run as uids 65534 and 65533");
	snprintf(sock, sizeof(sock), "/tmp/ssq-tgid-%d.sock", (int)getpid());
	snprintf(logf, sizeof(logf), "/tmp/ssq-tgid-%d.log", (int)getpid());
	d = cf_start(sock, logf, 0, NULL, args);
	c = t_ssqd_connect(sock, d);
	CHECK(c != NULL, "connect to ssqd --tenants gid");
	if (!c)
		goto out;
	ssq_client_close(c);
	chmod(sock, 0666);

	ka = start(65534, 4, 1, &a, &ha);
	printf("uid 65534: %d connections, %d opens of q0, last: %d %s; a 5th "
	       "connection: %d\n",
	       a.conns, a.opens, a.last_rc, a.last, a.fifth);
	CHECK(a.opens == (SSQ_MAX_PRODUCERS - 1) / 2 && a.last_rc == -EUSERS &&
	          strstr(a.last, "the most one uid may"),
	      "uid 65534 got %d of q0's records (want %d, then -EUSERS)", a.opens,
	      (SSQ_MAX_PRODUCERS - 1) / 2);
	CHECK(a.conns == 4 && a.fifth == -EUSERS,
	      "uid 65534: %d connections, a 5th: %d (want 4, then -EUSERS)", a.conns,
	      a.fifth);
	kb = start(65533, 1, 0, &b, &hb);
	printf("uid 65533 beside it: %d connection(s), %d opens of q0, last: %d %s\n",
	       b.conns, b.opens, b.last_rc, b.last);
	CHECK(b.conns == 1 && b.opens == 16,
	      "uid 65533 of the same group got %d of 16 opens of q0 beside uid 65534",
	      b.opens);
	CHECK(cf_file_has(logf, "tenant gid 65534: its ssqd is pid"),
	      "no tenant ssqd for gid 65534 in %s", logf);
out:
	if (ha >= 0)
		close(ha);
	if (hb >= 0)
		close(hb);
	if (ka > 0)
		waitpid(ka, &st, 0);
	if (kb > 0)
		waitpid(kb, &st, 0);
	CHECK(t_ssqd_stop_ok(d, &st, sock), "ssqd exit status 0x%x", st);
	if (!test_failures)
		unlink(logf);
	return test_exit("ctrl_tenant_gid_share");
}
