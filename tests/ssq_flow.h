/* SPDX-License-Identifier: MIT */
/*
 * Shared pieces of the shared-queue tests: what one message is, how a
 * producer posts and checks it, how ssqd is started for them.
 *
 * A message (producer p, sequence i) is two WQEs reserved as one batch:
 *   - an RDMA WRITE of a 64-byte payload tagged (p, i) to cell (p, i) of the
 *     destination area;
 *   - an ATOMIC_FA of +1 on counter (p, i).
 * The payload proves the data arrived; the counter, which a second
 * execution would make 2, proves it arrived exactly once. Every
 * SIGNAL_EVERY-th message's FA is signaled, with wr_id = i, so each
 * producer can check it gets exactly its completions, in posting order.
 */
#ifndef SSQ_TEST_SSQ_FLOW_H
#define SSQ_TEST_SSQ_FLOW_H

#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "lib/tlib.h"
#include <sys/wait.h>
#include <ssq/ssq.h>
#include <ssq/client.h>
#include "helpers.h"
#include "test_device.h"

#define CELL         64u
#define SIGNAL_EVERY 8u

struct msg_area {
	uint64_t dst_iova;  /* CELL bytes per message */
	uint64_t cnt_iova;  /* 8 bytes per message */
	uint32_t rkey;      /* of the destination cells */
	uint32_t cnt_rkey;  /* of the counters; 0: rkey (one MR holds both) */
	uint32_t per_proc;  /* cells of each of producers 0 .. nlong - 1 */
	uint32_t nlong;     /* producers with per_proc cells; */
	uint32_t short_len; /* the others have short_len cells each, after them */
	uint8_t *dst;       /* local view, for checking (loopback: same arena) */
	uint64_t *cnt;
};

/*
 * @a over one region of the emulated device's testbed (@iova, key @key,
 * local view @mem): @nlong producers of @per_proc cells each, then their
 * counters, 8 bytes a message, after the cells.
 */
static inline void msg_area_local(struct msg_area *a, uint64_t iova, uint32_t key,
                                  uint8_t *mem, uint32_t nlong, uint32_t per_proc)
{
	size_t cells = (size_t)nlong * per_proc * CELL;

	a->dst_iova = iova;
	a->cnt_iova = iova + cells;
	a->rkey = key;
	a->per_proc = per_proc;
	a->nlong = nlong;
	a->short_len = 0;
	a->dst = mem;
	a->cnt = (uint64_t *)(mem + cells);
}

/*
 * Put @a's destination cells in @dst and its counters in @cnt, buffers of
 * the ssqd at the queue's other end (loopback: this one; between two
 * daemons the other host's), each reached at its remote descriptor. The
 * geometry (per_proc, nlong, short_len) is the caller's.
 */
static inline void msg_area_place(struct msg_area *a, const struct ssq_buf *dst,
                                  const struct ssq_buf *cnt)
{
	a->dst_iova = dst->remote_addr;
	a->cnt_iova = cnt->remote_addr;
	a->rkey = dst->rkey;
	a->cnt_rkey = cnt->rkey;
	a->dst = dst->addr;
	a->cnt = cnt->addr;
}

/* Message (p, i)'s cell: its destination and counter index. */
static inline uint64_t msg_cell(const struct msg_area *a, uint32_t p, uint32_t i)
{
	if (p < a->nlong)
		return (uint64_t)p * a->per_proc + i;
	return (uint64_t)a->nlong * a->per_proc +
	       (uint64_t)(p - a->nlong) * a->short_len + i;
}

/* The tag a message's payload carries in every 8-byte word. */
static inline uint64_t msg_tag(uint32_t p, uint32_t i)
{
	return 0x5500000000000000ull | ((uint64_t)p << 32) | i;
}

static inline double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/*
 * Post message (p, i) through @prod from @src_local (CELL bytes, then 8 for
 * the FA's result), which WQEs reach as @src_iova under @lkey.
 * Returns 0, or the reserve error.
 */
