/* SPDX-License-Identifier: MIT */
/*
 * Combiners die and stop while holding others' requests (issue 29): three
 * survivor processes post every message through combining
 * (combine_flow.h), while at least 100 victim processes attach, post the
 * same way and are killed - by SIGKILL from outside at a random moment, or
 * by themselves at a hook while they combine: holding requests they took
 * and have not published (SSQ_HOOK_COMBINE_TAKEN), or mid-batch, the first
 * published (SSQ_HOOK_COMBINE_BUILT), or holding the role with others'
 * requests POSTED and nothing reserved (SSQ_HOOK_COMBINE_ROLE), or on the
 * lone fast path holding the role and its own reservation, unpublished,
 * with others' requests POSTED meanwhile (SSQ_HOOK_COMBINE_LONE) - or are
 * stopped (SIGSTOP) holding taken requests, or there on the fast path,
 * for ssqd's stall watch (--stall-ms 100) to kill on the kernel's
 * evidence. Victims are slow in
 * the role, on the fast path too (a lone post combines nobody unless
 * others hand over while it holds the role).
 * ssqd heals after each death. Posters do not wait for combiners
 * (<ssq/combine.h>): a survivor's request a dead combiner held is settled
 * by the survivor (re-posted after a healer's NOP, taken back from a dead
 * role holder). Survivors are paced, each pause with a request handed
 * over, so that victims combine them.
 *
 * Survivors lose nothing (every message's counter is exactly 1), nothing is
 * executed twice (no counter above 1, victims' included), each survivor
 * gets exactly its completions in order, and no survivor post waits longer
 * than the stall deadline and healing allow.
 */
#define SSQ_FAULT_HOOKS 1
#include "combine_flow.h"
#include "kill_storm.h"

#define SURVIVORS    3u
#define SURVIVOR_MAX 150000u /* more than they post while victims come and go */
#define VICTIMS      120u
#define VICTIM_MSGS  60u /* fewer than the 64 source slots: no reuse */
/* A stopped holder killed at --stall-ms (100), a running one's hold taken
 * back at 10 times it (watch/stall.c AWAKE_TIMES), then healed: 1 s and
 * the heal, ssqd's CPU waits not counted (run_combined_daemon). */
#define STALL_LIMIT_S 3.0

static int die_where, die_after, die_sig;
static unsigned *hook_hits; /* shared: [where] a victim reached its hook */
static pid_t *spinning;     /* shared: the victim waiting at its hook to be stopped */

static struct ssq_producer *me;

/*
 * Does this combiner hold a request of another producer (TAKEN, or at the
 * BUILT hook, DONE already; at the ROLE hook, POSTED with its bit set)?
 * Victims die only then: a combiner with only its own request is a
 * producer like those test_ssq_kill.c kills.
 */
static int holds_others(int where)
{
	uint32_t i;

	if (where == SSQ_HOOK_COMBINE_ROLE || where == SSQ_HOOK_COMBINE_LONE)
		return me && (__atomic_load_n(&me->ctl->comb_pending, __ATOMIC_RELAXED) &
		              ~(1ull << me->id)) != 0;

	for (i = 0; me && i < SSQ_MAX_PRODUCERS; i++) {
		uint64_t v =
		    __atomic_load_n(&me->ctl->producers[i].hand.word, __ATOMIC_RELAXED);

		if (i != me->id &&
		    ((v & 3) == SSQ_HAND_TAKEN || (v & 3) == SSQ_HAND_DONE) &&
		    ssq__hand_v(v) >= me->pub_end - me->ctl->producers[me->id].len &&
		    ssq__hand_v(v) < me->pub_end)
			return 1;
	}
	return 0;
}

/* Called by ssq/queue.h and ssq/combine.h at each hook point in this test build. */
void ssq_fault_hook(int where)
{
	/*
	 * A combiner slow to start, or a lone poster slow on its fast path
	 * (the role held): others hand over meanwhile.
	 */
	if ((where == SSQ_HOOK_COMBINE_ROLE || where == SSQ_HOOK_COMBINE_LONE) &&
	    die_where) {
		usleep(300);
		if (die_where != where)
			return;
	}
	if (where == die_where && holds_others(where) && --die_after <= 0) {
		__atomic_fetch_add(&hook_hits[die_where], 1, __ATOMIC_RELAXED);
		if (die_sig == SIGKILL)
			raise(SIGKILL);
		/*
		 * Stopped while running here: raise(SIGSTOP) would stop us
		 * inside a system call, which ssqd does not take for a stopped
		 * holder (proc_evidence.c). A timer of our own sends it 1 ms
		 * on, while we spin (the parent's SIGSTOP, told through
		 * spinning, is the fallback should the timer fail). Waiting
		 * for the parent alone, a parent held off the CPU for a second
		 * left us running past AWAKE_TIMES x --stall-ms: ssqd then
		 * starts the queue over, which flushes the survivors' WQEs
		 * (seen under load 24: 'producer 1: completion 290: status 5').
		 */
		storm_stop_and_spin(spinning);
	}
}

