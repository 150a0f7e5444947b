/* SPDX-License-Identifier: MIT */
/*
 * Peers under tenants (issue 28 item 2 across hosts): alice and bob, a
 * cluster on the emulated wire, both ssqd --tenants uid --allow-uid 65534
 * (then both --tenants gid --allow-gid 65534, the same run by group).
 * On each host uid 0 (this process, ssqd's own uid) is served by the
 * first ssqd and uid 65534 by a tenant's ssqd of its own; a link of uid
 * 65534's tenant must join the two uid-65534 tenants, over QPs of their
 * own, and no other:
 *  - alice's uid-0 client WRITEs into a buffer bob's uid-0 client granted
 *    to alice, and alice's uid-65534 client into one bob's uid-65534
 *    client granted: the bytes land, each in its own tenant's buffer;
 *  - alice's uid-65534 client, given uid 0's descriptor (leaked), WRITEs
 *    with it on its own queue to bob: IBV_WC_REM_ACCESS_ERR, not a byte
 *    moves (the window is bound to tenant 0's QP, in tenant 0's PD, which
 *    tenant 65534's QP on bob is not); and alice's uid-0 client with uid
 *    65534's descriptor the same;
 *  - bob's uid 65534 opens alice/q0 before anyone on alice does: its
 *    want reaches alice's port and is handed to alice's uid-65534 ssqd,
 *    which dials back (the link both uid-65534 clients then use).
 * Also run with --peer-key (<name>_peerkey): the tenant is in the MACs.
 * Before: ssqd refused --tenants with peers at start ("peer queues are not
 * carried per tenant yet").
 * Needs root (the uid-65534 clients setuid): skips otherwise, saying so.
 */
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "cap_flow.h"

#define N 2
static const char *const names[N] = { "alice", "bob" };
static struct t_cluster cl;

/* A pipe's one message of @n bytes: 0, or -1. */
static int put(int fd, const void *p, size_t n)
{
	return write(fd, p, n) == (ssize_t)n ? 0 : -1;
}

static int get(int fd, void *p, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, (char *)p + got, n - got);

		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

static int become_nobody(void)
{
	return setgroups(0, NULL) || setgid(65534) || setuid(65534) ? -1 : 0;
}

/*
 * bob's uid-65534 client, in a child: a buffer of 'y', alice/q0 held open;
 * "ready"; at 'g' a grant of it to alice (the descriptor out); at 'c' the
 * buffer checked: its first 64 bytes 'Y' (alice's uid 65534 wrote them)
 * and the rest 'y' (nobody else did). Exit 0 when so.
 */
static int bob_nobody(int in, int out)
{
	struct ssq_client *c = NULL;
	struct ssq_queue *hold = NULL;
	struct ssq_buf b;
	struct ssq_desc dsc;
	char cmd, ok = 'r';
	int good;

	if (become_nobody() || !(c = t_cluster_connect(&cl, 1)))
		return 2;
	if (ssq_buf_alloc(c, 4096, &b) || ssq_queue_open(c, "alice/q0", &hold)) {
		fprintf(stderr, "bob uid 65534: set-up: %s\n", ssq_client_error(c));
		return 3;
	}
	memset(b.addr, 'y', 4096);
	if (put(out, &ok, 1) || get(in, &cmd, 1) || cmd != 'g')
		return 4;
	memset(&dsc, 0, sizeof(dsc));
	if (ssq_buf_grant(c, "alice/q0", &b, 0, 4096, IBV_ACCESS_REMOTE_WRITE, &dsc)) {
		fprintf(stderr, "bob uid 65534: grant: %s\n", ssq_client_error(c));
		return 5;
	}
	if (put(out, &dsc, sizeof(dsc)) || get(in, &cmd, 1) || cmd != 'c')
		return 6;
	good = cap_all_bytes(b.addr, 'Y', 64) &&
	       cap_all_bytes((uint8_t *)b.addr + 64, 'y', 4096 - 64);
	printf("bob uid 65534: its buffer %s\n",
	       good ? "holds alice uid 65534's bytes, nobody else's" : "is wrong");
	ssq_queue_close(hold);
	ssq_client_close(c);
	return good ? 0 : 1;
}

/*
 * alice's uid-65534 client, in a child: at 'o', bob/q0 open (its
 * tenant's link); "ready"; then its own tenant's descriptor and uid 0's come in: a WRITE
 * of 'Y' at its own (to succeed), then one at uid 0's (to fail). The two
 * statuses out.
 */