static inline int post_msg(struct ssq_producer *prod, const struct msg_area *a,
                           uint32_t p, uint32_t i, uint64_t src_iova, uint8_t *src_local,
                           uint32_t lkey)
{
	uint64_t pos, cell = msg_cell(a, p, i), *w = (uint64_t *)src_local;
	unsigned k, user = (i % SIGNAL_EVERY == SIGNAL_EVERY - 1) ? SSQ_WQE_SIGNALED : 0;
	struct ssq_sq *sq = ssq_producer_sq(prod);
	int rc;

	for (k = 0; k < CELL / 8; k++)
		w[k] = msg_tag(p, i);
	rc = ssq_reserve(prod, 2, &pos);
	if (rc)
		return rc;
	ssq_prep_rdma_write(sq, (uint32_t)pos, src_iova, lkey, CELL,
	                    a->dst_iova + cell * CELL, a->rkey,
	                    ssq_wqe_flags(prod, pos, 1, 0));
	ssq_publish(prod, pos, 1, ~0ull, 0);
	ssq_prep_atomic(sq, (uint32_t)pos + 1, MLX5_OPCODE_ATOMIC_FA, src_iova + CELL,
	                lkey, a->cnt_iova + cell * 8, a->cnt_rkey ? a->cnt_rkey : a->rkey,
	                1, 0, ssq_wqe_flags(prod, pos + 1, 1, user));
	ssq_publish(prod, pos + 1, 1, i, user);
	ssq_submit(prod);
	return 0;
}

/* Take completions; each must be the next expected one. Returns -1 on a wrong one. */
static inline int reap(struct ssq_producer *prod, uint32_t p, uint32_t *got)
{
	struct ssq_completion comp[16];
	int n = ssq_poll(prod, comp, 16), k;

	for (k = 0; k < n; k++, (*got)++) {
		uint64_t expect = (uint64_t)*got * SIGNAL_EVERY + SIGNAL_EVERY - 1;

		if (comp[k].status != IBV_WC_SUCCESS || comp[k].wr_id != expect) {
			fprintf(stderr,
			        "producer %u: completion %u: status %d (%s) wr_id %llu, "
			        "expected %llu\n",
			        p, *got, comp[k].status,
			        ibv_wc_status_str((enum ibv_wc_status)comp[k].status),
			        (unsigned long long)comp[k].wr_id,
			        (unsigned long long)expect);
			return -1;
		}
	}
	return n;
}

/* What the queue looks like, for a stall report. */
static inline void dump_ctl(const struct ssq_producer *prod)
{
	const struct ssq_ctl *c = prod->ctl;
	const struct ssq_ctl_slot *s = ssq__slot(prod, c->published);
	uint32_t i;

	fprintf(stderr,
	        "  reserve %llu published %llu completed %llu db_value %llu db_lease %u "
	        "cq_lease %u "
	        "cq_ci %u state %u\n  slot at published: seq %llu len %u owner %u\n",
	        (unsigned long long)c->reserve, (unsigned long long)c->published,
	        (unsigned long long)c->completed, (unsigned long long)c->db_value,
	        c->db_lease, c->cq_lease, c->cq_ci, c->state, (unsigned long long)s->seq,
	        s->len, s->owner);
	for (i = 0; i < SSQ_MAX_PRODUCERS; i++)
		if (c->producers[i].state != SSQ_PROD_FREE)
			fprintf(stderr,
			        "  producer %u: state %u pos %llu len %u posted %llu "
			        "done %llu\n",
			        i, c->producers[i].state,
			        (unsigned long long)c->producers[i].pos,
			        c->producers[i].len,
			        (unsigned long long)c->producers[i].posted,
			        (unsigned long long)c->producers[i].done);
}

/*
 * How run_posts posts message (p, i) from @buf at @iova: post_msg, or
 * another way (combine_flow.h), with @arg for it; *@got counts completions
 * it reaped itself. Returns 0, -EAGAIN (no room yet: reap, then again), or
 * an error.
 */
typedef int msg_post_fn(struct ssq_producer *prod, const struct msg_area *a, uint32_t p,
                        uint32_t i, uint64_t iova, uint8_t *buf, uint32_t lkey,
                        const void *arg, uint32_t *got);

/*
 * How run_posts runs: @post with @arg posts each message; @before_wait
 * (unless NULL) comes before each reap that waits for a completion (a
 * combining producer posts what it still holds: the awaited message may be
 * among it); with @pace_every, every @pace_every-th message is followed by
 * a sleep of @pace_us. With @daemon (the ssqd that heals the queue), a
 * post that has to wait (-EAGAIN: a dead or stopped holder's hole, until
 * ssqd heals it) is timed less what ssqd's serve loop spent runnable but
 * off a CPU meanwhile (t_proc_run_wait): on a loaded machine that, not
 * ssqd, is what stretches the wait, and ssqd's promise (a stopped holder
 * killed at --stall-ms, a running one's hold taken back at ten times it)
 * is about its own acts.
 */
