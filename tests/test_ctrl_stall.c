/* SPDX-License-Identifier: MIT */
/*
 * A producer that stops holding part of the queue stalls the others no
 * longer than --stall-ms plus a heal: ssqd kills it and heals it as a
 * death. And a queue left with work published and never rung gets going
 * again by itself. Against ssqd on the emulated device, --stall-ms 100:
 *  1. a WQE published and never submitted (its producer polls, which
 *     routes but never rings) completes within 2 s;
 *  2. busy producers are never killed: one posting flat out, one spinning
 *     on ssq_poll and ssq_submit with nothing to do (it takes and lets go
 *     both leases all the time), one holding a reservation open for 8 x
 *     the deadline's fifth while it publishes it WQE by WQE;
 *  3. a producer is stopped (SIGSTOP, while it spins at a fault hook) right after the
 *     fetch-add of its reservation, while it holds the doorbell lease,
 *     and while it holds the CQ lease: each time another producer's WRITE
 *     completes within 2 s, the stopped one dies of SIGKILL, and ssqd's
 *     log names its pid and what it held. Without the deadline the WRITE
 *     waits for as long as the producer stays stopped: for ever here;
 *  4. a producer that is not stopped but sleeps for ever holding a
 *     reservation is not killed (what names it as the holder is memory any
 *     client can write): after 10 x the deadline (one merely waiting for a
 *     CPU moves on before) ssqd starts the queue over. The WRITE behind the
 *     hole completes as flushed within 3 s, the next one succeeds, and the
 *     sleeper lives;
 *  5. a producer whose main thread has exited (its /proc/PID/stat says Z)
 *     and whose worker is stopped mid-reservation is killed like 3.
 * SSQ_TEST_STALL_OPT overrides the option passed (empty: none, for an
 * ssqd without it).
 */
#define SSQ_FAULT_HOOKS 1
#include "stall_flow.h"
#include <pthread.h>

#define BUSY_S 1.5

static int stop_where, hook_fd = -1;

/*
 * This build's fault hooks: say so and spin in user code, where the test
 * stops the process (SIGSTOP: as a debugger, or a long preemption would)
 * in the middle of its hold. Not raise(SIGSTOP): a process stopped inside
 * a system call holds nothing as far as ssqd can tell (the fast path makes
 * none mid-hold), and ssqd rightly does not kill it.
 */
void ssq_fault_hook(int where)
{
	if (where == stop_where) {
		char b = 1;

		stop_where = 0;
		(void)!write(hook_fd, &b, 1);
		for (;;)
			__asm__ volatile("" ::: "memory");
	}
}

/* ---- 2. busy producers ---- */

static int busy_poster(void)
{
	struct conn k;
	struct ssq_completion comp[16];
	uint64_t posted = 0, got = 0;
	double t0 = now_s();
	int rc, n, i;

	if (conn_open(&k))
		return 3;
	while (now_s() - t0 < BUSY_S) {
		rc = ssq_post_write(k.p, k.src.iova, k.src.lkey, 64, k.dst.remote_addr,
		                    k.dst.rkey, posted, SSQ_WQE_SIGNALED);
		if (rc && rc != -EAGAIN)
			return 4;
		posted += !rc;
		n = ssq_poll(k.p, comp, 16);
		for (i = 0; i < n; i++, got++)
			if (comp[i].status != IBV_WC_SUCCESS || comp[i].wr_id != got)
				return 5;
	}
	while (got < posted && now_s() - t0 < BUSY_S + WAIT_S) {
		n = ssq_poll(k.p, comp, 16);
		for (i = 0; i < n; i++, got++)
			if (comp[i].status != IBV_WC_SUCCESS || comp[i].wr_id != got)
				return 5;
	}
	return got == posted && posted > 0 ? 0 : 6;
}

static int busy_spinner(void)
{
	struct conn k;
	struct ssq_completion comp[16];
	double t0 = now_s();

	if (conn_open(&k))
		return 3;
	while (now_s() - t0 < BUSY_S) {
		if (ssq_poll(k.p, comp, 16) != 0)
			return 4;
		ssq_submit(k.p);
	}
	return 0;
}

