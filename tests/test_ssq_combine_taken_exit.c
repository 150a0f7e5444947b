/* SPDX-License-Identifier: MIT */
/*
 * A combined request TAKEN by a stopped combiner outlives its owner
 * (<ssq/combine.h>; ssqd --stall-ms 0, on the emulated device). Owner A,
 * a child process with its own connection, registers a memfd
 * (ssq_mem_reg_fd: the FETCH_ADD's local word) and hands a combined
 * FETCH_ADD over to B (this process, holding the combiner role), whose
 * combiner thread takes it and stops (SSQ_HOOK_COMBINE_TAKEN) before
 * writing it. A closes its queue (-EAGAIN: the request is still TAKEN)
 * and exits; ssqd sees it go. Then B goes on and writes A's request, with
 * A's keys. (A's ssq_mem_dereg in between is refused -EBUSY: the WQE is
 * not written yet, and may carry any of its keys.) Before, ssqd dropped
 * A's registrations at its death (and let A deregister them): the
 * device met a dead lkey (LOC_PROT_ERR) and the queue went to error for
 * every client. Now A's registrations stay until the queue completed
 * what was reserved at A's death: the request runs once, the queue stays
 * ready, B's own WRITE after it completes, and A's registration goes
 * after that. (The FETCH_ADD's result lands in the memory of a process
 * that exited: the emulated device drops it, where a ConnectX writes the
 * pages the registration pins: src/emu/mem_io.c.)
 * Part 2: a live client P closes the same way; once its request ran, its
 * record goes to client M, whose own request B then takes and stops: P's
 * ssq_mem_dereg is not held by M's request (ssqd forgets P's watch over
 * the record when it hands the record out).
 * Part 3: owner K killed (no close) with its request TAKEN: the same.
 */
#define _GNU_SOURCE
#define SSQ_FAULT_HOOKS 1
#include <pthread.h>
#include <sys/mman.h>
#include <ssq/combine.h>
#include "dv/ctl.h"
#include "stall_flow.h"
#include "hook_gate.h"

static struct conn b;
static struct hook_gate b_gate; /* B stops at the hook */

void ssq_fault_hook(int where)
{
	hook_gate_hold(&b_gate, where, SSQ_HOOK_COMBINE_TAKEN);
}

static void *b_combines(void *arg)
{
	(void)arg;
	(void)ssq__combine(b.p);
	return NULL;
}

/* What A says up the pipe: its record, its post's and its close's results. */
struct a_says {
	int rc, dereg;
	uint32_t id;
};

/*
 * A: connect, register the memfd, hand a FETCH_ADD of 1 at @raddr/@rkey
 * over (B holds the role by then: A waits for its go on @go), then close
 * when told (B stopped after taking it) and exit.
 */
static int owner(int up, int go, uint64_t raddr, uint32_t rkey)
{
	struct a_says s = { 0, 0, 0 };
	struct conn a;
	struct ssq_mr mr;
	char c;
	int fd = memfd_create("a-local", MFD_CLOEXEC);

	if (fd < 0 || ftruncate(fd, 4096) || conn_open(&a) ||
	    ssq_mem_reg_fd(a.c, fd, 0, 4096, IBV_ACCESS_LOCAL_WRITE, &mr))
		return 1;
	s.id = a.p->id;
	if (write(up, &s, sizeof(s)) != sizeof(s) || read(go, &c, 1) != 1)
		return 1;
	s.rc = ssq_post_fetch_add_combined(a.p, mr.iova, mr.lkey, raddr, rkey, 1, 7,
	                                   SSQ_WQE_SIGNALED);
	if (write(up, &s, sizeof(s)) != sizeof(s) || read(go, &c, 1) != 1)
		return 1;
	s.rc = ssq_queue_close(a.q);
	/* Its keys are in a WQE not written yet: the registration must stay. */
	s.dereg = ssq_mem_dereg(a.c, &mr);
	if (write(up, &s, sizeof(s)) != sizeof(s))
		return 1;
	ssq_client_close(a.c);
	return 0;
}

