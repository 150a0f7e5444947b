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
 * bind's fate). Last, G2 grants behind another hole of H's and goes away
 * while its bind waits: once H publishes, the bind runs on a window that
 * still exists (ssqd frees it only after), and G's grants still work.
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
#include <pthread.h>
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
};

static void *granter(void *arg)
{
	struct grant_req *g = arg;
	double t0 = now_s();

	memset(&g->d, 0, sizeof(g->d));
	g->rc = ssq_buf_grant(g->c, "alice/q0", g->b, 0, 4096,
	                      IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, &g->d);
	g->secs = now_s() - t0;
	return NULL;
}

int main(void)
{
	struct ssq_client *ch = NULL, *cg = NULL, *ck = NULL, *g2 = NULL;
	struct ssq_queue *qh = NULL, *qg = NULL;
	struct ssq_peer_info pi[N];
	struct ssq_buf b, b2;
	struct grant_req g, gr2;
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
		CHECK(t_cluster_start(&cl, i, NULL) > 0, "start %s", names[i]);
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
	       g.rc ? ssq_client_error(cg) : "ok", g.secs, probe);
	CHECK(n >= 1, "K's LIST: %d %s", n, ssq_client_error(ck));
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
	 * A granter that goes away while its bind waits behind a hole: its
	 * window must outlive the bind (a bind of a freed window fails and
	 * puts the queue in error), and go after it - after the bind ran once
	 * H published, or after the stall repair started the queue over
	 * (H's hole is about as old as its 1 s deadline by then): either way
	 * G's grants go on working and ssqd answers.
	 */
	g2 = t_cluster_connect(&cl, 1);
	CHECK(g2 != NULL, "G2 connects");
	if (!g2)
		goto out;
	CHECK(ssq_buf_alloc(g2, 4096, &b2) == 0, "G2's buffer: %s", ssq_client_error(g2));
	rc = ssq_reserve(p, 1, &pos);
	CHECK(rc == 0, "H reserves again: %d", rc);
	if (rc)
		goto out;
	gr2.c = g2;
	gr2.b = &b2;
	/*
	 * On a ConnectX the client gives up (1 s) while ssqd still waits
	 * (2 s); the emulated device binds at once (0).
	 */
	granter(&gr2);
	printf("G2's grant behind the hole: %d (%s)\n", gr2.rc,
	       gr2.rc ? ssq_client_error(g2) : "ok");
	ssq_client_close(g2); /* its revoke comes while the bind is on the ring */
	g2 = NULL;
	usleep(100000);
	ssq_prep_nop(ssq_producer_sq(p), (uint32_t)pos, ssq_wqe_flags(p, pos, 1, 0));
	ssq_publish(p, pos, 1, 0, 0);
	ssq_submit(p);
	usleep(300000); /* the bind runs, then its window goes */
	granter(&g);
	CHECK(g.rc == 0, "a grant after G2 went: %d %s", g.rc, ssq_client_error(cg));
	if (g.rc == 0)
		CHECK(ssq_desc_revoke(cg, &g.d) == 0, "revoke: %s", ssq_client_error(cg));
	n = ssq_client_peers(ck, pi, N);
	CHECK(n >= 1, "K's LIST at the end: %d %s", n, ssq_client_error(ck));
out:
	if (g2)
		ssq_client_close(g2);
	if (ch)
		ssq_client_close(ch);
	if (cg)
		ssq_client_close(cg);
	if (ck)
		ssq_client_close(ck);
	t_cluster_stop(&cl);
	return test_exit("ctrl_adv_grant_hold");
}
