/* SPDX-License-Identifier: MIT */
/*
 * Attacks on grants (issue 28 item 1) found by an adversarial review, a
 * cluster of alice and bob on the emulated device, each now refused:
 *  A. a registration asked with REMOTE_READ only: a WRITE grant of it is
 *     refused (-EACCES), a READ grant works, and the registration's own
 *     key reaches nothing (on a ConnectX, where the client registers it
 *     itself: before, it read the registration for alice's client);
 *  B. grants of another client's buffer / registration, past the end, an
 *     offset whose off + len wraps (before: let through by the library,
 *     refused by ssqd's decoder with sequence 0, and that client's every
 *     later call timed out), revoke of another client's grant: refused,
 *     and the client goes on;
 *  D. one bad key from alice's client: REM_ACCESS_ERR, the queue
 *     recovers, and every window to alice went with the link, a secret
 *     one bob's other client granted included (before: a peer's client
 *     guessed such a window's 8-bit key variant in ~130 tries, ~1.5 s);
 *  E. alice's ssqd dies and a new "alice" links: a window bob's client
 *     granted to the old alice must not read or write bob's buffer for the
 *     newcomer's client (before: it did, READ and WRITE; grants now go with
 *     the link, queues/grants.c), and bob's client learns it (-ENOENT from
 *     revoke).
 * Not covered here (the note): one uid's clients taking every
 * grant slot.
 */
#include "cap_flow.h"

#define N 2
static const char *const names[N] = { "alice", "bob" };
static struct t_cluster cl;

