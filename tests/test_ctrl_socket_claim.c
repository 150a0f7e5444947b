/* SPDX-License-Identifier: MIT */
/*
 * ssqd's claim on its socket path (util/socket_claim.c), issue 28:
 *  - an ssqd that exits leaves no SOCKET.lock behind (hundreds piled up in
 *    /tmp from the tools' runs);
 *  - a new ssqd started while the old holder of the lock is exiting gets
 *    the path once the holder is gone, instead of "another ssqd (pid N)
 *    serves PATH" though /proc/N/stat already says Z. The holder here is
 *    made to stay in that state as long as the test needs: its main
 *    thread exits alone (leader a zombie, not reaped: this test is its
 *    parent and waits for it only at the end) while a second thread keeps
 *    the shared file table, so the lock, until the new ssqd opens the lock
 *    file (inotify) and 200 ms more - the state a SIGKILLed ssqd is in
 *    while its other threads unmap its arena (do_exit: exit_files before
 *    exit_notify, linux kernel/exit.c);
 *  - the same with a real ssqd, SIGKILLed and not reaped, three times.
 */
#include "ssq_flow.h"
#include <pthread.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>

static char sock[108], lock[120];

static int exists(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0;
}

/* /proc/@pid/stat's state letter, or 0. */
static char proc_state(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

static int ino_fd = -1;

/* The holder's last thread: gone 200 ms after someone else opens the lock. */
static void *last_thread(void *arg)
{
	char ev[4096];

	(void)arg;
	if (read(ino_fd, ev, sizeof(ev)) > 0)
		usleep(200 * 1000);
	_exit(0);
}

/* A process holding @lock, its pid written there; the leader exits at once. */
static pid_t exiting_holder(void)
{
	int ready[2];
	pid_t pid;
	char c;

	if (pipe(ready))
		return -1;
	pid = fork();
	if (pid == 0) {
		pthread_t t;
		char txt[32];
		int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600), n;

		n = snprintf(txt, sizeof(txt), "%d\n", (int)getpid());
		if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) || ftruncate(fd, 0) ||
		    write(fd, txt, (size_t)n) != n)
			_exit(1);
		ino_fd = inotify_init1(IN_CLOEXEC);
		if (ino_fd < 0 || inotify_add_watch(ino_fd, lock, IN_OPEN) < 0 ||
		    pthread_create(&t, NULL, last_thread, NULL))
			_exit(1);
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		syscall(SYS_exit, 0); /* this thread only: the leader, now Z */
		_exit(1);
	}
	close(ready[1]);
	if (pid < 0 || read(ready[0], &c, 1) != 1)
		pid = -1;
	close(ready[0]);
	return pid;
}

/* Start ssqd on sock; its client, or NULL if it exited (*@d reaped then). */
static struct ssq_client *start(pid_t *d)
{
	return ssqd_start(sock, "8", "256", NULL, d);
}

static void stop(struct ssq_client *c, pid_t d)
{
	int status;

	if (c)
		ssq_client_close(c);
	CHECK(t_ssqd_stop_ok(d, &status, NULL), "ssqd exit 0x%x", status);
}

int main(void)
{
	struct ssq_client *c;
	pid_t d, h, old;
	double t0;
	int i, status;

	t_need_ssqd();
	snprintf(sock, sizeof(sock), "/tmp/ssq-claim-%d.sock", getpid());
	snprintf(lock, sizeof(lock), "%s.lock", sock);

	/* An ssqd that stops removes its lock file. */
	c = start(&d);
	CHECK(c != NULL, "ssqd did not start");
	if (!c)
		return test_exit("ctrl_socket_claim");
	CHECK(exists(lock), "no %s while ssqd serves", lock);
	stop(c, d);
	CHECK(!exists(lock), "ssqd left %s behind", lock);

	/* A holder that is exiting: waited for. */
	h = exiting_holder();
	CHECK(h > 0, "holder: %d", (int)h);
	t0 = now_s();
	while (h > 0 && proc_state(h) != 'Z' && now_s() - t0 < 10)
		usleep(1000);
	CHECK(h > 0 && proc_state(h) == 'Z', "the holder's leader is not a zombie: '%c'",
	      h > 0 ? proc_state(h) : '?');
	c = start(&d);
	CHECK(c != NULL,
	      "a new ssqd did not start while the lock's holder (pid %d, state Z) was "
	      "exiting",
	      (int)h);
	if (c)
		stop(c, d);
	if (h > 0)
		waitpid(h, &status, 0);

	/* A real ssqd, SIGKILLed and not reaped; the next one starts. */
	for (i = 0; i < 3; i++) {
		c = start(&old);
		CHECK(c != NULL, "round %d: ssqd did not start", i);
		if (!c)
			break;
		ssq_client_close(c);
		kill(old, SIGKILL);
		c = start(&d);
		CHECK(c != NULL,
		      "round %d: a new ssqd did not start right after pid %d was "
		      "SIGKILLed (state '%c')",
		      i, (int)old, proc_state(old));
		waitpid(old, &status, 0);
		if (!c)
			break;
		stop(c, d);
	}
	unlink(sock);
	unlink(lock);
	return test_exit("ctrl_socket_claim");
}