static int said(int fd, struct a_says *s)
{
	return read(fd, s, sizeof(*s)) == sizeof(*s) ? 0 : -1;
}

/* B, holding the role, takes record @id's POSTED request and stops. */
static int b_takes(struct ssq_ctl *ctl, uint32_t id, pthread_t *bt)
{
	hook_gate_arm(&b_gate);
	if (pthread_create(bt, NULL, b_combines, NULL))
		return -1;
	if (!hook_gate_wait(&b_gate, 30)) {
		pthread_join(*bt, NULL); /* it returned without taking */
		return -1;
	}
	return (ctl->producers[id].hand.word & 3) == SSQ_HAND_TAKEN ? 0 : 1;
}

static void b_goes_on(pthread_t bt)
{
	__atomic_store_n(&b_gate.goes, 1, __ATOMIC_RELEASE);
	pthread_join(bt, NULL);
}

/* A combined FETCH_ADD of 1 at b.dst's word @cell, handed over to B. */
static int fa_to_b(struct ssq_ctl *ctl, struct ssq_producer *p, uint64_t laddr,
                   uint32_t lkey, unsigned cell)
{
	__atomic_store_n(&ctl->comb_role, b.p->id + 1, __ATOMIC_SEQ_CST);
	if (ssq_post_fetch_add_combined(p, laddr, lkey, b.dst.remote_addr + 8 * cell,
	                                b.dst.rkey, 1, cell, SSQ_WQE_SIGNALED))
		return -1;
	return (p->me->hand.word & 3) == SSQ_HAND_POSTED ? 0 : -1;
}

/*
 * 2. A record detached with its request out, then settled and claimed by
 * another client M: the detaching client P stops watching it. M's own
 * request TAKEN by stopped B must not hold P's deregistration (nor could
 * M's scribbles there).
 */
static void reclaimed(struct ssq_ctl *ctl)
{
	volatile uint64_t *cnt = (volatile uint64_t *)b.dst.addr;
	int fd = memfd_create("p-local", MFD_CLOEXEC), rc;
	struct conn p, m;
	struct ssq_mr mr;
	uint32_t rid;
	pthread_t bt;
	double t0;

	CHECK(fd >= 0 && ftruncate(fd, 4096) == 0 && conn_open(&p) == 0 &&
	          ssq_mem_reg_fd(p.c, fd, 0, 4096, IBV_ACCESS_LOCAL_WRITE, &mr) == 0,
	      "2: P's start");
	if (test_failures)
		return;
	rid = p.p->id;
	CHECK(fa_to_b(ctl, p.p, mr.iova, mr.lkey, 2) == 0 && b_takes(ctl, rid, &bt) == 0,
	      "2: B did not take P's request");
	if (test_failures)
		return;
	rc = ssq_queue_close(p.q);
	CHECK(rc == -EAGAIN, "2: P's close %d", rc);
	b_goes_on(bt);
	for (t0 = now_s(); cnt[2] == 0 && now_s() - t0 < 10;)
		usleep(1000);
	CHECK(cnt[2] == 1, "2: P's request ran %llu times", (unsigned long long)cnt[2]);
	/* Record rid settles once that completed: M's open may get it. */
	for (t0 = now_s(); now_s() - t0 < 10; usleep(10000)) {
		if (conn_open(&m))
			break;
		if (m.p->id == rid)
			break;
		ssq_client_close(m.c);
		m.c = NULL;
	}
	CHECK(m.c && m.p->id == rid, "2: P's record %u never reused (the test's premise)",
	      rid);
	if (test_failures)
		return;
	CHECK(fa_to_b(ctl, m.p, m.src.iova, m.src.lkey, 3) == 0 &&
	          b_takes(ctl, rid, &bt) == 0,
	      "2: B did not take M's request");
	if (test_failures)
		return;
	rc = ssq_mem_dereg(p.c, &mr);
	printf("2. P's dereg, its detached record %u now M's, M's request TAKEN: %d\n",
	       rid, rc);
	CHECK(rc == 0, "2: P's dereg %d: held by another client's request", rc);
	b_goes_on(bt);
	for (t0 = now_s(); cnt[3] == 0 && now_s() - t0 < 10;)
		usleep(1000);
	CHECK(cnt[3] == 1 && !ssq_ctl_in_error(ctl), "2: M's request ran %llu times",
	      (unsigned long long)cnt[3]);
	(void)ssq_combine_flush(m.p);
	ssq_client_close(m.c);
	ssq_client_close(p.c);
	close(fd);
}

