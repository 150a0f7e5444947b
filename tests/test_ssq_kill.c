/* SPDX-License-Identifier: MIT */
/*
 * Producers die while others post: three survivor processes post through
 * one shared queue while at least 100 victim processes attach, post and
 * are killed - by SIGKILL from outside at a random moment, or by
 * themselves at a fault-injection hook: right after the fetch-add that
 * reserved their WQEBBs (before recording it), right after recording it,
 * or just before publishing. ssqd heals after each death.
 *
 * Survivors lose nothing (every message's counter is exactly 1), nothing
 * is executed twice (no counter above 1, victims' included), each
 * survivor gets exactly its completions in order, and no post of a
 * survivor waits longer than the healing deadline allows.
 */
#define SSQ_FAULT_HOOKS 1
#include "ssq_flow.h"
#include <sys/mman.h>

#define SURVIVORS     3u
#define SURVIVOR_MAX  60000u
#define VICTIMS       120u
#define VICTIM_MSGS   60u /* fewer than the 64 source slots: no reuse */
#define STALL_LIMIT_S 2.0

static char sock[108];
static int die_where, die_after;

/* Called by ssq/queue.h at each hook point in this test build. */
void ssq_fault_hook(int where)
{
	if (where == die_where && --die_after == 0)
		raise(SIGKILL);
}

struct survivor_report {
	uint32_t posted;
	double max_post_s;
	int rc;
};

static int open_queue(struct ssq_client **c, struct ssq_queue **q, struct ssq_buf *src)
{
	if (ssq_client_connect(sock, c))
		return -1;
	if (ssq_queue_open(*c, "q0", q) || ssq_buf_alloc(*c, 64 * (CELL + 8), src))
		return -1;
	return 0;
}

static void survivor(uint32_t p, const struct msg_area *a, volatile int *stop,
                     struct survivor_report *rep)
{
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_buf src;

	rep->rc = 1;
	if (open_queue(&c, &q, &src))
		_exit(1);
	rep->rc = run_producer(ssq_queue_producer(q), a, p, SURVIVOR_MAX, stop, src.addr,
	                       src.iova, src.lkey, &rep->max_post_s, &rep->posted);
	_exit(rep->rc);
}

/* A victim posts until it dies; mode 0 waits for the parent's SIGKILL. */
static void victim(uint32_t p, const struct msg_area *a, int mode, int countdown)
{
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_buf src;
	uint32_t i;

	if (open_queue(&c, &q, &src))
		_exit(3);
	die_where = mode;
	die_after = countdown;
	for (i = 0; i < VICTIM_MSGS; i++) {
		uint8_t *buf = (uint8_t *)src.addr + (size_t)i * (CELL + 8);

		while (post_msg(ssq_queue_producer(q), a, p, i,
		                src.iova + (uint64_t)i * (CELL + 8), buf,
		                src.lkey) == -EAGAIN)
			;
	}
	pause(); /* mode 0: the parent's SIGKILL; others died above */
	_exit(2);
}

int main(void)
{
	const char *ssqd = getenv("SSQD");
	struct ssq_client *c = NULL;
	struct ssq_queue *q;
	struct ssq_buf dst, cnt;
	struct survivor_report *rep;
	struct msg_area a;
	volatile int *stop;
	pid_t d, surv[SURVIVORS];
	unsigned v, i, kills = 0, by_hook[4] = { 0 }, bad = 0;
	int status;

	if (!ssqd)
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	signal(SIGPIPE, SIG_IGN);
	srand((unsigned)getpid());
	snprintf(sock, sizeof(sock), "/tmp/ssq-kill-%d.sock", getpid());
	c = ssqd_start(sock, "32", "1024", NULL, &d);
	a.per_proc = SURVIVOR_MAX;
	a.nlong = SURVIVORS;
	a.short_len = VICTIM_MSGS;
	if (!c || ssq_queue_open(c, "q0", &q) ||
	    ssq_buf_alloc(c, (uint64_t)msg_cell(&a, SURVIVORS + VICTIMS, 0) * CELL,
	                  &dst) ||
	    ssq_buf_alloc(c, (uint64_t)msg_cell(&a, SURVIVORS + VICTIMS, 0) * 8, &cnt)) {
		fprintf(stderr, "setup: %s\n",
		        c ? ssq_client_error(c) : ssq_client_strerror_last());
		kill(d, SIGKILL);
		return 1;
	}
	msg_area_place(&a, &dst, &cnt);
	memset(dst.addr, 0, dst.len);
	memset(cnt.addr, 0, cnt.len);
	stop =
	    mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	rep = (struct survivor_report *)((uint8_t *)stop + 64);
	*stop = 0;

	for (i = 0; i < SURVIVORS; i++) {
		surv[i] = fork();
		if (surv[i] == 0)
			survivor(i, &a, stop, &rep[i]);
	}
	for (v = 0; v < VICTIMS; v++) {
		int mode = v % 4,
		    countdown = 1 + rand() % (int)(VICTIM_MSGS * (mode == 3 ? 2 : 1) - 1);
		pid_t pid = fork();

		if (pid == 0)
			victim(SURVIVORS + v, &a, mode, countdown);
		if (mode == 0) {
			usleep((useconds_t)(rand() % 3000));
			kill(pid, SIGKILL);
		}
		waitpid(pid, &status, 0);
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
			kills++;
			by_hook[mode]++;
		}
	}
	*stop = 1;
	for (i = 0; i < SURVIVORS; i++) {
		waitpid(surv[i], &status, 0);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "survivor %u exit 0x%x", i, status);
		CHECK(rep[i].posted > 0, "survivor %u posted nothing", i);
		CHECK(rep[i].max_post_s < STALL_LIMIT_S,
		      "survivor %u waited %.3f s for one post", i, rep[i].max_post_s);
		bad += check_msgs(&a, i, rep[i].posted, 1);
	}
	CHECK(bad == 0, "%u survivor messages lost or duplicated", bad);
	bad = 0;
	for (v = 0; v < VICTIMS; v++)
		bad += check_msgs(&a, SURVIVORS + v, VICTIM_MSGS, 0);
	CHECK(bad == 0, "%u victim messages executed twice or corrupted", bad);
	CHECK(kills >= 100, "only %u kills", kills);
	printf(
	    "%u kills (%u from outside, %u after the fetch-add, %u after recording, %u "
	    "before "
	    "publishing); survivors posted %u, %u, %u messages, longest post %.3f ms\n",
	    kills, by_hook[0], by_hook[1], by_hook[2], by_hook[3], rep[0].posted,
	    rep[1].posted, rep[2].posted,
	    1e3 * (rep[0].max_post_s > rep[1].max_post_s
	               ? (rep[0].max_post_s > rep[2].max_post_s ? rep[0].max_post_s
	                                                        : rep[2].max_post_s)
	               : (rep[1].max_post_s > rep[2].max_post_s ? rep[1].max_post_s
	                                                        : rep[2].max_post_s)));
	ssq_client_close(c);
	CHECK(t_ssqd_stop_ok(d, &status, NULL), "ssqd exit 0x%x", status);
	unlink(sock);
	return test_exit("ssq_kill");
}