static int alice_nobody(int in, int out)
{
	struct ssq_client *c = NULL;
	struct ssq_queue *q = NULL;
	struct ssq_buf l;
	struct ssq_desc own, leaked;
	int st[2];
	char ok = 'r';

	if (become_nobody() || !(c = t_cluster_connect(&cl, 0)))
		return 2;
	/* Only once bob's uid 65534 has its link: that one came by its want. */
	if (get(in, &ok, 1) || ok != 'o')
		return 3;
	if (ssq_buf_alloc(c, 4096, &l) || ssq_queue_open(c, "bob/q0", &q)) {
		fprintf(stderr, "alice uid 65534: set-up: %s\n", ssq_client_error(c));
		return 3;
	}
	ok = 'r';
	memset(l.addr, 'Y', 4096);
	if (put(out, &ok, 1) || get(in, &own, sizeof(own)) ||
	    get(in, &leaked, sizeof(leaked)))
		return 4;
	st[0] = cap_one(q, IBV_WR_RDMA_WRITE, &l, own.remote_addr, own.rkey, 1);
	st[1] = cap_one(q, IBV_WR_RDMA_WRITE, &l, leaked.remote_addr, leaked.rkey, 2);
	if (put(out, st, sizeof(st)))
		return 5;
	ssq_queue_close(q);
	ssq_client_close(c);
	return 0;
}

/* A child running @fn(in, out) over two pipes; its pid, our ends in @in, @out. */
static pid_t child(int (*fn)(int, int), int *in, int *out)
{
	int to[2], from[2];
	pid_t pid;

	if (pipe(to) || pipe(from))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(to[1]);
		close(from[0]);
		_exit(fn(to[0], from[1]));
	}
	close(to[0]);
	close(from[1]);
	*out = to[1];
	*in = from[0];
	return pid;
}

static int reaped_ok(pid_t pid, const char *who)
{
	int st = 0;

	if (pid <= 0 || waitpid(pid, &st, 0) != pid)
		return 0;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 1;
	fprintf(stderr, "%s: status 0x%x\n", who, st);
	return 0;
}

