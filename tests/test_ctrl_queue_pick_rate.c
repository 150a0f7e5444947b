/* SPDX-License-Identifier: MIT */
/*
 * ssqd's pick of "any" weighs each queue's recent posting rate before its
 * producer count (issue 29; watch/rate.c, clients/queue_pick.c):
 *  - busy beats many: q0 has one producer posting without a pause (a child
 *    process), q1 two attached producers that post nothing. Once
 *    ssqd --status --json shows q0 busy (two samples at least) and q1 at
 *    0, a new open of "any" gets q1; counting producers alone,
 *    it got q0. The table --status prints shows the rate too. Once the
 *    poster has gone and q0's rate is back to 0, the producers decide
 *    again: "any" gets the empty q0;
 *  - a scribbled counter: a client stores backwards values, jumps of 2^63,
 *    0 and all ones into q0's `reserve` for a while. ssqd stays up, each
 *    --status meanwhile answers with rates within 32 bits, and once both
 *    queues are listed ready again, opens of "any" are answered.
 * Nothing here waits on a time that a loaded machine could miss: each wait
 * polls --status for what it needs, with a deadline of a minute.
 */
#include <inttypes.h>
#include <poll.h>
#include "ctrl_flow.h"
#include "ctrl/daemon/watch/watch.h" /* SSQD_RATE_IDLE */

#define NQ    2
#define BATCH 32 /* signaled WRITEs the poster has in flight at once */
/*
 * Busy enough for the pick: four times ssqd's idle line, so that the two
 * samples that may come between --status and the open, even with no post
 * at all (each halves the rate), leave q0 above it.
 */
#define BUSY     (4 * SSQD_RATE_IDLE)
#define WAIT_S   60 /* the longest any wait here may take */
#define NAME_LEN 32

/* ssqd on the test's device with --queues 2; a client of it, or NULL. */
static struct ssq_client *start(pid_t *d)
{
	const char *args[] = {
		"--device",   test_device(), "--socket",  sock_path, "--hugepages=off",
		"--data-mib", "8",           "--sq-size", "256",     "--queues",
		"2",          NULL
	};

	*d = t_ssqd_exec(args, NULL, NULL, NULL, 0);
	return connect_retry(*d);
}

/* What ssqd --status says of one queue. */
struct qstat {
	int found, has_rate, ready;
	unsigned long long rate;
};

/*
 * Run ssqd --status (--json when @json) into @out; its exit status, or -1
 * when it could not run.
 */
static int status(int json, char *out, size_t len)
{
	char cmd[512];
	size_t n = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "'%s' --status %s--socket '%s' 2>&1", getenv("SSQD"),
	         json ? "--json " : "", sock_path);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (n + 1 < len && !feof(f) && !ferror(f))
		n += fread(out + n, 1, len - 1 - n, f);
	out[n] = '\0';
	return pclose(f);
}

/* Queue @name's entry in --status --json's output @js. */
static struct qstat queue_stat(const char *js, const char *name)
{
	struct qstat s = { 0 };
	char key[64];
	const char *at, *end, *r;

	snprintf(key, sizeof(key), "{\"name\": \"%s\"", name);
	at = strstr(js, key);
	if (!at)
		return s;
	s.found = 1;
	end = strchr(at, '}');
	s.ready = end && (r = strstr(at, "\"ready\": true")) && r < end;
	r = strstr(at, "\"rate\": ");
	if (end && r && r < end) {
		s.has_rate = 1;
		s.rate = strtoull(r + 8, NULL, 10);
	}
	return s;
}

/*
 * The poster: its own connection, q0 opened by name, then batches of BATCH
 * signaled WRITEs, each batch's completions awaited, until @stop has news
 * (its other end closed). Tells @ready once its first batch completed.
 * Exit status 0, or 1 having said why.
 */
