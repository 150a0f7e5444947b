/* SPDX-License-Identifier: MIT */
/*
 * A cluster's links on demand and their bound (ssqd --max-active-peers,
 * --idle-ms). Four daemons, alice with three peers:
 *  1. --max-active-peers 2: alice's client opens bob/q0 and carol/q0 and
 *     closes them; opening dave/q0 closes the least recently used idle
 *     link (bob's; both sides' logs say so) and dave's comes up; with
 *     carol/q0 and dave/q0 held open, bob/q0 is refused -EBUSY naming the
 *     limit; once carol/q0 is closed, bob/q0 opens again (carol's link is
 *     the one closed).
 *     ssq_client_peers and ssqd --status show bob idle, dave ready and
 *     open here;
 *  2. --idle-ms 300 (alice restarted): a link stays up while a client at
 *     either end has a queue of it open (bob's client holds alice/q0;
 *     alice has none), and closes within about --idle-ms once neither has;
 *  3. a peer nobody answers for (zed): its open fails -ETIMEDOUT after
 *     SSQ_OPEN_LINK_MS saying why, and the peer shows failed, with why;
 *     once the open has given up it is not dialed again until the next
 *     open (before, every 2 s for as long as ssqd ran).
 */
#define _GNU_SOURCE
#include "cluster_flow.h"

#define N 4
static const char *const names[N] = { "alice", "bob", "carol", "dave" };
static struct t_cluster cl;

/* `ssqd --status --socket @sock` prints @needle. */
static int status_has(const char *sock, const char *needle)
{
	char cmd[400], out[108];
	int found;

	snprintf(out, sizeof(out), "/tmp/ssq-ci-status-%d", getpid());
	snprintf(cmd, sizeof(cmd), "'%s' --status --socket '%s' > %s 2>&1",
	         getenv("SSQD"), sock, out);
	if (system(cmd)) {
		fprintf(stderr, "%s failed\n", cmd);
		return 0;
	}
	found = cf_file_has(out, needle);
	if (!found) {
		char buf[4096];
		FILE *f = fopen(out, "r");
		size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

		buf[n] = 0;
		fprintf(stderr, "ssqd --status, no '%s':\n%s", needle, buf);
		if (f)
			fclose(f);
	}
	unlink(out);
	return found;
}

/*
 * Seconds alice's and bob's serve loops and this process have waited for a
 * CPU (t_proc_run_wait): the test's clocks run while they wait, on a loaded
 * machine for seconds, which is the machine's delay, not ssqd's.
 */
static double cpu_waits(void)
{
	double w[3] = { t_proc_run_wait(cl.pid[0]), t_proc_run_wait(cl.pid[1]),
		        t_proc_run_wait(0) };

	return w[0] < 0 || w[1] < 0 || w[2] < 0 ? 0 : w[0] + w[1] + w[2];
}

/* Open @name on @c; 0 or the errno, the queue in *@q. */
static int open_q(struct ssq_client *c, const char *name, struct ssq_queue **q)
{
	int rc = ssq_queue_open(c, name, q);

	if (rc)
		fprintf(stderr, "open %s: %d (%s)\n", name, rc, ssq_client_error(c));
	return rc;
}

