/* SPDX-License-Identifier: MIT */
/*
 * No client locks the others out: connections that never speak are closed
 * after --hello-ms and told why (before, 256 of them held every slot for
 * good), or sooner when a newcomer needs the place - the oldest silent one
 * goes (issue 28, item 8: before, a uid's silent connections refused its
 * next client with -EUSERS until --hello-ms) - one uid holds at most
 * --max-uid-clients connections that said hello, and the data
 * arena quotas (--max-client-mib, --max-client-bufs, --max-uid-mib) refuse
 * with -EDQUOT and a message naming the limit. A refusal stays readable
 * when the client had already sent its hello, which ssqd closes unread:
 * the kernel then reports ECONNRESET once before the parting error (issue
 * 28: a full client table read as -ENOTCONN instead of -EUSERS).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <ssq/ssq.h>
#include <ssq/client.h>
#include "helpers.h"
#include "ctrl_flow.h"
#include "ctrl/proto/msg.h"

#define SILENT 300

static pid_t start(const char *const *extra)
{
	const char *argv[32] = { getenv("SSQD"), "--device", "emu",
		                 "--socket",     sock_path,  "--hugepages=off",
		                 "--data-mib",   "8" };
	int n = 8;
	pid_t pid;

	while (*extra)
		argv[n++] = *extra++;
	argv[n] = NULL;
	pid = fork();
	if (pid == 0) {
		execv(argv[0], (char *const *)argv);
		perror("exec ssqd");
		_exit(127);
	}
	return pid;
}

static void stop(pid_t d)
{
	int status;

	t_ssqd_stop(d, &status, sock_path);
}

static int dial(void)
{
	struct sockaddr_un sa;
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	strcpy(sa.sun_path, sock_path);
	if (s >= 0 && connect(s, (struct sockaddr *)&sa, sizeof(sa))) {
		close(s);
		return -1;
	}
	return s;
}

/* The error ssqd sent on @s within 3 s, or "" (its text in @msg). */
static int error_on(int s, char *msg, size_t len)
{
	struct proto_msg m;
	char why[160];

	*msg = 0;
	if (proto_msg_recv(s, &m, NULL, 0, NULL, 3000, why, sizeof(why)) ||
	    m.hdr.type != SSQ_MSG_ERROR)
		return 0;
	snprintf(msg, len, "%s", m.u.error.msg);
	return m.u.error.err;
}

/*
 * More silent connections than a uid may hold: each newcomer takes the
 * oldest silent one's place (told why), the newest stay until --hello-ms
 * closes them (told why), and a client gets in at once throughout.
 */
static void silent_connections(void)
{
	const char *extra[] = { "--hello-ms", "300", "--max-uid-clients", "64", NULL };
	static int s[SILENT];
	struct ssq_client *c = NULL;
	char msg[200];
	int i, err;
	pid_t d = start(extra);

	c = connect_retry(d);
	CHECK(c != NULL, "ssqd did not come up");
	ssq_client_close(c);
	for (i = 0; i < SILENT; i++)
		s[i] = dial();
	CHECK(s[0] >= 0 && s[SILENT - 1] >= 0, "connecting %d sockets", SILENT);
	err = error_on(s[0], msg, sizeof(msg));
	CHECK(err == -ETIMEDOUT && strstr(msg, "--max-uid-clients 64") &&
	          strstr(msg, "oldest silent"),
	      "the oldest silent connection, at the uid's limit: %d '%s'", err, msg);
	err = error_on(s[SILENT - 1], msg, sizeof(msg));
	CHECK(err == -ETIMEDOUT && strstr(msg, "--hello-ms"),
	      "a connection that never spoke: %d '%s'", err, msg);
	usleep(200 * 1000);
	/* Every silent connection is gone: a client gets in. */
	err = ssq_client_connect(sock_path, &c);
	CHECK(err == 0, "connect after %d silent connections: %d (%s)", SILENT, err,
	      ssq_client_strerror_last());
	if (!err)
		ssq_client_close(c);
	for (i = 0; i < SILENT; i++)
		if (s[i] >= 0)
			close(s[i]);
	stop(d);
}

/*
 * A uid's silent connections do not lock it out (issue 28, item 8): with
 * --max-uid-clients of them open and no deadline near, a client of that
 * uid connects at once, and the oldest silent one is the one closed.
 */
