/* SPDX-License-Identifier: MIT */
/*
 * A grant's bind behind a held reservation must not stop ssqd serving
 * others (issue 28 item 1; the brief: ssqd's loop never blocks on one
 * client). In a cluster of alice and bob, three clients of bob's:
 *  - H opens alice/q0 and reserves one WQEBB on its ring, unpublished;
 *  - G asks for a grant of a buffer on alice/q0 (in a thread);
 *  - K, 300 ms later, asks bob for its peers (a LIST round trip): the
 *    answer comes in under 1 s (it takes milliseconds when ssqd serves).
 * Then H publishes a NOP at its reservation, and G's next grant on the
 * same queue works (the queue is not left wedged or in error by the first
 * bind's fate). Last, G2, a process of its own, grants behind another hole
 * of H's and is killed while its bind waits: once H fills the hole the
 * bind runs on a window that still exists (ssqd frees it only after), so
 * H's signaled NOP behind it completes without error.
 * ssqd runs with --stall-ms 1000: a running client's hole is taken back
 * only after 10 s, so H's holes last until H fills them.
 * On the emulated device's backend a bind is no WQE (emu_bind_mw binds at
 * once): the case matters on the ConnectX backend (backend_mlx5_mw.c:
 * ssqd posts the bind on the shared ring and waits for its CQE), run as
 * ctrl_adv_grant_hold_mlx5model.
 * Before (the model of libmlx5): K waited for the bind's 2 s (BIND_WAIT_MS),
 * ssqd's loop polling the bind's CQ, and the bind never ran before that:
 * the stall repair that would fill H's hole runs in that same loop. G's own
 * grant timed out at the client (1 s) while ssqd still waited. Now ssqd
 * answers the GRANT from its loop once the bind completed (clients/grant.c,
 * ssqd_grants_tick).
 */
#include <poll.h>
#include <pthread.h>
#include <sys/wait.h>
#include "cap_flow.h"

#define N 2
static const char *const names[N] = { "alice", "bob" };
static struct t_cluster cl;

struct grant_req {
	struct ssq_client *c;
	struct ssq_buf *b;
	struct ssq_desc d;
	int rc;
	double secs;
	char err[256];
};

static void *granter(void *arg)
{
	struct grant_req *g = arg;
	double t0 = now_s();

	memset(&g->d, 0, sizeof(g->d));
	g->rc = ssq_buf_grant(g->c, "alice/q0", g->b, 0, 4096,
	                      IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, &g->d);
	g->secs = now_s() - t0;
	snprintf(g->err, sizeof(g->err), "%s", ssq_client_error(g->c));
	return NULL;
}

/* G2: a client of bob's that grants a buffer when told to, and says so. */
static void g2_child(int go, int said)
{
	struct ssq_client *c = t_cluster_connect(&cl, 1);
	struct grant_req g;
	struct ssq_buf b;
	char x = 0;

	if (!c || ssq_buf_alloc(c, 4096, &b))
		_exit(2);
	if (write(said, &x, 1) != 1 || read(go, &x, 1) != 1)
		_exit(2);
	g.c = c;
	g.b = &b;
	granter(&g);
	x = (char)(g.rc ? 1 : 0);
	if (write(said, &x, 1) != 1)
		_exit(2);
	pause(); /* killed */
	_exit(0);
}

static void case_dead_granter(struct ssq_producer *p, struct ssq_client *ck,
                              struct ssq_peer_info *pi)
{
	int go[2], said[2], st, rc, n;
	uint64_t pos = 0;
	pid_t pid;
	char x;

	if (pipe(go) || pipe(said)) {
		CHECK(0, "pipes");
		return;
	}
	pid = fork();
	if (pid == 0) {
		close(go[1]);
		close(said[0]);
		g2_child(go[0], said[1]);
	}
	close(go[0]);
	close(said[1]);
	CHECK(pid > 0 && read(said[0], &x, 1) == 1, "G2 connected with a buffer");
	rc = ssq_reserve(p, 1, &pos);
	CHECK(rc == 0, "H reserves again: %d", rc);
	if (pid <= 0 || rc)
		goto out;
	x = 0;
	CHECK(write(go[1], &x, 1) == 1, "G2 told to grant");
	/* The bind on the ring behind the hole, or (emulated) the grant done. */
	for (n = 0; n < 10000; n++) {
		struct pollfd pf = { said[0], POLLIN, 0 };

		if (ssq_ctl_reserved(p->ctl) > pos + 1 || poll(&pf, 1, 1) == 1)
			break;
	}
	printf("G2 killed with ssqd's bind %s\n",
	       ssq_ctl_reserved(p->ctl) > pos + 1 ? "on the ring" : "done (emulated)");
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	pid = -1;
	n = ssq_client_peers(ck, pi, N);
	CHECK(n >= 1, "K's LIST after G2 died: %d %s", n, ssq_client_error(ck));
	rc = cap_hole_fill(p, pos);
	CHECK(rc == 0, "H fills the hole: %d (the queue started over first?)", rc);
	rc = cap_nop_status(p, 0x6202);
	CHECK(rc == IBV_WC_SUCCESS,
	      "H's NOP behind the dead granter's bind: status %d (%s): the bind ran "
	      "on a window freed when G2 died, and put the queue in error",
	      rc, rc >= 0 ? ibv_wc_status_str((enum ibv_wc_status)rc) : "-");
out:
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	close(go[1]);
	close(said[0]);
}

