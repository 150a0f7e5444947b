/* SPDX-License-Identifier: MIT */
/*
 * ssqd's loop when poll(2) refuses its descriptors. The kernel refuses
 * more entries than RLIMIT_NOFILE with EINVAL (do_sys_poll,
 * fs/select.c), and ssqd polls about 27 fixed entries besides its
 * clients, so an RLIMIT_NOFILE lowered under a running ssqd (prlimit)
 * to 16 makes its poll fail.
 *  1. Only the soft limit lowered: ssqd raises it back to the hard one,
 *     says so, and serves on.
 *  2. The hard one too: ssqd polls what fits, its clients in turn, and
 *     says "serving N of M connections per pass": each of 24 clients is
 *     answered, and so is a connection accepted before whose hello comes
 *     now. A newcomer cannot be accepted (EMFILE: the listening socket
 *     stays readable): ssqd neither spins on it nor turns it away.
 *  3. A second ssqd: under a hard limit of 45 its 24 clients' entries do
 *     not fit; once 14 have left they do, and it polls all again. Then a
 *     limit of 0: it polls nothing, does not spin, and a hello waiting
 *     unread meanwhile, longer than --hello-ms, is not blamed on its
 *     client (the deadline does not run while ssqd does not poll it).
 * Raising a hard limit again takes CAP_SYS_RESOURCE; with it, the test
 * also checks that ssqd serves everyone, newcomer and waiting hello
 * included, once the limit is raised.
 * Before, ssqd served no client at all until the limit was raised, and
 * closed such a connection "no hello within" meanwhile.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <linux/capability.h>
#include <ssq/ssq.h>
#include <ssq/client.h>
#include "cluster_flow.h"
#include "ctrl/daemon/memlock.h"
#include "ctrl/proto/msg.h"

#define WINDOW_S 3.0
#define NCLI     24
#define LOW      16
#define WAIT_S   15.0
/* Under the entries of 24 clients (about 27 + 24 + 1), over those of 10 and
 * the descriptors ssqd then holds (about 14 + 2 for each). */
#define MID   45
#define MID_S "45"

/* Raising a hard limit takes CAP_SYS_RESOURCE (do_prlimit, kernel/sys.c). */
static int can_raise_hard(void)
{
	return ssqd_self_cap(CAP_SYS_RESOURCE);
}

/* Has ssqd said anything on @s, or closed it? What it said into @said. */
static int spoke(int s, char *said, size_t len)
{
	struct pollfd p = { s, POLLIN, 0 };
	struct proto_msg m;
	int fd = -1, nfds = 0;

	if (poll(&p, 1, 0) < 1)
		return 0;
	snprintf(said, len, "a hang-up");
	if (!proto_msg_recv(s, &m, &fd, 1, &nfds, 0, said, len) &&
	    m.hdr.type == SSQ_MSG_ERROR)
		snprintf(said, len, "%s", m.u.error.msg);
	if (nfds)
		close(fd);
	return 1;
}

/* A connection to the ssqd at @sock that has said nothing yet, or -1. */
static int dial(const char *sock)
{
	struct sockaddr_un sa;
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	strcpy(sa.sun_path, sock);
	if (s >= 0 && connect(s, (struct sockaddr *)&sa, sizeof(sa))) {
		close(s);
		return -1;
	}
	return s;
}

static int say_hello(int s)
{
	struct proto_msg_hello h = { (uint32_t)getpid(), 0 };

	return proto_msg_send(s, SSQ_MSG_HELLO, 1, &h, sizeof(h), NULL, 0);
}

/* ssqd's answer to the hello on @s within @ms: 1 a HELLO reply, else 0 and why. */
static int hello_answered(int s, int ms, char *said, size_t len)
{
	struct proto_msg m;
	int fd = -1, nfds = 0, rc = proto_msg_recv(s, &m, &fd, 1, &nfds, ms, said, len);

	if (nfds)
		close(fd);
	if (rc)
		return 0;
	if (m.hdr.type == SSQ_MSG_ERROR)
		snprintf(said, len, "%s", m.u.error.msg);
	else
		snprintf(said, len, "message type 0x%x", m.hdr.type);
	return m.hdr.type == (SSQ_MSG_HELLO | SSQ_MSG_REPLY);
}

