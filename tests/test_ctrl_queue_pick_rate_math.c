/* SPDX-License-Identifier: MIT */
/*
 * The arithmetic of ssqd's posting rate (watch/rate.c), which reads a
 * counter any client of the queue can write: whatever the counter and the
 * clock say, the rate is bounded and nothing overflows.
 *  - ssqd_rate_window against the same sum done in 128 bits: a count that
 *    goes backwards (by 1, by 2^63, to 0, from all ones) gives 0, a jump
 *    forwards at most UINT32_MAX, a window of 0 ns no division by 0;
 *  - ssqd_rate_smooth is exactly the floor of the mean, at the top too,
 *    and a rate with no more posts falls to 0 within 33 samples;
 *  - ssqd_rate_class: idle below SSQD_RATE_IDLE, one class per doubling;
 *  - ssqd_queue_rate_sample on a control block a test scribbles between
 *    samples: one sample per SSQD_RATE_MS, each rate as computed above.
 */
#include <stdlib.h>
#include <string.h>
#include "ctrl/daemon/watch/watch.h"
#include "helpers.h"

#define MS 1000000ull

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	/* xorshift64*: any seed but 0 */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ull;
}

/* What ssqd_rate_window means, in 128 bits where nothing can wrap. */
static uint32_t window_ref(uint64_t from, uint64_t to, uint64_t ns)
{
	unsigned __int128 delta = (uint64_t)(to - from), r;

	if (to - from >= 1ull << 63)
		return 0;
	if (delta > (unsigned __int128)1 << 32)
		delta = (unsigned __int128)1 << 32;
	r = delta * 1000000000u / (ns < MS ? MS : ns);
	return r > UINT32_MAX ? UINT32_MAX : (uint32_t)r;
}

static void window(void)
{
	static const uint64_t edge[] = { 0,
		                         1,
		                         999,
		                         1000,
		                         (1ull << 32) - 1,
		                         1ull << 32,
		                         (1ull << 32) + 1,
		                         (1ull << 63) - 1,
		                         1ull << 63,
		                         (1ull << 63) + 1,
		                         UINT64_MAX - 1,
		                         UINT64_MAX };
	static const uint64_t ns[] = {
		0, 1, MS - 1, MS, 100 * MS, 1000 * MS, UINT64_MAX
	};
	unsigned i, j, k, bad = 0;

	CHECK(ssqd_rate_window(0, 1000, 100 * MS) == 10000, "1000 in 100 ms: %u",
	      ssqd_rate_window(0, 1000, 100 * MS));
	CHECK(ssqd_rate_window(1000, 999, 100 * MS) == 0, "one backwards: %u",
	      ssqd_rate_window(1000, 999, 100 * MS));
	CHECK(ssqd_rate_window(5, 5 + (1ull << 63), 100 * MS) == 0, "a jump of 2^63: %u",
	      ssqd_rate_window(5, 5 + (1ull << 63), 100 * MS));
	CHECK(ssqd_rate_window(5, 5 - (1ull << 63), 100 * MS) == 0, "back by 2^63: %u",
	      ssqd_rate_window(5, 5 - (1ull << 63), 100 * MS));
	CHECK(ssqd_rate_window(123456, 0, 100 * MS) == 0, "reset to 0: %u",
	      ssqd_rate_window(123456, 0, 100 * MS));
	CHECK(ssqd_rate_window(0, UINT64_MAX, 100 * MS) == 0, "0 to all ones: %u",
	      ssqd_rate_window(0, UINT64_MAX, 100 * MS));
	CHECK(ssqd_rate_window(0, (1ull << 63) - 1, 100 * MS) == UINT32_MAX,
	      "the longest jump forwards: %u",
	      ssqd_rate_window(0, (1ull << 63) - 1, 100 * MS));
	CHECK(ssqd_rate_window(0, 1000, 0) == 1000000, "a window of 0 ns: %u",
	      ssqd_rate_window(0, 1000, 0));
	/* Every pair of edge values, each edge window, then random triples. */
	for (i = 0; i < sizeof(edge) / sizeof(edge[0]); i++)
		for (j = 0; j < sizeof(edge) / sizeof(edge[0]); j++)
			for (k = 0; k < sizeof(ns) / sizeof(ns[0]); k++)
				if (ssqd_rate_window(edge[i], edge[j], ns[k]) !=
				    window_ref(edge[i], edge[j], ns[k])) {
					bad++;
					fprintf(stderr,
					        "window(%llu, %llu, %llu): %u, want %u\n",
					        (unsigned long long)edge[i],
					        (unsigned long long)edge[j],
					        (unsigned long long)ns[k],
					        ssqd_rate_window(edge[i], edge[j], ns[k]),
					        window_ref(edge[i], edge[j], ns[k]));
				}
	for (i = 0; i < 1000000 && bad < 10; i++) {
		uint64_t a = rnd(), b = i % 2 ? a + (rnd() >> (rnd() % 64)) : rnd();
		uint64_t t = rnd() >> (rnd() % 64);

		if (ssqd_rate_window(a, b, t) != window_ref(a, b, t)) {
			bad++;
			fprintf(stderr, "window(%llu, %llu, %llu): %u, want %u\n",
			        (unsigned long long)a, (unsigned long long)b,
			        (unsigned long long)t, ssqd_rate_window(a, b, t),
			        window_ref(a, b, t));
		}
	}
	CHECK(!bad, "%u windows differ from the 128-bit sum", bad);
}