/* A reservation of 8 WQEBBs, published one a fifth of the deadline apart. */
static int slow_batch(void)
{
	struct conn k;
	uint64_t pos = 0;
	unsigned i, round;

	if (conn_open(&k))
		return 3;
	for (round = 0; round < 2; round++) {
		double t0 = now_s();

		while (ssq_reserve(k.p, 8, &pos) == -EAGAIN)
			if (now_s() - t0 > WAIT_S)
				return 4;
		for (i = 0; i < 8; i++) {
			unsigned user = i == 7 ? SSQ_WQE_SIGNALED : 0;

			usleep(atoi(STALL_MS) * 1000 / 5);
			ssq_prep_rdma_write(ssq_producer_sq(k.p), (uint32_t)(pos + i),
			                    k.src.iova, k.src.lkey, 64,
			                    k.dst.remote_addr + 64 * i, k.dst.rkey,
			                    ssq_wqe_flags(k.p, pos + i, 1, user));
			if (ssq_publish(k.p, pos + i, 1, round, user))
				return 5;
		}
		ssq_submit(k.p);
		if (wait_comp(&k, round, now_s(), WAIT_S) < 0)
			return 6;
	}
	return 0;
}

static void busy_producers_live(void)
{
	int (*body[3])(void) = { busy_poster, busy_spinner, slow_batch };
	const char *name[3] = { "a producer posting flat out",
		                "a producer spinning on poll and submit",
		                "a producer publishing a reservation slowly" };
	pid_t kid[3];
	int i, status;

	for (i = 0; i < 3; i++) {
		kid[i] = fork();
		if (kid[i] == 0)
			_exit(body[i]());
	}
	for (i = 0; i < 3; i++) {
		waitpid(kid[i], &status, 0);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "%s: status 0x%x (killed by signal %d)", name[i], status,
		      WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	}
	CHECK(log_count("killed", NULL) == 0, "ssqd killed a busy producer (%s)",
	      log_path);
}

/* ---- 1. published, never rung ---- */

static void published_never_rung(struct conn *k)
{
	double t0 = now_s(), took;
	uint64_t pos = 0;

	CHECK(ssq_reserve(k->p, 1, &pos) == 0, "reserve");
	ssq_prep_rdma_write(ssq_producer_sq(k->p), (uint32_t)pos, k->src.iova,
	                    k->src.lkey, 64, k->dst.remote_addr, k->dst.rkey,
	                    ssq_wqe_flags(k->p, pos, 1, SSQ_WQE_SIGNALED));
	CHECK(ssq_publish(k->p, pos, 1, 0x5eed, SSQ_WQE_SIGNALED) == 0, "publish");
	/* No ssq_submit: ssq_poll routes, it never rings. */
	took = wait_comp(k, 0x5eed, t0, WAIT_S);
	CHECK(took >= 0 && took < BOUND_S,
	      "a WQE published and never rung completed after %.3f s (-1: not in %.0f "
	      "s)",
	      took, WAIT_S);
	CHECK(log_count_wait("none completed for", "doorbell", 1, WAIT_S) >= 1,
	      "ssqd's log says nothing of the repair (%s)", log_path);
	printf("published, never rung: completed after %.0f ms\n", took * 1e3);
}

/* ---- 3. a producer stopped holding part of the queue ---- */

static void victim(int where, int ready)
{
	struct conn k;
	uint64_t pos;
	char ok = 0;

	/* where 0: not stopped, asleep for ever holding a reservation. */
	if (conn_open(&k) == 0 && (where || ssq_reserve(k.p, 1, &pos) == 0))
		ok = 1;
	(void)!write(ready, &ok, 1);
	if (!ok)
		_exit(3);
	if (where == 0)
		for (;;)
			pause();
	hook_fd = ready;
	stop_where = where;
	(void)write_timed(&k, 0x51, WAIT_S); /* stops in here */
	_exit(2);                            /* resumed: not killed */
}

