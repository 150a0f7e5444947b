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

/* post_msg_comb as run_posts calls it: @arg points to its @direct. */
static inline int post_msg_comb_fn(struct ssq_producer *prod, const struct msg_area *a,
                                   uint32_t p, uint32_t i, uint64_t iova, uint8_t *buf,
                                   uint32_t lkey, const void *arg, uint32_t *got)
{
	return post_msg_comb(prod, a, p, i, iova, buf, lkey, *(const int *)arg, got);
}

/* Before a wait: what combining still holds posted (the awaited one may be). */
static inline void flush_held(struct ssq_producer *prod)
{
	(void)ssq_combine_flush(prod);
}

/* The ssqd that heals the queue (0: none named): msg_posting's @daemon. */
static pid_t run_combined_daemon;

/*
 * run_producer (ssq_flow.h) with post_msg_comb: @n messages or until
 * *@stop, then exactly the signaled completions, in order, paced as
 * run_combined_pace_every says. Returns 0 with *@posted (if not NULL) and
 * the longest post in *@max_post_s (if not NULL; see run_combined_daemon),
 * or 1 after printing why.
 */
static inline int run_combined(struct ssq_producer *prod, const struct msg_area *a,
                               uint32_t p, uint32_t n, const volatile int *stop,
                               uint8_t *src, uint64_t src_iova, uint32_t lkey, int direct,
                               double *max_post_s, uint32_t *posted)
{
	const struct msg_posting how = {
		.post = post_msg_comb_fn,
		.arg = &direct,
		.before_wait = direct ? NULL : flush_held,
		.pace_every = run_combined_pace_every,
		.pace_us = run_combined_pace_us,
		.daemon = run_combined_daemon,
	};

	return run_posts(prod, a, p, n, stop, src, src_iova, lkey, &how, max_post_s,
	                 posted);
}

#endif