/*
 * A victim posts until it dies. Mode 0 waits for the parent's SIGKILL;
 * 1 and 2 die (SIGKILL) at SSQ_HOOK_COMBINE_TAKEN and _BUILT, 3 spins at
 * SSQ_HOOK_COMBINE_TAKEN until the parent stops it (SIGSTOP), for ssqd to
 * kill; 4 dies (SIGKILL) at SSQ_HOOK_COMBINE_ROLE, the role held and
 * nothing reserved: only the owners, settling, post what it left; 5 dies
 * (SIGKILL) at SSQ_HOOK_COMBINE_LONE, the role and a WQEBB of its own
 * held: ssqd's NOP fills it, the owners post what was handed over; 6
 * spins there until stopped, as 3.
 */
static void victim(uint32_t p, const struct msg_area *a, int mode, int countdown)
{
	static const int where[] = { 0,
		                     SSQ_HOOK_COMBINE_TAKEN,
		                     SSQ_HOOK_COMBINE_BUILT,
		                     SSQ_HOOK_COMBINE_TAKEN,
		                     SSQ_HOOK_COMBINE_ROLE,
		                     SSQ_HOOK_COMBINE_LONE,
		                     SSQ_HOOK_COMBINE_LONE };

	die_where = where[mode];
	die_after = countdown;
	die_sig = mode == 3 || mode == 6 ? SIGSTOP : SIGKILL;
	storm_comb_victim(p, a, mode, VICTIM_MSGS, &me);
}

int main(void)
{
	struct storm s = { .survivors = SURVIVORS,
		           .victims = VICTIMS,
		           .victim_msgs = VICTIM_MSGS };
	struct survivor_report *rep;
	pid_t surv[SURVIVORS];
	unsigned v, kills = 0, by_mode[7] = { 0 };

	/* ssqd's default --stall-ms is 100: a stopped combiner is killed by it. */
	if (storm_up(&s, "ckill", "64", SURVIVOR_MAX))
		return 1;
	rep = s.rep;
	hook_hits = (unsigned *)(s.page + 1024);
	spinning = (pid_t *)(s.page + 2048);

	/*
	 * Posts are timed less ssqd's own waits for a CPU (combine_flow.h):
	 * under load average 17 on two cores, a post waited 3.28 s on the
	 * clock, where ssqd takes ~0.15 s on a quiet machine.
	 */
	run_combined_daemon = s.d;
	storm_fork_survivors(&s, surv, storm_comb_survivor);
	for (v = 0; v < VICTIMS; v++) {
		int mode = v % 7, countdown = 1 + rand() % 20, k;
		pid_t pid = fork();

		if (pid == 0)
			victim(SURVIVORS + v, &s.a, mode, countdown);
		k = storm_reap_victim(pid, mode != 0, spinning);
		kills += k;
		by_mode[mode] += k;
	}
	storm_check(&s, surv, kills, STALL_LIMIT_S);
	/* Each hook reached by some victims, or the test did not test it. */
	CHECK(hook_hits[SSQ_HOOK_COMBINE_TAKEN] >= 10 &&
	          hook_hits[SSQ_HOOK_COMBINE_BUILT] >= 10 &&
	          hook_hits[SSQ_HOOK_COMBINE_ROLE] >= 10 &&
	          hook_hits[SSQ_HOOK_COMBINE_LONE] >= 10,
	      "hooks reached: taken %u, built %u, role %u, lone %u",
	      hook_hits[SSQ_HOOK_COMBINE_TAKEN], hook_hits[SSQ_HOOK_COMBINE_BUILT],
	      hook_hits[SSQ_HOOK_COMBINE_ROLE], hook_hits[SSQ_HOOK_COMBINE_LONE]);
	printf("%u kills (%u from outside, %u holding taken requests, %u mid-batch, %u "
	       "stopped holding taken requests, killed by ssqd, %u holding the role "
	       "with others' requests pending, %u on the fast path holding the role "
	       "and a WQEBB, %u stopped there, killed by ssqd); survivors posted %u, %u, "
	       "%u messages, longest post %.3f / %.3f / %.3f ms\n",
	       kills, by_mode[0], by_mode[1], by_mode[2], by_mode[3], by_mode[4],
	       by_mode[5], by_mode[6], rep[0].posted, rep[1].posted, rep[2].posted,
	       1e3 * rep[0].max_post_s, 1e3 * rep[1].max_post_s, 1e3 * rep[2].max_post_s);
	storm_down(&s);
	return test_exit("ssq_combine_kill");
}
