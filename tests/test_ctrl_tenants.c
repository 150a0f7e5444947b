/* SPDX-License-Identifier: MIT */
/*
 * Tenants (issue 28 item 2): a client of another uid, allowed with
 * --allow-uid, must not read or write a client's ssq_mem_reg'd memory by
 * guessing its lkey from its own. A (this process, ssqd's uid) registers
 * 4 KiB of 'A'; B (a child of uid 65534) opens q0 and posts, with A's lkey
 * and guesses around it (+-1, +-0x100, +-0x101: the next key slots, other
 * variant bytes), a WRITE of A's memory into B's own buffer and a READ of
 * B's buffer into A's memory.
 *  - ssqd --tenants uid --allow-uid 65534 (and --tenants gid --allow-gid
 *    65534, and --tenants uid --allow-gid 65534, whose tenant uid 65534 is
 *    started at B's first connection): B's connection is served by B's own ssqd (own
 * device context, PD, arena, queues): every such WR completes IBV_WC_LOC_PROT_ERR, B's
 *    buffer holds no byte of A's and A's memory is unchanged; B's own
 *    WRITE on the same queue still succeeds; B's ssqd ends with ssqd, and
 *    with an ssqd killed with SIGKILL too.
 *  - ssqd without --tenants (one tenant, the default): B's WRITE with A's
 *    exact lkey moves A's bytes, as trust.md says of one trust domain.
 * Before: ssqd refused --tenants ("unknown or incomplete option"), and
 * with one tenant B read A's memory.
 * Needs root (B runs as uid 65534): skips otherwise, saying so.
 */
#include <grp.h>
#include <sys/stat.h>
#include "cluster_flow.h"

static char sock[108], logf[128];

/* What B knows of A: where A's registration is, and its key. */
static uint64_t a_iova;
static uint32_t a_lkey;

/*
 * Post every guess of B's; counts of WRs that succeeded and of those that
 * failed otherwise than IBV_WC_LOC_PROT_ERR.
 */
static void guesses(struct ssq_queue *q, const struct ssq_buf *mine, unsigned *moved,
                    unsigned *odd)
{
	static const int32_t d[] = { 0, 1, -1, 0x100, -0x100, 0x101, -0x101 };
	struct ssq_producer *p = ssq_queue_producer(q);
	uint64_t id = 100;
	unsigned i, k;
	int st;

	for (i = 0; i < sizeof(d) / sizeof(d[0]); i++) {
		struct ssq_buf a = { 0 };

		a.iova = a_iova;
		a.lkey = a_lkey + (uint32_t)d[i];
		if (a.lkey == mine->lkey)
			continue;
		for (k = 0; k < 2; k++) {
			/* WRITE: A's bytes into B's buffer; READ: B's into A's. */
			st = cf_one(p, k ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE, &a, 0,
			            64, mine, k ? 64 : 0, id++, 20, 1);
			if (st == IBV_WC_SUCCESS) {
				(*moved)++;
				continue;
			}
			if (st != IBV_WC_LOC_PROT_ERR) {
				(*odd)++;
				fprintf(stderr, "uid 65534: key 0x%x %s: status %d\n",
				        a.lkey, k ? "READ" : "WRITE", st);
			}
			if (ssq_queue_recover(q))
				(*odd)++;
		}
	}
}

/*
 * Opens of q0 over two new connections, 16 each; how many worked. B's
 * opens say which uid they are made as: "uid N: open".
 */
static int more_opens(void)
{
	struct ssq_client *c[2] = { NULL, NULL };
	struct ssq_queue *q;
	int i, n = 0;

	for (i = 0; i < 32; i++) {
		if (!c[i / 16] && ssq_client_connect(sock, &c[i / 16]))
			break;
		if (ssq_queue_open(c[i / 16], "q0", &q)) {
			fprintf(stderr, "uid %u: open %d: %s\n", (unsigned)getuid(),
			        i + 1, ssq_client_error(c[i / 16]));
			break;
		}
		n++;
	}
	for (i = 0; i < 2; i++)
		if (c[i])
			ssq_client_close(c[i]);
	return n;
}

