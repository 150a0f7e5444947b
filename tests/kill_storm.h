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

#ifdef SSQ_TEST_COMBINE_FLOW_H
/*
 * The combining storms (test_ssq_combine_kill.c, test_ssq_combine_batch_kill.c)
 * share their survivors, their victims' posting and the parent's driving
 * of each victim; what a victim dies holding is each test's own.
 */

/*
 * SIGSTOP to this process from a POSIX timer 1 ms from now: it comes as the
 * process runs in user space, which stops it outside any system call
 * (state T, /proc/PID/syscall "-1 SP PC": checked on Linux 6.x).
 */
static inline void storm_stop_self_soon(void)
{
	struct sigevent ev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGSTOP };
	struct itimerspec its = { .it_value = { 0, 1000000 } };
	timer_t t;

	if (timer_create(CLOCK_MONOTONIC, &ev, &t) == 0)
		(void)timer_settime(t, 0, &its, NULL);
}

/*
 * A survivor posting every message through combining, up to
 * @a->per_proc (storm_up's survivor_max): about 1 ms asleep per 16
 * messages, each pause with a request handed over, so that victims
 * combine them and the survivors outlast the victims.
 */
static inline void storm_comb_survivor(uint32_t p, const struct msg_area *a,
                                       volatile int *stop, struct survivor_report *rep)
{
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_buf src;

	rep->rc = 1;
	if (storm_open_queue(&c, &q, &src))
		_exit(1);
	run_combined_pace_every = 16;
	run_combined_pace_us = 1000;
	rep->rc = run_combined(ssq_queue_producer(q), a, p, a->per_proc, stop, src.addr,
	                       src.iova, src.lkey, 0, &rep->max_post_s, &rep->posted);
	_exit(rep->rc);
}

/*
 * A combining victim's life: its client opened (exit 3 if not), its
 * producer into *@me for the test's hook, then @p's @n messages posted
 * through combining; a victim of @mode 0 waits for the parent's SIGKILL,
 * any other should have died at its hook (the test set where before):
 * exit 2, not counted.
 */
static inline void storm_comb_victim(uint32_t p, const struct msg_area *a, int mode,
                                     uint32_t n, struct ssq_producer **me)
{
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_buf src;
	uint32_t i, got = 0;

	if (storm_open_queue(&c, &q, &src))
		_exit(3);
	*me = ssq_queue_producer(q);
	for (i = 0; i < n; i++) {
		uint8_t *buf = (uint8_t *)src.addr + (size_t)i * (CELL + 8);

		while (post_msg_comb(ssq_queue_producer(q), a, p, i,
		                     src.iova + (uint64_t)i * (CELL + 8), buf, src.lkey,
		                     0, &got) == -EAGAIN)
			reap(ssq_queue_producer(q), p, &got);
	}
	if (mode)
		_exit(2); /* its hook never came: not counted */
	pause();          /* the parent's SIGKILL */
	_exit(2);
}

/*
 * At its hook, a victim to be stopped: storm_stop_self_soon, then it
 * spins, its pid in *@spinning for the parent's SIGSTOP should the timer
 * fail (storm_reap_victim), until ssqd kills it.
 */
static inline void storm_stop_and_spin(pid_t *spinning)
{
	storm_stop_self_soon();
	__atomic_store_n(spinning, getpid(), __ATOMIC_RELEASE);
	for (;;)
		__atomic_load_n(spinning, __ATOMIC_RELAXED);
}

/*
 * The parent's part in victim @pid's life, which is reaped on return.
 * Not @at_hook: it posts and is killed (SIGKILL) from here at a random
 * moment up to 3 ms on. @at_hook: it dies at its hook, else is done
 * posting, within 5 s, else is killed from here; one that announces in
 * *@spinning that it waits at its hook is stopped (SIGSTOP) for ssqd to
 * kill, 5 s more. 1 if it died of SIGKILL and counts as a kill: at its
 * hook (or by ssqd), or from here when not @at_hook.
 */
static inline int storm_reap_victim(pid_t pid, int at_hook, pid_t *spinning)
{
	int status;

	if (!at_hook)
		usleep((useconds_t)(rand() % 3000));
	else {
		/* Its hook, else done posting: up to 5 s, then ours. */
		double t0 = now_s();

		while (waitpid(pid, &status, WNOHANG) == 0 && now_s() - t0 < 5) {
			if (__atomic_load_n(spinning, __ATOMIC_ACQUIRE) == pid) {
				/* ssqd's to kill: up to 5 s more. */
				kill(pid, SIGSTOP);
				*spinning = 0;
				t0 = now_s();
			}
			usleep(1000);
		}
		if (now_s() - t0 < 5)
			return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && !at_hook;
}
#endif

#endif
