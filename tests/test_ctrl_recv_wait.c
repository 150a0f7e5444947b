/* SPDX-License-Identifier: MIT */
/*
 * ssq_recv_wait against ssqd on the emulated device, in loopback:
 *  - bad arguments are -EINVAL; an ssqd with --recv-depth 0 gives -ENOTSUP;
 *  - nothing arrives: -ETIMEDOUT after the 30 ms asked for, having slept
 *    (its CPU time a small part of the wait);
 *  - across processes: a reader process sleeps on message k while a sender
 *    process SENDs through the queue 100 ms later; the reader returns 0
 *    soon after, the message is readable and holds the sender's bytes, and
 *    ssqd's poller woke it (the log's wake_seq moved; no waiter is left);
 *  - while the reader sleeps, nothing in ssqd spins for it: the emulated
 *    device's completion event logs the SEND and wakes the reader from the
 *    device's own thread (ssqd well under a core);
 *  - the same with SSQ_EMU_CQ_EVENTS=0, where ssqd's poller alone logs, as
 *    on a ConnectX: while the reader sleeps the poller does not nap (its
 *    thread, ssqd-recv, makes no voluntary context switch);
 *  - a reader killed in its sleep leaves the waiter count behind, and ssqd
 *    goes back to idle all the same (naps, well under 3 % of a core);
 *  - ssqd killed under a sleeping reader: -ENOTCONN.
 */
#include "recv_flow.h"
#include <sys/resource.h>
#include "idle_flow.h"
#include "ctrl/client/client_pvt.h"
#include "ctrl/daemon/util/util.h"

#define LEN 64u

static char sock[108];

static double cpu_self_s(void)
{
	struct rusage u;

	getrusage(RUSAGE_SELF, &u);
	return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec / 1e6 +
	       (double)u.ru_stime.tv_sec + (double)u.ru_stime.tv_usec / 1e6;
}

/* CPU time of every thread of @pid so far, in seconds. */
static double cpu_of(pid_t pid)
{
	return (double)idle_cpu_ns(pid) / 1e9;
}

/*
 * Times ssqd @pid's receive poller (the thread named ssqd-recv) has slept
 * so far: its voluntary context switches. A nap is one; spinning, even
 * with sched_yield, is none. -1: no such thread.
 */
static long poller_naps(pid_t pid)
{
	char path[64], tpath[400], line[128];
	struct dirent *e;
	long naps = -1;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	while (d && naps < 0 && (e = readdir(d))) {
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(tpath, sizeof(tpath), "%s/%s/comm", path, e->d_name);
		f = fopen(tpath, "r");
		if (!f)
			continue;
		if (!fgets(line, sizeof(line), f) || strcmp(line, "ssqd-recv\n")) {
			fclose(f);
			continue;
		}
		fclose(f);
		snprintf(tpath, sizeof(tpath), "%s/%s/status", path, e->d_name);
		f = fopen(tpath, "r");
		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "voluntary_ctxt_switches: %ld", &naps) == 1)
				break;
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return naps;
}

/* Share of a core @pid used over the next @secs. */
static double busy(pid_t pid, double secs)
{
	double a = cpu_of(pid), t0 = now_s();

	usleep((useconds_t)(secs * 1e6));
	return (cpu_of(pid) - a) / (now_s() - t0);
}

/*
 * Over @pre + @secs seconds, watching @log's beat every half millisecond:
 * in the last @secs, ssqd @pid's share of a core (*@spin) and its poller's
 * naps (*@naps). Returns the longest the beat may have stood in all that
 * time, seen from here: from the look before the one that saw it move to
 * the look that saw it move again (or the end), never less than it stood.
 * The poller naps under a beat that stood SSQD_WAIT_BEAT_NS, as from a
 * reader a loaded machine kept off the cores; @pre covers the beats it
 * judged on as the window opened.
 */
static double beat_window(pid_t pid, const struct shm_recv_log *log, double pre,
                          double secs, long *naps, double *spin)
{
	uint32_t beat = __atomic_load_n(&log->beat, __ATOMIC_RELAXED), b;
	double t0 = now_s(), from = t0, prev = t0, t = t0, gap = 0, c0 = 0, w0 = 0;
	int open = 0;

	for (;;) {
		usleep(500);
		t = now_s();
		b = __atomic_load_n(&log->beat, __ATOMIC_RELAXED);
		if (b != beat) {
			beat = b;
			from = prev;
		}
		prev = t;
		if (t - from > gap)
			gap = t - from;
		if (!open && t - t0 >= pre) {
			open = 1;
			*naps = poller_naps(pid);
			c0 = cpu_of(pid);
			w0 = now_s();
		} else if (open && t - w0 >= secs) {
			break;
		}
	}
	*naps = poller_naps(pid) - *naps;
	*spin = (cpu_of(pid) - c0) / (now_s() - w0);
	return gap;
}