/*
 * Producer @v is stopped holding part of the queue: another's WRITE
 * (@wr_id, through @k) completes within @bound, and ssqd kills @v and says
 * so. @what names the case. @reaped: @v's end was reaped already, with
 * @status.
 */
static void killed_for_stall(struct conn *k, pid_t v, uint64_t wr_id, const char *what,
                             double bound, int reaped, int status)
{
	char pidstr[32];
	double took = write_timed(k, wr_id, WAIT_S);

	CHECK(took >= 0 && took < bound,
	      "%s: another producer's WRITE took %.3f s (-1: not in %.0f s)", what, took,
	      WAIT_S);
	if (took < 0 && !reaped) /* as it was: the stop goes on; end it */
		kill(v, SIGKILL);
	if (!reaped)
		waitpid(v, &status, 0);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
	      "%s: the stopped producer ended with status 0x%x, not SIGKILL", what,
	      status);
	snprintf(pidstr, sizeof(pidstr), "pid %d ", (int)v);
	CHECK(log_count_wait(pidstr, "killed", 1, WAIT_S) == 1,
	      "%s: ssqd's log does not say it killed %s", what, pidstr);
	printf("a producer %s: killed, another's WRITE completed after %.0f ms\n", what,
	       took * 1e3);
}

static void stopped_holder(struct conn *k, int where, const char *what, double bound)
{
	int ready[2], status = 0, reaped = 0;
	char ok = 0;
	pid_t v;

	if (pipe(ready))
		abort();
	v = fork();
	if (v == 0)
		victim(where, ready[1]);
	close(ready[1]);
	CHECK(read(ready[0], &ok, 1) == 1 && ok == 1, "%s: victim did not attach", what);
	if (where) {
		CHECK(read(ready[0], &ok, 1) == 1, "%s: victim did not reach its hook",
		      what);
		usleep(20000); /* out of its write(): spinning in user code */
		kill(v, SIGSTOP);
		/*
		 * Stopped - or, where this process was kept off the CPU past
		 * the stall deadline (a loaded machine), already killed by
		 * ssqd for the stop, which killed_for_stall checks.
		 */
		reaped = waitpid(v, &status, WUNTRACED) == v && WIFSIGNALED(status);
		CHECK(WIFSTOPPED(status) || (reaped && WTERMSIG(status) == SIGKILL),
		      "%s: victim did not stop (status 0x%x)", what, status);
	}
	close(ready[0]);
	killed_for_stall(k, v, 0x77 + (uint64_t)where, what, bound, reaped, status);
}

/* Item 4: a producer asleep (not stopped) holding a reservation. */
static void asleep_holder(struct conn *k, double bound)
{
	struct ssq_completion comp = { 0 };
	int ready[2], status = 0, rc;
	char ok = 0, pidstr[32];
	double t0 = now_s(), took = -1;
	pid_t v;

	if (pipe(ready))
		abort();
	v = fork();
	if (v == 0)
		victim(0, ready[1]);
	close(ready[1]);
	CHECK(read(ready[0], &ok, 1) == 1 && ok == 1, "asleep: victim did not attach");
	close(ready[0]);
	while (
	    (rc = ssq_post_write(k->p, k->src.iova, k->src.lkey, 64, k->dst.remote_addr,
	                         k->dst.rkey, 0x99, SSQ_WQE_SIGNALED)) == -EAGAIN &&
	    now_s() - t0 < WAIT_S)
		usleep(100);
	CHECK(rc == 0, "asleep: post behind the hole: %d", rc);
	while (now_s() - t0 < WAIT_S && took < 0)
		if (ssq_poll(k->p, &comp, 1) == 1)
			took = now_s() - t0;
		else
			usleep(100);
	CHECK(took >= 0 && took < bound && comp.wr_id == 0x99 &&
	          comp.status == IBV_WC_WR_FLUSH_ERR,
	      "asleep: the WRITE behind the hole: %.3f s (-1: none in %.0f s), wr_id "
	      "0x%llx, %s; want flushed within %.0f s",
	      took, WAIT_S, (unsigned long long)comp.wr_id,
	      took < 0 ? "-" : ibv_wc_status_str((enum ibv_wc_status)comp.status), bound);
	took = write_timed(k, 0x9a, WAIT_S);
	CHECK(took >= 0 && took < BOUND_S, "asleep: the next WRITE took %.3f s", took);
	CHECK(waitpid(v, &status, WNOHANG) == 0,
	      "asleep: the sleeping holder ended (status 0x%x): ssqd killed a process "
	      "that was not stopped",
	      status);
	snprintf(pidstr, sizeof(pidstr), "pid %d ", (int)v);
	CHECK(log_count_wait(pidstr, "starting the queue over", 1, WAIT_S) == 1,
	      "asleep: ssqd's log does not say it took %s's hold back", pidstr);
	kill(v, SIGKILL);
	waitpid(v, &status, 0);
	printf("a producer asleep holding a reservation: the WRITE behind it flushed, "
	       "the next completed, nobody killed\n");
}

