/* SPDX-License-Identifier: MIT */
/*
 * A gate at one of the library's fault hooks (SSQ_FAULT_HOOKS,
 * <ssq/queue_pvt.h>): the test's ssq_fault_hook calls hook_gate_hold, and
 * the first thread that reaches hook @at once the test set .stops stops
 * there (.stopped set) until the test sets .goes. The combining and heal
 * tests use it to hold a producer between two steps the library never
 * lets another see, as a process stopped or killed there would.
 */
#ifndef SSQ_TEST_HOOK_GATE_H
#define SSQ_TEST_HOOK_GATE_H

#include <unistd.h>

struct hook_gate {
	int stops;   /* armed: the next thread at the hook stops */
	int stopped; /* one did, and waits for .goes */
	int goes;    /* let it go on */
};

static inline void hook_gate_hold(struct hook_gate *g, int where, int at)
{
	if (where != at || !__atomic_exchange_n(&g->stops, 0, __ATOMIC_ACQ_REL))
		return;
	__atomic_store_n(&g->stopped, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&g->goes, __ATOMIC_ACQUIRE))
		usleep(1000);
}

/* Armed afresh: nobody stopped, nobody let go, the next thread stops. */
static inline void hook_gate_arm(struct hook_gate *g)
{
	__atomic_store_n(&g->stopped, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&g->goes, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&g->stops, 1, __ATOMIC_RELEASE);
}

/*
 * Until a thread stopped at the gate, @secs at most (counted in 1 ms
 * sleeps: longer on a loaded machine, never shorter): 1 if one did.
 */
static inline int hook_gate_wait(struct hook_gate *g, double secs)
{
	unsigned ms;

	for (ms = 0; !__atomic_load_n(&g->stopped, __ATOMIC_ACQUIRE); ms++) {
		if (ms >= secs * 1000)
			return 0;
		usleep(1000);
	}
	return 1;
}

#endif /* SSQ_TEST_HOOK_GATE_H */
