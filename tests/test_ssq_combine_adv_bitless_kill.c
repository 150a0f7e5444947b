/* SPDX-License-Identifier: MIT */
/*
 * Adversary (h-adv5c): test_ssq_combine_adv_bitless's case 1 end to end,
 * with ssqd. ssqd on the emulated device; the test (S, a survivor) and a
 * victim process V, each with its own connection and producer on q0.
 * V holds the combiner role (it just won C9); S's combined WRITE is handed
 * over (POSTED, its bit); V combines: swaps the bits out, reserves one
 * WQEBB and is killed there (SIGKILL at SSQ_HOOK_AFTER_ADD, before its
 * C10). ssqd sees V die, marks it dead and heals (the NOP, the role
 * freed). S, alone on the queue, then waits for its completion:
 * ssq_wait(1, 3 s) must return (1, the WRITE landed) within its timeout.
 * It settles first, and the settle takes the free role, finds no bit,
 * lets the role go and goes round, for ever. On a thread given WAIT_S.
 */
#define _GNU_SOURCE
#define SSQ_FAULT_HOOKS 1
#include <pthread.h>
#include <sys/wait.h>
#include <ssq/combine.h>
#include "ctrl_flow.h"

#define LEN    64u
#define WAIT_S 20

static volatile int die_armed;
static int wait_done, wait_rc;

static void *waiter(void *arg)
{
	wait_rc = ssq_wait(arg, 1, 3ull * 1000000000ull);
	__atomic_store_n(&wait_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

void ssq_fault_hook(int where)
{
	if (die_armed && where == SSQ_HOOK_AFTER_ADD)
		raise(SIGKILL);
}

/* V: hold the role, say so, wait for S's post, combine and die in it. */
static void victim(pid_t d, int up, int go)
{
	struct ssq_client *c = connect_retry(d);
	struct ssq_queue *q = NULL;
	struct ssq_producer *p;
	uint32_t zero = 0;
	char x = 0;

	if (!c || ssq_queue_open(c, "q0", &q))
		_exit(2);
	p = ssq_queue_producer(q);
	if (!__atomic_compare_exchange_n(&p->ctl->comb_role, &zero, p->id + 1, 0,
	                                 __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		_exit(3);
	if (write(up, "r", 1) != 1 || read(go, &x, 1) != 1)
		_exit(4);
	die_armed = 1;
	(void)ssq__combine(p);
	_exit(5); /* not killed: the hook was not reached */
}

int main(void)
{
	struct ssq_client *c = NULL;
	struct ssq_queue *q = NULL;
	struct ssq_buf src, dst;
	struct ssq_producer *p;
	int up[2], go[2], status = 0, waited, rc;
	pid_t d, v = -1;
	pthread_t t;
	char x = 0;

	t_need_ssqd();
	d = flow_start_q0("abk", &c, &q, &src, &dst);
	if (d < 0 || test_failures)
		goto out;
	p = ssq_queue_producer(q);
	CHECK(pipe(up) == 0 && pipe(go) == 0, "pipes");
	v = fork();
	if (v == 0)
		victim(d, up[1], go[0]);
	CHECK(read(up[0], &x, 1) == 1 && x == 'r', "V did not take the role");
	if (x != 'r')
		goto out;
	memset(src.addr, 0x33, LEN);
	memset(dst.addr, 0, LEN);
	rc = ssq_post_write_combined(p, src.iova, src.lkey, LEN, dst.remote_addr,
	                             dst.rkey, 7, SSQ_WQE_SIGNALED);
	CHECK(rc == 0 && (p->me->hand.word & 3) == SSQ_HAND_POSTED,
	      "S's WRITE not handed over: %d, state %u", rc,
	      (unsigned)(p->me->hand.word & 3));
	CHECK(write(go[1], "g", 1) == 1, "go");
	waitpid(v, &status, 0);
	v = -1;
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
	      "V not killed at its reservation (status 0x%x)", status);
	/* ssqd's heal: the role freed. */
	for (waited = 0;
	     waited < 200 && __atomic_load_n(&p->ctl->comb_role, __ATOMIC_ACQUIRE);
	     waited++)
		usleep(50000);
	CHECK(p->ctl->comb_role == 0, "ssqd did not free V's role in 10 s");
	printf("V killed between its swap and its take; ssqd healed: role %u, S's "
	       "word state %u, pending %llx\n",
	       p->ctl->comb_role, (unsigned)(p->me->hand.word & 3),
	       (unsigned long long)p->ctl->comb_pending);

	/*
	 * S waits for its WRITE: on a thread, given WAIT_S (a forked child
	 * has no mapping of the queue: MADV_DONTFORK).
	 */
	CHECK(pthread_create(&t, NULL, waiter, p) == 0, "waiter thread");
	for (waited = 0;
	     waited < WAIT_S * 10 && !__atomic_load_n(&wait_done, __ATOMIC_ACQUIRE);
	     waited++)
		usleep(100000);
	CHECK(wait_done,
	      "S's ssq_wait(1, 3 s) has not returned after %d s: its settle spins "
	      "(WRITE landed: %s; S's word state %u)",
	      WAIT_S, ((const volatile uint8_t *)dst.addr)[0] == 0x33 ? "yes" : "no",
	      (unsigned)(p->me->hand.word & 3));
	if (wait_done) {
		pthread_join(t, NULL);
		CHECK(wait_rc == 1, "S's ssq_wait: %d, not its completion", wait_rc);
	}
	printf("S's ssq_wait: %s\n", wait_done ? "returned" : "hung");
	if (!wait_done) {
		/* The thread spins on: end here, ssqd first. */
		t_ssqd_kill(d, sock_path);
		exit(test_exit("ssq_combine_adv_bitless_kill"));
	}
out:
	if (v > 0) {
		kill(v, SIGKILL);
		waitpid(v, NULL, 0);
	}
	if (c)
		ssq_client_close(c);
	if (d > 0)
		t_ssqd_kill(d, sock_path);
	return test_exit("ssq_combine_adv_bitless_kill");
}