static int set_nofile(pid_t d, rlim_t soft, rlim_t hard)
{
	struct rlimit rl = { soft, hard };

	return prlimit(d, RLIMIT_NOFILE, &rl, NULL);
}

/* A LIST answered for each of @n clients: how many were, the first failing stops. */
static int all_answered(struct ssq_client **c, int n)
{
	struct ssq_queue_info info[SSQ_MAX_QUEUES];
	int i;

	for (i = 0; i < n; i++)
		if (ssq_client_list(c[i], info, SSQ_MAX_QUEUES) < 1) {
			printf("client %d: LIST: %s\n", i, ssq_client_error(c[i]));
			break;
		}
	return i;
}

/* ssqd's CPU seconds over WINDOW_S. */
static double cpu_window(pid_t d)
{
	double cpu0 = t_proc_cpu_s(d);

	usleep((useconds_t)(WINDOW_S * 1e6));
	return t_proc_cpu_s(d) - cpu0;
}

/*
 * 3. A second ssqd at @sock: under a limit of MID, hard too, its 24
 * clients' entries do not fit but they do once 14 of them left, and it
 * polls all again. Then a limit of 0: it polls nothing, does not spin,
 * and a hello that waits unread meanwhile for longer than --hello-ms is
 * not blamed on its client.
 */
static void recovers_then_nothing(const char *sock, const char *log_path, int raise_hard)
{
	const char *args[] = { "--hello-ms", "1000", NULL };
	struct ssq_client *c, *cl[NCLI] = { 0 };
	struct rlimit was;
	char said[256];
	int st, i, n = 0, silent = -1;
	double cpu;
	const char *env = getenv("ASAN_OPTIONS");
	char asan[544], was_asan_buf[512], *was_asan = NULL;
	pid_t d;

	/*
	 * Without CAP_SYS_RESOURCE the hard limit of 0 set below stays until
	 * ssqd exits, and LeakSanitizer's check at exit cannot open
	 * /proc/PID/task then ("LeakSanitizer has encountered a fatal
	 * error", exit 1): that ssqd alone runs without it.
	 */
	if (env && snprintf(was_asan_buf, sizeof(was_asan_buf), "%s", env) <
	               (int)sizeof(was_asan_buf))
		was_asan = was_asan_buf;
	if (!raise_hard) {
		snprintf(asan, sizeof(asan), "%s%sdetect_leaks=0",
		         was_asan ? was_asan : "", was_asan && *was_asan ? ":" : "");
		setenv("ASAN_OPTIONS", asan, 1);
	}
	d = cf_start(sock, log_path, 0, NULL, args);
	if (!raise_hard) {
		if (was_asan)
			setenv("ASAN_OPTIONS", was_asan, 1);
		else
			unsetenv("ASAN_OPTIONS");
	}

	c = t_ssqd_connect(sock, d);
	CHECK(c != NULL, "the second ssqd serves a client");
	if (!c)
		goto out;
	ssq_client_close(c);
	CHECK(prlimit(d, RLIMIT_NOFILE, NULL, &was) == 0, "ssqd's RLIMIT_NOFILE read");
	for (n = 0; n < NCLI; n++)
		if (!(cl[n] = t_ssqd_connect(sock, d)))
			break;
	CHECK(n == NCLI, "%d clients connected, want %d", n, NCLI);
	printf("the second ssqd holds %d descriptors with %d clients\n", t_proc_fds(d),
	       n);
	CHECK(set_nofile(d, MID, MID) == 0, "ssqd's RLIMIT_NOFILE lowered to %d", MID);
	CHECK(t_log_wait(log_path, "more than RLIMIT_NOFILE (" MID_S ")", 1, WAIT_S),
	      "ssqd says poll refuses its entries under %d", MID);
	i = all_answered(cl, n);
	CHECK(i == n, "every client is answered under %d: %d of %d", MID, i, n);
	for (; n > NCLI - 14; n--)
		ssq_client_close(cl[n - 1]);
	CHECK(t_log_wait(log_path, "poll(2) takes the loop's", 1, WAIT_S),
	      "ssqd polls all again once they fit");
	i = all_answered(cl, n);
	CHECK(i == n, "every client is answered after: %d of %d", i, n);

	silent = dial(sock);
	c = silent >= 0 ? t_ssqd_connect(sock, d) : NULL;
	CHECK(c != NULL, "a silent connection accepted");
	if (c)
		ssq_client_close(c);
	CHECK(set_nofile(d, 0, 0) == 0, "ssqd's RLIMIT_NOFILE lowered to 0");
	CHECK(t_log_wait(log_path, "more than RLIMIT_NOFILE (0)", 1, WAIT_S),
	      "ssqd says it polls nothing under a limit of 0");
	CHECK(say_hello(silent) == 0, "hello sent");
	/* Longer than --hello-ms 1000, the hello unread. */
	cpu = cpu_window(d);
	printf("ssqd used %.3f s of CPU in %.1f s with nothing polled\n", cpu, WINDOW_S);
	CHECK(cpu < 0.3, "ssqd spins while poll is refused: %.3f s of CPU", cpu);
	CHECK(!spoke(silent, said, sizeof(said)),
	      "a connection whose hello waits while ssqd polls nothing is closed "
	      "for it: %s",
	      said);
	if (!raise_hard) {
		printf("no CAP_SYS_RESOURCE: ssqd's hard limit stays 0\n");
		goto out;
	}
	CHECK(set_nofile(d, was.rlim_cur, was.rlim_max) == 0, "ssqd's limit restored");
	CHECK(t_log_wait(log_path, "poll(2) takes the loop's", 2, WAIT_S),
	      "ssqd says it polls everything again");
	CHECK(hello_answered(silent, 10000, said, sizeof(said)),
	      "the hello that waited is answered: %s", said);
out:
	for (i = 0; i < n; i++)
		ssq_client_close(cl[i]);
	if (silent >= 0)
		close(silent);
	CHECK(t_ssqd_stop_ok(d, &st, sock), "the second ssqd stops cleanly: status 0x%x",
	      st);
	if (!getenv("KEEP_LOGS"))
		unlink(log_path);
}

