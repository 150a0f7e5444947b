/* SPDX-License-Identifier: MIT */
/*
 * The kill storm of ssq_kill and ssq_combine_kill: an ssqd, one queue, a
 * message area (ssq_flow.h) for survivors and victims, and a shared page
 * for the stop flag and the survivors' reports; after the storm, the checks
 * both make: survivors exited 0, posted, never waited past the limit and
 * lost nothing; no victim message ran twice; at least 100 kills.
 * Include after ssq_flow.h (or combine_flow.h).
 */
#ifndef SSQ_TEST_KILL_STORM_H
#define SSQ_TEST_KILL_STORM_H

#include <sys/mman.h>

struct survivor_report {
	uint32_t posted;
	double max_post_s;
	int rc;
};

/* The socket of the storm's ssqd (children open their own clients on it). */
static char storm_sock[108];

struct storm {
	unsigned survivors, victims, victim_msgs;
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_buf dst, cnt;
	struct msg_area a;
	uint8_t *page;               /* shared with the children */
	volatile int *stop;          /* page + 0: survivors stop posting */
	struct survivor_report *rep; /* page + 64: one per survivor */
	pid_t d;
};

/* A child's own client of the storm's ssqd: q0 and 64 source slots. */
static inline int storm_open_queue(struct ssq_client **c, struct ssq_queue **q,
                                   struct ssq_buf *src)
{
	if (ssq_client_connect(storm_sock, c))
		return -1;
	if (ssq_queue_open(*c, "q0", q) || ssq_buf_alloc(*c, 64 * (CELL + 8), src))
		return -1;
	return 0;
}

/*
 * ssqd for test @tag (--data-mib @data_mib, 1024-WQEBB queue), q0 opened,
 * the message area for @s's survivors (@survivor_max messages each) and
 * victims, zeroed, and the shared page. Skips (77) without $SSQD. 0, or
 * -1 after saying why, with ssqd killed.
 */
static inline int storm_up(struct storm *s, const char *tag, const char *data_mib,
                           uint32_t survivor_max)
{
	uint64_t cells;

	t_need_ssqd();
	srand((unsigned)getpid());
	snprintf(storm_sock, sizeof(storm_sock), "/tmp/ssq-%s-%d.sock", tag,
	         (int)getpid());
	s->c = ssqd_start(storm_sock, data_mib, "1024", NULL, &s->d);
	s->a.per_proc = survivor_max;
	s->a.nlong = s->survivors;
	s->a.short_len = s->victim_msgs;
	cells = msg_cell(&s->a, s->survivors + s->victims, 0);
	if (!s->c || ssq_queue_open(s->c, "q0", &s->q) ||
	    ssq_buf_alloc(s->c, cells * CELL, &s->dst) ||
	    ssq_buf_alloc(s->c, cells * 8, &s->cnt)) {
		fprintf(stderr, "setup: %s\n",
		        s->c ? ssq_client_error(s->c) : ssq_client_strerror_last());
		kill(s->d, SIGKILL);
		return -1;
	}
	msg_area_place(&s->a, &s->dst, &s->cnt);
	memset(s->dst.addr, 0, s->dst.len);
	memset(s->cnt.addr, 0, s->cnt.len);
	s->page =
	    mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (s->page == MAP_FAILED) {
		kill(s->d, SIGKILL);
		return -1;
	}
	s->stop = (volatile int *)s->page;
	s->rep = (struct survivor_report *)(s->page + 64);
	*s->stop = 0;
	return 0;
}

/* A survivor process's life: it posts until *@stop, reports, exits. */
typedef void storm_survivor_fn(uint32_t p, const struct msg_area *a, volatile int *stop,
                               struct survivor_report *rep);

/* @s's survivors forked, their pids into @surv, each running @fn. */
static inline void storm_fork_survivors(struct storm *s, pid_t *surv,
                                        storm_survivor_fn *fn)
{
	unsigned i;

	for (i = 0; i < s->survivors; i++) {
		surv[i] = fork();
		if (surv[i] == 0)
			fn(i, &s->a, s->stop, &s->rep[i]);
	}
}

/*
 * The storm is over (@kills victims killed): survivors stopped and
 * reaped, and every check both tests make on what they and the victims
 * left.
 */
static inline void storm_check(struct storm *s, const pid_t *surv, unsigned kills,
                               double stall_limit_s)
{
	unsigned i, bad = 0;
	int status;

	*s->stop = 1;
	for (i = 0; i < s->survivors; i++) {
		waitpid(surv[i], &status, 0);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "survivor %u exit 0x%x", i, status);
		CHECK(s->rep[i].posted > 0, "survivor %u posted nothing", i);
		CHECK(s->rep[i].max_post_s < stall_limit_s,
		      "survivor %u waited %.3f s for one post", i, s->rep[i].max_post_s);
		bad += check_msgs(&s->a, i, s->rep[i].posted, 1);
	}
	CHECK(bad == 0, "%u survivor messages lost or duplicated", bad);
	bad = 0;
	for (i = 0; i < s->victims; i++)
		bad += check_msgs(&s->a, s->survivors + i, s->victim_msgs, 0);
	CHECK(bad == 0, "%u victim messages executed twice or corrupted", bad);
	CHECK(kills >= 100, "only %u kills", kills);
}

/* The storm's ssqd stopped, which must exit 0. */
static inline void storm_down(struct storm *s)
{
	int status = 0;

	ssq_client_close(s->c);
	CHECK(t_ssqd_stop_ok(s->d, &status, storm_sock), "ssqd exit 0x%x", status);
}

#endif