static int poster(int ready, int stop)
{
	struct ssq_client *c = t_ssqd_connect(sock_path, 0);
	struct pollfd pf = { .fd = stop, .events = POLLIN };
	struct ssq_completion comp;
	struct ssq_producer *p;
	struct ssq_buf a, b;
	struct ssq_queue *q;
	uint64_t posted = 0, done = 0;
	int i;

	if (!c || ssq_queue_open(c, "q0", &q) || ssq_buf_alloc(c, 64, &a) ||
	    ssq_buf_alloc(c, 64, &b)) {
		fprintf(stderr, "poster: %s\n",
		        c ? ssq_client_error(c) : ssq_client_strerror_last());
		return 1;
	}
	p = ssq_queue_producer(q);
	while (poll(&pf, 1, 0) == 0) {
		double t0 = now_s();

		for (i = 0; i < BATCH; i++) {
			int rc = ssq_post_write(p, a.iova, a.lkey, 64, b.remote_addr,
			                        b.rkey, posted, SSQ_WQE_SIGNALED);

			if (rc) {
				fprintf(stderr, "poster: post %" PRIu64 ": %d\n", posted,
				        rc);
				return 1;
			}
			posted++;
		}
		while (done < posted) {
			int n = ssq_poll(p, &comp, 1);

			if (n == 1 &&
			    (comp.status != IBV_WC_SUCCESS || comp.wr_id != done)) {
				fprintf(stderr,
				        "poster: completion %" PRIu64
				        " status %d, want %" PRIu64 "\n",
				        comp.wr_id, comp.status, done);
				return 1;
			}
			if (n == 1) {
				done++;
				continue;
			}
			if (n < 0 || now_s() - t0 > WAIT_S) {
				fprintf(stderr,
				        "poster: %" PRIu64 " of %" PRIu64 " done (%d)\n",
				        done, posted, n);
				return 1;
			}
			usleep(50);
		}
		if (done == BATCH && write(ready, "r", 1) != 1)
			return 1;
	}
	printf("poster: %" PRIu64 " WRITEs on q0\n", posted);
	fflush(stdout);
	ssq_client_close(c);
	return 0;
}

/* Busy beats many: one poster on q0, two idle producers on q1; "any" -> q1. */
static void busy_vs_idle(pid_t d)
{
	struct ssq_client *idle = connect_retry(d), *opener = connect_retry(d);
	struct ssq_queue *q1a, *q1b, *q;
	int ready[2], stop[2], st = -1, rc;
	struct qstat s0 = { 0 }, s1 = { 0 };
	static char js[16384], txt[16384];
	struct pollfd pf;
	double t0;
	pid_t kid;
	char ch;

	if (!idle || !opener || pipe(ready) || pipe(stop)) {
		CHECK(0, "set-up: clients or pipes");
		return;
	}
	CHECK(ssq_queue_open(idle, "q1", &q1a) == 0 &&
	          ssq_queue_open(idle, "q1", &q1b) == 0,
	      "two opens of q1: %s", ssq_client_error(idle));
	kid = fork();
	if (kid == 0) {
		close(ready[0]);
		close(stop[1]);
		_exit(poster(ready[1], stop[0]));
	}
	close(ready[1]);
	close(stop[0]);
	pf = (struct pollfd){ .fd = ready[0], .events = POLLIN };
	CHECK(poll(&pf, 1, WAIT_S * 1000) == 1 && read(ready[0], &ch, 1) == 1,
	      "the poster's first batch: not within %d s", WAIT_S);

	/* Until ssqd has sampled q0 posting (two samples at least): BUSY. */
	for (t0 = now_s(); now_s() - t0 < WAIT_S; usleep(50000)) {
		st = status(1, js, sizeof(js));
		s0 = queue_stat(js, "q0");
		s1 = queue_stat(js, "q1");
		if (st != 0 || !s0.has_rate || s0.rate >= BUSY)
			break;
	}
	printf("--status --json with q0 busy: %s", js);
	CHECK(st == 0 && s0.found && s1.found, "--status --json: exit 0x%x, %s", st, js);
	CHECK(s0.has_rate && s0.rate >= BUSY, "q0's rate %s%llu within %d s, want %u",
	      s0.has_rate ? "" : "(none shown) ", s0.rate, WAIT_S, BUSY);
	CHECK(s1.has_rate && s1.rate == 0, "q1 (two idle producers): rate %llu", s1.rate);
	st = status(0, txt, sizeof(txt));
	printf("--status with q0 busy:\n%s", txt);
	CHECK(st == 0 && strstr(txt, "WQEBB/S"), "--status table without a rate column");

	rc = ssq_queue_open(opener, "any", &q);
	printf("\"any\" beside a busy q0 (1 producer) and an idle q1 (2): %s\n",
	       rc ? ssq_client_error(opener) : ssq_queue_name(q));
	CHECK(rc == 0 && !strcmp(ssq_queue_name(q), "q1"),
	      "\"any\" with q0 busy and q1 idle: %s, want q1",
	      rc ? ssq_client_error(opener) : ssq_queue_name(q));

	close(stop[1]);
	CHECK(waitpid(kid, &st, 0) == kid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "poster: status 0x%x", st);
	close(ready[0]);

	/*
	 * The poster gone: q0's rate falls to 0 (a sample halves it), and with
	 * both idle the producers decide again: q0 (none) before q1 (three).
	 */
	for (t0 = now_s(); now_s() - t0 < WAIT_S; usleep(50000)) {
		st = status(1, js, sizeof(js));
		s0 = queue_stat(js, "q0");
		if (st != 0 || !s0.has_rate || s0.rate == 0)
			break;
	}
	CHECK(s0.has_rate && s0.rate == 0, "q0's rate %llu %d s after its poster left",
	      s0.rate, WAIT_S);
	rc = ssq_queue_open(opener, "any", &q);
	printf("\"any\" with both idle, q0 empty, q1 three producers: %s\n",
	       rc ? ssq_client_error(opener) : ssq_queue_name(q));
	CHECK(rc == 0 && !strcmp(ssq_queue_name(q), "q0"),
	      "\"any\" once q0 went idle and empty: %s, want q0",
	      rc ? ssq_client_error(opener) : ssq_queue_name(q));
	ssq_client_close(opener);
	ssq_client_close(idle);
}