struct msg_posting {
	msg_post_fn *post;
	const void *arg;
	void (*before_wait)(struct ssq_producer *prod);
	unsigned pace_every, pace_us;
	pid_t daemon;
};

/*
 * Post messages (p, 0 ..) as @how says until @n are posted or *@stop is
 * set, then wait for their completions: exactly the signaled ones, in
 * order, successful. A source slot (64 of them) is reused only once its
 * message is known done. Returns 0 with *@posted (if not NULL) and the
 * longest post in *@max_post_s (if not NULL), or 1 after printing why.
 */
static inline int run_posts(struct ssq_producer *prod, const struct msg_area *a,
                            uint32_t p, uint32_t n, const volatile int *stop,
                            uint8_t *src, uint64_t src_iova, uint32_t lkey,
                            const struct msg_posting *how, double *max_post_s,
                            uint32_t *posted)
{
	uint32_t i, got = 0;
	double t0 = now_s(), t, w0, w1, s0;
	int rc;

	/* Stop only after a signaled message: its completion covers all before. */
	for (i = 0; i < n && !(stop && *stop && i % SIGNAL_EVERY == 0); i++) {
		uint8_t *buf = src + (size_t)(i % 64) * (CELL + 8);
		uint64_t iova = src_iova + (uint64_t)(i % 64) * (CELL + 8);

		/* `got` signaled FAs: messages below got * SIGNAL_EVERY are done. */
		while (i >= 64 && (uint64_t)got * SIGNAL_EVERY < i - 63) {
			if (how->before_wait)
				how->before_wait(prod);
			if (reap(prod, p, &got) < 0)
				return 1;
			if (now_s() - t0 > 60) {
				fprintf(stderr, "producer %u: stalled at %u\n", p, i);
				dump_ctl(prod);
				return 1;
			}
		}
		/*
		 * The waits for a CPU of ssqd and of this thread, from the
		 * post's start: a post can spin a long time before its first
		 * -EAGAIN (ssq_reserve's SSQ_RESERVE_SPINS), while a starved
		 * ssqd has yet to kill a stopped holder.
		 */
		w0 = how->daemon ? t_proc_run_wait(how->daemon) : -1;
		s0 = how->daemon ? t_proc_run_wait(0) : -1;
		t = now_s();
		while ((rc = how->post(prod, a, p, i, iova, buf, lkey, how->arg, &got)) ==
		       -EAGAIN) {
			if (reap(prod, p, &got) < 0)
				return 1;
		}
		if (rc) {
			fprintf(stderr,
			        "producer %u: post %u: %d (epoch %u, hand word 0x%llx, "
			        "owed %u, state %u)\n",
			        p, i, rc, prod->ctl->epoch,
			        (unsigned long long)prod->me->hand.word, prod->hand_owed,
			        prod->me->state);
			dump_ctl(prod);
			return 1;
		}
		t = now_s() - t;
		if (w0 >= 0 && (w1 = t_proc_run_wait(how->daemon)) >= w0) {
			/*
			 * The larger of the two waits, not their sum: both may
			 * have waited at once, and a sum would hide a stall.
			 */
			double w = w1 - w0, s = s0 >= 0 ? t_proc_run_wait(0) - s0 : 0;

			if (s > w)
				w = s;
			if (t > 1.0)
				fprintf(
				    stderr,
				    "producer %u: post %u waited %.3f s, %.3f s of it "
				    "ssqd's or its own wait for a CPU\n",
				    p, i, t, w);
			t -= w;
		}
		if (max_post_s && t > *max_post_s)
			*max_post_s = t;
		if (how->pace_every && i % how->pace_every == 0)
			usleep(how->pace_us);
	}
	if (posted)
		*posted = i;
	while (got < i / SIGNAL_EVERY) {
		if (how->before_wait)
			how->before_wait(prod);
		if (reap(prod, p, &got) < 0)
			return 1;
		if (now_s() - t0 > 60) {
			fprintf(stderr, "producer %u: %u of %u completions\n", p, got,
			        i / SIGNAL_EVERY);
			dump_ctl(prod);
			return 1;
		}
	}
	usleep(1000);
	rc = reap(prod, p, &got);
	if (rc) {
		fprintf(stderr, "producer %u: %d completions nobody asked for\n", p, rc);
		return 1;
	}
	return 0;
}

