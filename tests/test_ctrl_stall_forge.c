/* SPDX-License-Identifier: MIT */
/*
 * What names a holder in a shared queue is memory every client of the
 * queue writes, so a client can forge a hold in another's name, or leave
 * one that nobody holds. ssqd (--stall-ms 100, emulated device) must
 * neither kill a process on such evidence nor leave the queue wedged:
 *  1. the doorbell lease set to a busy producer's record (it then leaves
 *     its doorbells to "the holder"): the producer is not killed, and the
 *     queue starts over within AWAKE_TIMES x the deadline;
 *  2. an idle (sleeping) client's record set to RESERVING: not killed;
 *  3. a reservation whose record its client then set IDLE - a hole at the
 *     published head that no live reservation covers: another client's
 *     WRITE behind it completes (as flushed) within 3 s and the next one
 *     succeeds;
 *  4. the CQ lease set to a record no live client holds: the same;
 *  5. a live, idle record's generation made odd ("mid-reservation" to a
 *     healer), then a death, whose heal waits on it for ever - which
 *     turned the take-backs off - and the CQ lease forged again: the
 *     queue moves on within 3 s all the same;
 *  6. a client traced (strace-like, PTRACE_SYSCALL: state t at each of its
 *     system calls) and its idle record forged RESERVING: not killed.
 * Each of these got a healthy process killed or wedged the queue for good
 * before (issue 16, two adversaries' findings).
 */
#include "stall_flow.h"
#include <sys/ptrace.h>

#define VICTIM_S 4.0

/* A victim's life: 1 busy posting, 0 asleep. Reports its record id. */
static void victim(int busy, int report)
{
	struct ssq_completion comp[16];
	struct conn k;
	uint32_t id = 0;
	uint64_t wr = 0;
	double t0 = now_s();
	int rc, n, i;

	if (conn_open(&k))
		_exit(3);
	id = k.p->id;
	if (write(report, &id, sizeof(id)) != sizeof(id))
		_exit(3);
	while (now_s() - t0 < VICTIM_S) {
		if (!busy) {
			usleep(10000);
			continue;
		}
		rc = ssq_post_write(k.p, k.src.iova, k.src.lkey, 64, k.dst.remote_addr,
		                    k.dst.rkey, wr, SSQ_WQE_SIGNALED);
		if (rc && rc != -EAGAIN && rc != -EIO)
			_exit(4);
		wr += !rc;
		n = ssq_poll(k.p, comp, 16);
		for (i = 0; i < n; i++)
			if (comp[i].status != IBV_WC_SUCCESS &&
			    comp[i].status != IBV_WC_WR_FLUSH_ERR)
				_exit(5);
	}
	ssq_client_close(k.c);
	_exit(0);
}

static pid_t victim_start(int busy, uint32_t *id)
{
	int p[2];
	pid_t v;

	if (pipe(p))
		abort();
	v = fork();
	if (v == 0)
		victim(busy, p[1]);
	close(p[1]);
	if (read(p[0], id, sizeof(*id)) != sizeof(*id))
		*id = UINT32_MAX;
	close(p[0]);
	return v;
}

/* The victim must end by itself, exit 0, and ssqd must not name it killed. */
static void victim_lived(pid_t v, const char *what)
{
	char pidstr[32];
	int status = 0;

	waitpid(v, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "%s: the victim ended with status 0x%x (%s)", what, status,
	      WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "exit");
	snprintf(pidstr, sizeof(pidstr), "pid %d ", (int)v);
	CHECK(log_count(pidstr, "killed") == 0, "%s: ssqd's log says it killed %s", what,
	      pidstr);
}

/*
 * @b's WRITE completes (success or flushed) within @bound, then one
 * succeeds. -EIO is retried too: reservations fail while ssqd starts the
 * queue over (ssq_queue_recover would answer -EINVAL: not in error).
 */
static void queue_moves(struct conn *b, uint64_t wr, const char *what, double bound)
{
	struct ssq_completion comp = { 0 };
	double t0 = now_s(), took = -1;
	int rc;

	while (
	    (rc = ssq_post_write(b->p, b->src.iova, b->src.lkey, 64, b->dst.remote_addr,
	                         b->dst.rkey, wr, SSQ_WQE_SIGNALED)) &&
	    (rc == -EAGAIN || rc == -EIO) && now_s() - t0 < WAIT_S)
		usleep(100);
	CHECK(rc == 0, "%s: post: %d", what, rc);
	while (rc == 0 && took < 0 && now_s() - t0 < WAIT_S)
		if (ssq_poll(b->p, &comp, 1) == 1 && comp.wr_id == wr)
			took = now_s() - t0;
		else
			usleep(100);
	CHECK(took >= 0 && took < bound,
	      "%s: a WRITE behind it took %.3f s (-1: none in %.0f s)", what, took,
	      WAIT_S);
	took = write_timed(b, wr + 1, WAIT_S);
	CHECK(took >= 0 && took < BOUND_S, "%s: the next WRITE took %.3f s", what, took);
	printf("%s: the queue moved on\n", what);
}

/*
 * Case 6: a child traced by this process with PTRACE_SYSCALL (as strace
 * does: stopped, state t, at every system call's entry and exit) that
 * sleeps in a loop; its idle record forged RESERVING. ssqd must not count
 * it stopped (it is not, at most looks) and must not kill it.
 */