/*
 * B, in a child: 0 when what it saw is what --tenants @mode promises (no
 * byte of A's; its own WRITE works; NULL: one tenant, A's exact key moves
 * A's bytes), else 1; 2 and up for its set-up.
 */
static int thief(const char *mode)
{
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_buf b;
	unsigned moved = 0, odd = 0, i;
	int st, got_a = 0, opens = -1; /* -1: not tried */

	if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
		return 2;
	if (ssq_client_connect(sock, &c))
		return 3;
	if (ssq_queue_open(c, "q0", &q) || ssq_buf_alloc(c, 4096, &b)) {
		fprintf(stderr, "uid 65534: set-up: %s\n", ssq_client_error(c));
		return 4;
	}
	memset(b.addr, 'b', 4096);
	guesses(q, &b, &moved, &odd);
	for (i = 0; i < 64; i++)
		got_a |= ((char *)b.addr)[i] == 'A';
	/*
	 * A tenant of one uid holds all of its ssqd's producer records: 32
	 * more opens of q0 over two more connections (ssqd keeps 31 of 63 for
	 * other uids only where other uids may come).
	 */
	if (mode && !strcmp(mode, "uid"))
		opens = more_opens();
	/* Its own keys still work on its queue: the errors were A's keys'. */
	st = cf_one(ssq_queue_producer(q), IBV_WR_RDMA_WRITE, &b, 1024, 64, &b, 2048, 1,
	            20, 1);
	printf("uid 65534 (%s): %u WRs moved bytes, %u odd, A's bytes in mine: %d, "
	       "own WRITE: %d, more opens: %d\n",
	       mode ? mode : "one tenant", moved, odd, got_a, st, opens);
	ssq_client_close(c);
	if (mode)
		return moved == 0 && odd == 0 && !got_a && st == IBV_WC_SUCCESS &&
		               (opens < 0 || opens == 32)
		           ? 0
		           : 1;
	return got_a && st == IBV_WC_SUCCESS ? 0 : 1;
}

/*
 * Has process @pid exited (no such process, or a zombie nobody reaped
 * yet)? Looks for up to @secs seconds.
 */
static int gone(pid_t pid, int secs)
{
	char path[64], buf[256], *p;
	int i, fd;
	ssize_t n;

	for (i = 0; i <= secs * 100; i++) {
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			return 1;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[n > 0 ? n : 0] = 0;
		p = strrchr(buf, ')');
		if (!p || p[1] == 0 || p[2] == 'Z' || p[2] == 'X')
			return 1;
		if (i < secs * 100)
			usleep(10000);
	}
	return 0;
}