static inline int post_msg_plain(struct ssq_producer *prod, const struct msg_area *a,
                                 uint32_t p, uint32_t i, uint64_t iova, uint8_t *buf,
                                 uint32_t lkey, const void *arg, uint32_t *got)
{
	(void)arg, (void)got;
	return post_msg(prod, a, p, i, iova, buf, lkey);
}

/* run_posts with post_msg; @n a multiple of SIGNAL_EVERY. */
static inline int run_producer(struct ssq_producer *prod, const struct msg_area *a,
                               uint32_t p, uint32_t n, const volatile int *stop,
                               uint8_t *src, uint64_t src_iova, uint32_t lkey,
                               double *max_post_s, uint32_t *posted)
{
	/*
	 * Completion of the last signaled message covers everything before
	 * it; trailing unsignaled ones would go unchecked, so refuse them.
	 */
	if (n % SIGNAL_EVERY) {
		fprintf(stderr, "run_producer: %u messages, not a multiple of %u\n", n,
		        SIGNAL_EVERY);
		return 1;
	}
	const struct msg_posting how = { .post = post_msg_plain };

	return run_posts(prod, a, p, n, stop, src, src_iova, lkey, &how, max_post_s,
	                 posted);
}

/*
 * A producer thread of the in-process tests (ssq_threads, ssq_ctl_check,
 * ssq_combine): its producer handle, run_producer's (run_combined's)
 * arguments, and what came of it.
 */
struct msg_worker {
	pthread_t tid;
	struct ssq_producer prod;
	const struct msg_area *a;
	uint8_t *src;
	uint64_t src_iova;
	uint32_t lkey, id, n;
	int direct; /* run_combined: with ssq_post_* instead of combining */
	int rc, done;
};