static void traced_victim(struct ssq_ctl *ctl)
{
	uint32_t id = UINT32_MAX;
	double t0;
	int status = 0, alive = 1;
	pid_t v = victim_start(0, &id);

	CHECK(id < SSQ_MAX_PRODUCERS, "traced victim's record");
	if (ptrace(PTRACE_SEIZE, v, 0, 0)) {
		CHECK(0, "PTRACE_SEIZE: %s", strerror(errno));
		kill(v, SIGKILL);
		waitpid(v, &status, 0);
		return;
	}
	ptrace(PTRACE_INTERRUPT, v, 0, 0);
	__atomic_store_n(&ctl->producers[id].state, SSQ_PROD_RESERVING, __ATOMIC_SEQ_CST);
	/* The tracer's loop: resume it to its next system call stop, again. */
	for (t0 = now_s(); now_s() - t0 < 1.5 && alive;) {
		if (waitpid(v, &status, __WALL) != v || WIFEXITED(status) ||
		    WIFSIGNALED(status)) {
			alive = 0;
			break;
		}
		ptrace(PTRACE_SYSCALL, v, 0, 0);
	}
	CHECK(alive, "traced: the victim ended under the tracer (status 0x%x, %s)",
	      status, WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "exit");
	if (alive) {
		/* Detach from a tracing stop: the last resume left it running. */
		ptrace(PTRACE_INTERRUPT, v, 0, 0);
		waitpid(v, &status, __WALL);
		ptrace(PTRACE_DETACH, v, 0, 0);
		victim_lived(v, "a traced client's record forged RESERVING");
	}
}

int main(void)
{
	struct conn a, b, x;
	struct ssq_ctl *ctl;
	uint32_t id;
	uint64_t pos;
	int overs;
	pid_t d, v;

	d = stall_ssqd_up("forge");
	if (d < 0)
		return 1;
	if (conn_open(&a) || conn_open(&b) || conn_open(&x)) {
		fprintf(stderr, "setup failed; ssqd's log: %s\n", log_path);
		kill(d, SIGKILL);
		return 1;
	}
	ctl = a.p->ctl;

	/* 1: the doorbell lease in a busy producer's name. */
	v = victim_start(1, &id);
	CHECK(id < SSQ_MAX_PRODUCERS, "busy victim's record");
	usleep(200000);
	overs = log_count("starting the queue over", NULL);
	/* Until it sticks: the victim may have held it and let go over ours. */
	for (pos = 0; pos < 50; pos++) {
		__atomic_store_n(&ctl->db_lease, id + 1, __ATOMIC_SEQ_CST);
		usleep(20000);
		if (__atomic_load_n(&ctl->db_lease, __ATOMIC_SEQ_CST) == id + 1)
			break;
	}
	queue_moves(&b, 0x100, "doorbell lease forged in a busy producer's name",
	            BOUND_S + 1.0);
	CHECK(log_count("starting the queue over", NULL) > overs,
	      "forged doorbell lease: ssqd did not start the queue over");
	victim_lived(v, "doorbell lease forged in a busy producer's name");

	/* 2: an idle client's record set RESERVING. */
	v = victim_start(0, &id);
	CHECK(id < SSQ_MAX_PRODUCERS, "idle victim's record");
	overs = log_count("starting the queue over", NULL);
	__atomic_store_n(&ctl->producers[id].state, SSQ_PROD_RESERVING, __ATOMIC_SEQ_CST);
	queue_moves(&b, 0x200, "an idle client's record forged RESERVING", BOUND_S);
	victim_lived(v, "an idle client's record forged RESERVING");
	CHECK(log_count("starting the queue over", NULL) > overs,
	      "forged RESERVING record: ssqd did not take it back");

	/* 3: a reservation, its record then written IDLE by its own client. */
	CHECK(ssq_reserve(a.p, 1, &pos) == 0, "A's reservation");
	__atomic_store_n(&a.p->me->state, SSQ_PROD_IDLE, __ATOMIC_SEQ_CST);
	queue_moves(&b, 0x300, "a hole no live reservation covers", BOUND_S + 1.0);

	/* 4: the CQ lease naming a record no client holds. */
	__atomic_store_n(&ctl->producers[SSQ_MAX_PRODUCERS - 2].state, SSQ_PROD_IDLE,
	                 __ATOMIC_SEQ_CST);
	__atomic_store_n(&ctl->cq_lease, SSQ_MAX_PRODUCERS - 1, __ATOMIC_SEQ_CST);
	queue_moves(&b, 0x400, "the CQ lease naming a record nobody holds",
	            BOUND_S + 1.0);

	/* 5: a heal that waits for ever, then an orphan CQ lease. */
	__atomic_store_n(&a.p->me->resv_gen, a.p->me->resv_gen | 1, __ATOMIC_SEQ_CST);
	ssq_client_close(x.c);
	usleep(300000);
	__atomic_store_n(&ctl->producers[SSQ_MAX_PRODUCERS - 2].state, SSQ_PROD_IDLE,
	                 __ATOMIC_SEQ_CST);
	__atomic_store_n(&ctl->cq_lease, SSQ_MAX_PRODUCERS - 1, __ATOMIC_SEQ_CST);
	queue_moves(&b, 0x500, "a heal held up for ever, then the CQ lease of nobody",
	            BOUND_S + 1.0);

	/* 6: a traced client's record forged RESERVING. */
	traced_victim(ctl);

	CHECK(log_count("killed", NULL) == 0, "ssqd killed someone");
	ssq_client_close(a.c);
	ssq_client_close(b.c);
	stall_ssqd_down(d);
	return test_exit("ctrl_stall_forge");
}