/* The whole run, both hosts --tenants @kind (uid or gid) with 65534 allowed. */
static void scenario(const char *kind)
{
	const char *const extra[] = { "--tenants", kind,
		                      strcmp(kind, "uid") ? "--allow-gid" : "--allow-uid",
		                      "65534", NULL };
	char started[64];
	struct ssq_client *ca = NULL, *cb = NULL;
	struct ssq_queue *qa = NULL, *hold = NULL;
	struct ssq_buf la, sb;
	struct ssq_desc d0, d1;
	pid_t pa = -1, pb = -1;
	int ain = -1, aout = -1, bin = -1, bout = -1, st, rc, ast[2] = { -1, -1 };
	unsigned i;
	char r, cmd;

	printf("--tenants %s\n", kind);
	cf_cluster_files(&cl, "tenant-peers", N, names, 0);
	for (i = 0; i < N; i++)
		CHECK(t_cluster_start(&cl, i, extra) > 0, "start %s", names[i]);
	/* The children first: they inherit none of our clients. */
	pb = child(bob_nobody, &bin, &bout);
	pa = child(alice_nobody, &ain, &aout);
	CHECK(pa > 0 && pb > 0, "children");
	ca = t_cluster_connect(&cl, 0);
	cb = t_cluster_connect(&cl, 1);
	if (!ca || !cb || pa <= 0 || pb <= 0) {
		CHECK(0, "clients of alice and bob");
		goto out;
	}
	/* uid 65534 may connect (the children retry until it may). */
	chmod(cl.sock[0], 0666);
	chmod(cl.sock[1], 0666);

	/* uid 0, ssqd's own tenant on both hosts. */
	CHECK(ssq_buf_alloc(ca, 4096, &la) == 0 && ssq_buf_alloc(cb, 4096, &sb) == 0,
	      "uid 0's buffers: %s %s", ssq_client_error(ca), ssq_client_error(cb));
	memset(la.addr, 'a', 4096);
	memset(sb.addr, 'S', 4096);
	rc = ssq_queue_open(ca, "bob/q0", &qa);
	CHECK(rc == 0, "alice uid 0 opens bob/q0: %d %s", rc, ssq_client_error(ca));
	rc = ssq_queue_open(cb, "alice/q0", &hold);
	CHECK(rc == 0, "bob uid 0 opens alice/q0: %d %s", rc, ssq_client_error(cb));
	if (!qa || !hold)
		goto out;
	memset(&d0, 0, sizeof(d0));
	rc = ssq_buf_grant(cb, "alice/q0", &sb, 0, 4096, IBV_ACCESS_REMOTE_WRITE, &d0);
	CHECK(rc == 0, "bob uid 0 grants: %d %s", rc, ssq_client_error(cb));
	st = cap_one(qa, IBV_WR_RDMA_WRITE, &la, d0.remote_addr, d0.rkey, 1);
	CHECK(st == IBV_WC_SUCCESS, "alice uid 0 WRITEs its tenant's grant: %d", st);
	CHECK(cap_all_bytes(sb.addr, 'a', 64) &&
	          cap_all_bytes((uint8_t *)sb.addr + 64, 'S', 4096 - 64),
	      "uid 0's bytes landed in bob uid 0's buffer");

	/* uid 65534, a tenant's ssqd on both hosts. */
	/*
	 * bob's uid 65534 opens alice/q0 first: bob's tenant asks alice's
	 * port for a link (a want, with its TENANT), alice's ssqd hands it to
	 * alice's uid-65534 ssqd, which dials back. Then alice's uid 65534.
	 */
	CHECK(get(bin, &r, 1) == 0, "bob uid 65534 opened alice/q0 (its tenant's want)");
	cmd = 'o';
	CHECK(put(aout, &cmd, 1) == 0 && get(ain, &r, 1) == 0,
	      "alice uid 65534 opened bob/q0");
	CHECK(cf_file_has(cl.log[0], "for tenant 65534: handed to its ssqd"),
	      "alice handed uid 65534's want to its tenant's ssqd");
	cmd = 'g';
	CHECK(put(bout, &cmd, 1) == 0 && get(bin, &d1, sizeof(d1)) == 0,
	      "bob uid 65534's grant");
	CHECK(put(aout, &d1, sizeof(d1)) == 0 && put(aout, &d0, sizeof(d0)) == 0 &&
	          get(ain, ast, sizeof(ast)) == 0,
	      "alice uid 65534's WRITEs");
	CHECK(ast[0] == IBV_WC_SUCCESS, "alice uid 65534 WRITEs its tenant's grant: %d",
	      ast[0]);
	/*
	 * The two tenants' emulated devices number their windows alike and
	 * draw the key byte at random: 1 in 256 the keys are equal, and then
	 * the leak proves nothing either way.
	 */
	printf("descriptors: uid 0 0x%llx key 0x%x, uid 65534 0x%llx key 0x%x\n",
	       (unsigned long long)d0.remote_addr, d0.rkey,
	       (unsigned long long)d1.remote_addr, d1.rkey);
	if (d0.rkey != d1.rkey)
		CHECK(ast[1] == IBV_WC_REM_ACCESS_ERR,
		      "alice uid 65534 WRITEs with uid 0's leaked descriptor: %d, want "
		      "remote access error",
		      ast[1]);
	CHECK(cap_all_bytes(sb.addr, 'a', 64) &&
	          cap_all_bytes((uint8_t *)sb.addr + 64, 'S', 4096 - 64),
	      "uid 65534's WRITE landed in bob uid 0's buffer");
	/* The other way: uid 0 with uid 65534's descriptor. */
	if (d0.rkey != d1.rkey) {
		memset(la.addr, 'Z', 64);
		st = cap_one(qa, IBV_WR_RDMA_WRITE, &la, d1.remote_addr, d1.rkey, 2);
		CHECK(st == IBV_WC_REM_ACCESS_ERR,
		      "alice uid 0 WRITEs with uid 65534's descriptor: %d, want remote "
		      "access error",
		      st);
	}
	cmd = 'c';
	CHECK(put(bout, &cmd, 1) == 0, "bob uid 65534 told to check");
	CHECK(reaped_ok(pb, "bob uid 65534"), "bob uid 65534's buffer");
	pb = -1;
	CHECK(reaped_ok(pa, "alice uid 65534"), "alice uid 65534");
	pa = -1;
	snprintf(started, sizeof(started), "tenant %s 65534: its ssqd is pid", kind);
	CHECK(cf_file_has(cl.log[1], started), "bob started %s 65534's tenant", kind);
	/* The link is the two tenants' ssqd's own (their log lines say whose). */
	snprintf(started, sizeof(started), "ssqd (tenant %s 65534): peer bob: linked",
	         kind);
	CHECK(cf_file_has(cl.log[0], started), "alice's log: '%s'", started);
	snprintf(started, sizeof(started), "ssqd (tenant %s 65534): peer alice [", kind);
	CHECK(cf_file_has(cl.log[1], started), "bob's log: '%s'", started);
out:
	if (pa > 0)
		kill(pa, SIGKILL), waitpid(pa, NULL, 0);
	if (pb > 0)
		kill(pb, SIGKILL), waitpid(pb, NULL, 0);
	if (qa)
		ssq_queue_close(qa);
	if (hold)
		ssq_queue_close(hold);
	ssq_client_close(ca);
	ssq_client_close(cb);
	t_cluster_stop(&cl);
}

int main(void)
{
	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	if (geteuid() != 0)
		SKIP("not root: the uid-65534 clients need setuid");
	signal(SIGPIPE, SIG_IGN);
	t_rssqd_grants = 1;
	scenario("uid");
	scenario("gid");
	return test_exit("ctrl_tenant_peers");
}