int main(void)
{
	const char *args[] = { "--hello-ms", "2000", NULL };
	struct ssq_client *c, *cl[NCLI] = { 0 };
	struct rlimit was, now;
	char sock[108], log_path[108], said[256];
	int st, i, n = 0, silent = -1, late = -1, raise_hard = can_raise_hard();
	double cpu, t0;
	pid_t d;

	t_need_ssqd();
	setvbuf(stdout, NULL, _IONBF, 0);
	/* A call ssqd does not answer fails in 10 s, not 25. */
	setenv("SSQ_REPLY_TIMEOUT_MS", "10000", 1);
	snprintf(sock, sizeof(sock), "/tmp/ssq-pollnofile-%d.sock", getpid());
	snprintf(log_path, sizeof(log_path), "/tmp/ssq-pollnofile-%d.log", getpid());
	d = cf_start(sock, log_path, 0, NULL, args);
	c = t_ssqd_connect(sock, d);
	CHECK(c != NULL, "ssqd serves a client");
	if (!c)
		goto out;
	ssq_client_close(c);

	/* 1. Only the soft limit: ssqd raises it back. */
	CHECK(prlimit(d, RLIMIT_NOFILE, NULL, &was) == 0, "ssqd's RLIMIT_NOFILE read");
	CHECK(set_nofile(d, LOW, was.rlim_max) == 0, "ssqd's soft RLIMIT_NOFILE lowered");
	CHECK(t_log_wait(log_path, "raised back to its hard limit", 1, WAIT_S),
	      "ssqd says it raised its soft limit back");
	for (t0 = now_s(); now_s() - t0 < WAIT_S; usleep(10000))
		if (!prlimit(d, RLIMIT_NOFILE, NULL, &now) &&
		    now.rlim_cur == was.rlim_max)
			break;
	printf("soft limit lowered to %d: ssqd's is %llu, its hard limit %llu\n", LOW,
	       (unsigned long long)now.rlim_cur, (unsigned long long)was.rlim_max);
	CHECK(now.rlim_cur == was.rlim_max, "ssqd's soft limit is its hard one again");
	if (now.rlim_cur != was.rlim_max) /* for the rest */
		set_nofile(d, was.rlim_cur, was.rlim_max);
	c = t_ssqd_connect(sock, d);
	CHECK(c != NULL, "ssqd serves a client after");
	if (c)
		ssq_client_close(c);

	/* 2. The hard limit too: what fits, in turn. */
	for (n = 0; n < NCLI; n++)
		if (!(cl[n] = t_ssqd_connect(sock, d)))
			break;
	CHECK(n == NCLI, "%d clients connected, want %d", n, NCLI);
	silent = dial(sock);
	/* Accepted once the next is answered: one at a time, in order. */
	c = silent >= 0 ? t_ssqd_connect(sock, d) : NULL;
	CHECK(c != NULL, "a silent connection accepted");
	if (c)
		ssq_client_close(c);
	CHECK(set_nofile(d, LOW, LOW) == 0,
	      "ssqd's RLIMIT_NOFILE lowered to %d, hard too", LOW);
	CHECK(say_hello(silent) == 0, "hello sent");
	CHECK(t_log_wait(log_path, "connections per pass, in turn", 1, WAIT_S),
	      "ssqd says it serves its connections in turn");
	CHECK(cf_file_has(log_path, "more than RLIMIT_NOFILE (16)"), "naming the limit");
	i = all_answered(cl, n);
	printf("under RLIMIT_NOFILE %d: %d of %d clients answered\n", LOW, i, n);
	CHECK(i == n, "every client is answered in turn: %d of %d", i, n);
	CHECK(hello_answered(silent, 10000, said, sizeof(said)),
	      "a hello that came under the limit is answered: %s", said);

	/* A newcomer: accept4 fails EMFILE, the listening socket stays readable. */
	late = dial(sock);
	CHECK(late >= 0 && say_hello(late) == 0, "a newcomer's hello queued");
	CHECK(t_log_wait(log_path, "out of file descriptors: new connections wait", 1,
	                 WAIT_S),
	      "ssqd says new connections wait");
	cpu = cpu_window(d);
	printf("ssqd used %.3f s of CPU in %.1f s with a connection it cannot accept\n",
	       cpu, WINDOW_S);
	CHECK(cpu < 0.3, "ssqd spins on a connection it cannot accept: %.3f s of CPU",
	      cpu);
	CHECK(!spoke(late, said, sizeof(said)), "the newcomer is not turned away: %s",
	      said);
	i = all_answered(cl, n);
	CHECK(i == n, "every client is still answered: %d of %d", i, n);
	if (!raise_hard) {
		printf("no CAP_SYS_RESOURCE: ssqd's hard limit stays %d\n", LOW);
		goto out;
	}
	CHECK(set_nofile(d, was.rlim_cur, was.rlim_max) == 0, "ssqd's limit restored");
	CHECK(t_log_wait(log_path, "poll(2) takes the loop's", 1, WAIT_S),
	      "ssqd says it polls everything again");
	CHECK(hello_answered(late, 10000, said, sizeof(said)),
	      "the newcomer is served once the limit is raised: %s", said);
	i = all_answered(cl, n);
	CHECK(i == n, "every client is answered after: %d of %d", i, n);
	c = t_ssqd_connect(sock, d);
	CHECK(c != NULL, "ssqd serves a new client");
	if (c)
		ssq_client_close(c);
out:
	for (i = 0; i < n; i++)
		ssq_client_close(cl[i]);
	if (silent >= 0)
		close(silent);
	if (late >= 0)
		close(late);
	CHECK(t_ssqd_stop_ok(d, &st, sock), "ssqd stops cleanly: status 0x%x", st);
	if (!getenv("KEEP_LOGS"))
		unlink(log_path);

	/* 3. */
	snprintf(sock, sizeof(sock), "/tmp/ssq-pollnofile0-%d.sock", getpid());
	snprintf(log_path, sizeof(log_path), "/tmp/ssq-pollnofile0-%d.log", getpid());
	recovers_then_nothing(sock, log_path, raise_hard);
	return test_exit("ctrl_poll_nofile");
}