/* ---- 5. a stopped holder whose main thread has exited ---- */

static struct conn zv;

/* The worker: reserves, says so on fd 3, and spins mid-hold in user code. */
static void *zombie_worker(void *arg)
{
	uint64_t pos = 0;
	int rc = ssq_reserve(zv.p, 1, &pos);

	(void)arg;
	(void)!write(3, &rc, sizeof(rc));
	for (;;)
		__asm__ volatile("" ::: "memory");
	return NULL;
}

/*
 * /proc/PID/stat is the thread-group leader's: after pthread_exit in main
 * it says Z whatever the others do. The worker, stopped mid-reservation,
 * must be judged by its own state and killed at the deadline.
 */
static void zombie_leader_holder(struct conn *k)
{
	int p[2], rc = -1;
	pid_t v;

	if (pipe(p))
		abort();
	v = fork();
	if (v == 0) {
		pthread_t t;

		dup2(p[1], 3);
		if (conn_open(&zv))
			_exit(3);
		pthread_create(&t, NULL, zombie_worker, NULL);
		pthread_exit(NULL); /* the leader goes: its stat says Z */
	}
	close(p[1]);
	CHECK(read(p[0], &rc, sizeof(rc)) == sizeof(rc) && rc == 0,
	      "zombie leader: the worker's reservation %d", rc);
	close(p[0]);
	usleep(20000); /* out of its write(): spinning in user code */
	kill(v, SIGSTOP);
	killed_for_stall(k, v, 0x88, "stopped mid-hold with its main thread gone",
	                 BOUND_S, 0, 0);
}

int main(void)
{
	struct conn k;
	pid_t d;

	d = stall_ssqd_up("stall");
	if (d < 0)
		return 1;
	if (conn_open(&k)) {
		fprintf(stderr, "setup failed; ssqd's log: %s\n", log_path);
		kill(d, SIGKILL);
		return 1;
	}
	/* First: a death's heal submits too, and would ring it. */
	published_never_rung(&k);
	busy_producers_live();
	stopped_holder(&k, SSQ_HOOK_AFTER_ADD, "stopped right after its fetch-add",
	               BOUND_S);
	stopped_holder(&k, SSQ_HOOK_DB_LEASE, "stopped holding the doorbell lease",
	               BOUND_S);
	stopped_holder(&k, SSQ_HOOK_CQ_LEASE, "stopped holding the CQ lease", BOUND_S);
	/* Not stopped: 10 x the deadline (a preempted producer moves on). */
	asleep_holder(&k, BOUND_S + 1.0);
	zombie_leader_holder(&k);
	CHECK(write_timed(&k, 0x99, WAIT_S) >= 0, "the queue works after it all");
	ssq_client_close(k.c);
	stall_ssqd_down(d);
	return test_exit("ctrl_stall");
}