int main(void)
{
	struct ssq_client *a, *b;
	struct ssq_queue *qb, *qc, *qd, *qa;
	double t0, took, w0, waited;
	int i, st;
	FILE *f;

	t_need_ssqd();
	cf_cluster_files(&cl, "ci", N, names, 1);
	/* Nobody listens there: a peer that cannot be reached. */
	f = fopen(cl.peers, "a");
	fprintf(f, "zed 127.0.0.1:%u\n", free_tcp_port());
	fclose(f);
	t_cluster_start(&cl, 0, T_ARGS("--max-active-peers", "2"));
	for (i = 1; i < N; i++)
		t_cluster_start(&cl, i, NULL);
	a = t_cluster_connect(&cl, 0);
	CHECK(a != NULL, "alice serves");
	if (!a)
		goto out;

	/* 1. At most two links. */
	CHECK(!open_q(a, "bob/q0", &qb), "bob/q0 opens (linked on demand)");
	ssq_queue_close(qb);
	usleep(20000); /* the LRU order: bob before carol */
	CHECK(!open_q(a, "carol/q0", &qc), "carol/q0 opens");
	ssq_queue_close(qc);
	usleep(50000); /* both peers hear alice is idle */
	CHECK(!open_q(a, "dave/q0", &qd), "dave/q0 opens, a third peer");
	CHECK(cf_ready(a, "bob/q0") == 0 && cf_ready(a, "carol/q0") == 1,
	      "the least recently used link (bob's) closed for dave's");
	{
		struct ssq_peer_info pi[8];
		int n = ssq_client_peers(a, pi, 8);

		CHECK(n == 4 && !strcmp(pi[0].name, "bob") &&
		          pi[0].state == SSQ_PEER_IDLE && pi[0].links == 1 &&
		          pi[1].state == SSQ_PEER_READY &&
		          !(pi[1].flags & SSQ_PEER_OPEN_HERE) &&
		          pi[2].state == SSQ_PEER_READY &&
		          (pi[2].flags & SSQ_PEER_OPEN_HERE) &&
		          (pi[2].flags & SSQ_PEER_DIALS) &&
		          pi[3].state == SSQ_PEER_IDLE && pi[2].first_queue == 2 &&
		          pi[2].nqueues == 1,
		      "ssq_client_peers: %d; bob %d/%u, carol %d/%x, dave %d/%x, zed %d",
		      n, pi[0].state, pi[0].links, pi[1].state, pi[1].flags, pi[2].state,
		      pi[2].flags, pi[3].state);
		CHECK(status_has(cl.sock[0], "bob              idle") &&
		          status_has(cl.sock[0], "dave             ready") &&
		          status_has(cl.sock[0], "dave/q0"),
		      "ssqd --status shows bob idle, dave ready, the queues");
	}
	CHECK(cf_file_has(cl.log[0], "peer bob: link closed (the least recently used"),
	      "alice says why bob's link closed");
	/* Asked first (a CLOSE), bob closed its end itself. */
	/* bob writes its line just after its close, which alice saw. */
	for (i = 0;
	     i < 1000 && !cf_file_has(cl.log[1], "peer alice: link closed (the peer");
	     i++)
		usleep(10000);
	CHECK(cf_file_has(cl.log[1], "peer alice: link closed (the peer closes it"),
	      "bob closed the link when alice asked");
	CHECK(!open_q(a, "carol/q0", &qc), "carol/q0 open again, held");
	st = ssq_queue_open(a, "bob/q0", &qb);
	CHECK(st == -EBUSY && strstr(ssq_client_error(a), "--max-active-peers 2"),
	      "bob/q0 while two peers are in use: %d (%s)", st, ssq_client_error(a));
	ssq_queue_close(qc);
	usleep(50000);
	CHECK(!open_q(a, "bob/q0", &qb), "bob/q0 once carol's link is idle");
	CHECK(cf_ready(a, "carol/q0") == 0 && cf_ready(a, "dave/q0") == 1,
	      "carol's link closed for bob's, dave's (in use) kept");
	ssq_queue_close(qb);
	ssq_queue_close(qd);
	ssq_client_close(a);

	/* 2. --idle-ms, both ends' use counted. */
	t_ssqd_stop(cl.pid[0], &st, NULL);
	t_cluster_start(&cl, 0, T_ARGS("--idle-ms", "300"));
	a = t_cluster_connect(&cl, 0);
	b = t_cluster_connect(&cl, 1);
	CHECK(a && b, "alice (--idle-ms 300) and bob serve");
	if (!a || !b)
		goto out;
	CHECK(!open_q(b, "alice/q0", &qa), "bob's client opens alice/q0");
	CHECK(cf_wait_ready(a, "bob/q0", 1, 5), "alice's side of it up");
	usleep(900000); /* three times --idle-ms: bob's end is in use */
	CHECK(cf_ready(a, "bob/q0") == 1 && cf_ready(b, "alice/q0") == 1,
	      "a link in use at the other end stays up");
	ssq_queue_close(qa);
	w0 = cpu_waits();
	t0 = now_s();
	CHECK(cf_wait_ready(a, "bob/q0", 0, 30), "idle at both ends: alice closes it");
	took = now_s() - t0;
	waited = cpu_waits() - w0;
	CHECK(took > 0.2 && took - waited < 2.0,
	      "closed %.2f s after the last close, %.2f s of it waiting for a CPU "
	      "(--idle-ms 300)",
	      took, waited);
	CHECK(cf_file_has(cl.log[0], "(--idle-ms)"), "alice says why");
	CHECK(cf_wait_ready(b, "alice/q0", 0, 5), "bob's side closed too");
	CHECK(!open_q(b, "alice/q0", &qa), "and opens again on demand");
	ssq_queue_close(qa);

	/* 3. A peer nobody answers for: the open says why, the state too. */
	w0 = cpu_waits();
	t0 = now_s();
	st = ssq_queue_open(a, "zed/q0", &qa);
	took = now_s() - t0;
	waited = cpu_waits() - w0;
	CHECK(st == -ETIMEDOUT && strstr(ssq_client_error(a), "Connection refused") &&
	          took > 4.5 && took - waited < 8,
	      "zed/q0: %d after %.1f s, %.1f s of it waiting for a CPU (%s)", st, took,
	      waited, ssq_client_error(a));
	{
		struct ssq_peer_info pi[8];
		int n = ssq_client_peers(a, pi, 8);

		CHECK(n == 4 && pi[3].state == SSQ_PEER_FAILED &&
		          strstr(pi[3].why, "Connection refused") && pi[3].attempts >= 2,
		      "zed failed, saying why: %d %s (%u attempts)", pi[3].state,
		      pi[3].why, pi[3].attempts);
		CHECK(status_has(cl.sock[0], "zed              failed"),
		      "ssqd --status shows zed failed");
	}
	{
		/* The open gave up: zed is dialed again by the next one, not before. */
		struct ssq_peer_info pi[8];
		unsigned a1, a2;

		/*
		 * The open's want lasts OPEN_PENDING_MS (1.5 s) past it, and
		 * a dial may be under way then: once zed shows idle (10 s at
		 * most; 1.5 s on a quiet machine), nothing dials it.
		 */
		for (t0 = now_s(); now_s() - t0 < 10; usleep(20000))
			if (ssq_client_peers(a, pi, 8) == 4 &&
			    pi[3].state == SSQ_PEER_IDLE)
				break;
		a1 = ssq_client_peers(a, pi, 8) == 4 ? pi[3].attempts : 0;
		usleep(3000000);
		a2 = ssq_client_peers(a, pi, 8) == 4 ? pi[3].attempts : 0;
		CHECK(a1 && a1 == a2 && pi[3].state == SSQ_PEER_IDLE,
		      "nobody asks for zed: not dialed any more (%u, then %u attempts; "
		      "state "
		      "%d)",
		      a1, a2, pi[3].state);
	}
	ssq_client_close(a);
	ssq_client_close(b);
out:
	t_cluster_stop(&cl);
	return test_exit("ctrl_cluster_idle");
}