static void silent_lockout(void)
{
	const char *extra[] = { "--hello-ms", "60000", "--max-uid-clients", "8", NULL };
	struct ssq_client *c = NULL;
	char msg[200];
	int s[8], i, err;
	pid_t d = start(extra);

	c = connect_retry(d);
	CHECK(c != NULL, "ssqd did not come up");
	if (c)
		ssq_client_close(c);
	usleep(100 * 1000); /* its slot given back */
	for (i = 0; i < 8; i++)
		s[i] = dial();
	usleep(100 * 1000); /* all eight accepted, in order */
	err = ssq_client_connect(sock_path, &c);
	CHECK(err == 0,
	      "a client of a uid with 8 silent connections (--max-uid-clients 8): "
	      "%d (%s)",
	      err, ssq_client_strerror_last());
	err = error_on(s[0], msg, sizeof(msg));
	CHECK(err == -ETIMEDOUT && strstr(msg, "oldest silent"),
	      "the oldest silent connection: %d '%s'", err, msg);
	if (c)
		ssq_client_close(c);
	for (i = 0; i < 8; i++)
		if (s[i] >= 0)
			close(s[i]);
	stop(d);
}

/* A refused connection (its uid's clients all said hello) that spoke
 * first still reads ssqd's -EUSERS. */
static void refused_after_hello(void)
{
	const char *extra[] = { "--hello-ms", "60000", "--max-uid-clients", "4", NULL };
	struct proto_msg m;
	struct pollfd pfd;
	struct ssq_client *c = NULL, *hc[4] = { NULL }, *held[4];
	char why[160];
	int i, t, err;
	pid_t d = start(extra);

	c = connect_retry(d);
	CHECK(c != NULL, "ssqd did not come up");
	if (c)
		ssq_client_close(c);
	usleep(100 * 1000); /* its slot given back */
	for (i = 0; i < 4; i++)
		held[i] = ssq_client_connect(sock_path, &hc[i]) ? NULL : hc[i];
	CHECK(held[3] != NULL, "four clients that said hello");
	/* The hello queued before ssqd accepts (it is stopped meanwhile): it
	 * closes the connection with the hello unread. */
	usleep(100 * 1000);
	kill(d, SIGSTOP);
	t = dial();
	CHECK(t >= 0, "the fifth connection");
	memset(&m, 0, sizeof(m));
	CHECK(proto_msg_send(t, SSQ_MSG_HELLO, 1, &m.u, 16, NULL, 0) == 0, "send");
	kill(d, SIGCONT);
	pfd.fd = t;
	pfd.events = POLLIN;
	pfd.revents = 0;
	for (i = 0; i < 500 && !(pfd.revents & POLLHUP); i++) {
		usleep(10 * 1000); /* POLLIN comes first, with the error */
		poll(&pfd, 1, 0);
	}
	CHECK(pfd.revents & POLLHUP, "ssqd did not close the fifth connection");
	err = proto_msg_recv(t, &m, NULL, 0, NULL, 3000, why, sizeof(why));
	CHECK(err == 0 && m.hdr.type == SSQ_MSG_ERROR && m.u.error.err == -EUSERS,
	      "a refused connection that sent its hello read %d (%s), want the "
	      "-EUSERS error",
	      err, err ? why : m.u.error.msg);
	close(t);
	err = ssq_client_connect(sock_path, &c);
	CHECK(err == -EUSERS, "ssq_client_connect to a full ssqd: %d (%s), want -EUSERS",
	      err, ssq_client_strerror_last());
	if (!err)
		ssq_client_close(c);
	for (i = 0; i < 4; i++)
		if (held[i])
			ssq_client_close(held[i]);
	stop(d);
}

