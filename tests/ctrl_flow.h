/* SPDX-License-Identifier: MIT */
/*
 * The multi-process ssqd scenario, for any device (flow_device): included by
 * test_ctrl_multiproc.c (emulated device) and test_ctrl_mlx5.c (ConnectX).
 *  - clients attach to one queue, map the same arena and see each other's
 *    writes;
 *  - one client's RDMA WRITE through the shared queue, executed by the
 *    device, lands in another client's buffer;
 *  - a client killed with SIGKILL leaves ssqd and the others working, and
 *    its buffers go back to the arena;
 *  - ssqd killed with SIGKILL gives a connected client an error within a
 *    second, not a hang.
 */
#ifndef SSQ_TEST_CTRL_FLOW_H
#define SSQ_TEST_CTRL_FLOW_H

#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include "lib/tlib.h"
#include <ssq/ssq.h>
#include <ssq/client.h>
#include "helpers.h"
#include "test_device.h"

#define NCLIENTS 3
#define BUF_LEN  4096

static char sock_path[108];
/* The device ssqd runs on: test_device() unless the test picks one. */
static const char *flow_device;
static const char *flow_ssqd_opt; /* one more ssqd option, or NULL */

static inline double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static inline pid_t start_ssqd(const char *hugepages)
{
	char hp[64];
	const char *args[] = { "--device", flow_device ? flow_device : test_device(),
		               "--socket", sock_path,
		               hp,         "--data-mib",
		               "8",        "--sq-size",
		               "256",      flow_ssqd_opt,
		               NULL };

	snprintf(hp, sizeof(hp), "--hugepages=%s", hugepages);
	return t_ssqd_exec(args, NULL, NULL, NULL, 0);
}

/* Connect, retrying while ssqd starts (up to 20 s on a loaded machine). */
static inline struct ssq_client *connect_retry(pid_t daemon)
{
	struct ssq_client *c = t_ssqd_connect(sock_path, daemon);

	if (!c)
		fprintf(stderr, "connect: %s\n", ssq_client_strerror_last());
	return c;
}

/*
 * ssqd for test @tag (its socket named after @tag and this pid), with
 * --hugepages=@hugepages, started into @*daemon and answering: a client of
 * it, or NULL with ssqd killed and reaped.
 */
static inline struct ssq_client *flow_up(const char *tag, const char *hugepages,
                                         pid_t *daemon)
{
	struct ssq_client *c;

	snprintf(sock_path, sizeof(sock_path), "/tmp/ssq-%s-%d.sock", tag, (int)getpid());
	*daemon = start_ssqd(hugepages);
	c = connect_retry(*daemon);
	if (!c) {
		t_ssqd_kill(*daemon, sock_path);
	}
	return c;
}

/*
 * The start most tests share: ssqd on memfd pages at /tmp/ssq-@tag-PID.sock,
 * one client attached to q0 with two 64-byte buffers. Returns ssqd's pid,
 * or -1 when it could not (ssqd killed then, a CHECK failed or said why).
 */
static inline pid_t flow_start_q0(const char *tag, struct ssq_client **c,
                                  struct ssq_queue **q, struct ssq_buf *a,
                                  struct ssq_buf *b)
{
	pid_t d;

	signal(SIGPIPE, SIG_IGN);
	snprintf(sock_path, sizeof(sock_path), "/tmp/ssq-%s-%d.sock", tag, getpid());
	d = start_ssqd("off");
	*c = connect_retry(d);
	if (!*c) {
		t_ssqd_kill(d, sock_path);
		return -1;
	}
	CHECK(ssq_queue_open(*c, "q0", q) == 0 && ssq_buf_alloc(*c, 64, a) == 0 &&
	          ssq_buf_alloc(*c, 64, b) == 0,
	      "setup: %s", ssq_client_error(*c));
	return d;
}

/*
 * What /proc/self/maps says holds @addr: 1 and its path (empty for an
 * anonymous mapping) in @path, or 0 when nothing is mapped there.
 */
