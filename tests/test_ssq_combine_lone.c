/* SPDX-License-Identifier: MIT */
/*
 * The lone fast path of a combined post (<ssq/combine.h>, L1): one thread,
 * the emulated device stepped by hand (a 64-WQEBB ring, producers A, B, C
 * of one queue, FETCH_ADDs of +1 on a counter per request, so a request
 * executed twice shows as a 2).
 *  1. Alone (role free, no bit pending), A's combined post is published
 *     by A at once, in A's name and counted in A's `posted`: A's
 *     hand-over slot stays EMPTY, its pending bit clear, the role free.
 *  2. Another producer (B) holds the role (set by hand): A's request is
 *     handed over as before (POSTED, its bit), posted by B's batch, and
 *     counted by A when it settles.
 *  3. A bit pending with the role free (C's, stale: C's slot EMPTY): A
 *     takes the role, hands its request over and combines it itself.
 *  4. B posts while A holds the role on the fast path (at its
 *     SSQ_HOOK_COMBINE_LONE, a reservation held): B hands over, and A's
 *     look at the bits after letting the role go (C11, C12) posts it.
 *  5. No room in the ring: A's fast path returns -EAGAIN with nothing
 *     handed over and the role let go; once the ring drains, it posts.
 * Each request completes once, to its owner, with its wr_id.
 */
#define SSQ_FAULT_HOOKS 1
#include <ssq/combine.h>
#include "dv/ctl.h"
#include "ssq_flow.h"
#include "tb_flow.h"

#define RING  64u
#define EVERY 16u

static struct emu_tb tb;
static struct ssq_ctl *ctl;
static struct ssq_producer a, b, c;
static int in_lone;     /* case 4: B posts from A's fast path */
static int b_post_rc;   /* case 4: B's post */
static uint64_t b_word; /* case 4: B's hand-over word after its post */

/* Everything published completed. */
static void drain(void)
{
	tb_drain(&tb, &c);
}

static int fa(struct ssq_producer *p, unsigned cell, uint64_t wr_id)
{
	return tb_fa_combined(&tb, p, cell, wr_id);
}

static uint64_t counter(unsigned cell)
{
	return tb_cell(&tb, cell);
}

static unsigned hand_state(const struct ssq_producer *p)
{
	return (unsigned)(__atomic_load_n(&p->me->hand.word, __ATOMIC_ACQUIRE) & 3);
}

static int bit(const struct ssq_producer *p)
{
	return (__atomic_load_n(&ctl->comb_pending, __ATOMIC_ACQUIRE) >> p->id) & 1;
}

void ssq_fault_hook(int where)
{
	if (where == SSQ_HOOK_COMBINE_LONE && in_lone) {
		in_lone = 0;
		CHECK(__atomic_load_n(&ctl->comb_role, __ATOMIC_ACQUIRE) == a.id + 1,
		      "A on its fast path without the role");
		b_post_rc = fa(&b, 6, 60);
		b_word = __atomic_load_n(&b.me->hand.word, __ATOMIC_ACQUIRE);
	}
}

/* @p's one completion, @wr_id, and nothing of its left unsettled. */
static void completes_once(struct ssq_producer *p, unsigned cell, uint64_t wr_id)
{
	struct ssq_completion comp[4];
	int got;

	drain();
	got = ssq_poll(p, comp, 4);
	CHECK(got == 1 && comp[0].wr_id == wr_id && comp[0].status == IBV_WC_SUCCESS,
	      "producer %u: %d completions (wr_id %llu)", p->id, got,
	      got > 0 ? (unsigned long long)comp[0].wr_id : 0ull);
	CHECK(counter(cell) == 1, "cell %u executed %llu times", cell,
	      (unsigned long long)counter(cell));
	CHECK(p->me->posted == p->me->done, "producer %u: posted %llu done %llu", p->id,
	      (unsigned long long)p->me->posted, (unsigned long long)p->me->done);
}

