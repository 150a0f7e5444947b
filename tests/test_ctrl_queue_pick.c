/* SPDX-License-Identifier: MIT */
/*
 * ssq_queue_open of "any": ssqd picks one of its queues to the peer for
 * each open (issue 29: several shared queues to one peer, one per process):
 *  - NPROC processes, each with a connection of its own, open "any" of an
 *    ssqd with --queues NQ and hold it: they land NPROC / NQ on each queue
 *    (the first NQ on distinct ones), ssq_queue_name names the queue as
 *    ssqd lists it, and each posts a run of signaled WRITEs there and gets
 *    them back in its own order;
 *  - an open after others closed goes to the emptiest queue;
 *  - a queue the client may not use (--queue-uid for another uid) is never
 *    picked; with every queue so restricted, -EACCES naming the options;
 *  - bad names are refused, naming what was asked: "bob/any" without a
 *    cluster (-ENOENT), "/any" (-ENOENT, no such queue), a grant on "any"
 *    (-EINVAL: a grant binds to one queue).
 */
#include <poll.h>
#include "ctrl_flow.h"

#define NQ       3
#define NPROC    (2 * NQ)
#define NPOST    32
#define NAME_LEN 32 /* struct ssq_queue_info.name: ssqd's names */

/*
 * ssqd on the test's device with --queues @nq, its queues @qa and @qb
 * another uid's (--queue-uid, this uid + @ua, + @ub; @qa NULL: none), its
 * pid in @d: a client of it, or NULL (said why).
 */
static struct ssq_client *start_pick(pid_t *d, const char *nq, const char *qa,
                                     unsigned ua, const char *qb, unsigned ub)
{
	char other_a[32], other_b[32];
	const char *args[] = { "--device",
		               test_device(),
		               "--socket",
		               sock_path,
		               "--hugepages=off",
		               "--data-mib",
		               "8",
		               "--sq-size",
		               "256",
		               "--queues",
		               nq,
		               qa ? "--queue-uid" : NULL,
		               other_a,
		               "--queue-uid",
		               other_b,
		               NULL };

	if (qa) {
		snprintf(other_a, sizeof(other_a), "%s=%u", qa, (unsigned)getuid() + ua);
		snprintf(other_b, sizeof(other_b), "%s=%u", qb, (unsigned)getuid() + ub);
	}
	*d = t_ssqd_exec(args, NULL, NULL, NULL, 0);
	return connect_retry(*d);
}

/*
 * One sender: its own connection, "any" opened, the name it got written to
 * @report, NPOST signaled WRITEs into its own buffer and their completions
 * checked in order; then it holds the queue until @go says "done" (so that
 * every sender's pick saw the others'). Exit status 0 or 1.
 */
static int sender(int report, int go)
{
	struct ssq_client *c = t_ssqd_connect(sock_path, 0);
	char name[NAME_LEN] = "";
	struct ssq_completion comp;
	struct ssq_producer *p;
	struct ssq_buf a, b;
	struct ssq_queue *q;
	uint64_t want = 0;
	double t0;
	int rc, i;

	if (!c || ssq_queue_open(c, "any", &q) || ssq_buf_alloc(c, 64, &a) ||
	    ssq_buf_alloc(c, 64, &b)) {
		fprintf(stderr, "sender %d: %s\n", getpid(),
		        c ? ssq_client_error(c) : ssq_client_strerror_last());
		(void)!write(report, name, sizeof(name));
		return 1;
	}
	snprintf(name, sizeof(name), "%s", ssq_queue_name(q));
	p = ssq_queue_producer(q);
	for (i = 0; i < NPOST; i++) {
		rc = ssq_post_write(p, a.iova, a.lkey, 64, b.remote_addr, b.rkey,
		                    (uint64_t)i, SSQ_WQE_SIGNALED);
		if (rc) {
			fprintf(stderr, "sender %d on %s: post %d: %d\n", getpid(), name,
			        i, rc);
			name[0] = '!';
			break;
		}
	}
	for (t0 = now_s(); name[0] != '!' && want < NPOST && now_s() - t0 < 60;) {
		if (ssq_poll(p, &comp, 1) != 1) {
			usleep(100);
			continue;
		}
		if (comp.status != IBV_WC_SUCCESS || comp.wr_id != want) {
			fprintf(
			    stderr,
			    "sender %d on %s: completion %llu, status %d, want %llu\n",
			    getpid(), name, (unsigned long long)comp.wr_id, comp.status,
			    (unsigned long long)want);
			name[0] = '!';
		}
		want++;
	}
	if (want < NPOST && name[0] != '!') {
		fprintf(stderr, "sender %d on %s: %llu of %d completions in 60 s\n",
		        getpid(), name, (unsigned long long)want, NPOST);
		name[0] = '!';
	}
	if (write(report, name, sizeof(name)) != sizeof(name))
		return 1;
	/* Hold the queue until every sender has reported. */
	if (read(go, &rc, 1) < 0)
		return 1;
	ssq_client_close(c);
	return name[0] == '!';
}