/* Wait up to 5 s for @n readers counted in @log (asleep, or about to be). */
static int counted(const struct shm_recv_log *log, uint32_t n)
{
	double t0 = now_s();

	while (__atomic_load_n(&log->waiters, __ATOMIC_RELAXED) != n)
		if (now_s() - t0 > 5)
			return 0;
		else
			usleep(1000);
	return 1;
}

static uint8_t pattern(uint32_t j)
{
	return (uint8_t)(j * 13u + 5u);
}

struct report {
	int rc, copy_rc, bad_byte;
	uint32_t byte_len;
	double woke, took, cpu;
};

/* The reader: say ready on @ready, sleep on message @k, report on @fd. */
static void reader(uint64_t k, int64_t timeout_ns, int ready, int fd)
{
	struct report r = { -1, -1, -1, 0, 0, 0, 0 };
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_recv_msg m;
	uint8_t buf[RMAX];
	double t0, c0;
	uint32_t j;

	if (ssq_client_connect(sock, &c) || ssq_queue_open(c, "q0", &q)) {
		fprintf(stderr, "reader: %s\n", ssq_client_strerror_last());
		_exit(3);
	}
	(void)!write(ready, "r", 1);
	t0 = now_s();
	c0 = cpu_self_s();
	r.rc = ssq_recv_wait(q, k, timeout_ns);
	r.woke = now_s();
	r.took = r.woke - t0;
	r.cpu = cpu_self_s() - c0;
	if (!r.rc) {
		r.copy_rc = ssq_recv_copy(q, k, buf, sizeof(buf), &m);
		r.byte_len = m.byte_len;
		for (j = 0; j < LEN && r.bad_byte < 0; j++)
			if (buf[j] != pattern(j))
				r.bad_byte = (int)j;
	}
	(void)!write(fd, &r, sizeof(r));
	_exit(0);
}

/* The sender: 100 ms after @go, one signaled SEND; its post time on @fd. */
static void sender(int go, int fd)
{
	struct ssq_completion comp;
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_producer *p;
	struct ssq_buf src;
	double t = 0, t0;
	uint32_t j;
	char b;

	if (ssq_client_connect(sock, &c) || ssq_queue_open(c, "q0", &q) ||
	    ssq_buf_alloc(c, 4096, &src) || read(go, &b, 1) != 1)
		_exit(3);
	p = ssq_queue_producer(q);
	for (j = 0; j < LEN; j++)
		((uint8_t *)src.addr)[j] = pattern(j);
	usleep(100 * 1000);
	t = now_s();
	if (ssq_post_send(p, MLX5_OPCODE_SEND, src.iova, src.lkey, LEN, 0, 1,
	                  SSQ_WQE_SIGNALED))
		_exit(4);
	(void)!write(fd, &t, sizeof(t));
	for (t0 = now_s(); ssq_poll(p, &comp, 1) != 1; usleep(100))
		if (now_s() - t0 > 10)
			_exit(5);
	_exit(comp.status == IBV_WC_SUCCESS ? 0 : 6);
}

