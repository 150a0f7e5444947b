/* SPDX-License-Identifier: MIT */
/*
 * Remote access is a capability (issue 28 item 1), in a cluster of alice,
 * bob and carol on the emulated device:
 *  - a client of alice, told bob's arena IOVA and key (ssq_queue_peer_iova,
 *    _rkey), tries the guesses of the issue (arena key + 0x101, + 0x100,
 *    the arena key, + 0x202) and even the buffer's very key (leaked) on a
 *    bob client's private buffer, the first of bob's arena: each READ and
 *    WRITE fails with IBV_WC_REM_ACCESS_ERR, the buffer keeps its bytes and
 *    alice's reads bring nothing back;
 *  - a buffer bob's client grants to alice (ssq_buf_grant on "alice/q0")
 *    is written and read by alice's client with that descriptor, and not
 *    by carol's (same descriptor, its own queue to bob);
 *  - it stops working once revoked (ssq_desc_revoke), and a second grant
 *    once the buffer is freed (ssq_buf_free);
 *  - bob counts each refused request against the peer that sent it
 *    (ssq_client_peers' refused, ssqd --status's REFUSED).
 * Before: the first guess (arena key + 0x101) read and overwrote the
 * private buffer, and there was no ssq_buf_grant.
 */
#include "cap_flow.h"

#define N 3
static const char *const names[N] = { "alice", "bob", "carol" };
static struct t_cluster cl;

static unsigned refused_by(struct ssq_client *c, const char *peer)
{
	struct ssq_peer_info p[N];
	int n = ssq_client_peers(c, p, N), i;

	for (i = 0; i < n && i < N; i++)
		if (!strcmp(p[i].name, peer))
			return p[i].refused;
	return ~0u;
}

/*
 * refused_by once it reaches @want (or after 10 s): the requester's error
 * CQE can come before bob's ssqd took the responder's event that counts it
 * (on the model of libmlx5 the async event passes through its thread).
 */
static unsigned refused_when(struct ssq_client *c, const char *peer, unsigned want)
{
	double t0 = now_s();
	unsigned n;

	while ((n = refused_by(c, peer)) != want && now_s() - t0 < 10)
		usleep(10000);
	return n;
}