static void arena_quotas(void)
{
	const char *extra[] = { "--max-client-mib",
		                "2",
		                "--max-client-bufs",
		                "4",
		                "--max-uid-mib",
		                "5",
		                NULL };
	struct ssq_client *a, *b, *c;
	struct ssq_buf big, x, small[5];
	int i, rc;
	pid_t d = start(extra);

	a = connect_retry(d);
	b = a ? connect_retry(d) : NULL;
	c = b ? connect_retry(d) : NULL;
	CHECK(c != NULL, "three clients");
	if (!c) {
		stop(d);
		return;
	}
	CHECK(ssq_buf_alloc(a, 2 << 20, &big) == 0, "2 MiB: %s", ssq_client_error(a));
	rc = ssq_buf_alloc(a, 64, &x);
	CHECK(rc == -EDQUOT && strstr(ssq_client_error(a), "--max-client-mib"),
	      "past --max-client-mib: %d '%s'", rc, ssq_client_error(a));
	CHECK(ssq_buf_free(a, &big) == 0, "free: %s", ssq_client_error(a));
	for (i = 0; i < 4; i++)
		CHECK(ssq_buf_alloc(a, 64, &small[i]) == 0, "buffer %d: %s", i,
		      ssq_client_error(a));
	rc = ssq_buf_alloc(a, 64, &small[4]);
	CHECK(rc == -EDQUOT && strstr(ssq_client_error(a), "--max-client-bufs 4"),
	      "a fifth buffer: %d '%s'", rc, ssq_client_error(a));
	CHECK(ssq_buf_free(a, &small[0]) == 0 && ssq_buf_alloc(a, 64, &small[0]) == 0,
	      "a freed buffer's place: %s", ssq_client_error(a));
	/* One uid's clients together: 256 B + 2 + 2 MiB, then 1 more would pass 5. */
	CHECK(ssq_buf_free(a, &small[3]) == 0, "free: %s", ssq_client_error(a));
	CHECK(ssq_buf_alloc(b, 2 << 20, &x) == 0, "b 2 MiB: %s", ssq_client_error(b));
	CHECK(ssq_buf_alloc(c, 2 << 20, &x) == 0, "c 2 MiB: %s", ssq_client_error(c));
	rc = ssq_buf_alloc(a, 1 << 20, &x);
	CHECK(rc == -EDQUOT && strstr(ssq_client_error(a), "--max-uid-mib"),
	      "past --max-uid-mib: %d '%s'", rc, ssq_client_error(a));
	rc = ssq_buf_alloc(c, 16 << 20, &x);
	CHECK(rc == -ENOMEM, "more than the arena is -ENOMEM, not a quota: %d '%s'", rc,
	      ssq_client_error(c));
	ssq_client_close(a);
	ssq_client_close(b);
	ssq_client_close(c);
	stop(d);
}

/*
 * --max-uid-mib unset, other uids allowed (--allow-uid): one uid's clients
 * together hold at most half the arena, so another allowed uid still gets
 * buffers (before: 6 + 2 MiB of 8 by two clients of one uid, none left).
 * ssqd's own uid alone: the whole arena, as before.
 */
static void uid_share_default(void)
{
	const char *shared[] = { "--allow-uid", "65534", NULL };
	const char *alone[] = { NULL };
	const char *const *extra[2] = { shared, alone };
	struct ssq_client *a, *b;
	struct ssq_buf x, y;
	int k, rc;

	for (k = 0; k < 2; k++) {
		pid_t d = start(extra[k]);

		a = connect_retry(d);
		b = a ? connect_retry(d) : NULL;
		CHECK(b != NULL, "two clients");
		if (!b) {
			ssq_client_close(a);
			stop(d);
			return;
		}
		CHECK(ssq_buf_alloc(a, 3 << 20, &x) == 0, "a 3 MiB: %s",
		      ssq_client_error(a));
		CHECK(ssq_buf_alloc(b, 1 << 20, &y) == 0, "b 1 MiB: %s",
		      ssq_client_error(b));
		rc = ssq_buf_alloc(b, 1 << 20, &y);
		if (k == 0)
			CHECK(rc == -EDQUOT &&
			          strstr(ssq_client_error(b), "--max-uid-mib") &&
			          strstr(ssq_client_error(b), "4 MiB"),
			      "other uids allowed: one uid's 5th MiB of 8: %d '%s'", rc,
			      ssq_client_error(b));
		else
			CHECK(rc == 0, "ssqd's uid alone: its 5th MiB of 8: %d '%s'", rc,
			      ssq_client_error(b));
		ssq_client_close(a);
		ssq_client_close(b);
		stop(d);
	}
}

int main(void)
{
	snprintf(sock_path, sizeof(sock_path), "/tmp/ssq-lim-%d.sock", getpid());
	silent_connections();
	silent_lockout();
	refused_after_hello();
	arena_quotas();
	uid_share_default();
	return test_exit("ctrl_limits");
}
