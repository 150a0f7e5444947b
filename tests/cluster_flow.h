/* SPDX-License-Identifier: MIT */
/*
 * Shared pieces of the tests that run several ssqd as a cluster (--name,
 * --peers): a daemon started with its stderr in a log file, a log's
 * contents, a queue's readiness by name as LIST shows it, and one work
 * request posted and waited for.
 */
#ifndef SSQ_TEST_CLUSTER_FLOW_H
#define SSQ_TEST_CLUSTER_FLOW_H

#include <fcntl.h>
#include "recv_flow.h"
#include "shm/layout.h"

/*
 * ssqd (rssqd_start's, SSQ_EMU_WIRE_FAULT @fault unless NULL) at @sock with
 * @args, its stderr into @log (appended when @append, else truncated;
 * NULL: /dev/null). Returns its pid.
 */
static inline pid_t cf_start(const char *sock, const char *log, int append,
                             const char *fault, const char *const *args)
{
	return t_rssqd_start(sock, RDEPTH, RMAX, fault, args, log ? log : "/dev/null",
	                     append);
}

/* Does the file at @path (its first 64 KiB) hold @needle? */
static inline int cf_file_has(const char *path, const char *needle)
{
	char buf[65536];
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = 0;
	return strstr(buf, needle) != NULL;
}

/*
 * The cluster @cl of @n daemons named @names for a test tagged @tag, with
 * the receive pool rssqd_start's give (t_cluster_files).
 */
static inline void cf_cluster_files(struct t_cluster *cl, const char *tag, unsigned n,
                                    const char *const *names, int append)
{
	t_cluster_files(cl, tag, n, names, RDEPTH, RMAX, append);
}

/* A LIST of @c: is its queue @name READY? 1, 0, or -1 when it has none such. */
static inline int cf_ready(struct ssq_client *c, const char *name)
{
	struct ssq_queue_info info[SSQ_MAX_QUEUES];
	int n = ssq_client_list(c, info, SSQ_MAX_QUEUES), i;

	for (i = 0; i < n && i < (int)SSQ_MAX_QUEUES; i++)
		if (!strcmp(info[i].name, name))
			return info[i].ready;
	return -1;
}

/* Poll cf_ready until it says @want, for up to @secs; 1 if it did. */
static inline int cf_wait_ready(struct ssq_client *c, const char *name, int want,
                                double secs)
{
	double t0 = now_s();

	while (now_s() - t0 < secs) {
		if (cf_ready(c, name) == want)
			return 1;
		usleep(10000);
	}
	return 0;
}

/*
 * One signaled @op of @len bytes from @l + @loff to @r + @roff (@r NULL: a
 * SEND) on @p with wr_id @id: posted within @secs, retrying -EAGAIN (and
 * -EIO when @retry_eio: while a queue restarts or waits for its link); its
 * own completion within @secs + 10 s, older ones (flushes) skipped. Its
 * status, -1000 + the post's -errno, or -1 when none came.
 */
static inline int cf_one(struct ssq_producer *p, enum ibv_wr_opcode op,
                         const struct ssq_buf *l, uint64_t loff, uint32_t len,
                         const struct ssq_buf *r, uint64_t roff, uint64_t id, double secs,
                         int retry_eio)
{
	struct ibv_sge sge = { l->iova + loff, len, l->lkey };
	struct ibv_send_wr wr, *bad = NULL;
	struct ssq_completion comp;
	double t0 = now_s();
	int rc;

	t_wr_one(&wr, &sge, op, id, r ? r->remote_addr + roff : 0, r ? r->rkey : 0);
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD)
		wr.wr.atomic.compare_add = 5;
	while ((rc = ssq_post_wr(p, &wr, &bad)) &&
	       (rc == -EAGAIN || (retry_eio && rc == -EIO)) && now_s() - t0 < secs)
		usleep(1000);
	if (rc)
		return -1000 + rc;
	while (now_s() - t0 < secs + 10) {
		int n = ssq_poll(p, &comp, 1);

		if (n == 1 && comp.wr_id == id)
			return (int)comp.status;
		if (n != 1)
			usleep(100);
	}
	return -1;
}

/*
 * Two clients @a and @b of the ssqd @pid at @sock, each with q0 open (@qa,
 * @qb), and two 64-byte buffers of @b's (@src, @dst): the set-up of the
 * tests where A scribbles and B must still be served. 0, or -1 having said
 * why.
 */
static inline int cf_two_clients(const char *sock, pid_t pid, struct ssq_client **a,
                                 struct ssq_client **b, struct ssq_queue **qa,
                                 struct ssq_queue **qb, struct ssq_buf *src,
                                 struct ssq_buf *dst)
{
	*a = ssqd_connect_pid(sock, pid);
	*b = *a ? ssqd_connect_pid(sock, pid) : NULL;
	if (!*a || !*b || ssq_queue_open(*a, "q0", qa) || ssq_queue_open(*b, "q0", qb) ||
	    ssq_buf_alloc(*b, 64, src) || ssq_buf_alloc(*b, 64, dst)) {
		fprintf(stderr, "ssqd did not start: %s\n",
		        *b   ? ssq_client_error(*b)
		        : *a ? ssq_client_error(*a)
		             : "-");
		return -1;
	}
	return 0;
}

#endif
