/* SPDX-License-Identifier: MIT */
/*
 * Combiners die and stop mid-batch (<ssq/combine.h>: batches in the
 * hand-over slot), with ssqd's deadline, kill and heal, as
 * test_ssq_combine_kill.c does for combining at large: three survivor
 * processes post every message through combining (combine_flow.h, paced),
 * while victim processes attach, post the same way and are killed - by
 * SIGKILL from outside at a random moment, or by themselves while they
 * hold another producer's batch of two or more requests taken (TAKEN(pos,
 * n >= 2) inside their reservation): after the take, nothing published
 * (SSQ_HOOK_COMBINE_TAKEN), or mid-batch, the first published and the
 * rest not (SSQ_HOOK_COMBINE_BUILT) - or are stopped (SIGSTOP) there
 * mid-batch for ssqd's stall watch (--stall-ms 100) to kill. A victim
 * holding the role is slow to start its pass, so that survivors append to
 * their batches meanwhile. After each death ssqd heals: its NOPs over a
 * batch are a suffix, which the batch's owner posts again, in order.
 *
 * Survivors lose nothing (every message's counter is exactly 1), nothing
 * is executed twice (no counter above 1, victims' included), each
 * survivor gets exactly its completions in order, and no survivor post
 * waits longer than the stall deadline and healing allow; each way of
 * dying was taken by at least 10 victims holding a batch.
 */
#define SSQ_FAULT_HOOKS 1
#include "combine_flow.h"
#include "kill_storm.h"

#define SURVIVORS    3u
#define SURVIVOR_MAX 150000u /* more than they post while victims come and go */
#define VICTIMS      120u
#define VICTIM_MSGS  60u /* fewer than the 64 source slots: no reuse */
/* As test_ssq_combine_kill.c: --stall-ms 100, AWAKE_TIMES, the heal. */
#define STALL_LIMIT_S 3.0

static int die_where, die_after, die_sig;
static unsigned *hook_hits; /* shared: [where] a victim died there holding a batch */
static unsigned *batch_max; /* shared: the largest batch a victim died holding */
static pid_t *spinning;     /* shared: the victim waiting at its hook to be stopped */

static struct ssq_producer *me;

/*
 * The largest batch of another producer this combiner holds TAKEN in its
 * reservation (0: none). At SSQ_HOOK_COMBINE_BUILT the first batch's
 * first request is published: a batch of two or more is mid-batch there.
 */
static unsigned batch_held(void)
{
	uint64_t end = me ? me->pub_end : 0;
	unsigned best = 0;
	uint32_t i;

	for (i = 0; me && i < SSQ_MAX_PRODUCERS; i++) {
		uint64_t v =
		    __atomic_load_n(&me->ctl->producers[i].hand.word, __ATOMIC_RELAXED);

		if (i != me->id && (v & 3) == SSQ_HAND_TAKEN &&
		    ssq__hand_v(v) >= end - me->ctl->producers[me->id].len &&
		    ssq__hand_v(v) < end && ssq__hand_n(v) > best)
			best = ssq__hand_n(v);
	}
	return best;
}

/* Called by ssq/queue.h and ssq/combine.h at each hook point in this test build. */
void ssq_fault_hook(int where)
{
	unsigned n;

	/*
	 * A combiner slow to start its pass, or a lone poster slow on its
	 * fast path (the role held): survivors hand over and append
	 * meanwhile, and its C12 finds their batches.
	 */
	if ((where == SSQ_HOOK_COMBINE_ROLE || where == SSQ_HOOK_COMBINE_LONE) &&
	    die_where) {
		usleep(300);
		return;
	}
	if (where != die_where || (n = batch_held()) < 2 || --die_after > 0)
		return;
	__atomic_fetch_add(&hook_hits[die_where], 1, __ATOMIC_RELAXED);
	if (n > __atomic_load_n(batch_max, __ATOMIC_RELAXED))
		__atomic_store_n(batch_max, n, __ATOMIC_RELAXED);
	if (die_sig == SIGKILL)
		raise(SIGKILL);
	/* Stopped while running here, as test_ssq_combine_kill.c says why. */
	storm_stop_and_spin(spinning);
}

/*
 * A victim posts until it dies. Mode 0 waits for the parent's SIGKILL;
 * 1 and 2 die (SIGKILL) holding a batch at SSQ_HOOK_COMBINE_TAKEN and
 * _BUILT; 3 spins at SSQ_HOOK_COMBINE_BUILT holding a batch mid-way until
 * stopped (SIGSTOP), for ssqd to kill.
 */
static void victim(uint32_t p, const struct msg_area *a, int mode, int countdown)
{
	static const int where[] = { 0, SSQ_HOOK_COMBINE_TAKEN, SSQ_HOOK_COMBINE_BUILT,
		                     SSQ_HOOK_COMBINE_BUILT };

	die_where = where[mode];
	die_after = countdown;
	die_sig = mode == 3 ? SIGSTOP : SIGKILL;
	storm_comb_victim(p, a, mode, VICTIM_MSGS, &me);
}

int main(void)
{
	struct storm s = { .survivors = SURVIVORS,
		           .victims = VICTIMS,
		           .victim_msgs = VICTIM_MSGS };
	struct survivor_report *rep;
	pid_t surv[SURVIVORS];
	unsigned v, kills = 0, by_mode[4] = { 0 };

	if (storm_up(&s, "cbkill", "64", SURVIVOR_MAX))
		return 1;
	rep = s.rep;
	hook_hits = (unsigned *)(s.page + 1024);
	batch_max = (unsigned *)(s.page + 1536);
	spinning = (pid_t *)(s.page + 2048);
	run_combined_daemon = s.d;
	storm_fork_survivors(&s, surv, storm_comb_survivor);
	for (v = 0; v < VICTIMS; v++) {
		int mode = v % 4, countdown = 1 + rand() % 5, k;
		pid_t pid = fork();

		if (pid == 0)
			victim(SURVIVORS + v, &s.a, mode, countdown);
		k = storm_reap_victim(pid, mode != 0, spinning);
		kills += k;
		by_mode[mode] += k;
	}
	storm_check(&s, surv, kills, STALL_LIMIT_S);
	CHECK(by_mode[1] >= 10 && by_mode[2] >= 10 && by_mode[3] >= 10,
	      "victims killed holding a batch: after the take %u, mid-batch %u, stopped "
	      "mid-batch %u (hooks %u, %u)",
	      by_mode[1], by_mode[2], by_mode[3], hook_hits[SSQ_HOOK_COMBINE_TAKEN],
	      hook_hits[SSQ_HOOK_COMBINE_BUILT]);
	printf("%u kills (%u from outside, %u holding a batch taken, %u mid-batch, %u "
	       "stopped mid-batch, killed by ssqd; batches of up to %u); survivors "
	       "posted %u, %u, %u messages, longest post %.3f / %.3f / %.3f ms\n",
	       kills, by_mode[0], by_mode[1], by_mode[2], by_mode[3], *batch_max,
	       rep[0].posted, rep[1].posted, rep[2].posted, 1e3 * rep[0].max_post_s,
	       1e3 * rep[1].max_post_s, 1e3 * rep[2].max_post_s);
	storm_down(&s);
	return test_exit("ssq_combine_batch_kill");
}
