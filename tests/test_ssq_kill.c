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
#include "kill_storm.h"

#define SURVIVORS     3u
#define SURVIVOR_MAX  60000u
#define VICTIMS       120u
#define VICTIM_MSGS   60u /* fewer than the 64 source slots: no reuse */
#define STALL_LIMIT_S 2.0

static int die_where, die_after;

/* Called by ssq/queue.h at each hook point in this test build. */
void ssq_fault_hook(int where)
{
	if (where == die_where && --die_after == 0)
		raise(SIGKILL);
}

static void survivor(uint32_t p, const struct msg_area *a, volatile int *stop,
                     struct survivor_report *rep)
{
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_buf src;

	rep->rc = 1;
	if (storm_open_queue(&c, &q, &src))
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

	if (storm_open_queue(&c, &q, &src))
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
	struct storm s = { .survivors = SURVIVORS,
		           .victims = VICTIMS,
		           .victim_msgs = VICTIM_MSGS };
	struct survivor_report *rep;
	pid_t surv[SURVIVORS];
	unsigned v, kills = 0, by_hook[4] = { 0 };
	int status;

	if (storm_up(&s, "kill", "32", SURVIVOR_MAX))
		return 1;
	rep = s.rep;
	storm_fork_survivors(&s, surv, survivor);
	for (v = 0; v < VICTIMS; v++) {
		int mode = v % 4,
		    countdown = 1 + rand() % (int)(VICTIM_MSGS * (mode == 3 ? 2 : 1) - 1);
		pid_t pid = fork();

		if (pid == 0)
			victim(SURVIVORS + v, &s.a, mode, countdown);
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
	storm_check(&s, surv, kills, STALL_LIMIT_S);
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
	storm_down(&s);
	return test_exit("ssq_kill");
}