/* Does ssqd's log hold @needle? */
static int log_has(const char *needle)
{
	char buf[65536];
	FILE *f = fopen(logf, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = 0;
	return strstr(buf, needle) != NULL;
}

/* The pid of the tenant's ssqd, from ssqd's log; -1 if not there. */
static pid_t tenant_pid(void)
{
	char buf[65536], *s;
	FILE *f = fopen(logf, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = 0;
	s = strstr(buf, "its ssqd is pid ");
	return s ? (pid_t)atoi(s + strlen("its ssqd is pid ")) : -1;
}

static void run(const char *mode, const char *allow)
{
	const char *args[] = { allow, "65534", mode ? "--tenants" : NULL, mode, NULL };
	struct ssq_client *c;
	struct ssq_mr mr;
	char *mem = aligned_alloc(4096, 4096);
	pid_t d, kid, tp = -1;
	int st, i, changed = 0;

	d = cf_start(sock, logf, 0, NULL, args);
	c = t_ssqd_connect(sock, d);
	CHECK(c && mem, "A: connect");
	if (!c || !mem)
		goto out;
	memset(mem, 'A', 4096);
	st = ssq_mem_reg(c, mem, 4096, IBV_ACCESS_LOCAL_WRITE, &mr);
	CHECK(st == 0, "A: mem_reg: %d %s", st, ssq_client_error(c));
	if (st)
		goto out;
	a_iova = mr.iova;
	a_lkey = mr.lkey;
	chmod(sock, 0666); /* uid 65534 may connect */
	fflush(NULL);
	kid = fork();
	if (kid == 0)
		_exit((st = thief(mode), fflush(NULL), st));
	waitpid(kid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "uid 65534 with --tenants %s: exit status 0x%x (1: %s)",
	      mode ? mode : "none", st,
	      mode ? "it reached A's memory, its own queue failed, or it could not open "
	             "q0 32 more times"
	           : "A's exact lkey did not move A's bytes");
	for (i = 0; i < 4096; i++)
		changed |= mem[i] != 'A';
	if (mode)
		CHECK(!changed, "A's memory changed under --tenants %s", mode);
	else
		CHECK(changed, "one tenant: B's READ into A's exact key left A alone");
	/* ssqd's own tenant, this uid alone under --tenants uid: all of q0's. */
	if (mode && !strcmp(mode, "uid"))
		CHECK(more_opens() == 32,
		      "A could not open q0 32 times under --tenants uid");
	if (mode) {
		tp = tenant_pid();
		CHECK(tp > 0, "no tenant ssqd in ssqd's log %s", logf);
	}
	ssq_mem_dereg(c, &mr);
out:
	ssq_client_close(c);
	CHECK(t_ssqd_stop_ok(d, &st, sock), "ssqd exit status 0x%x", st);
	if (tp > 0) {
		CHECK(gone(tp, 0), "the tenant's ssqd (pid %d) outlived ssqd", (int)tp);
		/* It stopped as ssqd does: exit 0 (under ASan, no report either). */
		CHECK(!log_has("ended with status"), "the tenant's ssqd failed: see %s",
		      logf);
	}
	free(mem);
}

/*
 * An ssqd killed with SIGKILL takes its tenants' ssqd with it (their
 * parent-death signal): started with --tenants uid --allow-uid 65534, the
 * tenant's ssqd runs before any client; after the kill it is gone within
 * 10 s.
 */
static void killed(void)
{
	const char *args[] = { "--allow-uid", "65534", "--tenants", "uid", NULL };
	pid_t d = cf_start(sock, logf, 0, NULL, args), tp = -1;
	struct ssq_client *c = t_ssqd_connect(sock, d);
	int st;

	CHECK(c != NULL, "connect to ssqd --tenants uid");
	ssq_client_close(c);
	tp = tenant_pid();
	CHECK(tp > 0 && !gone(tp, 0), "the tenant's ssqd is not running (pid %d)",
	      (int)tp);
	kill(d, SIGKILL);
	waitpid(d, &st, 0);
	unlink(sock);
	if (tp > 0)
		CHECK(gone(tp, 10), "the tenant's ssqd (pid %d) outlived ssqd's SIGKILL",
		      (int)tp);
}

int main(void)
{
	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	if (getuid() != 0)
		SKIP("not root: the other tenant's client runs as uid 65534 (setuid)");
	signal(SIGPIPE, SIG_IGN);
	snprintf(sock, sizeof(sock), "/tmp/ssq-tenant-%d.sock", (int)getpid());
	snprintf(logf, sizeof(logf), "/tmp/ssq-tenant-%d.log", (int)getpid());
	run("uid", "--allow-uid");
	run("gid", "--allow-gid");
	/* B's tenant (uid 65534) is named by no option: started at its connect. */
	run("uid", "--allow-gid");
	run(NULL, "--allow-uid");
	killed();
	if (!test_failures)
		unlink(logf);
	return test_exit("ctrl_tenants");
}