static inline int flow_mapping(const void *addr, char *path, size_t len)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int in = 0;

	path[0] = 0;
	while (f && !in && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		int off = 0;

		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &off) < 2)
			continue;
		in = (unsigned long)addr >= lo && (unsigned long)addr < hi;
		if (in && off) {
			snprintf(path, len, "%s", line + off);
			path[strcspn(path, "\n")] = 0;
		}
	}
	if (f)
		fclose(f);
	return in;
}

/* One signaled RDMA WRITE of @len bytes from @src to @dst through the shared queue. */
static inline int write_and_wait(struct ssq_queue *q, const struct ssq_buf *src,
                                 const struct ssq_buf *dst, uint32_t len)
{
	struct ssq_producer *p = ssq_queue_producer(q);
	struct ssq_completion comp;
	double t0 = now_s();
	int rc;

	/* dst at its remote descriptor: its own key, not the arena's. */
	rc = ssq_post_write(p, src->iova, src->lkey, len, dst->remote_addr, dst->rkey,
	                    0xfeed, SSQ_WQE_SIGNALED);
	if (rc) {
		fprintf(stderr, "ssq_post_write: %d\n", rc);
		return -1;
	}
	while (now_s() - t0 < 10) {
		if (ssq_poll(p, &comp, 1) == 1) {
			if (comp.status != IBV_WC_SUCCESS || comp.wr_id != 0xfeed) {
				fprintf(stderr, "completion status %d wr_id 0x%llx\n",
				        comp.status, (unsigned long long)comp.wr_id);
				return -1;
			}
			return 0;
		}
		usleep(100);
	}
	fprintf(stderr, "no completion within 10 s\n");
	return -1;
}

/* What a client tells the others of its buffer: where, and how to reach it. */
struct flow_report {
	uint64_t off;         /* arena offset: to map it (ssq_buf_at) */
	uint64_t remote_addr; /* its remote descriptor: to WRITE into it */
	uint32_t rkey;
	uint32_t pad;
};

/*
 * Client @id: allocate a buffer, fill it with its pattern, report the
 * offset and remote descriptor, then check every other client's buffer
 * holds theirs. Client 0 then WRITEs its pattern into client 1's second
 * half, at the descriptor client 1 gave, which client 1 checks.
 */
static inline int client_main(int id, int report_fd, int go_fd)
{
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_buf mine, other;
	struct flow_report rep, reps[NCLIENTS];
	uint8_t *p;
	int i, k, rc;

	if (ssq_client_connect(sock_path, &c)) {
		fprintf(stderr, "client %d: %s\n", id, ssq_client_strerror_last());
		return 1;
	}
	if (ssq_queue_open(c, "q0", &q) || ssq_buf_alloc(c, BUF_LEN, &mine)) {
		fprintf(stderr, "client %d: %s\n", id, ssq_client_error(c));
		return 1;
	}
	memset(mine.addr, 0xa0 + id, BUF_LEN / 2);
	memset(&rep, 0, sizeof(rep));
	rep.off = mine.off;
	rep.remote_addr = mine.remote_addr;
	rep.rkey = mine.rkey;
	if (write(report_fd, &rep, sizeof(rep)) != sizeof(rep) ||
	    read(go_fd, reps, sizeof(reps)) != sizeof(reps))
		return 1;
	for (i = 0; i < NCLIENTS; i++) {
		if (ssq_buf_at(c, reps[i].off, BUF_LEN, &other))
			return 1;
		p = other.addr;
		for (k = 0; k < BUF_LEN / 2; k++)
			if (p[k] != 0xa0 + i) {
				fprintf(stderr,
				        "client %d sees client %d's byte %d = %02x\n", id,
				        i, k, p[k]);
				return 1;
			}
	}
	rc = 0;
	if (id == 0) {
		struct ssq_buf dst = { .remote_addr = reps[1].remote_addr + BUF_LEN / 2,
			               .rkey = reps[1].rkey };

		rc = write_and_wait(q, &mine, &dst, BUF_LEN / 2);
		if (write(report_fd, &rc, sizeof(rc)) != sizeof(rc))
			rc = 1;
	} else if (id == 1) {
		/* Wait for the parent's word that client 0's WRITE completed. */
		if (read(go_fd, &rc, sizeof(rc)) != sizeof(rc))
			return 1;
		p = (uint8_t *)mine.addr + BUF_LEN / 2;
		for (k = 0; k < BUF_LEN / 2; k++)
			if (p[k] != 0xa0) {
				fprintf(stderr, "client 1: WRITE byte %d = %02x\n", k,
				        p[k]);
				return 1;
			}
	}
	ssq_queue_close(q);
	ssq_client_close(c);
	return rc ? 1 : 0;
}