int main(void)
{
	struct emu_tb_opts o = { .sq_cnt = RING };
	uint64_t posted, pos, q = 0;
	unsigned i;
	int rc;

	ctl = tb_ctl_up(&tb, &o, RING, EVERY);
	TB_PRODUCERS(ctl, &tb, &a, &b, &c);

	/* 1. Alone: published by A itself, the slot never written. */
	posted = a.me->posted;
	pos = __atomic_load_n(&ctl->reserve, __ATOMIC_ACQUIRE);
	CHECK(fa(&a, 1, 10) == 0, "A's lone post");
	CHECK(hand_state(&a) == SSQ_HAND_EMPTY && a.me->hand.req[0].wr_id == 0,
	      "A's hand-over slot written: word state %u", hand_state(&a));
	CHECK(!bit(&a) && ctl->comb_pending == 0, "pending bits %llx",
	      (unsigned long long)ctl->comb_pending);
	CHECK(ctl->comb_role == 0, "role left held: %u", ctl->comb_role);
	CHECK(a.me->posted == posted + 1, "A's posted %llu, not %llu at once",
	      (unsigned long long)a.me->posted, (unsigned long long)posted + 1);
	CHECK(ssq__slot(&a, pos)->seq == pos + 1 && ssq__slot(&a, pos)->owner == a.id,
	      "position %llu: seq %llu owner %u", (unsigned long long)pos,
	      (unsigned long long)ssq__slot(&a, pos)->seq, ssq__slot(&a, pos)->owner);
	CHECK(ssq_combine_flush(&a) == 0 && a.me->posted == posted + 1,
	      "A's flush counted it again: posted %llu",
	      (unsigned long long)a.me->posted);
	completes_once(&a, 1, 10);
	printf("1. a lone combined post: published at once, slot EMPTY, bit clear\n");

	/* 2. B holds the role: A hands over as before. */
	posted = a.me->posted;
	__atomic_store_n(&ctl->comb_role, b.id + 1, __ATOMIC_SEQ_CST);
	CHECK(fa(&a, 2, 20) == 0, "A's hand-over");
	CHECK(hand_state(&a) == SSQ_HAND_POSTED && bit(&a) && a.me->posted == posted,
	      "A's request not handed over: state %u bit %d posted %llu", hand_state(&a),
	      bit(&a), (unsigned long long)a.me->posted);
	CHECK(ssq__combine(&b) == 0, "B's batch");
	CHECK(hand_state(&a) == SSQ_HAND_DONE && ctl->comb_role == 0,
	      "after B's batch: A's state %u, role %u", hand_state(&a), ctl->comb_role);
	CHECK(ssq_combine_flush(&a) == 0 && a.me->posted == posted + 1,
	      "A's settle: posted %llu", (unsigned long long)a.me->posted);
	completes_once(&a, 2, 20);
	printf("2. the role held by another: handed over, combined, settled\n");

	/* 3. A stale bit: the slow way, A combining its own request. */
	posted = a.me->posted;
	__atomic_fetch_or(&ctl->comb_pending, 1ull << c.id, __ATOMIC_SEQ_CST);
	CHECK(fa(&a, 3, 30) == 0, "A's post with a bit pending");
	CHECK(hand_state(&a) == SSQ_HAND_DONE && ctl->comb_pending == 0 &&
	          ctl->comb_role == 0 && a.me->posted == posted,
	      "A did not combine: state %u pending %llx role %u", hand_state(&a),
	      (unsigned long long)ctl->comb_pending, ctl->comb_role);
	CHECK(ssq_combine_flush(&a) == 0 && a.me->posted == posted + 1, "A's settle");
	completes_once(&a, 3, 30);
	printf("3. a bit pending: handed over and combined by its owner\n");

	/* 4. B posts while A holds the role on its fast path. */
	posted = a.me->posted;
	in_lone = 1;
	CHECK(fa(&a, 5, 50) == 0, "A's lone post");
	CHECK(!in_lone, "A's fast path not taken");
	CHECK(b_post_rc == 0 && (b_word & 3) == SSQ_HAND_POSTED,
	      "B's post inside A's: %d, word state %u", b_post_rc,
	      (unsigned)(b_word & 3));
	CHECK(hand_state(&b) == SSQ_HAND_DONE && ctl->comb_pending == 0 &&
	          ctl->comb_role == 0,
	      "B's request not combined by A: state %u pending %llx role %u",
	      hand_state(&b), (unsigned long long)ctl->comb_pending, ctl->comb_role);
	CHECK(hand_state(&a) == SSQ_HAND_EMPTY && a.me->posted == posted + 1,
	      "A: state %u posted %llu", hand_state(&a),
	      (unsigned long long)a.me->posted);
	CHECK(ssq_combine_flush(&b) == 0, "B's settle");
	completes_once(&a, 5, 50);
	completes_once(&b, 6, 60);
	printf("4. a request handed over during a fast path: combined by its holder\n");

	/* 5. The ring full of C's WQEs, not run: -EAGAIN, nothing handed over. */
	posted = a.me->posted;
	for (i = 0; i < 2; i++) {
		CHECK(ssq_reserve(&c, RING / 2, &q) == 0, "C's reservation %u", i);
		for (pos = q; pos < q + RING / 2; pos++) {
			ssq_prep_nop(ssq_producer_sq(&c), (uint32_t)pos,
			             ssq_wqe_flags(&c, pos, 1, 0));
			CHECK(ssq_publish(&c, pos, 1, pos, 0) == 0, "C's publish");
		}
	}
	rc = fa(&a, 7, 70);
	CHECK(rc == -EAGAIN, "A's post into a full ring: %d", rc);
	CHECK(hand_state(&a) == SSQ_HAND_EMPTY && !bit(&a) && ctl->comb_role == 0 &&
	          a.me->posted == posted && !a.hand_owed,
	      "after -EAGAIN: state %u bit %d role %u posted %llu owed %d",
	      hand_state(&a), bit(&a), ctl->comb_role, (unsigned long long)a.me->posted,
	      a.hand_owed);
	CHECK(counter(7) == 0, "a request not handed over was executed");
	drain();
	CHECK(fa(&a, 7, 70) == 0, "A's post once the ring drained");
	completes_once(&a, 7, 70);
	printf("5. no room: -EAGAIN, nothing handed over, the role let go\n");

	ssq_producer_fini(&a);
	ssq_producer_fini(&b);
	ssq_producer_fini(&c);
	emu_tb_fini(&tb);
	free(ctl);
	return test_exit("ssq_combine_lone");
}
