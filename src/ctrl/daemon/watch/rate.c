/* SPDX-License-Identifier: MIT */
/*
 * Each queue's recent posting rate: what the pick of "any" weighs first
 * (clients/queue_pick.c; docs/design.md, "Several queues to one peer") and
 * ssqd --status shows. Sampled from the serve loop's progress pass, which
 * looks at every queue each loop anyway: one relaxed load of the control
 * block's `reserve` (WQEBBs reserved: 64-byte blocks, MLX5_SEND_WQE_BB in
 * rdma-core's providers/mlx5/mlx5dv.h; a 64-byte WRITE is one) every
 * SSQD_RATE_MS, no system call, no lock.
 *
 * `reserve` is in memory every client of the queue maps writable, and
 * ssqd's own rebuild sets it back to 0: any value can follow any other. The
 * rate is a hint for the pick and nothing else - it decides no refusal, no
 * bound and no index - so a scribble buys its writer no more than a lie
 * about its own queue's load: the next opens of "any" go elsewhere, or
 * come to it. The arithmetic below is unsigned with every term bounded
 * before it is multiplied, so no value traps or overflows.
 */
#include "ctrl/daemon/queues/queues.h"
#include "ctrl/daemon/watch/watch.h"

/*
 * The most WQEBBs one window counts: 2^32 in a window of at least
 * SSQD_RATE_MS is over 40 G per second, more than a thousand times what
 * one send queue is reported to take (about 16 Mpps on a ConnectX-4,
 * issue 29's measurements). Bounding the delta bounds the product below:
 * 2^32 * 10^9 < 2^62.
 */
#define RATE_DELTA_MAX (1ull << 32)
/* The shortest window the division sees: no division by 0, a bounded quotient. */
#define RATE_NS_MIN 1000000ull

uint32_t ssqd_rate_window(uint64_t from, uint64_t to, uint64_t ns)
{
	/* Unsigned: wraps, never traps. */
	uint64_t delta = to - from, per_s;

	/*
	 * Backwards (the top bit set: a reset to 0 by ssqd's own rebuild, or
	 * a client's store of something smaller - including a jump of 2^63
	 * either way) counts nothing; forwards, at most RATE_DELTA_MAX.
	 */
	if (delta >> 63)
		return 0;
	if (delta > RATE_DELTA_MAX)
		delta = RATE_DELTA_MAX;
	if (ns < RATE_NS_MIN)
		ns = RATE_NS_MIN;
	per_s = delta * 1000000000ull / ns;
	return per_s > UINT32_MAX ? UINT32_MAX : (uint32_t)per_s;
}

uint32_t ssqd_rate_smooth(uint32_t old, uint32_t window)
{
	/* Half each: the sum fits (each half at most UINT32_MAX / 2). */
	return old / 2 + window / 2 + (old & window & 1);
}

unsigned ssqd_rate_class(uint32_t per_s)
{
	uint32_t above = per_s / SSQD_RATE_IDLE;

	/* 0: idle; then one class per doubling above SSQD_RATE_IDLE. */
	return above ? 32u - (unsigned)__builtin_clz(above) : 0;
}

void ssqd_queue_rate_sample(struct ssqd *d, unsigned qi, uint64_t now_ns)
{
	struct ssqd_queue *q = &d->queues[qi];
	struct ssqd_rate *r = &q->rate;
	uint64_t seen;

	if (!q->ctl || (r->at_ns && now_ns - r->at_ns < SSQD_RATE_MS * 1000000ull))
		return;
	seen = ssq_ctl_reserved(q->ctl);
	/* The first sample only sets where the count starts. */
	if (r->at_ns)
		r->per_s = ssqd_rate_smooth(
		    r->per_s, ssqd_rate_window(r->seen, seen, now_ns - r->at_ns));
	r->at_ns = now_ns;
	r->seen = seen;
}