/* Values a client may store into `reserve`: backwards, 2^63 away, 0, all ones. */
static uint64_t scribble_value(unsigned i, uint64_t seen)
{
	switch (i % 6) {
	case 0:
		return seen - 1000;
	case 1:
		return seen + (1ull << 63);
	case 2:
		return UINT64_MAX;
	case 3:
		return 0;
	case 4:
		return 1ull << 63;
	default:
		return seen + (1ull << 40);
	}
}

/* A scribbled counter: ssqd stays up, rates stay bounded, "any" is answered. */
static void scribbled(pid_t d)
{
	struct ssq_client *c = connect_retry(d), *opener;
	static char js[16384];
	struct ssq_queue *q, *any[2];
	struct ssq_ctl *ctl;
	unsigned i, looks = 0;
	double t0;
	int st = -1, k, rc;

	if (!c || ssq_queue_open(c, "q0", &q)) {
		CHECK(0, "open q0: %s", c ? ssq_client_error(c) : "no client");
		ssq_client_close(c);
		return;
	}
	ctl = ssq_queue_producer(q)->ctl;
	/* 60 stores 20 ms apart: a dozen samples see some of them. */
	for (i = 0; i < 60; i++) {
		uint64_t seen = __atomic_load_n(&ctl->reserve, __ATOMIC_RELAXED);

		__atomic_store_n(&ctl->reserve, scribble_value(i, seen),
		                 __ATOMIC_RELAXED);
		usleep(20000);
		if (i % 10 != 9)
			continue;
		st = status(1, js, sizeof(js));
		for (k = 0; k < NQ; k++) {
			char name[16];
			struct qstat s;

			snprintf(name, sizeof(name), "q%d", k);
			s = queue_stat(js, name);
			CHECK(st == 0 && s.has_rate && s.rate <= UINT32_MAX,
			      "--status while q0 is scribbled: exit 0x%x, %s", st, js);
		}
		looks++;
	}
	printf("--status --json after the scribbles: %s", js);
	CHECK(kill(d, 0) == 0 && waitpid(d, &st, WNOHANG) == 0,
	      "ssqd gone after its counter was scribbled");
	/* The guard rebuilt q0 meanwhile: wait for both queues listed ready. */
	for (t0 = now_s(); now_s() - t0 < WAIT_S; usleep(50000)) {
		st = status(1, js, sizeof(js));
		if (st == 0 && queue_stat(js, "q0").ready && queue_stat(js, "q1").ready)
			break;
	}
	CHECK(st == 0 && queue_stat(js, "q0").ready && queue_stat(js, "q1").ready,
	      "queues not ready again within %d s: %s", WAIT_S, js);
	opener = connect_retry(d);
	for (k = 0; opener && k < NQ; k++) {
		rc = ssq_queue_open(opener, "any", &any[k]);
		printf("\"any\" after the scribbles: %s\n",
		       rc ? ssq_client_error(opener) : ssq_queue_name(any[k]));
		CHECK(rc == 0, "\"any\" after q0's counter was scribbled: %d (%s)", rc,
		      ssq_client_error(opener));
	}
	CHECK(looks == 6, "%u looks at --status", looks);
	ssq_client_close(opener);
	ssq_client_close(c);
}

int main(void)
{
	struct ssq_client *c;
	pid_t d;
	int st;

	t_need_ssqd();
	snprintf(sock_path, sizeof(sock_path), "/tmp/ssq-qrate-%d.sock", getpid());
	c = start(&d);
	if (c)
		busy_vs_idle(d);
	ssq_client_close(c);
	t_ssqd_stop(d, NULL, sock_path);

	c = start(&d);
	if (c)
		scribbled(d);
	ssq_client_close(c);
	CHECK(t_ssqd_stop_ok(d, &st, sock_path),
	      "ssqd after the scribbles: status 0x%x, want exit 0", st);
	return test_exit("ctrl_queue_pick_rate");
}