/*
 * 3. Owner K killed (SIGKILL, no close) while B holds its request TAKEN:
 * its registration stays until the request ran, as after a close.
 */
static void killed(struct ssq_ctl *ctl)
{
	volatile uint64_t *cnt = (volatile uint64_t *)b.dst.addr;
	int up[2], go[2], status = 0, n;
	char needle[96];
	struct a_says s;
	pthread_t bt;
	double t0;
	pid_t k;

	CHECK(pipe(up) == 0 && pipe(go) == 0, "3: pipes");
	k = fork();
	if (k == 0)
		_exit(owner(up[1], go[0], b.dst.remote_addr + 8 * 4, b.dst.rkey));
	CHECK(k > 0 && said(up[0], &s) == 0, "3: K's start");
	if (test_failures)
		return;
	__atomic_store_n(&ctl->comb_role, b.p->id + 1, __ATOMIC_SEQ_CST);
	CHECK(write(go[1], "p", 1) == 1 && said(up[0], &s) == 0 && s.rc == 0,
	      "3: K's combined FETCH_ADD: %d", s.rc);
	CHECK(b_takes(ctl, s.id, &bt) == 0, "3: B did not take K's request");
	if (test_failures) {
		kill(k, SIGKILL);
		waitpid(k, &status, 0);
		return;
	}
	kill(k, SIGKILL);
	CHECK(waitpid(k, &status, 0) == k, "3: K's end");
	snprintf(needle, sizeof(needle),
	         "client pid %d gone, its memory registrations kept until", (int)k);
	n = log_count_wait(needle, NULL, 1, 20);
	printf("3. K killed, its request TAKEN by stopped B: %d line(s) \"%s ...\"\n", n,
	       needle);
	CHECK(n == 1, "3: K's registrations not kept past its death");
	b_goes_on(bt);
	for (t0 = now_s(); cnt[4] == 0 && !ssq_ctl_in_error(ctl) && now_s() - t0 < 10;)
		usleep(1000);
	usleep(200000);
	printf("3. after B went on: K's request ran %llu time(s), queue %s\n",
	       (unsigned long long)cnt[4], ssq_ctl_in_error(ctl) ? "in ERROR" : "ready");
	CHECK(cnt[4] == 1 && !ssq_ctl_in_error(ctl), "3: K's request ran %llu times",
	      (unsigned long long)cnt[4]);
	snprintf(needle, sizeof(needle),
	         "client pid %d gone, its memory registrations dropped", (int)k);
	CHECK(log_count_wait(needle, NULL, 1, 20) == 1,
	      "3: K's registrations never dropped");
	close(up[0]);
	close(up[1]);
	close(go[0]);
	close(go[1]);
}

