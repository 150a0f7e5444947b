/* SPDX-License-Identifier: MIT */
/*
 * ssqd with --stall-ms 100 on the emulated device, its log in a file, and
 * clients that post one WRITE and time its completion: for the tests of
 * the stall watch (test_ctrl_stall.c, test_ctrl_stall_forge.c).
 */
#ifndef SSQ_TEST_STALL_FLOW_H
#define SSQ_TEST_STALL_FLOW_H

#include <fcntl.h>
#include "ctrl_flow.h"
#include "dv/ctl.h"

#define STALL_MS "100"
#define BOUND_S  2.0
#define WAIT_S   5.0 /* give up on a WRITE: it would wait for ever */

static char log_path[108];

static inline pid_t ssqd_start_logged(void)
{
	const char *opt = getenv("SSQ_TEST_STALL_OPT");
	const char *args[] = {
		"--device",   "emu", "--socket",  sock_path, "--hugepages=off",
		"--data-mib", "8",   "--sq-size", "256",     NULL,
		NULL
	};

	if (!opt)
		opt = "--stall-ms=" STALL_MS;
	args[9] = *opt ? opt : NULL;
	return t_ssqd_exec(args, NULL, NULL, log_path, 0);
}

/* Lines of ssqd's log holding @needle (and @needle2 if not NULL). */
static inline int log_count(const char *needle, const char *needle2)
{
	FILE *f = fopen(log_path, "r");
	char line[512];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, needle) && (!needle2 || strstr(line, needle2));
	fclose(f);
	return n;
}

/*
 * log_count once it reaches @min, or after @secs: ssqd writes a line after
 * the act it reports (a ring, a kill, a start-over), and the test may see
 * the act's effect first.
 */
static inline int log_count_wait(const char *needle, const char *needle2, int min,
                                 double secs)
{
	double end = now_s() + secs;
	int n;

	while ((n = log_count(needle, needle2)) < min && now_s() < end)
		usleep(10000);
	return n;
}

/* What ssqd said about the queue, for the test's output. */
static inline void print_log(void)
{
	FILE *f = fopen(log_path, "r");
	char line[512];

	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "ssqd: q"))
			fputs(line, stdout);
	if (f)
		fclose(f);
}

struct conn {
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_producer *p;
	struct ssq_buf src, dst;
};

/*
 * A signaled 64-byte WRITE on @k from @laddr/@lkey to @raddr/@rkey with
 * @wr_id: its status within 5 s, -2 when another completion came first,
 * -1 when the post failed or nothing came.
 */
static inline int write_status(struct conn *k, uint64_t laddr, uint32_t lkey,
                               uint64_t raddr, uint32_t rkey, uint64_t wr_id)
{
	struct ssq_completion comp;
	double t0 = now_s();

	if (ssq_post_write(k->p, laddr, lkey, 64, raddr, rkey, wr_id, SSQ_WQE_SIGNALED))
		return -1;
	while (now_s() - t0 < 5.0) {
		if (ssq_poll(k->p, &comp, 1) == 1)
			return comp.wr_id == wr_id ? (int)comp.status : -2;
		usleep(100);
	}
	return -1;
}

/*
 * Connect and open q0 with two 4 KiB buffers. A queue in error refuses
 * opens with -EAGAIN until a client that has it open recovers it; this
 * waits up to @again_s for that (0: no wait). 0, or -1 after saying why.
 */
static inline int conn_open_wait(struct conn *k, double again_s)
{
	double end = now_s() + again_s;
	int rc = ssq_client_connect(sock_path, &k->c);

	if (rc) {
		fprintf(stderr, "connect to %s: %d\n", sock_path, rc);
		return -1;
	}
	while ((rc = ssq_queue_open(k->c, "q0", &k->q)) == -EAGAIN && now_s() < end)
		usleep(20000);
	if (rc || ssq_buf_alloc(k->c, 4096, &k->src) ||
	    ssq_buf_alloc(k->c, 4096, &k->dst)) {
		fprintf(stderr, "open q0 (%d): %s\n", rc, ssq_client_error(k->c));
		ssq_client_close(k->c);
		return -1;
	}
	k->p = ssq_queue_producer(k->q);
	return 0;
}

static inline int conn_open(struct conn *k)
{
	return conn_open_wait(k, 0);
}

/* Wait up to @limit_s for the completion @wr_id; its time, or -1. */
static inline double wait_comp(struct conn *k, uint64_t wr_id, double t0, double limit_s)
{
	struct ssq_completion comp;

	while (now_s() - t0 < limit_s) {
		if (ssq_poll(k->p, &comp, 1) == 1) {
			if (comp.status == IBV_WC_SUCCESS && comp.wr_id != wr_id)
				continue; /* an earlier one that gave up (unfixed ssqd) */
			if (comp.status != IBV_WC_SUCCESS) {
				fprintf(stderr, "completion status %d wr_id 0x%llx\n",
				        comp.status, (unsigned long long)comp.wr_id);
				return -1;
			}
			return now_s() - t0;
		}
		usleep(100);
	}
	return -1;
}

