/* SPDX-License-Identifier: MIT */
/*
 * A client on descriptor 0 is a client like any other. ssqd started with
 * stdin closed, whose own descriptors leave 0 free by the time it accepts,
 * gets 0 from accept4() for a connection; a client table that took fd 0 to
 * mean "free" never polled that client (its hello went unanswered) and let
 * the next connection take its slot.
 *
 * ssqd runs in this process (ssqd_setup, then ssqd_serve on a thread) so
 * that descriptor 0 can be closed after its set-up: the next accept is fd 0
 * for sure. A forked client connects, opens q0, posts a WRITE and waits for
 * its completion; a second one does the same while the first still holds
 * its connection, so the two share the client table.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <ssq/ssq.h>
#include <ssq/client.h>
#include <ssq/post_wr.h>
#include "helpers.h"
#include "lib/tlib.h"
#include "inproc_ssqd.h"

static char sock[108];
static int go[2]; /* the first client holds its connection until go[1] closes */

/* One client's life: connect, q0, an 8-byte WRITE, its completion. 0: done. */
static int client_post(const char *who)
{
	struct ssq_completion comp = { 0 };
	struct ibv_send_wr wr, *bad = NULL;
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_buf src, dst;
	struct ibv_sge sge;
	struct ssq_producer *p;
	int rc;

	c = t_ssqd_connect(sock, 0);
	if (!c) {
		fprintf(stderr, "%s: connect: %s\n", who, ssq_client_strerror_last());
		return 1;
	}
	if (ssq_queue_open(c, "q0", &q) || ssq_buf_alloc(c, 8, &src) ||
	    ssq_buf_alloc(c, 8, &dst)) {
		fprintf(stderr, "%s: set-up: %s\n", who, ssq_client_error(c));
		return 1;
	}
	memcpy(src.addr, "fd0-ok!", 8);
	memset(dst.addr, 0, 8);
	sge = (struct ibv_sge){ src.iova, 8, src.lkey };
	t_wr_one(&wr, &sge, IBV_WR_RDMA_WRITE, 1, dst.remote_addr, dst.rkey);
	p = ssq_queue_producer(q);
	rc = ssq_post_wr(p, &wr, &bad);
	if (rc) {
		fprintf(stderr, "%s: ssq_post_wr: %d\n", who, rc);
		return 1;
	}
	rc = ssq_wait(p, 1, 20000000000ull); /* 20 s: a loaded machine */
	if (rc < 0 || ssq_poll(p, &comp, 1) != 1 || comp.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "%s: completion: wait %d, status %d\n", who, rc,
		        comp.status);
		return 1;
	}
	if (memcmp(dst.addr, "fd0-ok!", 8)) {
		fprintf(stderr, "%s: the WRITE did not land\n", who);
		return 1;
	}
	return 0;
}

static void *serve(void *arg)
{
	ssqd_serve(arg);
	return NULL;
}

/* A forked client; with @hold, it keeps its connection until go[1] closes. */
/*
 * Fork a client before ssqd_setup starts threads (the emulated device's,
 * then the serve loop): a child forked from a threaded process may find a
 * lock (the sanitizers' allocator, stdio) held by a thread it no longer
 * has. It connects once a byte comes on @start.
 */
static pid_t client_fork(const char *who, int start, int hold)
{
	pid_t pid = fork();

	if (pid == 0) {
		int rc;
		char b;

		close(go[1]);
		if (read(start, &b, 1) != 1)
			_exit(1);
		rc = client_post(who);
		if (hold && !rc)
			(void)!read(go[0], &b, 1);
		_exit(rc);
	}
	return pid;
}

int main(void)
{
	struct ssqd *d = inproc_ssqd_new(sock, sizeof(sock), "ctrl", "fd0");
	char why[512] = "";
	int start_a[2], start_b[2];
	pthread_t th;
	pid_t a, b;
	int sa = 0, sb = 0;

	if (!d)
		return 1;
	/* Descriptor 0 held (ctest may start us with it closed) until we close it. */
	if (fcntl(0, F_GETFD) < 0 && open("/dev/null", O_RDONLY) != 0)
		return 1;
	d->opt.max_client_mib = 2; /* ssqd_options_parse sets the quotas */
	d->opt.max_uid_mib = 4;
	signal(SIGPIPE, SIG_IGN);
	if (pipe(go) || pipe(start_a) || pipe(start_b))
		return 1;
	a = client_fork("client on fd 0", start_a[0], 1);
	b = client_fork("second client", start_b[0], 0);
	CHECK(a > 0 && b > 0, "fork");
	if (a <= 0 || b <= 0 || ssqd_setup(d, why, sizeof(why))) {
		fprintf(stderr, "ssqd_setup: %s\n", why);
		if (a > 0)
			kill(a, SIGKILL);
		if (b > 0)
			kill(b, SIGKILL);
		return 1;
	}
	/* As ssqd started with 0<&-: the lowest free descriptor is 0. */
	close(0);
	if (pthread_create(&th, NULL, serve, d))
		return 1;

	/* The first must be served (ssqd's fd 0) before the second connects. */
	CHECK(write(start_a[1], "a", 1) == 1, "start the first client");
	{
		int i;

		for (i = 0; i < 400 && !(d->clients[0].fd == 0 && d->clients[0].attached);
		     i++)
			usleep(50 * 1000);
		CHECK(d->clients[0].fd == 0, "the first client has fd %d, not 0",
		      d->clients[0].fd);
	}
	CHECK(write(start_b[1], "b", 1) == 1, "start the second client");
	CHECK(waitpid(b, &sb, 0) == b && WIFEXITED(sb) && WEXITSTATUS(sb) == 0,
	      "the second client, alongside the one on fd 0, failed");
	close(go[1]);
	CHECK(waitpid(a, &sa, 0) == a && WIFEXITED(sa) && WEXITSTATUS(sa) == 0,
	      "the client on fd 0 failed (status 0x%x)", sa);

	d->stop = 1;
	pthread_join(th, NULL);
	ssqd_teardown(d);
	unlink(sock);
	free(d);
	return test_exit("ctrl_client_fd0");
}