int main(void)
{
	int up[2], go[2], status = 0, n;
	volatile uint64_t *cnt;
	struct a_says s;
	struct ssq_ctl *ctl;
	char needle[96];
	pthread_t bt;
	pid_t d, a;

	setenv("SSQ_TEST_STALL_OPT", "--stall-ms=0", 1);
	d = stall_ssqd_up("comb-taken-exit");
	if (d < 0)
		return 1;
	if (conn_open(&b)) {
		t_ssqd_kill(d, sock_path);
		return 1;
	}
	cnt = b.dst.addr;
	*cnt = 0;
	ctl = b.p->ctl;
	CHECK(pipe(up) == 0 && pipe(go) == 0, "pipes");
	a = fork();
	if (a == 0)
		_exit(owner(up[1], go[0], b.dst.remote_addr, b.dst.rkey));
	CHECK(a > 0 && said(up[0], &s) == 0, "A's start");
	if (test_failures)
		goto out;

	/* B holds the role: A's post hands its request over. */
	__atomic_store_n(&ctl->comb_role, b.p->id + 1, __ATOMIC_SEQ_CST);
	CHECK(write(go[1], "p", 1) == 1 && said(up[0], &s) == 0 && s.rc == 0,
	      "A's combined FETCH_ADD: %d", s.rc);
	CHECK((ctl->producers[s.id].hand.word & 3) == SSQ_HAND_POSTED,
	      "A's request not handed over (word %llx)",
	      (unsigned long long)ctl->producers[s.id].hand.word);
	if (test_failures)
		goto out;
	__atomic_store_n(&b_gate.stops, 1, __ATOMIC_RELEASE);
	CHECK(pthread_create(&bt, NULL, b_combines, NULL) == 0, "B's thread");
	hook_gate_wait(&b_gate, 30);
	CHECK(b_gate.stopped && (ctl->producers[s.id].hand.word & 3) == SSQ_HAND_TAKEN,
	      "B did not take A's request (word %llx)",
	      (unsigned long long)ctl->producers[s.id].hand.word);
	if (!b_gate.stopped)
		goto out; /* B's thread returned, nothing to join on */

	/* A closes (its request still TAKEN) and exits; ssqd sees it go. */
	CHECK(write(go[1], "c", 1) == 1 && said(up[0], &s) == 0, "A's close");
	printf("A's close, its request TAKEN by stopped B: %d\n", s.rc);
	CHECK(s.rc == -EAGAIN, "A's close: %d, want -EAGAIN", s.rc);
	printf("A's ssq_mem_dereg after it: %d\n", s.dereg);
	CHECK(s.dereg == -EBUSY, "A's dereg: %d, want -EBUSY", s.dereg);
	CHECK(waitpid(a, &status, 0) == a && WIFEXITED(status) && !WEXITSTATUS(status),
	      "A's exit 0x%x", status);
	snprintf(needle, sizeof(needle), "client pid %d gone, its memory registrations",
	         (int)a);
	n = log_count_wait(needle, NULL, 1, 20);
	printf("ssqd on A's death: %d line(s) \"%s ...\"\n", n, needle);
	CHECK(n >= 1, "ssqd did not see A go");
	printf("at A's death: queue %s, reserve %llu published %llu completed %llu, "
	       "B's record state %u pos %llu\n",
	       ssq_ctl_in_error(ctl) ? "in ERROR" : "ready",
	       (unsigned long long)ctl->reserve, (unsigned long long)ctl->published,
	       (unsigned long long)ctl->completed, ctl->producers[b.p->id].state,
	       (unsigned long long)ctl->producers[b.p->id].pos);

	/* B goes on: A's request written with A's keys. */
	__atomic_store_n(&b_gate.goes, 1, __ATOMIC_RELEASE);
	pthread_join(bt, NULL);
	ran_once_wait(ctl, &b, cnt, "after B went on");
	CHECK(!ssq_ctl_in_error(ctl),
	      "the queue went to error: A's request ran with A's dropped keys");
	CHECK(*cnt == 1, "A's request ran %llu times, want once",
	      (unsigned long long)*cnt);
	n = write_status(&b, b.src.iova, b.src.lkey, b.dst.remote_addr + 64, b.dst.rkey,
	                 99);
	printf("B's WRITE after it: status %d\n", n);
	CHECK(n == IBV_WC_SUCCESS, "B's WRITE after A's request: status %d", n);
	snprintf(needle, sizeof(needle),
	         "client pid %d gone, its memory registrations dropped", (int)a);
	n = log_count_wait(needle, NULL, 1, 20);
	CHECK(n == 1, "A's registrations: %d \"dropped\" lines, want 1 (at last)", n);
	if (!test_failures)
		reclaimed(ctl);
	if (!test_failures)
		killed(ctl);
out:
	ssq_client_close(b.c);
	stall_ssqd_down(d);
	return test_exit("ssq_combine_taken_exit");
}