/* One signaled 64-byte WRITE, src to dst, and its completion's time (or -1). */
static inline double write_timed(struct conn *k, uint64_t wr_id, double limit_s)
{
	double t0 = now_s();
	int rc;

	while (
	    (rc = ssq_post_write(k->p, k->src.iova, k->src.lkey, 64, k->dst.remote_addr,
	                         k->dst.rkey, wr_id, SSQ_WQE_SIGNALED)) == -EAGAIN &&
	    now_s() - t0 < limit_s)
		usleep(100);
	if (rc) {
		fprintf(stderr, "ssq_post_write: %d\n", rc);
		return -1;
	}
	return wait_comp(k, wr_id, t0, limit_s);
}

/*
 * ssqd started for test @tag (socket and log named after it and this
 * pid) and answering: from here, one connection per client. Its pid, or
 * -1 (said why; nothing left running). Skips the test (77) when $SSQD is
 * not set, and ignores SIGPIPE for the test.
 */
static inline pid_t stall_ssqd_up(const char *tag)
{
	struct ssq_client *c;
	pid_t d;

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	signal(SIGPIPE, SIG_IGN); /* a test's writes to a killed ssqd fail, not kill it */
	snprintf(sock_path, sizeof(sock_path), "/tmp/ssq-%s-%d.sock", tag, getpid());
	snprintf(log_path, sizeof(log_path), "/tmp/ssq-%s-%d.log", tag, getpid());
	d = ssqd_start_logged();
	c = connect_retry(d);
	if (!c) {
		fprintf(stderr, "ssqd did not answer; its log: %s\n", log_path);
		t_ssqd_kill(d, sock_path);
		return -1;
	}
	ssq_client_close(c);
	return d;
}

/*
 * stall_ssqd_up(@tag), then a connection @a with q0 and its buffers
 * (conn_open), and @b too unless NULL. ssqd's pid, or -1 after saying why
 * (ssqd killed).
 */
static inline pid_t stall_ssqd_conns(const char *tag, struct conn *a, struct conn *b)
{
	pid_t d = stall_ssqd_up(tag);

	if (d < 0)
		return -1;
	if (conn_open(a) || (b && conn_open(b))) {
		fprintf(stderr, "setup failed; ssqd's log: %s\n", log_path);
		t_ssqd_kill(d, sock_path);
		return -1;
	}
	return d;
}

/*
 * stall_ssqd_up(@tag), connections @a and @b (conn_open), a buffer *@src
 * of @a's and one *@dst of @dk's (@a or @b), each of @len bytes, *@src
 * filled with 0x5a. ssqd's pid, or -1 (ssqd killed) when any failed.
 */
static inline pid_t stall_ssqd_bufs(const char *tag, struct conn *a, struct conn *b,
                                    struct ssq_buf *src, struct conn *dk,
                                    struct ssq_buf *dst, uint64_t len)
{
	pid_t d = stall_ssqd_up(tag);

	if (d < 0)
		return -1;
	if (conn_open(a) || conn_open(b) || ssq_buf_alloc(a->c, len, src) ||
	    ssq_buf_alloc(dk->c, len, dst)) {
		kill(d, SIGKILL);
		return -1;
	}
	memset(src->addr, 0x5a, len);
	return d;
}

/*
 * @n WRITEs of @src's @len bytes each to @dst on @k's queue, published
 * (the last one signaled), the doorbell not rung. How many were.
 */
static inline int stall_publish_writes(struct conn *k, const struct ssq_buf *src,
                                       const struct ssq_buf *dst, uint32_t len, int n)
{
	uint64_t pos = 0;
	int i, rc = ssq_reserve(k->p, (unsigned)n, &pos);

	for (i = 0; !rc && i < n; i++) {
		unsigned user = i == n - 1 ? SSQ_WQE_SIGNALED : 0;

		ssq_prep_rdma_write(ssq_producer_sq(k->p), (uint32_t)(pos + i), src->iova,
		                    src->lkey, len, dst->remote_addr, dst->rkey,
		                    ssq_wqe_flags(k->p, pos + i, 1, user));
		if (ssq_publish(k->p, pos + i, 1, (uint64_t)i, user))
			break;
	}
	return i;
}

/*
 * SIGTERM to ssqd @d, which must exit 0; what it said of the queues
 * printed, its log removed unless a check failed.
 */
static inline void stall_ssqd_down(pid_t d)
{
	int status = 0;

	CHECK(t_ssqd_stop_ok(d, &status, NULL), "ssqd exit 0x%x", status);
	unlink(sock_path);
	print_log();
	if (!test_failures)
		unlink(log_path);
	else
		fprintf(stderr, "ssqd's log: %s\n", log_path);
}

/*
 * After a combiner went on with a request whose FETCH_ADD counts into
 * *@cnt: wait up to 10 s for the count (routing with @k meanwhile), then a
 * further 200 ms in which a second run would show, and say what is seen
 * @after ("after B went on"): the count and the queue's state.
 */
static inline void ran_once_wait(struct ssq_ctl *ctl, struct conn *k,
                                 volatile uint64_t *cnt, const char *after)
{
	double t0;

	for (t0 = now_s(); *cnt == 0 && !ssq_ctl_in_error(ctl) && now_s() - t0 < 10;) {
		ssq_progress(k->p);
		usleep(1000);
	}
	usleep(200000);
	printf("%s: A's request ran %llu time(s), queue %s\n", after,
	       (unsigned long long)*cnt, ssq_ctl_in_error(ctl) ? "in ERROR" : "ready");
}

#endif /* SSQ_TEST_STALL_FLOW_H */