int main(void)
{
	struct ssq_client *ca = NULL, *cb = NULL, *cb2 = NULL;
	struct ssq_queue *qa = NULL, *hold = NULL;
	struct ssq_buf shared, la, other;
	struct ssq_desc dsc, d2;
	struct ssq_mr mr;
	static uint8_t regmem[8192] __attribute__((aligned(4096)));
	uint64_t id = 1;
	unsigned i, k;
	int st, rc;

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	signal(SIGPIPE, SIG_IGN);
	t_rssqd_grants = 1;
	cf_cluster_files(&cl, "cap-attack", N, names, 0);
	CHECK(t_cluster_start_all(&cl, NULL) == 0, "alice and bob started");
	/* One at a time: a daemon that exited at start ends the test at once. */
	if (!(ca = t_cluster_connect(&cl, 0)) || !(cb = t_cluster_connect(&cl, 1)) ||
	    !(cb2 = t_cluster_connect(&cl, 1))) {
		CHECK(0, "clients");
		goto out;
	}
	CHECK(ssq_buf_alloc(cb, 4096, &shared) == 0 &&
	          ssq_buf_alloc(ca, 4096, &la) == 0 &&
	          ssq_buf_alloc(cb2, 4096, &other) == 0,
	      "buffers");
	memset(shared.addr, 'S', 4096);
	memset(la.addr, 'a', 4096);
	CHECK(ssq_queue_open(ca, "bob/q0", &qa) == 0, "alice opens bob/q0: %s",
	      ssq_client_error(ca));
	CHECK(ssq_queue_open(cb, "alice/q0", &hold) == 0, "bob holds alice/q0: %s",
	      ssq_client_error(cb));
	if (!qa)
		goto out;

	/* A: a read-only registration's grants. */
	rc = ssq_mem_reg(cb, regmem, sizeof(regmem), IBV_ACCESS_REMOTE_READ, &mr);
	CHECK(rc == 0, "A: mem_reg read-only: %d %s", rc, ssq_client_error(cb));
	if (!rc) {
		/*
		 * The registration's own key is no capability: on a ConnectX
		 * the client registers it (SSQ_MEM_VERBS), and it must do so
		 * with no remote access of its own there too.
		 */
		memset(regmem, 'M', sizeof(regmem));
		memset(la.addr, 'a', 64);
		st = cap_one(qa, IBV_WR_RDMA_READ, &la, mr.remote_addr, mr.rkey, id++);
		fprintf(stderr, "A: READ with the registration's own key: status %d\n",
		        st);
		CHECK(st == IBV_WC_REM_ACCESS_ERR && cap_all_bytes(la.addr, 'a', 64),
		      "A: a peer's client READ a registration through its own key "
		      "(status %d)",
		      st);
		CHECK(cap_recover(ca, qa, "bob/q0") == 0, "A: recover");
		rc = ssq_mem_grant(cb, "alice/q0", &mr, 0, 4096, IBV_ACCESS_REMOTE_WRITE,
		                   &d2);
		CHECK(rc == -EACCES, "A: WRITE grant of a read-only registration: %d",
		      rc);
		rc = ssq_mem_grant(cb, "alice/q0", &mr, 0, 4096, IBV_ACCESS_REMOTE_READ,
		                   &d2);
		CHECK(rc == 0, "A: READ grant: %d %s", rc, ssq_client_error(cb));
		memset(regmem, 'M', sizeof(regmem));
		st = cap_one(qa, IBV_WR_RDMA_READ, &la, d2.remote_addr, d2.rkey, id++);
		CHECK(st == IBV_WC_SUCCESS && cap_all_bytes(la.addr, 'M', 64),
		      "A: READ of the registration's grant: %d", st);
		rc = ssq_mem_grant(cb2, "alice/q0", &mr, 0, 4096, IBV_ACCESS_REMOTE_READ,
		                   &d2);
		CHECK(rc == -ENOENT, "B: grant of another client's registration: %d", rc);
		rc = ssq_mem_grant(cb, "alice/q0", &mr, 4096, 4097,
		                   IBV_ACCESS_REMOTE_READ, &d2);
		CHECK(rc == -ERANGE, "B: registration grant past its end: %d", rc);
		CHECK(ssq_mem_dereg(cb, &mr) == 0, "A: dereg");
	}

	/* B: someone else's buffer, ranges, revokes. */
	rc = ssq_buf_grant(cb2, "alice/q0", &shared, 0, 64, IBV_ACCESS_REMOTE_READ, &d2);
	CHECK(rc == -ENOENT, "B: grant of another client's buffer: %d", rc);
	rc = ssq_buf_grant(cb, "alice/q0", &shared, 4095, 2, IBV_ACCESS_REMOTE_READ, &d2);
	CHECK(rc == -ERANGE, "B: one byte past the end: %d", rc);
	/*
	 * off + len wraps: refused by ssqd's decoder, answered with sequence 0
	 * - on a throwaway client, whose every later call then times out
	 * (the request's own sequence is never answered).
	 */
	{
		struct ssq_client *cx = t_cluster_connect(&cl, 1);
		struct ssq_buf xb;

		if (cx && !ssq_buf_alloc(cx, 4096, &xb)) {
			rc = ssq_buf_grant(cx, "alice/q0", &xb, ~0ull - 10, 64,
			                   IBV_ACCESS_REMOTE_READ, &d2);
			CHECK(rc < 0, "B: off + len wraps: %d", rc);
			rc = ssq_buf_grant(cx, "alice/q0", &xb, 0, 64,
			                   IBV_ACCESS_REMOTE_READ, &d2);
			fprintf(stderr,
			        "B: the same client's next, valid grant: %d (%s)\n", rc,
			        rc ? ssq_client_error(cx) : "ok");
			CHECK(rc == 0,
			      "B: a client that passed a wrapping offset is wedged: "
			      "its next grant %d",
			      rc);
		}
		ssq_client_close(cx);
	}
	rc = ssq_buf_grant(cb, "q9", &shared, 0, 64, IBV_ACCESS_REMOTE_READ, &d2);
	CHECK(rc == -ENOENT, "B: no such queue: %d", rc);
	rc = ssq_buf_grant(cb, "alice/q0", &shared, 0, 4096,
	                   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE, &dsc);
	CHECK(rc == 0, "grant: %d %s", rc, ssq_client_error(cb));
	CHECK(ssq_desc_revoke(cb2, &dsc) == -ENOENT, "B: another client's revoke");
	st = cap_one(qa, IBV_WR_RDMA_READ, &la, dsc.remote_addr, dsc.rkey, id++);
	CHECK(st == IBV_WC_SUCCESS && cap_all_bytes(la.addr, 'S', 64),
	      "READ of the grant: %d", st);

	/*
	 * A window bob's other client grants to alice and tells nobody: the
	 * next key index, 255 variants to guess. A wrong guess errors the
	 * queue, its recovery re-links it, and the windows go with the link:
	 * there is nothing left to guess at (before: guessed in ~130 tries).
	 */
	memset(other.addr, 'O', 4096);
	rc = ssq_buf_grant(cb2, "alice/q0", &other, 0, 4096, IBV_ACCESS_REMOTE_READ, &d2);
	CHECK(rc == 0, "D: secret grant: %d %s", rc, ssq_client_error(cb2));

	/* D: one bad key from alice; bob's own end of the queue? */
	{
		double t0 = now_s();
		int bob_ready;

		st = cap_one(qa, IBV_WR_RDMA_READ, &la, dsc.remote_addr, dsc.rkey ^ 0x80,
		             id++);
		CHECK(st == IBV_WC_REM_ACCESS_ERR, "D: guess: %d", st);
		usleep(200000);
		bob_ready = cf_ready(cb, "alice/q0");
		fprintf(stderr,
		        "D: after one guess from alice, bob's alice/q0 (shared by bob's "
		        "clients) ready=%d\n",
		        bob_ready);
		CHECK(cap_recover(ca, qa, "bob/q0") == 0, "D: recover");
		CHECK(ssq_desc_revoke(cb2, &d2) == -ENOENT &&
		          ssq_desc_revoke(cb, &dsc) == -ENOENT,
		      "D: windows to alice outlived a wrong guess and its recovery");
		/* The cost of a guess: how many per second a peer's client makes. */
		t0 = now_s();
		for (k = 0; k < 8; k++) {
			st = cap_one(qa, IBV_WR_RDMA_READ, &la, dsc.remote_addr,
			             (dsc.rkey & ~0xffu) | ((dsc.rkey + 1 + k) & 0xff),
			             id++);
			if (st != IBV_WC_REM_ACCESS_ERR)
				fprintf(stderr, "D: guess %u: status %d\n", k, st);
			if (cap_recover(ca, qa, "bob/q0"))
				break;
		}
		fprintf(stderr, "D: %u guesses (each: error + recover) in %.2f s\n", k,
		        now_s() - t0);
	}

	/* E: a live grant to alice; alice dies; a new alice links. */
	cf_wait_ready(ca, "bob/q0", 1, 20);
	rc = ssq_buf_grant(cb, "alice/q0", &shared, 0, 4096,
	                   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE, &dsc);
	CHECK(rc == 0, "E: grant: %d %s", rc, ssq_client_error(cb));
	memset(la.addr, 'a', 64);
	st = cap_one(qa, IBV_WR_RDMA_READ, &la, dsc.remote_addr, dsc.rkey, id++);
	CHECK(st == IBV_WC_SUCCESS && cap_all_bytes(la.addr, 'S', 64),
	      "E: READ of the grant before alice dies: %d", st);
	ssq_queue_close(qa);
	qa = NULL;
	ssq_client_close(ca);
	ca = NULL;
	kill(cl.pid[0], SIGKILL);
	waitpid(cl.pid[0], NULL, 0);
	CHECK(t_cluster_start(&cl, 0, NULL) > 0, "E: a new alice");
	ca = t_cluster_connect(&cl, 0);
	if (!ca || ssq_buf_alloc(ca, 4096, &la)) {
		CHECK(0, "E: new alice's client");
		goto out;
	}
	memset(la.addr, 'n', 4096);
	for (i = 0; i < 200 && (rc = ssq_queue_open(ca, "bob/q0", &qa)); i++)
		usleep(100000);
	CHECK(rc == 0, "E: new alice opens bob/q0: %d %s", rc, ssq_client_error(ca));
	if (rc)
		goto out;
	cf_wait_ready(ca, "bob/q0", 1, 20);
	st = cap_one(qa, IBV_WR_RDMA_READ, &la, dsc.remote_addr, dsc.rkey, id++);
	fprintf(stderr,
	        "E: new alice's READ with the old alice's descriptor: status %d\n", st);
	CHECK(st != IBV_WC_SUCCESS || !cap_all_bytes(la.addr, 'S', 64),
	      "E: a window granted to the old alice reads bob's buffer for the new "
	      "alice's client");
	memset(la.addr, 'n', 64);
	st = cap_one(qa, IBV_WR_RDMA_WRITE, &la, dsc.remote_addr, dsc.rkey, id++);
	CHECK(st != IBV_WC_SUCCESS || !cap_all_bytes(shared.addr, 'n', 64),
	      "E: ... and writes it (status %d)", st);
	CHECK(ssq_desc_revoke(cb, &dsc) == -ENOENT,
	      "E: bob's client's grant to the old alice still stands");
out:
	if (hold)
		ssq_queue_close(hold);
	if (qa)
		ssq_queue_close(qa);
	ssq_client_close(ca);
	ssq_client_close(cb);
	ssq_client_close(cb2);
	t_cluster_stop(&cl);
	return test_exit("ctrl_adv_cap_attack");
}