static void smooth(void)
{
	uint32_t r = UINT32_MAX;
	unsigned i, bad = 0;

	CHECK(ssqd_rate_smooth(UINT32_MAX, UINT32_MAX) == UINT32_MAX, "top: %u",
	      ssqd_rate_smooth(UINT32_MAX, UINT32_MAX));
	CHECK(ssqd_rate_smooth(1, 0) == 0 && ssqd_rate_smooth(0, 0) == 0 &&
	          ssqd_rate_smooth(3, 1) == 2,
	      "small means");
	for (i = 0; i < 1000000 && bad < 10; i++) {
		uint32_t a = (uint32_t)rnd(), b = (uint32_t)rnd();

		if (ssqd_rate_smooth(a, b) != (uint32_t)(((uint64_t)a + b) / 2)) {
			bad++;
			fprintf(stderr, "smooth(%u, %u): %u\n", a, b,
			        ssqd_rate_smooth(a, b));
		}
	}
	CHECK(!bad, "%u means wrong", bad);
	for (i = 0; i < 33; i++)
		r = ssqd_rate_smooth(r, 0);
	CHECK(r == 0, "33 idle samples after the top: %u", r);
}

static void classes(void)
{
	CHECK(ssqd_rate_class(0) == 0 && ssqd_rate_class(SSQD_RATE_IDLE - 1) == 0,
	      "idle below SSQD_RATE_IDLE");
	CHECK(ssqd_rate_class(SSQD_RATE_IDLE) == 1 &&
	          ssqd_rate_class(2 * SSQD_RATE_IDLE - 1) == 1 &&
	          ssqd_rate_class(2 * SSQD_RATE_IDLE) == 2,
	      "a class per doubling: %u %u %u", ssqd_rate_class(SSQD_RATE_IDLE),
	      ssqd_rate_class(2 * SSQD_RATE_IDLE - 1),
	      ssqd_rate_class(2 * SSQD_RATE_IDLE));
	CHECK(ssqd_rate_class(UINT32_MAX) == 22, "the top class: %u",
	      ssqd_rate_class(UINT32_MAX));
}

/* The sampler on a control block scribbled between samples. */
static void sampler(void)
{
	struct ssqd *d = calloc(1, sizeof(*d));
	struct ssq_ctl *ctl = aligned_alloc(SSQ_CACHELINE, sizeof(*ctl));
	/* reserve before each look, the time of the look, the rate after it */
	static const struct {
		uint64_t reserve, at_ms;
		uint32_t per_s;
	} step[] = {
		{ 0, 1000, 0 },                     /* the first: where it starts */
		{ 1000000, 1100, 5000000 },         /* 10 M/s in the window: half */
		{ 5000000, 1150, 5000000 },         /* too soon: no look */
		{ 0, 1200, 2500000 },               /* reset to 0: counts nothing */
		{ 1ull << 63, 1300, 1250000 },      /* a jump of 2^63 */
		{ 0, 1400, 625000 },                /* and back by 2^63 */
		{ UINT64_MAX, 1500, 312500 },       /* all ones: back by 1 */
		{ UINT64_MAX - 100, 1600, 156250 }, /* back by 100 */
		/* 2^62 ahead (wrapping): 2^32 counted, UINT32_MAX per second */
		{ (1ull << 62) - 101, 1700, 78125u + 2147483647u },
		{ (1ull << 62) - 101, 1800, (78125u + 2147483647u) / 2 }, /* still */
		{ (1ull << 62) + 899, 2800,
		  (78125u + 2147483647u) / 4 + 500 }, /* 1000 in 1 s */
	};
	unsigned i;

	if (!d || !ctl) {
		CHECK(0, "memory");
		free(d);
		free(ctl);
		return;
	}
	memset(ctl, 0, sizeof(*ctl));
	d->queues[0].ctl = ctl;
	ssqd_queue_rate_sample(d, 1, 1000 * MS);
	CHECK(d->queues[1].rate.at_ns == 0, "a queue without a block sampled");
	for (i = 0; i < sizeof(step) / sizeof(step[0]); i++) {
		ctl->reserve = step[i].reserve;
		ssqd_queue_rate_sample(d, 0, step[i].at_ms * MS);
		CHECK(d->queues[0].rate.per_s == step[i].per_s,
		      "step %u (reserve %llu at %llu ms): rate %u, want %u", i,
		      (unsigned long long)step[i].reserve,
		      (unsigned long long)step[i].at_ms, d->queues[0].rate.per_s,
		      step[i].per_s);
	}
	/* No more posts: 0 within 33 samples. */
	for (i = 0; i < 33; i++)
		ssqd_queue_rate_sample(d, 0, (2800 + 100 * (uint64_t)i) * MS);
	CHECK(d->queues[0].rate.per_s == 0, "idle: rate %u", d->queues[0].rate.per_s);
	free(ctl);
	free(d);
}

int main(void)
{
	window();
	smooth();
	classes();
	sampler();
	return test_exit("ctrl_queue_pick_rate_math");
}
