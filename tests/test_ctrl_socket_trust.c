/* SPDX-License-Identifier: MIT */
/*
 * The client socket's path is ssqd's alone:
 *  - a second ssqd on a served path refuses to start, naming the first's
 *    pid, and leaves the first's socket alone (before, it unlinked the
 *    socket and made the first ssqd unreachable);
 *  - a socket left by an ssqd that was killed is reclaimed;
 *  - a client refuses a server that runs as another uid (someone who took
 *    the path first) with -EPERM before sending it anything, unless
 *    $SSQ_SERVER_UID names that uid (needs root to run the impostor as
 *    another uid; skipped with a line otherwise).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <ssq/ssq.h>
#include <ssq/client.h>
#include "helpers.h"
#include "ctrl_flow.h"

#define NOBODY 65534

static void second_daemon(void)
{
	struct ssq_client *c;
	pid_t a, b;
	int status, rc;

	a = start_ssqd("off");
	c = connect_retry(a);
	CHECK(c != NULL, "first ssqd");
	ssq_client_close(c);
	b = start_ssqd("off");
	for (rc = 0; rc < 100 && waitpid(b, &status, WNOHANG) != b; rc++)
		usleep(50 * 1000);
	if (rc == 100) { /* it serves: it took the path */
		kill(b, SIGKILL);
		waitpid(b, &status, 0);
	}
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 1,
	      "a second ssqd on the same path: status 0x%x, want exit 1", status);
	rc = ssq_client_connect(sock_path, &c);
	CHECK(rc == 0, "the first ssqd after the second tried: %d (%s)", rc,
	      ssq_client_strerror_last());
	if (!rc)
		ssq_client_close(c);
	/* Killed: its socket stays, stale; the next ssqd takes the path over. */
	kill(a, SIGKILL);
	waitpid(a, NULL, 0);
	CHECK(access(sock_path, F_OK) == 0, "a killed ssqd's socket is left behind");
	b = start_ssqd("off");
	c = connect_retry(b);
	CHECK(c != NULL, "an ssqd on a stale socket's path");
	ssq_client_close(c);
	t_ssqd_stop(b, NULL, NULL);
}

/* A server on @path run as another uid: accepts, then waits to be killed. */
static pid_t impostor(const char *path, int ready)
{
	pid_t pid = fork();

	if (pid == 0) {
		struct sockaddr_un sa;
		int s = socket(AF_UNIX, SOCK_SEQPACKET, 0);

		memset(&sa, 0, sizeof(sa));
		sa.sun_family = AF_UNIX;
		strcpy(sa.sun_path, path);
		unlink(path);
		if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) ||
		    chmod(path, 0777) || setgid(NOBODY) || setuid(NOBODY) || listen(s, 4))
			_exit(1);
		(void)!write(ready, "r", 1);
		for (;;) {
			int c = accept(s, NULL, NULL);
			char buf[64];

			/* Anything a client sends is what a squatter would steal. */
			if (c >= 0 && recv(c, buf, sizeof(buf), 0) > 0)
				(void)!write(ready, "!", 1);
		}
	}
	return pid;
}

static void impostor_refused(void)
{
	struct ssq_client *c;
	char path[108], got;
	int ready[2], rc;
	pid_t imp;

	if (geteuid() != 0) {
		printf("skip part: not root, cannot run an impostor as another uid\n");
		return;
	}
	snprintf(path, sizeof(path), "/tmp/ssq-imp-%d.sock", getpid());
	if (pipe(ready))
		return;
	imp = impostor(path, ready[1]);
	CHECK(read(ready[0], &got, 1) == 1 && got == 'r', "the impostor did not start");
	rc = ssq_client_connect(path, &c);
	CHECK(rc == -EPERM && strstr(ssq_client_strerror_last(), "uid 65534"),
	      "a server of uid %u: %d (%s), want -EPERM naming it", NOBODY, rc,
	      ssq_client_strerror_last());
	if (!rc)
		ssq_client_close(c);
	usleep(100 * 1000);
	fcntl(ready[0], F_SETFL, O_NONBLOCK);
	CHECK(read(ready[0], &got, 1) < 0 && errno == EAGAIN,
	      "the client sent the impostor something");
	/*
	 * Trusted by name, it gets the hello (and fails it: it never answers,
	 * so the hello waits its whole bound: 1 s here, not the 25 s default).
	 */
	setenv("SSQ_SERVER_UID", "65534", 1);
	setenv("SSQ_REPLY_TIMEOUT_MS", "1000", 1);
	rc = ssq_client_connect(path, &c);
	unsetenv("SSQ_REPLY_TIMEOUT_MS");
	CHECK(rc != -EPERM, "SSQ_SERVER_UID=65534 did not trust uid 65534: %d (%s)", rc,
	      ssq_client_strerror_last());
	unsetenv("SSQ_SERVER_UID");
	kill(imp, SIGKILL);
	waitpid(imp, NULL, 0);
	unlink(path);
}

int main(void)
{
	snprintf(sock_path, sizeof(sock_path), "/tmp/ssq-trust-%d.sock", getpid());
	second_daemon();
	impostor_refused();
	unlink(sock_path);
	return test_exit("ctrl_socket_trust");
}