static int exited_0(pid_t pid)
{
	int status = -1;

	waitpid(pid, &status, 0);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void bad_args(struct ssq_queue *q)
{
	CHECK(ssq_recv_wait(NULL, 0, 0) == -EINVAL, "NULL queue");
	CHECK(ssq_recv_wait(q, 0, -1) == -EINVAL, "negative timeout");
}

static void times_out(struct ssq_queue *q)
{
	uint64_t k = ssq_recv_arrived(q);
	double t0 = now_s(), c0 = cpu_self_s(), took, cpu;
	int rc = ssq_recv_wait(q, k, 30000000);

	took = now_s() - t0;
	cpu = cpu_self_s() - c0;
	CHECK(rc == -ETIMEDOUT, "nothing sent: %d, want -ETIMEDOUT", rc);
	CHECK(took >= 0.029 && took < 2.0, "a 30 ms timeout took %.1f ms", took * 1e3);
	CHECK(cpu < took / 4, "waiting %.1f ms used %.1f ms of CPU (spinning?)",
	      took * 1e3, cpu * 1e3);
	CHECK(ssq_recv_wait(q, k, 0) == -ETIMEDOUT, "timeout 0, nothing arrived");
	printf("timeout: %.1f ms asleep, %.2f ms of CPU\n", took * 1e3, cpu * 1e3);
}

/*
 * A reader in another process woken by a SEND from a third; ssqd @d, whose
 * device gives completion events when @events.
 */
static void woken(struct ssq_queue *q, pid_t d, int events)
{
	const struct shm_recv_log *log = q->rlog;
	uint64_t k = ssq_recv_arrived(q);
	uint32_t seq0 = __atomic_load_n(&log->wake_seq, __ATOMIC_RELAXED);
	struct report r = { -1, -1, -1, 0, 0, 0, 0 };
	int ready[2], rep[2], go[2], post[2];
	double posted = 0, spin;
	long naps = -1;
	double gap = 0;
	int tries;
	pid_t a, s;
	char b;

	if (pipe(ready) || pipe(rep) || pipe(go) || pipe(post)) {
		CHECK(0, "pipes");
		return;
	}
	a = fork();
	if (a == 0)
		reader(k, 10000000000ll, ready[1], rep[1]);
	s = fork();
	if (s == 0)
		sender(go[0], post[1]);
	CHECK(read(ready[0], &b, 1) == 1, "the reader started");
	CHECK(counted(log, 1), "the reader never counted itself in the log");
	/*
	 * A poller that naps sleeps at least every 10 ms (its longest nap):
	 * 20 times in 200 ms. One that spins for the sleeper does not sleep
	 * at all (its sched_yield is no sleep) - while the reader beats: a
	 * loaded machine that keeps it off the cores for SSQD_WAIT_BEAT_NS
	 * makes it a reader left behind, for which the poller naps. Such a
	 * window proves nothing: measure again (the sleeper's timeout is
	 * 10 s). With the device's events nothing need spin: ssqd then uses
	 * a small part of a core (a spinning poller takes most of one).
	 */
	for (tries = 0; tries < 20; tries++) {
		gap = beat_window(d, log, 0.06, 0.2, &naps, &spin);
		if (events || gap < SSQD_WAIT_BEAT_NS / 1e9)
			break;
	}
	(void)!write(go[1], "g", 1);
	CHECK(read(post[0], &posted, sizeof(posted)) == sizeof(posted),
	      "the SEND posted");
	CHECK(read(rep[0], &r, sizeof(r)) == sizeof(r), "the reader's report");
	CHECK(exited_0(a), "the reader exited 0");
	CHECK(exited_0(s), "the sender exited 0 (its SEND completed)");
	CHECK(r.rc == 0, "the reader's ssq_recv_wait: %d, want 0", r.rc);
	CHECK(r.copy_rc == 0 && r.byte_len == LEN && r.bad_byte < 0,
	      "message %llu: copy %d, %u bytes, first wrong byte %d",
	      (unsigned long long)k, r.copy_rc, r.byte_len, r.bad_byte);
	CHECK(r.woke >= posted && r.woke - posted < 1.0,
	      "the reader woke %.3f ms after the SEND was posted",
	      (r.woke - posted) * 1e3);
	CHECK(r.cpu < r.took / 4, "the reader used %.1f ms of CPU in %.1f ms",
	      r.cpu * 1e3, r.took * 1e3);
	CHECK(__atomic_load_n(&log->wake_seq, __ATOMIC_RELAXED) != seq0,
	      "ssqd's poller never woke the sleeper (wake_seq still %u)", seq0);
	CHECK(__atomic_load_n(&log->waiters, __ATOMIC_RELAXED) == 0,
	      "%u waiters left behind", log->waiters);
	if (events)
		CHECK(
		    spin < 0.3,
		    "ssqd used %.0f %% of a core while a reader slept, with the device's "
		    "completion events to log for it",
		    spin * 100);
	else if (gap < SSQD_WAIT_BEAT_NS / 1e9)
		CHECK(naps >= 0 && naps < 10,
		      "ssqd's poller napped %ld times in 200 ms while a reader slept, "
		      "its beat standing at most %.1f ms (SSQ_EMU_CQ_EVENTS=0: the "
		      "poller alone logs)",
		      naps, gap * 1e3);
	else
		printf("poller only: the reader's beat stood %.0f ms or more in each of "
		       "%d windows (a loaded machine): its naps not counted\n",
		       gap * 1e3, tries);
	printf("woken (%s): %.3f ms after the SEND was posted, having used %.2f ms of "
	       "CPU in %.1f ms; meanwhile ssqd at %.0f %% of a core, its poller napped "
	       "%ld times in 200 ms (window %d, the beat standing %.1f ms at most)\n",
	       events ? "device events" : "poller only", (r.woke - posted) * 1e3,
	       r.cpu * 1e3, r.took * 1e3, spin * 100, naps, tries + 1, gap * 1e3);
}

/* A reader killed in its sleep leaves waiters behind; ssqd @d idles anyway. */
static void killed_reader(struct ssq_queue *q, pid_t d)
{
	const struct shm_recv_log *log = q->rlog;
	uint64_t k = ssq_recv_arrived(q) + 1000;
	int ready[2], rep[2];
	double idle;
	long naps;
	pid_t a;
	char b;

	if (pipe(ready) || pipe(rep)) {
		CHECK(0, "pipes");
		return;
	}
	a = fork(); /* the child does not inherit the arena (fork safety): k from here */
	if (a == 0)
		reader(k, 60000000000ll, ready[1], rep[1]);
	CHECK(read(ready[0], &b, 1) == 1, "the reader started");
	CHECK(counted(log, 1), "the reader never counted itself in the log");
	usleep(20 * 1000);
	kill(a, SIGKILL);
	waitpid(a, NULL, 0);
	CHECK(__atomic_load_n(&log->waiters, __ATOMIC_RELAXED) == 1,
	      "the killed reader left %u waiters (want its 1: killed in its sleep)",
	      log->waiters);
	sleep(2); /* past the poller's first naps, as test_ctrl_idle_cpu */
	naps = poller_naps(d);
	idle = busy(d, 1.0);
	naps = poller_naps(d) - naps;
	CHECK(idle < 0.03, "ssqd used %.2f %% of a core with only a dead reader's count",
	      idle * 100);
	CHECK(naps >= 20, "ssqd's poller napped %ld times in 1 s (10 ms naps: 100)",
	      naps);
	printf("dead reader's count: ssqd at %.3f %% of a core, its poller napped %ld "
	       "times in 1 s\n",
	       idle * 100, naps);
	/* The count is ours to put right: the next tests want none left. */
	__atomic_store_n(&((struct shm_recv_log *)log)->waiters, 0, __ATOMIC_RELAXED);
}

/* ssqd @d killed under a sleeping reader. */
static void ssqd_dies(struct ssq_queue *q, pid_t d)
{
	struct report r = { -1, -1, -1, 0, 0, 0, 0 };
	uint64_t k = ssq_recv_arrived(q) + 1000;
	int ready[2], rep[2];
	double t0;
	pid_t a;
	char b;

	if (pipe(ready) || pipe(rep)) {
		CHECK(0, "pipes");
		return;
	}
	a = fork();
	if (a == 0)
		reader(k, 20000000000ll, ready[1], rep[1]);
	CHECK(read(ready[0], &b, 1) == 1, "the reader started");
	CHECK(counted(q->rlog, 1), "the reader never counted itself in the log");
	usleep(20 * 1000);
	t0 = now_s();
	kill(d, SIGKILL);
	waitpid(d, NULL, 0);
	CHECK(read(rep[0], &r, sizeof(r)) == sizeof(r), "the reader's report");
	CHECK(exited_0(a), "the reader exited 0");
	CHECK(r.rc == -ENOTCONN, "ssqd killed: %d, want -ENOTCONN", r.rc);
	CHECK(r.woke - t0 < 10, "the reader learnt of it %.1f s later", r.woke - t0);
	printf("ssqd killed: -ENOTCONN %.1f ms later\n", (r.woke - t0) * 1e3);
}

static void no_pool(void)
{
	static const char *const args[] = { "--recv-depth", "0", NULL };
	struct ssq_client *c;
	struct ssq_queue *q = NULL;
	char s2[108];
	pid_t pid;

	snprintf(s2, sizeof(s2), "/tmp/ssq-rwait0-%d.sock", getpid());
	pid = rssqd_start(s2, NULL, args);
	c = ssqd_connect_pid(s2, pid);
	CHECK(c && ssq_queue_open(c, "q0", &q) == 0, "ssqd --recv-depth 0: %s",
	      c ? ssq_client_error(c) : ssq_client_strerror_last());
	if (q)
		CHECK(ssq_recv_wait(q, 0, 1000000) == -ENOTSUP, "no pool: %d",
		      ssq_recv_wait(q, 0, 1000000));
	ssq_client_close(c);
	t_ssqd_stop(pid, NULL, s2);
}

/* Every case against one ssqd, whose device gives completion events when @events. */
static int cases(int events)
{
	struct ssq_client *c;
	struct ssq_queue *q = NULL;
	pid_t d;

	if (events)
		unsetenv("SSQ_EMU_CQ_EVENTS");
	else
		setenv("SSQ_EMU_CQ_EVENTS", "0", 1);
	d = rssqd_start(sock, NULL, NULL);
	c = ssqd_connect_pid(sock, d);
	if (!c || ssq_queue_open(c, "q0", &q)) {
		fprintf(stderr, "ssqd at %s: %s\n", sock,
		        c ? ssq_client_error(c) : ssq_client_strerror_last());
		kill(d, SIGKILL);
		return -1;
	}
	bad_args(q);
	times_out(q);
	woken(q, d, events);
	killed_reader(q, d);
	ssqd_dies(q, d);
	ssq_client_close(c);
	unlink(sock);
	return 0;
}

int main(void)
{
	t_need_ssqd();
	snprintf(sock, sizeof(sock), "/tmp/ssq-rwait-%d.sock", getpid());
	if (cases(1) || cases(0))
		return 1;
	no_pool();
	return test_exit("ctrl_recv_wait");
}
