/* SPDX-License-Identifier: MIT */
/*
 * ssqd without pidfds (run under tests/sandbox/no_pidfd.c, $SSQ_NO_PIDFD)
 * and a client it cannot kill: ssqd runs as uid 65534, the client as root,
 * attaches q0 and shuts its connection down, and lives on. ssqd says it
 * cannot be killed, and then has nothing but /proc/PID/stat to tell when
 * it exits (util/pid_start.c). It looked there on every pass of its loop,
 * and made that pass every millisecond for as long as the client lived: a
 * thousand wakes a second. Wanted: its loop wakes about as often as with
 * no such client (under WAKES_MAX a second), and the client's death is
 * still seen within a bound (its buffers returned within DEATH_S).
 * Needs root (ssqd runs as another uid than its client's).
 */
#define _GNU_SOURCE
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "stall_flow.h"

#define WINDOW_S  3.0
#define WAKES_MAX 300.0 /* a second: the loop polls every 10 ms (PROGRESS_MS) */
#define DEATH_S   3.0
#define NOBODY    65534

/* The main thread's voluntary context switches (the serve loop's wakes). */
static long wakes(pid_t pid)
{
	char path[64], line[128];
	long n = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "voluntary_ctxt_switches: %ld", &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

/* This process's connection to ssqd: the socket opened last. */
static int client_socket(void)
{
	struct stat st;
	int fd, last = -1;

	for (fd = 3; fd < 1024; fd++)
		if (fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode))
			last = fd;
	return last;
}

/* A client that attaches q0, shuts its connection down and lives on. */
static pid_t hangs_up_and_lives(void)
{
	int p[2];
	pid_t v;
	char b = 0;

	if (pipe(p))
		return -1;
	v = fork();
	if (v == 0) {
		struct conn k;
		int s;

		close(p[0]);
		if (conn_open(&k) || (s = client_socket()) < 0)
			_exit(3);
		shutdown(s, SHUT_RDWR);
		(void)!write(p[1], "r", 1);
		for (;;)
			pause();
	}
	close(p[1]);
	if (v < 0 || read(p[0], &b, 1) != 1)
		v = -1;
	close(p[0]);
	return v;
}

int main(int argc, char **argv)
{
	const char *wrap = getenv("SSQ_NO_PIDFD");
	char self[256];
	double t0, c0, cpu, took;
	long w0, w;
	ssize_t n;
	pid_t d, v;
	int st;

	if (argc > 1) {
		/* ssqd's launcher (SSQ_TEST_SSQD_WRAP): as uid 65534, without pidfds. */
		if (!wrap || setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
		    setresuid(NOBODY, NOBODY, NOBODY))
			_exit(126);
		argv[0] = (char *)wrap;
		execv(wrap, argv);
		_exit(127);
	}
	if (!wrap)
		SKIP("SSQ_NO_PIDFD (tests/sandbox/no_pidfd.c) not set: run through "
		     "ctest");
	if (getuid() != 0)
		SKIP("not root: ssqd runs as another uid than its client's");
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		SKIP("/proc/self/exe unreadable");
	self[n] = 0;
	setenv("SSQ_TEST_SSQD_WRAP", self, 1);
	/* Our ssqd, though not root's nor ours (src/ctrl/client/client.c). */
	setenv("SSQ_SERVER_UID", "65534", 1);
	setvbuf(stdout, NULL, _IONBF, 0);
	d = stall_ssqd_up("nopidfd-unkill");
	if (d < 0)
		return 1;
	v = hangs_up_and_lives();
	CHECK(v > 0, "a client attached q0 and hung up");
	if (v <= 0)
		goto out;
	CHECK(log_count_wait("cannot be killed", NULL, 1, 10.0) == 1,
	      "ssqd (uid %d) says it cannot kill client pid %d (root)", NOBODY, (int)v);
	c0 = t_proc_cpu_s(d);
	w0 = wakes(d);
	usleep((useconds_t)(WINDOW_S * 1e6));
	w = wakes(d) - w0;
	cpu = t_proc_cpu_s(d) - c0;
	printf("with a client it cannot kill alive: ssqd's loop woke %.0f times a "
	       "second, %.3f s of CPU in %.1f s\n",
	       w / WINDOW_S, cpu, WINDOW_S);
	CHECK(w0 >= 0 && w / WINDOW_S < WAKES_MAX,
	      "ssqd's loop woke %.0f times a second looking for the client's exit",
	      w / WINDOW_S);
	CHECK(cpu < 0.3, "ssqd used %.3f s of CPU in %.1f s", cpu, WINDOW_S);
	kill(v, SIGKILL);
	waitpid(v, &st, 0);
	t0 = now_s();
	CHECK(log_count_wait("gone, 2 data buffers returned", NULL, 1, 10.0) == 1,
	      "ssqd saw client pid %d's exit", (int)v);
	took = now_s() - t0;
	printf("its exit seen in %.0f ms\n", took * 1e3);
	CHECK(took < DEATH_S, "its exit seen in %.1f s", took);
out:
	stall_ssqd_down(d);
	return test_exit("ctrl_no_pidfd_unkillable");
}