int main(void)
{
	struct ssq_client *ch = NULL, *cg = NULL, *ck = NULL;
	struct ssq_queue *qh = NULL, *qg = NULL;
	struct ssq_peer_info pi[N];
	struct ssq_buf b;
	struct grant_req g;
	struct ssq_producer *p;
	pthread_t th;
	uint64_t pos = 0;
	double t0, probe;
	unsigned i;
	int rc, n;

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	signal(SIGPIPE, SIG_IGN);
	t_rssqd_grants = 1; /* ssqd's default: no --no-grants */
	cf_cluster_files(&cl, "grant-hold", N, names, 0);
	for (i = 0; i < N; i++)
		CHECK(t_cluster_start(&cl, i, T_ARGS("--stall-ms", "1000")) > 0,
		      "start %s", names[i]);
	ch = t_cluster_connect(&cl, 1);
	cg = t_cluster_connect(&cl, 1);
	ck = t_cluster_connect(&cl, 1);
	if (!ch || !cg || !ck) {
		CHECK(0, "bob's clients");
		goto out;
	}
	rc = ssq_queue_open(ch, "alice/q0", &qh);
	CHECK(rc == 0, "H opens alice/q0: %d %s", rc, ssq_client_error(ch));
	rc = ssq_queue_open(cg, "alice/q0", &qg);
	CHECK(rc == 0, "G opens alice/q0: %d %s", rc, ssq_client_error(cg));
	CHECK(ssq_buf_alloc(cg, 4096, &b) == 0, "G's buffer: %s", ssq_client_error(cg));
	if (!qh || !qg)
		goto out;
	/* A grant with nothing held works: the setting is sound. */
	g.c = cg;
	g.b = &b;
	granter(&g);
	CHECK(g.rc == 0, "a grant with no hole: %d %s", g.rc, ssq_client_error(cg));
	if (g.rc == 0)
		CHECK(ssq_desc_revoke(cg, &g.d) == 0, "revoke: %s", ssq_client_error(cg));

	p = ssq_queue_producer(qh);
	rc = ssq_reserve(p, 1, &pos);
	CHECK(rc == 0, "H reserves: %d", rc);
	if (rc)
		goto out;
	CHECK(pthread_create(&th, NULL, granter, &g) == 0, "thread");
	usleep(300000);
	t0 = now_s();
	n = ssq_client_peers(ck, pi, N);
	probe = now_s() - t0;
	pthread_join(th, NULL);
	printf("grant behind H's hole: %d (%s) in %.3f s; K's LIST took %.3f s\n", g.rc,
	       g.rc ? g.err : "ok", g.secs, probe);
	CHECK(n >= 1, "K's LIST: %d %s", n, ssq_client_error(ck));
	/*
	 * Bound at once (emulated), or -ETIMEDOUT: ssqd's own after 500 ms,
	 * or the client's after 1 s on a machine too busy to run ssqd in
	 * time (ctrl_adv_grant_free_bind case H checks ssqd's deadline).
	 */
	CHECK(g.rc == 0 || g.rc == -ETIMEDOUT,
	      "G's grant behind H's hole: %d after %.3f s", g.rc, g.secs);
	CHECK(probe < 1.0,
	      "K's LIST took %.3f s while G's grant waited behind H's reservation: "
	      "ssqd's loop blocked on one client's bind",
	      probe);
	if (g.rc == 0)
		ssq_desc_revoke(cg, &g.d);

	/* H fills its hole; the queue goes on and takes grants. */
	ssq_prep_nop(ssq_producer_sq(p), (uint32_t)pos, ssq_wqe_flags(p, pos, 1, 0));
	ssq_publish(p, pos, 1, 0, 0);
	ssq_submit(p);
	rc = -1;
	for (t0 = now_s(), i = 0; rc && now_s() - t0 < 20; usleep(100000), i++) {
		granter(&g);
		rc = g.rc;
		if (rc)
			fprintf(stderr, "grant after H published: %d %s\n", rc,
			        ssq_client_error(cg));
		/* Whoever left the queue in error: recover it, as a client would. */
		if (rc && ssq_queue_recover(qg) == 0)
			cf_wait_ready(cg, "alice/q0", 1, 20);
	}
	CHECK(g.rc == 0, "a grant after H published: %d %s", g.rc, ssq_client_error(cg));
	CHECK(i == 1, "the grant after H published took %u tries", i);
	if (g.rc == 0)
		CHECK(ssq_desc_revoke(cg, &g.d) == 0, "revoke: %s", ssq_client_error(cg));
	/*
	 * A granter that dies while its bind waits behind a hole of H's: its
	 * window must outlive the bind - on a ConnectX a bind of a freed window
	 * (or of the next one given its index) completes MW_BIND_ERR and puts
	 * the queue in error for every client - and go after it. G2 is a
	 * process of its own, killed once ssqd's bind is on the ring behind the
	 * hole (on the emulated backend, which binds at once, once its grant
	 * returned); K's LIST comes after ssqd saw the death (the hangup was
	 * there before K asked). Then H fills the hole, the bind runs, and H's
	 * signaled NOP behind it must complete without error.
	 */
	case_dead_granter(p, ck, pi);
	granter(&g);
	CHECK(g.rc == 0, "a grant after G2 died: %d %s", g.rc, ssq_client_error(cg));
	if (g.rc == 0)
		CHECK(ssq_desc_revoke(cg, &g.d) == 0, "revoke: %s", ssq_client_error(cg));
out:
	if (ch)
		ssq_client_close(ch);
	if (cg)
		ssq_client_close(cg);
	if (ck)
		ssq_client_close(ck);
	t_cluster_stop(&cl);
	return test_exit("ctrl_adv_grant_hold");
}