/* A msg_worker's thread: run_producer for its @n messages, then done. */
static inline void *msg_worker_run(void *arg)
{
	struct msg_worker *w = arg;

	w->rc = run_producer(&w->prod, w->a, w->id, w->n, NULL, w->src, w->src_iova,
	                     w->lkey, NULL, NULL);
	__atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * A producer process's whole run against the ssqd at @sock: connect, open
 * q0, a source area of 64 slots, then run_producer() for @n messages as
 * producer @p. Returns its exit code (1 after printing why).
 */
static inline int producer_process(const char *sock, const struct msg_area *a, uint32_t p,
                                   uint32_t n)
{
	struct ssq_client *c = NULL;
	struct ssq_queue *q;
	struct ssq_buf src;

	if (ssq_client_connect(sock, &c) || ssq_queue_open(c, "q0", &q) ||
	    ssq_buf_alloc(c, 64 * (CELL + 8), &src)) {
		fprintf(stderr, "producer %u: %s%s\n", p, ssq_client_strerror_last(),
		        c ? ssq_client_error(c) : "");
		return 1;
	}
	return run_producer(ssq_queue_producer(q), a, p, n, NULL, src.addr, src.iova,
	                    src.lkey, NULL, NULL);
}

/*
 * Check messages (p, 0 .. n-1): counter exactly 1 (or, unless
 * @exactly_once, 0 or 1), and the payload wherever the counter is 1.
 * Returns the number wrong.
 */
static inline unsigned check_msgs(const struct msg_area *a, uint32_t p, uint32_t n,
                                  int exactly_once)
{
	unsigned bad = 0;
	uint32_t i, k;

	for (i = 0; i < n; i++) {
		uint64_t cell = msg_cell(a, p, i);
		const uint64_t *w = (const uint64_t *)(a->dst + cell * CELL);
		uint64_t c = __atomic_load_n(&a->cnt[cell], __ATOMIC_ACQUIRE);

		if (c > 1 || (exactly_once && c != 1)) {
			if (bad++ < 5)
				fprintf(stderr, "message (%u, %u): counter %llu\n", p, i,
				        (unsigned long long)c);
			continue;
		}
		if (c == 0)
			continue;
		for (k = 0; k < CELL / 8; k++)
			if (w[k] != msg_tag(p, i)) {
				if (bad++ < 5)
					fprintf(stderr,
					        "message (%u, %u): word %u is 0x%llx\n",
					        p, i, k, (unsigned long long)w[k]);
				break;
			}
	}
	return bad;
}

/* A client of the ssqd at @sock, retrying while it starts (up to 20 s), or NULL. */
static inline struct ssq_client *ssqd_connect(const char *sock)
{
	struct ssq_client *c = NULL;
	int i;

	for (i = 0; i < 400 && ssq_client_connect(sock, &c); i++)
		usleep(50 * 1000);
	return c;
}

/*
 * As ssqd_connect, for the ssqd this process started as @pid: an ssqd that
 * exits at start (a device it cannot open) ends the wait at once.
 */
static inline struct ssq_client *ssqd_connect_pid(const char *sock, pid_t pid)
{
	return t_ssqd_connect(sock, pid);
}

/* Poll LIST until q0 is ready (@want 1) or not (0); seconds it took, or -1. */
static inline double wait_q0_ready(struct ssq_client *c, int want, double limit_s)
{
	struct ssq_queue_info info[1];
	double t0 = now_s();

	while (now_s() - t0 < limit_s) {
		if (ssq_client_list(c, info, 1) == 1 && info[0].ready == want)
			return now_s() - t0;
		usleep(10 * 1000);
	}
	return -1;
}

/*
 * The peer is dead: post @n signaled 64-byte WRITEs from @src to @raddr /
 * @rkey and wait (up to 10 s) for their @n completions. Counts the
 * retry-exceeded ones in *@retry_exc and the flushed ones in *@flushed
 * (1 and n - 1 on a dead peer, as on hardware); returns how many were
 * posted (fewer than @n if a reservation failed).
 */
static inline int post_to_dead_peer(struct ssq_producer *prod, const struct ssq_buf *src,
                                    uint64_t raddr, uint32_t rkey, int n, int *retry_exc,
                                    int *flushed)
{
	struct ssq_completion comp[16];
	double t0 = now_s();
	uint64_t pos;
	int i, k, got;

	*retry_exc = *flushed = 0;
	for (i = 0; i < n; i++) {
		if (ssq_reserve(prod, 1, &pos))
			break;
		ssq_prep_rdma_write(ssq_producer_sq(prod), (uint32_t)pos, src->iova,
		                    src->lkey, 64, raddr, rkey,
		                    ssq_wqe_flags(prod, pos, 1, SSQ_WQE_SIGNALED));
		ssq_publish(prod, pos, 1, 100 + (uint64_t)i, SSQ_WQE_SIGNALED);
		ssq_submit(prod);
	}
	while (*retry_exc + *flushed < i && now_s() - t0 < 10) {
		got = ssq_poll(prod, comp, 16);
		for (k = 0; k < got; k++) {
			if (comp[k].status == IBV_WC_RETRY_EXC_ERR)
				(*retry_exc)++;
			else if (comp[k].status == IBV_WC_WR_FLUSH_ERR)
				(*flushed)++;
		}
	}
	return i;
}

/*
 * Start ssqd (the binary in $SSQD) on the emulated device at @sock, with a
 * data arena of @data_mib MiB and send queues of @sq WQEBBs; @fault, if not
 * NULL, goes to its SSQ_EMU_FAULT. Then connect, retrying while it starts
 * (up to 20 s). Returns the client, or NULL (ssqd killed then); *@pid gets
 * ssqd's pid.
 */
static inline struct ssq_client *ssqd_start(const char *sock, const char *data_mib,
                                            const char *sq, const char *fault, pid_t *pid)
{
	const char *args[] = { "--device", test_device(),     "--socket",
		               sock,       "--hugepages=off", "--data-mib",
		               data_mib,   "--sq-size",       sq,
		               NULL };
	struct ssq_client *c;

	*pid = t_ssqd_exec(args, fault ? "SSQ_EMU_FAULT" : NULL, fault, NULL, 0);
	c = ssqd_connect_pid(sock, *pid);
	if (!c) {
		fprintf(stderr, "ssqd at %s: %s\n", sock, ssq_client_strerror_last());
		t_ssqd_kill(*pid, sock);
	}
	return c;
}

#endif