int main(void)
{
	struct ssq_client *ca = NULL, *cb = NULL, *cc = NULL;
	struct ssq_queue *qa = NULL, *qc = NULL, *hold[2] = { NULL, NULL };
	struct ssq_buf priv, shared, la, lc;
	struct ssq_desc dsc;
	uint32_t arena_key, guesses[5];
	uint64_t arena_iova, id = 100;
	unsigned i, alice_refused = 0;
	int st, rc;

	t_need_ssqd();
	t_rssqd_grants = 1; /* ssqd's default: no --no-grants */
	cf_cluster_files(&cl, "cap-grant", N, names, 0);
	CHECK(t_cluster_start_all(&cl, NULL) == 0, "alice, bob and carol started");
	ca = t_cluster_connect(&cl, 0);
	cb = t_cluster_connect(&cl, 1);
	cc = t_cluster_connect(&cl, 2);
	if (!ca || !cb || !cc) {
		CHECK(0, "clients");
		goto out;
	}
	/* bob's client: a private buffer first (the arena's start), then one to share. */
	CHECK(ssq_buf_alloc(cb, 4096, &priv) == 0, "private buffer: %s",
	      ssq_client_error(cb));
	CHECK(ssq_buf_alloc(cb, 4096, &shared) == 0, "shared buffer");
	memset(priv.addr, 'P', 4096);
	memset(shared.addr, 'S', 4096);
	CHECK(ssq_buf_alloc(ca, 4096, &la) == 0 && ssq_buf_alloc(cc, 4096, &lc) == 0,
	      "alice's and carol's buffers");
	memset(la.addr, 'a', 4096);
	memset(lc.addr, 'c', 4096);
	rc = ssq_queue_open(ca, "bob/q0", &qa);
	CHECK(rc == 0, "alice opens bob/q0: %d %s", rc, ssq_client_error(ca));
	rc = ssq_queue_open(cc, "bob/q0", &qc);
	CHECK(rc == 0, "carol opens bob/q0: %d %s", rc, ssq_client_error(cc));
	/*
	 * bob's client holds its ends open, so that bob keeps both links
	 * while they recover from the refusals. (Without it, carol's RECOVER
	 * raced bob closing the then idle link: "peer bob: linking, asked it
	 * to dial this ssqd" for 20 s though carol's log said q1 ready again -
	 * once in a few runs under ASan; an on-demand link matter, not grants.)
	 */
	CHECK(ssq_queue_open(cb, "alice/q0", &hold[0]) == 0 &&
	          ssq_queue_open(cb, "carol/q0", &hold[1]) == 0,
	      "bob opens its ends: %s", ssq_client_error(cb));
	if (!qa || !qc)
		goto out;

	/* The guesses: what every client of alice is told, and nearby keys. */
	arena_iova = ssq_queue_peer_iova(qa);
	arena_key = ssq_queue_peer_rkey(qa);
	guesses[0] = arena_key + 0x101;
	guesses[1] = arena_key + 0x100;
	guesses[2] = arena_key;
	guesses[3] = arena_key + 0x202;
	guesses[4] = priv.rkey; /* the buffer's own key, leaked */
	CHECK(priv.remote_addr == arena_iova, "the private buffer is the arena's first");
	for (i = 0; i < 5; i++) {
		enum ibv_wr_opcode op = i % 2 ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;

		st = cap_one(qa, op, &la, priv.remote_addr, guesses[i], id++);
		CHECK(st == IBV_WC_REM_ACCESS_ERR,
		      "guess %u (rkey 0x%x, %s): status %d, want remote access error", i,
		      guesses[i], op == IBV_WR_RDMA_READ ? "READ" : "WRITE", st);
		alice_refused++;
		CHECK(cap_all_bytes(priv.addr, 'P', 4096),
		      "guess %u changed bob's buffer", i);
		CHECK(cap_all_bytes(la.addr, 'a', 4096), "guess %u read bob's buffer", i);
		CHECK(cap_recover(ca, qa, "bob/q0") == 0, "recover after guess %u: %s", i,
		      ssq_client_error(ca));
	}

	/* Granted to alice: alice writes and reads it... */
	memset(&dsc, 0, sizeof(dsc));
	rc = ssq_buf_grant(cb, "alice/q0", &shared, 1024, 1024,
	                   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, &dsc);
	CHECK(rc == 0, "grant: %d %s", rc, ssq_client_error(cb));
	CHECK(dsc.remote_addr == shared.remote_addr + 1024 && dsc.length == 1024 &&
	          dsc.rkey != shared.rkey,
	      "descriptor 0x%llx +%llu key 0x%x", (unsigned long long)dsc.remote_addr,
	      (unsigned long long)dsc.length, dsc.rkey);
	st = cap_one(qa, IBV_WR_RDMA_WRITE, &la, dsc.remote_addr, dsc.rkey, id++);
	CHECK(st == IBV_WC_SUCCESS, "alice WRITEs the grant: %d", st);
	CHECK(cap_all_bytes((uint8_t *)shared.addr + 1024, 'a', 64) &&
	          cap_all_bytes(shared.addr, 'S', 1024),
	      "the WRITE landed where granted, nowhere else");
	memset((uint8_t *)shared.addr + 1024, 'R', 64);
	st = cap_one(qa, IBV_WR_RDMA_READ, &la, dsc.remote_addr, dsc.rkey, id++);
	CHECK(st == IBV_WC_SUCCESS && cap_all_bytes(la.addr, 'R', 64),
	      "alice READs it: %d", st);
	/* ...outside the range, no. */
	st = cap_one(qa, IBV_WR_RDMA_READ, &la, dsc.remote_addr + 1000, dsc.rkey, id++);
	CHECK(st == IBV_WC_REM_ACCESS_ERR, "READ past the grant: %d", st);
	alice_refused++;
	CHECK(cap_recover(ca, qa, "bob/q0") == 0, "recover: %s", ssq_client_error(ca));
	/*
	 * The recovery re-linked alice's queue: the grant went with the link
	 * (queues/grants.c), so a guess never outlives its own error and
	 * whoever links next as alice inherits nothing. Granted again.
	 */
	CHECK(ssq_desc_revoke(cb, &dsc) == -ENOENT,
	      "the grant outlived alice's link going down");
	rc = ssq_buf_grant(cb, "alice/q0", &shared, 1024, 1024,
	                   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, &dsc);
	CHECK(rc == 0, "grant after the recovery: %d %s", rc, ssq_client_error(cb));
	st = cap_one(qa, IBV_WR_RDMA_READ, &la, dsc.remote_addr, dsc.rkey, id++);
	CHECK(st == IBV_WC_SUCCESS && cap_all_bytes(la.addr, 'R', 64),
	      "alice READs the new grant: %d", st);

	/* carol, with the same descriptor, no: it was granted to alice. */
	st = cap_one(qc, IBV_WR_RDMA_WRITE, &lc, dsc.remote_addr, dsc.rkey, id++);
	CHECK(st == IBV_WC_REM_ACCESS_ERR, "carol WRITEs alice's grant: %d", st);
	CHECK(cap_all_bytes((uint8_t *)shared.addr + 1024, 'R', 64),
	      "carol's WRITE landed");
	CHECK(cap_recover(cc, qc, "bob/q0") == 0, "carol recovers: %s",
	      ssq_client_error(cc));

	/* Revoked: alice, no more. */
	CHECK(ssq_desc_revoke(cb, &dsc) == 0, "revoke: %s", ssq_client_error(cb));
	CHECK(ssq_desc_revoke(cb, &dsc) == -ENOENT, "revoke twice");
	st = cap_one(qa, IBV_WR_RDMA_WRITE, &la, dsc.remote_addr, dsc.rkey, id++);
	CHECK(st == IBV_WC_REM_ACCESS_ERR, "WRITE after revoke: %d", st);
	alice_refused++;
	CHECK(cap_all_bytes((uint8_t *)shared.addr + 1024, 'R', 64),
	      "landed after revoke");
	CHECK(cap_recover(ca, qa, "bob/q0") == 0, "recover: %s", ssq_client_error(ca));

	/* Granted again, then the buffer freed: no more either. */
	rc =
	    ssq_buf_grant(cb, "alice/q0", &shared, 0, 4096, IBV_ACCESS_REMOTE_READ, &dsc);
	CHECK(rc == 0, "grant again: %d %s", rc, ssq_client_error(cb));
	st = cap_one(qa, IBV_WR_RDMA_READ, &la, dsc.remote_addr, dsc.rkey, id++);
	CHECK(st == IBV_WC_SUCCESS, "READ of the second grant: %d", st);
	st = cap_one(qa, IBV_WR_RDMA_WRITE, &la, dsc.remote_addr, dsc.rkey, id++);
	CHECK(st == IBV_WC_REM_ACCESS_ERR, "WRITE to a read-only grant: %d", st);
	alice_refused++;
	CHECK(cap_recover(ca, qa, "bob/q0") == 0, "recover: %s", ssq_client_error(ca));
	CHECK(ssq_buf_free(cb, &shared) == 0, "free: %s", ssq_client_error(cb));
	st = cap_one(qa, IBV_WR_RDMA_READ, &la, dsc.remote_addr, dsc.rkey, id++);
	CHECK(st == IBV_WC_REM_ACCESS_ERR, "READ after free: %d", st);
	alice_refused++;

	/* A granting client's end takes its grants with it. */
	CHECK(cap_recover(ca, qa, "bob/q0") == 0, "recover: %s", ssq_client_error(ca));
	{
		struct ssq_client *cb2 = t_cluster_connect(&cl, 1);
		struct ssq_buf gone;

		CHECK(cb2 && ssq_buf_alloc(cb2, 4096, &gone) == 0 &&
		          ssq_buf_grant(cb2, "alice/q0", &gone, 0, 4096,
		                        IBV_ACCESS_REMOTE_READ, &dsc) == 0,
		      "a second client of bob grants: %s",
		      cb2 ? ssq_client_error(cb2) : "no client");
		st = cap_one(qa, IBV_WR_RDMA_READ, &la, dsc.remote_addr, dsc.rkey, id++);
		CHECK(st == IBV_WC_SUCCESS, "READ of its grant: %d", st);
		ssq_client_close(cb2);
		/* ssqd sees the end on its socket: within a second, no more. */
		for (i = 0; i < 50; i++) {
			st = cap_one(qa, IBV_WR_RDMA_READ, &la, dsc.remote_addr, dsc.rkey,
			             id++);
			if (st != IBV_WC_SUCCESS)
				break;
			usleep(20000);
		}
		CHECK(st == IBV_WC_REM_ACCESS_ERR, "READ after its client's end: %d", st);
		alice_refused++;
	}

	/* Bob counted them, per peer. */
	{
		unsigned ra = refused_when(cb, "alice", alice_refused);
		unsigned rc_ = refused_when(cb, "carol", 1);

		CHECK(ra == alice_refused, "bob: alice refused %u, want %u", ra,
		      alice_refused);
		CHECK(rc_ == 1, "bob: carol refused %u, want 1", rc_);
	}
	CHECK(cf_file_has(cl.log[1], "used a key not granted"), "bob's log says so");
	{
		struct ssq_queue_info qi[SSQ_MAX_QUEUES];
		int nq = ssq_client_list(cb, qi, SSQ_MAX_QUEUES), k;
		unsigned on_alice = ~0u;

		for (k = 0; k < nq && k < (int)SSQ_MAX_QUEUES; k++)
			if (!strcmp(qi[k].name, "alice/q0"))
				on_alice = qi[k].refused;
		CHECK(on_alice == alice_refused,
		      "bob's LIST: alice/q0 refused %u, want %u", on_alice,
		      alice_refused);
	}
out:
	for (i = 0; i < 2; i++)
		if (hold[i])
			ssq_queue_close(hold[i]);
	if (qa)
		ssq_queue_close(qa);
	if (qc)
		ssq_queue_close(qc);
	ssq_client_close(ca);
	ssq_client_close(cb);
	ssq_client_close(cc);
	t_cluster_stop(&cl);
	return test_exit("ctrl_cap_grant");
}