/* NPROC senders at once: each "any" open's queue, balanced, posts in order. */
static void many_processes(void)
{
	int report[2], go[2], count[NQ] = { 0 }, i, k, st;
	char names[NPROC][NAME_LEN];
	pid_t kids[NPROC];

	if (pipe(report) || pipe(go)) {
		CHECK(0, "pipe: %s", strerror(errno));
		return;
	}
	for (i = 0; i < NPROC; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			close(report[0]);
			close(go[1]);
			_exit(sender(report[1], go[0]));
		}
	}
	close(report[1]);
	close(go[0]);
	for (i = 0; i < NPROC; i++) {
		struct pollfd pf = { .fd = report[0], .events = POLLIN };

		names[i][0] = '\0';
		/* Generous: NPROC processes connect and post on a loaded machine. */
		if (poll(&pf, 1, 120000) != 1 ||
		    read(report[0], names[i], NAME_LEN) != NAME_LEN) {
			CHECK(0, "sender report %d of %d: none within 120 s", i + 1,
			      NPROC);
			break;
		}
		names[i][NAME_LEN - 1] = '\0';
		CHECK(names[i][0] != '!',
		      "a sender's WRITEs on %s did not complete in order", names[i] + 1);
		if (sscanf(names[i], "q%d", &k) == 1 && k >= 0 && k < NQ)
			count[k]++;
		else
			CHECK(names[i][0] == '!', "a sender's queue name \"%s\"",
			      names[i]);
	}
	close(go[1]); /* every sender reads EOF: done */
	for (i = 0; i < NPROC; i++) {
		CHECK(waitpid(kids[i], &st, 0) == kids[i] && WIFEXITED(st) &&
		          WEXITSTATUS(st) == 0,
		      "sender %d: status 0x%x", i, st);
	}
	close(report[0]);
	for (k = 0; k < NQ; k++)
		CHECK(count[k] == NPROC / NQ, "q%d: %d of %d senders, want %d (%d/%d/%d)",
		      k, count[k], NPROC, NPROC / NQ, count[0], count[1], count[2]);
}

/* Opens on one connection, closes between: each open goes to the emptiest. */
static void emptiest(struct ssq_client *c)
{
	struct ssq_queue *q[NQ + 1];
	int i;

	for (i = 0; i < NQ; i++) {
		char want[16];

		snprintf(want, sizeof(want), "q%d", i);
		CHECK(ssq_queue_open(c, "any", &q[i]) == 0, "open %d of \"any\": %s", i,
		      ssq_client_error(c));
		if (test_failures)
			return;
		CHECK(!strcmp(ssq_queue_name(q[i]), want),
		      "open %d of \"any\": %s, want %s", i, ssq_queue_name(q[i]), want);
	}
	/* q1 emptied: the next open goes there, not back to q0. */
	ssq_queue_close(q[1]);
	CHECK(ssq_queue_open(c, "any", &q[1]) == 0 && !strcmp(ssq_queue_name(q[1]), "q1"),
	      "after q1 closed, \"any\": %s (%s)", q[1] ? ssq_queue_name(q[1]) : "-",
	      ssq_client_error(c));
	/* An open by name is as it was, and named as asked. */
	CHECK(ssq_queue_open(c, "q2", &q[NQ]) == 0 &&
	          !strcmp(ssq_queue_name(q[NQ]), "q2"),
	      "open of q2: %s", ssq_client_error(c));
	CHECK(ssq_queue_name(NULL) == NULL, "ssq_queue_name(NULL)");
	for (i = 0; i <= NQ; i++)
		ssq_queue_close(q[i]);
}