static inline void run_config(const char *hugepages)
{
	int report[2], go[NCLIENTS][2], i, status, rc;
	pid_t daemon, kids[NCLIENTS], victim;
	struct flow_report reps[NCLIENTS];
	struct ssq_client *c, *c2;
	struct ssq_queue *q;
	struct ssq_queue_info info[4];
	struct ssq_buf a, b;
	double t0;

	snprintf(sock_path, sizeof(sock_path), "/tmp/ssq-test-%d-%s.sock", getpid(),
	         hugepages);
	daemon = start_ssqd(hugepages);
	c = connect_retry(daemon);
	CHECK(c != NULL, "[%s] no ssqd to connect to", hugepages);
	if (!c) {
		t_ssqd_kill(daemon, sock_path);
		return;
	}
	CHECK(!strcmp(ssq_client_device(c), flow_device ? flow_device : test_device()),
	      "device %s, expected %s", ssq_client_device(c),
	      flow_device ? flow_device : test_device());
	rc = ssq_client_list(c, info, 4);
	CHECK(rc == 1 && !strcmp(info[0].name, "q0") && info[0].ready, "[%s] list: %d",
	      hugepages, rc);
	CHECK(ssq_queue_open(c, "nope", &q) == -ENOENT, "unknown queue opened");
	CHECK(strstr(ssq_client_error(c), "nope") != NULL, "error names the queue: %s",
	      ssq_client_error(c));

	/* Clients see each other's writes; one WRITE moves data between two. */
	if (pipe(report))
		exit(1);
	for (i = 0; i < NCLIENTS; i++) {
		if (pipe(go[i]))
			exit(1);
		kids[i] = fork();
		if (kids[i] == 0)
			_exit(client_main(i, report[1], go[i][0]));
	}
	for (i = 0; i < NCLIENTS; i++)
		CHECK(read(report[0], &reps[i], sizeof(reps[i])) == sizeof(reps[i]),
		      "report");
	/* Reports arrive in any order: ask each child for its offset by value. */
	{
		struct flow_report sorted[NCLIENTS];
		struct ssq_buf probe;
		int j;

		memset(sorted, 0, sizeof(sorted));
		for (i = 0; i < NCLIENTS; i++) {
			for (j = 0; j < NCLIENTS; j++) {
				ssq_buf_at(c, reps[j].off, 1, &probe);
				if (*(uint8_t *)probe.addr == 0xa0 + i)
					sorted[i] = reps[j];
			}
		}
		for (i = 0; i < NCLIENTS; i++)
			CHECK(write(go[i][1], sorted, sizeof(sorted)) == sizeof(sorted),
			      "go");
	}
	CHECK(read(report[0], &rc, sizeof(rc)) == sizeof(rc) && rc == 0,
	      "[%s] client 0's WRITE failed", hugepages);
	CHECK(write(go[1][1], &rc, sizeof(rc)) == sizeof(rc), "go 1");
	for (i = 0; i < NCLIENTS; i++) {
		waitpid(kids[i], &status, 0);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "[%s] client %d status 0x%x", hugepages, i, status);
		close(go[i][0]);
		close(go[i][1]);
	}
	close(report[0]);
	close(report[1]);

	/* A client killed mid-use: ssqd and the others go on. */
	if (pipe(report))
		exit(1);
	victim = fork();
	if (victim == 0) {
		struct ssq_client *vc;
		struct ssq_queue *vq;
		struct ssq_buf vb;
		char ok = 1;

		if (ssq_client_connect(sock_path, &vc) || ssq_queue_open(vc, "q0", &vq) ||
		    ssq_buf_alloc(vc, 6 << 20, &vb)) /* most of the 8 MiB arena */
			ok = 0;
		if (write(report[1], &ok, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	{
		char ok = 0;

		CHECK(read(report[0], &ok, 1) == 1 && ok == 1,
		      "[%s] the victim never allocated", hugepages);
		close(report[0]);
		close(report[1]);
	}
	/* While the victim holds its 6 MiB, a 6 MiB buffer cannot be had. */
	CHECK(ssq_buf_alloc(c, 6 << 20, &a) == -ENOMEM, "[%s] 6 MiB twice from 8 MiB",
	      hugepages);
	kill(victim, SIGKILL);
	waitpid(victim, NULL, 0);
	for (i = 0; i < 200 && ssq_buf_alloc(c, 6 << 20, &a) != 0; i++)
		usleep(20 * 1000);
	CHECK(i < 200, "[%s] the killed client's buffer never came back", hugepages);
	ssq_buf_free(c, &a);
	CHECK(ssq_queue_open(c, "q0", &q) == 0, "[%s] open after a kill: %s", hugepages,
	      ssq_client_error(c));
	CHECK(ssq_buf_alloc(c, 256, &a) == 0 && ssq_buf_alloc(c, 256, &b) == 0, "alloc");
	memset(a.addr, 0x5c, 256);
	memset(b.addr, 0, 256);
	CHECK(write_and_wait(q, &a, &b, 256) == 0, "[%s] WRITE after a kill", hugepages);
	CHECK(((uint8_t *)b.addr)[255] == 0x5c, "[%s] WRITE after a kill moved no data",
	      hugepages);
	CHECK(ssq_buf_alloc(c, 0, &a) == -EINVAL, "zero-length buffer");
	CHECK(ssq_buf_alloc(c, 64 << 20, &a) == -ENOMEM,
	      "[%s] 64 MiB from an 8 MiB arena", hugepages);

	/* ssqd killed: a connected client learns within a second. */
	CHECK(ssq_client_connect(sock_path, &c2) == 0, "second connection");
	t_ssqd_kill(daemon, sock_path);
	t0 = now_s();
	rc = ssq_client_list(c2, info, 4);
	CHECK(rc == -ENOTCONN, "[%s] list after ssqd died: %d", hugepages, rc);
	CHECK(now_s() - t0 < 1.0, "[%s] the error took %.2f s", hugepages, now_s() - t0);
	CHECK(!ssq_client_alive(c), "[%s] client still thinks ssqd lives", hugepages);
	ssq_queue_close(q);
	ssq_client_close(c);
	ssq_client_close(c2);
	unlink(sock_path);
}

/* Reserve 2 MiB pages for a hugepage run if we can (root); return the count. */
static inline long ensure_hugepages(long want)
{
	long have = 0;
	FILE *f = fopen("/proc/sys/vm/nr_hugepages", "r");

	if (f) {
		if (fscanf(f, "%ld", &have) != 1)
			have = 0;
		fclose(f);
	}
	if (have < want) {
		f = fopen("/proc/sys/vm/nr_hugepages", "w");
		if (f) {
			fprintf(f, "%ld", want);
			fclose(f);
		}
		f = fopen("/proc/sys/vm/nr_hugepages", "r");
		if (f) {
			if (fscanf(f, "%ld", &have) != 1)
				have = 0;
			fclose(f);
		}
	}
	return have;
}

#endif
