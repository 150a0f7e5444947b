/* SPDX-License-Identifier: MIT */
/*
 * A client that registered its own memory (ssq_mem_reg) lets go of every
 * descriptor the registration gave it once ssqd dies, on test_device().
 *
 * Hardware review 2026-11-28 R1: on a ConnectX ssq_mem_reg imports ssqd's
 * verbs context (ibv_import_device on ssqd's command fd), and the kernel
 * tears down ssqd's ucontext - its QPs in RTS, its remote-writable MRs,
 * its pinned pages - only when the last reference to that file goes
 * (uverbs_main.c, ib_uverbs_close). The client closed the context only in
 * ssq_client_close, so a killed ssqd's objects lived as long as any such
 * client; now the client's watcher closes it at the hang-up. On the
 * emulated device ssq_mem_reg holds no descriptor, and the check is that
 * none is left either.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include "ctrl_flow.h"

#define MAXFD 1024

/* Which descriptors are open now: @open[fd] = 1. */
static void fds(unsigned char open[MAXFD])
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int own = d ? dirfd(d) : -1; /* the listing's own, closed below */

	memset(open, 0, MAXFD);
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.' && atoi(e->d_name) < MAXFD &&
		    atoi(e->d_name) != own)
			open[atoi(e->d_name)] = 1;
	if (d)
		closedir(d);
}

static int still_open(const unsigned char before[MAXFD], const unsigned char after[MAXFD],
                      const unsigned char now[MAXFD], int *which)
{
	int fd, n = 0;

	for (fd = 0; fd < MAXFD; fd++)
		if (after[fd] && !before[fd] && now[fd]) {
			*which = fd;
			n++;
		}
	return n;
}

int main(void)
{
	static unsigned char before[MAXFD], after[MAXFD], now[MAXFD];
	struct ssq_buf a = { 0 }, b = { 0 };
	struct ssq_completion comp;
	struct ssq_client *c = NULL;
	struct ssq_queue *q = NULL;
	struct ssq_mr mr;
	uint8_t *mem = malloc(8192);
	int rc, held, left = 0, fd = -1, gone = 0;
	double t0;
	pid_t d;

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	d = flow_start_q0("mem-hangup", &c, &q, &a, &b);
	CHECK(d >= 0, "ssqd on %s serves a client", test_device());
	if (d < 0 || !mem)
		return test_exit("ctrl_mem_hangup");
	fds(before);
	rc = ssq_mem_reg(c, mem, 8192, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
	                 &mr);
	CHECK(rc == 0, "ssq_mem_reg: %d %s", rc, ssq_client_error(c));
	fds(after);
	for (held = 0, fd = 0; fd < MAXFD; fd++)
		held += after[fd] && !before[fd];
	printf("on %s the registration holds %d descriptor(s)\n", test_device(), held);
	kill(d, SIGKILL);
	waitpid(d, NULL, 0);
	/* The hang-up reaches the watcher: the producer goes, then the context. */
	for (t0 = now_s(); now_s() - t0 < 10;) {
		gone = ssq_poll(ssq_queue_producer(q), &comp, 1) == -ENOTCONN;
		fds(now);
		left = still_open(before, after, now, &fd);
		if (gone && !left)
			break;
		usleep(10000);
	}
	CHECK(gone, "the producer gone after ssqd's death");
	CHECK(!left,
	      "%d descriptor(s) of the registration still open 10 s after ssqd died "
	      "(fd %d): they keep the dead ssqd's QPs and MRs alive",
	      left, fd);
	rc = ssq_mem_reg(c, mem, 4096, IBV_ACCESS_LOCAL_WRITE, &mr);
	CHECK(rc < 0, "a registration after the hang-up refused: %d", rc);
	ssq_client_close(c);
	unlink(sock_path);
	free(mem);
	return test_exit("ctrl_mem_hangup");
}