/* Names and calls that pick nothing: refused, saying what was asked. */
static void refusals(struct ssq_client *c)
{
	struct ssq_queue *q = NULL;
	struct ssq_desc desc;
	struct ssq_buf b;
	int rc;

	rc = ssq_queue_open(c, "bob/any", &q);
	CHECK(rc == -ENOENT && strstr(ssq_client_error(c), "bob/any") &&
	          strstr(ssq_client_error(c), "no peers"),
	      "\"bob/any\" without a cluster: %d (%s)", rc, ssq_client_error(c));
	rc = ssq_queue_open(c, "/any", &q);
	CHECK(rc == -ENOENT && strstr(ssq_client_error(c), "\"/any\""),
	      "\"/any\": %d (%s)", rc, ssq_client_error(c));
	rc = ssq_queue_open(c, "many", &q);
	CHECK(rc == -ENOENT && strstr(ssq_client_error(c), "\"many\""),
	      "\"many\": %d (%s)", rc, ssq_client_error(c));
	if (ssq_buf_alloc(c, 64, &b)) {
		CHECK(0, "alloc: %s", ssq_client_error(c));
		return;
	}
	rc = ssq_buf_grant(c, "any", &b, 0, 64, IBV_ACCESS_REMOTE_WRITE, &desc);
	/* -EOPNOTSUPP: a device with no windows answers before the name is read. */
	CHECK((rc == -EINVAL && strstr(ssq_client_error(c), "\"any\"") &&
	       strstr(ssq_client_error(c), "one queue")) ||
	          rc == -EOPNOTSUPP,
	      "a grant on \"any\": %d (%s)", rc, ssq_client_error(c));
	ssq_buf_free(c, &b);
}

int main(void)
{
	struct ssq_client *c;
	struct ssq_queue *q[4];
	pid_t d;
	int i, rc;

	t_need_ssqd();
	snprintf(sock_path, sizeof(sock_path), "/tmp/ssq-qpick-%d.sock", getpid());
	c = start_pick(&d, "3", NULL, 0, NULL, 0);
	if (!c) {
		t_ssqd_stop(d, NULL, sock_path);
		return 1;
	}
	many_processes();
	emptiest(c);
	refusals(c);
	ssq_client_close(c);
	t_ssqd_stop(d, NULL, sock_path);

	/* q1 and q2 are another uid's: "any" lands on q0 and q3 only. */
	c = start_pick(&d, "4", "q1", 4242, "q2", 4242);
	for (i = 0; c && i < 4; i++) {
		const char *want = i % 2 ? "q3" : "q0";

		rc = ssq_queue_open(c, "any", &q[i]);
		CHECK(rc == 0 && !strcmp(ssq_queue_name(q[i]), want),
		      "open %d of \"any\" beside --queue-uid q1, q2: %d %s, want %s (%s)",
		      i, rc, rc ? "-" : ssq_queue_name(q[i]), want, ssq_client_error(c));
	}
	ssq_client_close(c);
	t_ssqd_stop(d, NULL, sock_path);

	/* Every queue another uid's: refused, naming the options. */
	c = start_pick(&d, "2", "q0", 4242, "q1", 4243);
	if (c) {
		rc = ssq_queue_open(c, "any", &q[0]);
		CHECK(rc == -EACCES && strstr(ssq_client_error(c), "--queue-uid") &&
		          strstr(ssq_client_error(c), "\"any\""),
		      "\"any\", every queue another uid's: %d (%s)", rc,
		      ssq_client_error(c));
	}
	ssq_client_close(c);
	t_ssqd_stop(d, NULL, sock_path);
	return test_exit("ctrl_queue_pick");
}
