/* SPDX-License-Identifier: MIT */
/*
 * One uid cannot take every producer record of a queue that another uid
 * may use (issue 28, item 6: one uid opened all 63, locking the others
 * out). ssqd --allow-uid 65534: this test's uid opens q0 over two
 * connections (16 opens a connection at most) up to 31 records, half; the
 * 32nd open is -EUSERS naming the bound. Run as root, a process of uid
 * 65534 then still opens q0. Without --allow-uid (the queue is this uid's
 * alone) the same uid opens 48 over three connections.
 */
#include <grp.h>
#include <sys/stat.h>
#include "ssq_flow.h"
#include "lib/tlib.h"

static char sock[108];

/* Open q0 up to @n times over connections @c[0..]; opens that succeeded. */
static int open_many(struct ssq_client **c, int nconn, int n, int *last_rc)
{
	struct ssq_queue *q;
	int i, done = 0;

	*last_rc = 0;
	for (i = 0; i < n; i++) {
		*last_rc =
		    ssq_queue_open(c[i / 16 < nconn ? i / 16 : nconn - 1], "q0", &q);
		if (*last_rc)
			return done;
		done++;
	}
	return done;
}

/* In a child of uid 65534: open q0 once. 0 on success. */
static int other_uid_opens(void)
{
	struct ssq_client *c;
	struct ssq_queue *q;
	int rc;

	if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
		return 2;
	if (ssq_client_connect(sock, &c))
		return 3;
	rc = ssq_queue_open(c, "q0", &q);
	if (rc)
		fprintf(stderr, "uid 65534: open: %d (%s)\n", rc, ssq_client_error(c));
	ssq_client_close(c);
	return rc ? 1 : 0;
}

static pid_t start(int shared)
{
	const char *args[] = { "--device",
		               test_device(),
		               "--socket",
		               sock,
		               "--hugepages=off",
		               "--data-mib",
		               "8",
		               "--sq-size",
		               "256",
		               shared ? "--allow-uid" : NULL,
		               "65534",
		               NULL };

	return t_ssqd_exec(args, NULL, NULL, NULL, 0);
}

static void stop(struct ssq_client **c, int n, pid_t d)
{
	int i, status;

	for (i = 0; i < n; i++)
		if (c[i])
			ssq_client_close(c[i]);
	t_ssqd_stop(d, &status, sock);
}

int main(void)
{
	struct ssq_client *c[3] = { NULL, NULL, NULL };
	int rc, got, st, i;
	pid_t d, kid;

	t_need_ssqd();
	snprintf(sock, sizeof(sock), "/tmp/ssq-uidrec-%d.sock", getpid());

	d = start(1);
	c[0] = t_ssqd_connect(sock, d);
	CHECK(c[0] && ssq_client_connect(sock, &c[1]) == 0, "two connections");
	if (c[0] && c[1]) {
		got = open_many(c, 2, 32, &rc);
		CHECK(
		    got == 31 && rc == -EUSERS &&
		        strstr(ssq_client_error(c[1]), "producer records"),
		    "opens by one uid of a queue another uid may use: %d, then %d (%s); "
		    "want 31, then -EUSERS",
		    got, rc, ssq_client_error(c[1]));
		if (getuid() == 0) {
			chmod(sock, 0666); /* uid 65534 may connect */
			kid = fork();
			if (kid == 0)
				_exit(other_uid_opens());
			waitpid(kid, &st, 0);
			CHECK(
			    WIFEXITED(st) && WEXITSTATUS(st) == 0,
			    "uid 65534 could not open q0 while this uid held 31 records "
			    "(status 0x%x)",
			    st);
		} else {
			printf("not root: uid 65534's own open is not tried\n");
		}
	}
	stop(c, 2, d);

	d = start(0);
	c[0] = t_ssqd_connect(sock, d);
	c[1] = c[2] = NULL;
	for (i = 1; i < 3 && c[0]; i++)
		CHECK(ssq_client_connect(sock, &c[i]) == 0, "connection %d", i);
	if (c[0] && c[1] && c[2]) {
		got = open_many(c, 3, 48, &rc);
		CHECK(got == 48, "opens of a queue of this uid alone: %d (%d: %s)", got,
		      rc, ssq_client_error(c[got / 16 < 3 ? got / 16 : 2]));
	}
	stop(c, 3, d);
	return test_exit("ctrl_uid_records");
}
