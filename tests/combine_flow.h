/* SPDX-License-Identifier: MIT */
/*
 * ssq_flow.h's messages posted through combining (<ssq/combine.h>): the
 * WRITE and the FETCH_ADD of message (p, i) are two combined posts (or two
 * direct ones, for a producer that does not combine), the second after the
 * first in the producer's order. For test_ssq_combine.c and
 * test_ssq_combine_kill.c.
 */
#ifndef SSQ_TEST_COMBINE_FLOW_H
#define SSQ_TEST_COMBINE_FLOW_H

#include "ssq_flow.h"

/* The FA of ssq_flow.h's post_msg, posted directly. */
static inline int fa_direct(struct ssq_producer *p, uint64_t laddr, uint32_t lkey,
                            uint64_t raddr, uint32_t rkey, uint64_t wr_id, unsigned flags)
{
	uint64_t pos;
	int rc = ssq_reserve(p, 1, &pos);

	if (rc)
		return rc;
	ssq_prep_atomic(ssq_producer_sq(p), (uint32_t)pos, MLX5_OPCODE_ATOMIC_FA, laddr,
	                lkey, raddr, rkey, 1, 0, ssq_wqe_flags(p, pos, 1, flags));
	rc = ssq_publish(p, pos, 1, wr_id, flags);
	ssq_submit(p);
	return rc;
}

/*
 * Post message (p, i) from @buf (CELL bytes, then 8 for the FA's result) at
 * @iova: combined, or directly if @direct. An -EAGAIN between the two
 * posts is waited out (reaping) so the pair stays whole: *@got counts the
 * completions reaped meanwhile. Returns 0, or an error of either post.
 */
static inline int post_msg_comb(struct ssq_producer *prod, const struct msg_area *a,
                                uint32_t p, uint32_t i, uint64_t iova, uint8_t *buf,
                                uint32_t lkey, int direct, uint32_t *got)
{
	uint64_t cell = msg_cell(a, p, i), *word = (uint64_t *)buf;
	uint32_t rkey2 = a->cnt_rkey ? a->cnt_rkey : a->rkey;
	unsigned k, user = (i % SIGNAL_EVERY == SIGNAL_EVERY - 1) ? SSQ_WQE_SIGNALED : 0;
	int rc;

	for (k = 0; k < CELL / 8; k++)
		word[k] = msg_tag(p, i);
	if (direct)
		rc = ssq_post_write(prod, iova, lkey, CELL, a->dst_iova + cell * CELL,
		                    a->rkey, ~0ull, 0);
	else
		rc = ssq_post_write_combined(
		    prod, iova, lkey, CELL, a->dst_iova + cell * CELL, a->rkey, ~0ull, 0);
	if (rc)
		return rc;
	for (;;) {
		if (direct)
			rc = fa_direct(prod, iova + CELL, lkey, a->cnt_iova + cell * 8,
			               rkey2, i, user);
		else
			rc = ssq_post_fetch_add_combined(prod, iova + CELL, lkey,
			                                 a->cnt_iova + cell * 8, rkey2, 1,
			                                 i, user);
		if (rc != -EAGAIN)
			return rc;
		if (reap(prod, p, got) < 0)
			return -EPROTO;
	}
}

/*
 * Pacing for run_combined (0: none): after every run_combined_pace_every
 * messages, sleep run_combined_pace_us with the last one still handed
 * over (not flushed), for a combiner to find it. A test that kills
 * combiners paces its survivors so they post while its victims come and go.
 */
static unsigned run_combined_pace_every, run_combined_pace_us;

/*
 * The ssqd that heals the queue (0: none named). A post that has to wait
 * (-EAGAIN: a dead or stopped holder's hole, until ssqd heals it) is timed
 * less what ssqd's serve loop spent runnable but off a CPU meanwhile
 * (t_proc_run_wait): on a loaded machine that, not ssqd, is what stretches
 * the wait, and ssqd's promise (a stopped holder killed at --stall-ms, a
 * running one's hold taken back at ten times it) is about its own acts.
 */
static pid_t run_combined_daemon;

/*
 * run_producer (ssq_flow.h) with post_msg_comb: @n messages or until
 * *@stop, then exactly the signaled completions, in order. Returns 0 with
 * *@posted (if not NULL) and the longest post in *@max_post_s (if not
 * NULL; see run_combined_daemon), or 1 after printing why.
 */
static inline int run_combined(struct ssq_producer *prod, const struct msg_area *a,
                               uint32_t p, uint32_t n, const volatile int *stop,
                               uint8_t *src, uint64_t src_iova, uint32_t lkey, int direct,
                               double *max_post_s, uint32_t *posted)
{
	uint32_t i, got = 0;
	double t0 = now_s(), t, w0, w1;
	int rc;

	for (i = 0; i < n && !(stop && *stop && i % SIGNAL_EVERY == 0); i++) {
		uint8_t *buf = src + (size_t)(i % 64) * (CELL + 8);
		uint64_t iova = src_iova + (uint64_t)(i % 64) * (CELL + 8);

		while (i >= 64 && (uint64_t)got * SIGNAL_EVERY < i - 63) {
			/* The awaited one may still be handed over: post it. */
			if (!direct)
				(void)ssq_combine_flush(prod);
			if (reap(prod, p, &got) < 0)
				return 1;
			if (now_s() - t0 > 60) {
				fprintf(stderr, "producer %u: stalled at %u\n", p, i);
				dump_ctl(prod);
				return 1;
			}
		}
		t = now_s();
		w0 = -1;
		while ((rc = post_msg_comb(prod, a, p, i, iova, buf, lkey, direct,
		                           &got)) == -EAGAIN) {
			if (w0 < 0 && run_combined_daemon)
				w0 = t_proc_run_wait(run_combined_daemon);
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
		if (w0 >= 0 && (w1 = t_proc_run_wait(run_combined_daemon)) >= w0) {
			if (t > 1.0)
				fprintf(
				    stderr,
				    "producer %u: post %u waited %.3f s, %.3f s of it "
				    "ssqd's wait for a CPU\n",
				    p, i, t, w1 - w0);
			t -= w1 - w0;
		}
		if (max_post_s && t > *max_post_s)
			*max_post_s = t;
		if (run_combined_pace_every && i % run_combined_pace_every == 0)
			usleep(run_combined_pace_us);
	}
	if (posted)
		*posted = i;
	while (got < i / SIGNAL_EVERY) {
		if (!direct)
			(void)ssq_combine_flush(prod);
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

#endif
