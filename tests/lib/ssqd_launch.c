/* SPDX-License-Identifier: MIT */
/*
 * Starting ssqd for a test and connecting to it (tlib.h): the one fork and
 * exec every test's launcher goes through.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/wait.h>
#include "test_device.h"
#include "tlib.h"

void t_need_ssqd(void)
{
	if (!getenv("SSQD")) {
		printf("skip: SSQD (the ssqd binary) not set: run through ctest\n");
		exit(77);
	}
	signal(SIGPIPE, SIG_IGN);
}

void t_ssqd_gone(const char *sock)
{
	char lock[120];
	int fd;

	if (!sock || snprintf(lock, sizeof(lock), "%s.lock", sock) >= (int)sizeof(lock))
		return;
	fd = open(lock, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return; /* none: the ssqd removed it as it stopped */
	if (!flock(fd, LOCK_EX | LOCK_NB)) {
		unlink(sock);
		unlink(lock);
	}
	close(fd);
}

/* The sockets of the ssqd t_ssqd_exec started, for this process's exit. */
#define T_SOCKS_MAX 64
static char t_socks[T_SOCKS_MAX][108];
static unsigned t_nsocks;
static pid_t t_socks_owner;

static void socks_gone(void)
{
	unsigned i;

	if (getpid() != t_socks_owner) /* not a forked child's exit */
		return;
	for (i = 0; i < t_nsocks; i++)
		t_ssqd_gone(t_socks[i]);
}

/* @args' --socket, kept for socks_gone (once each). */
static void track_socket(const char *const *args)
{
	const char *s = NULL;
	unsigned i;

	for (; args && *args; args++)
		if (!strcmp(*args, "--socket") && args[1])
			s = args[1];
		else if (!strncmp(*args, "--socket=", 9))
			s = *args + 9;
	if (!s || strlen(s) >= sizeof(t_socks[0]))
		return;
	if (t_socks_owner != getpid()) {
		if (!t_socks_owner) /* a forked child has it from its parent */
			atexit(socks_gone);
		t_socks_owner = getpid();
		t_nsocks = 0; /* a forked child's own list */
	}
	for (i = 0; i < t_nsocks; i++)
		if (!strcmp(t_socks[i], s))
			return;
	if (t_nsocks == T_SOCKS_MAX)
		return;
	snprintf(t_socks[t_nsocks++], sizeof(t_socks[0]), "%s", s);
}

pid_t t_ssqd_exec(const char *const *args, const char *env_name, const char *env_value,
                  const char *log, int append)
{
	const char *ssqd = getenv("SSQD");
	/* The <name>_nopidfd runs: ssqd as a kernel without pidfds runs it. */
	const char *wrap = getenv("SSQ_TEST_SSQD_WRAP");
	const char *argv[43];
	int n = 0, first;
	pid_t pid;

	if (wrap && *wrap)
		argv[n++] = wrap;
	first = n;
	argv[n++] = ssqd;
	while (args && *args && n < 42)
		argv[n++] = *args++;
	argv[n] = NULL;
	track_socket(argv + first + 1);
	pid = fork();
	if (pid == 0) {
		if (log) {
			int fd =
			    open(log, O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC),
			         0600);

			if (fd >= 0)
				dup2(fd, 2);
		}
		if (env_name)
			setenv(env_name, env_value, 1);
		execv(argv[0], (char *const *)argv);
		perror("exec ssqd");
		_exit(127);
	}
	return pid;
}

static char peer_key[64];
static pid_t peer_key_owner;

static void peer_key_gone(void)
{
	if (getpid() == peer_key_owner) /* not a forked child's exit */
		unlink(peer_key);
}

/*
 * SSQ_TEST_PEER_KEY set (the <test>_peerkey runs): a cluster's key made
 * once for this test process (32 random bytes, mode 0600, removed at its
 * exit), or NULL when unset or it could not be made.
 */
static const char *test_peer_key(void)
{
	uint8_t k[32];
	int fd;

	if (!getenv("SSQ_TEST_PEER_KEY"))
		return NULL;
	if (peer_key_owner)
		return peer_key;
	snprintf(peer_key, sizeof(peer_key), "/tmp/ssq-test-peerkey-%d", getpid());
	unlink(peer_key);
	fd = open(peer_key, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || getrandom(k, sizeof(k), 0) != sizeof(k) ||
	    write(fd, k, sizeof(k)) != sizeof(k)) {
		perror("test peer key");
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	close(fd);
	peer_key_owner = getpid();
	atexit(peer_key_gone);
	return peer_key;
}

/* @args link to peers (--peer(s), --listen, --connect), with no --peer-key of their own.
 */
static int peer_args(const char *const *args)
{
	int peers = 0;

	for (; args && *args; args++) {
		if (!strncmp(*args, "--peer-key", 10))
			return 0;
		if (!strcmp(*args, "--peers") || !strncmp(*args, "--peer=", 7) ||
		    !strcmp(*args, "--peer") || !strcmp(*args, "--listen") ||
		    !strcmp(*args, "--connect"))
			peers = 1;
	}
	return peers;
}

int t_rssqd_grants;

pid_t t_rssqd_start(const char *sock, unsigned recv_depth, unsigned recv_size,
                    const char *wire_fault, const char *const *args, const char *log,
                    int append)
{
	char depth[16], size[16];
	const char *argv[40] = {
		"--device",   test_device(), "--socket",  sock,  "--hugepages=off",
		"--data-mib", "8",           "--sq-size", "256", "--recv-depth",
		depth,        "--recv-size", size
	};
	const char *key = peer_args(args) ? test_peer_key() : NULL;
	int n = 13;

	snprintf(depth, sizeof(depth), "%u", recv_depth);
	snprintf(size, sizeof(size), "%u", recv_size);
	if (key) {
		argv[n++] = "--peer-key";
		argv[n++] = key;
	}
	if (!t_rssqd_grants)
		argv[n++] = "--no-grants";
	while (args && *args && n < 37)
		argv[n++] = *args++;
	argv[n] = NULL;
	return t_ssqd_exec(argv, wire_fault ? "SSQ_EMU_WIRE_FAULT" : NULL, wire_fault,
	                   log, append);
}

struct ssq_client *t_ssqd_connect(const char *sock, pid_t pid)
{
	struct ssq_client *c = NULL;
	siginfo_t si;
	int i;

	for (i = 0; i < 400 && ssq_client_connect(sock, &c); i++) {
		/*
		 * WNOWAIT: see the exit without reaping it, so that the caller's
		 * t_ssqd_stop still collects the status (and never signals a pid
		 * that may have been reused).
		 */
		si.si_pid = 0;
		if (pid > 0 &&
		    !waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) &&
		    si.si_pid == pid) {
			fprintf(stderr, "ssqd exited at start (%s %d)\n",
			        si.si_code == CLD_EXITED ? "status" : "signal",
			        si.si_status);
			return NULL;
		}
		usleep(50 * 1000);
	}
	return c;
}

void t_ssqd_stop(pid_t pid, int *status, const char *sock)
{
	if (pid > 0) {
		kill(pid, SIGTERM);
		waitpid(pid, status, 0);
	}
	if (sock)
		unlink(sock);
	t_ssqd_gone(sock); /* its lock too, where it had died already */
}

void t_ssqd_kill(pid_t pid, const char *sock)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	t_ssqd_gone(sock);
}

int t_ssqd_stop_ok(pid_t pid, int *status, const char *sock)
{
	t_ssqd_stop(pid, status, sock);
	return WIFEXITED(*status) && WEXITSTATUS(*status) == 0;
}
