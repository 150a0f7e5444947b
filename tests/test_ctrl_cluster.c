/* SPDX-License-Identifier: MIT */
/*
 * One ssqd serves several peers (--name, --peers, --listen): four daemons
 * on the emulated wire, a full mesh from one peers file, each daemon with
 * one queue per peer named "PEER/q0" in one arena. Run twice: on a clean
 * wire and with 5 % of packets dropped, duplicated and reordered.
 *  0. nothing links before a client opens a queue (on demand); the file
 *     lists every daemon, so each also has its own loopback queue;
 *  1. every pair links (whoever's name sorts first dials; the other, when
 *     its client opens first, asks it to with a want); a client of each
 *     daemon WRITEs into a buffer of every other daemon's client, READs it
 *     back, FETCH_ADDs there and SENDs it numbered messages, which arrive
 *     in its receive log exactly once and in order: from one arena on
 *     every queue;
 *  2. dave killed: a WRITE to him fails retry-exceeded (or flushed) within
 *     the transport's timeout, the queues to him leave READY, while every
 *     other pair keeps carrying WRITEs without an error;
 *  3. dave restarted: his queues come back on all three, and WRITEs to and
 *     from him land again, nobody else restarted;
 *  4. (once) a daemon whose name is not in the file (aaron, --eager, who
 *     dials: its name sorts first) is refused, with the reason in both
 *     logs; bad cluster options are refused naming what is wrong.
 */
#define _GNU_SOURCE
#include "cluster_flow.h"

#define N     4
#define SENDS 8
static const char *const names[N] = { "alice", "bob", "carol", "dave" };
static const char *fault; /* SSQ_EMU_WIRE_FAULT of this run, or NULL */
static char socks[N][108], logs[N + 1][108], peers_path[108];
static uint16_t ports[N];
static pid_t pids[N];

static pid_t start(int i)
{
	char lport[16];
	const char *args[] = { "--name",   names[i], "--peers", peers_path,
		               "--listen", lport,    NULL };

	snprintf(lport, sizeof(lport), "%u", ports[i]);
	return cf_start(socks[i], logs[i], 1, fault, args); /* its log: for 4. */
}

/* One signaled @op of @len bytes; its status, or below 0 for none. */
static int one_len(struct ssq_producer *p, enum ibv_wr_opcode op, const struct ssq_buf *l,
                   uint64_t loff, uint32_t len, const struct ssq_buf *r, uint64_t roff,
                   uint64_t id)
{
	return cf_one(p, op, l, loff, len, r, roff, id, 5, 0);
}

static int one(struct ssq_producer *p, enum ibv_wr_opcode op, const struct ssq_buf *l,
               uint64_t loff, const struct ssq_buf *r, uint64_t roff, uint64_t id)
{
	return one_len(p, op, l, loff, 8, r, roff, id);
}

struct node {
	struct ssq_client *c;
	struct ssq_queue *q[N]; /* to each other node */
	struct ssq_buf buf;     /* slot 8*j: node j's WRITE; 512+8*j: j's atomic */
};
static struct node nodes[N];

static int open_node(int i)
{
	int j;

	nodes[i].c = ssqd_connect_pid(socks[i], pids[i]);
	if (!nodes[i].c || ssq_buf_alloc(nodes[i].c, 4096, &nodes[i].buf))
		return -1;
	memset(nodes[i].buf.addr, 0, 4096);
	for (j = 0; j < N; j++) {
		char qn[40];

		/* Its own name too: the file lists it, a loopback queue. */
		snprintf(qn, sizeof(qn), "%s/q0", names[j]);
		/* On demand: the open links the peer, waiting for it. */
		if (ssq_queue_open(nodes[i].c, qn, &nodes[i].q[j])) {
			fprintf(stderr, "%s: %s: %s\n", names[i], qn,
			        ssq_client_error(nodes[i].c));
			return -1;
		}
	}
	return 0;
}

static void close_node(int i)
{
	ssq_client_close(nodes[i].c);
	memset(&nodes[i], 0, sizeof(nodes[i]));
}

/* @i WRITEs @v into @j's slot i and READs it back; 0 when both land. */
static int write_to(int i, int j, uint64_t v, const char *when)
{
	struct ssq_producer *p = ssq_queue_producer(nodes[i].q[j]);
	uint64_t *src = (uint64_t *)((uint8_t *)nodes[i].buf.addr + 2048),
	         *dst = (uint64_t *)((uint8_t *)nodes[j].buf.addr + 8 * i);
	int st, st2;

	*src = v;
	st = one(p, IBV_WR_RDMA_WRITE, &nodes[i].buf, 2048, &nodes[j].buf, 8 * i, v);
	*src = 0;
	st2 = one(p, IBV_WR_RDMA_READ, &nodes[i].buf, 2048, &nodes[j].buf, 8 * i, v + 1);
	CHECK(st == IBV_WC_SUCCESS && *dst == v && st2 == IBV_WC_SUCCESS && *src == v,
	      "%s: %s -> %s: WRITE %d (landed 0x%llx), READ %d (0x%llx)", when, names[i],
	      names[j], st, (unsigned long long)*dst, st2, (unsigned long long)*src);
	return st == IBV_WC_SUCCESS && *dst == v && st2 == IBV_WC_SUCCESS ? 0 : -1;
}

/* ssqd with @args exits 2 saying @needle. */
static void bad_options(const char *const *args, const char *needle)
{
	char out[108], sock[108];
	int st;

	/* Per pid: ctrl_cluster and ctrl_cluster_peerkey run side by side. */
	snprintf(out, sizeof(out), "/tmp/ssq-cl-bad-%d.log", getpid());
	snprintf(sock, sizeof(sock), "/tmp/ssq-cl-bad-%d.sock", getpid());
	waitpid(cf_start(sock, out, 0, NULL, args), &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2 && cf_file_has(out, needle),
	      "bad options (%s ...): exit 0x%x, says '%s'", args[0], st, needle);
	unlink(out);
}

/* @i SENDs SENDS numbered messages to @j; @j reads them from its log of @i. */
static void sends(int i, int j)
{
	struct ssq_producer *p = ssq_queue_producer(nodes[i].q[j]);
	struct ssq_queue *rq = nodes[j].q[i];
	uint64_t first = ssq_recv_arrived(rq);
	char *msg = (char *)nodes[i].buf.addr + 3584;
	unsigned k;
	int st;

	for (k = 0; k < SENDS; k++) {
		snprintf(msg, 64, "%s to %s, message %u", names[i], names[j], k);
		st = one_len(p, IBV_WR_SEND, &nodes[i].buf, 3584, 64, NULL, 0, 100 + k);
		CHECK(st == IBV_WC_SUCCESS, "%s SEND %u to %s: %d", names[i], k, names[j],
		      st);
	}
	for (k = 0; k < SENDS; k++) {
		char got[64] = "", want[64];
		int rc = ssq_recv_wait(rq, first + k, 5000000000ll);

		if (!rc)
			rc = ssq_recv_copy(rq, first + k, got, sizeof(got), NULL);
		snprintf(want, sizeof(want), "%s to %s, message %u", names[i], names[j],
		         k);
		CHECK(!rc && !strcmp(got, want), "%s's log of %s, entry %u: %d '%s'",
		      names[j], names[i], k, rc, got);
	}
	/* Exactly once: nothing more came. */
	usleep(fault ? 20000 : 0);
	CHECK(ssq_recv_arrived(rq) == first + SENDS,
	      "%s's log of %s: %llu entries, not %u", names[j], names[i],
	      (unsigned long long)(ssq_recv_arrived(rq) - first), SENDS);
}

/* Phases 0-3 on a wire with @wire_fault (NULL: clean). */
static void run(const char *wire_fault)
{
	const char *when = wire_fault ? "lossy" : "clean";
	struct ssq_client *probe;
	int i, j, st;

	fault = wire_fault;
	for (i = 0; i < N; i++)
		pids[i] = start(i);

	/* 0. On demand: no link before a client opens a queue of it. */
	probe = ssqd_connect_pid(socks[0], pids[0]);
	usleep(300000);
	CHECK(probe && cf_ready(probe, "bob/q0") == 0 && cf_ready(probe, "dave/q0") == 0,
	      "%s: alice linked a peer nobody opened a queue of", when);
	ssq_client_close(probe);

	/*
	 * 1. The mesh, dave's client first: his queues' peers all dial him
	 * (their names sort first), so his opens go through wants.
	 */
	for (i = N - 1; i >= 0; i--)
		CHECK(!open_node(i), "%s: %s's queues to every peer ready", when,
		      names[i]);
	for (i = 0; i < N; i++)
		for (j = 0; j < N; j++)
			if (i != j && nodes[i].q[j] && nodes[j].q[i])
				write_to(i, j, 0x1000u * (i + 1) + j, when);
	for (i = 0; i < N; i++)
		for (j = 0; j < N; j++) {
			struct ssq_producer *p;
			uint64_t *old;

			if (i == j || !nodes[i].q[j])
				continue;
			p = ssq_queue_producer(nodes[i].q[j]);
			old = (uint64_t *)((uint8_t *)nodes[i].buf.addr + 3072);
			st = one(p, IBV_WR_ATOMIC_FETCH_AND_ADD, &nodes[i].buf, 3072,
			         &nodes[j].buf, 512, 77);
			CHECK(st == IBV_WC_SUCCESS && *old % 5 == 0,
			      "%s: %s FETCH_ADD at %s: %d, old %llu", when, names[i],
			      names[j], st, (unsigned long long)*old);
		}
	for (j = 0; j < N; j++)
		CHECK(*(uint64_t *)((uint8_t *)nodes[j].buf.addr + 512) == 5 * (N - 1),
		      "%s: %s took every peer's FETCH_ADD", when, names[j]);
	for (i = 0; i < N; i++)
		for (j = 0; j < N; j++)
			if (i != j && nodes[i].q[j] && nodes[j].q[i])
				sends(i, j);
	/* Each daemon's own queue, loopback beside the peers', same arena. */
	for (i = 0; i < N; i++)
		if (nodes[i].q[i]) {
			write_to(i, i, 0x7000u + i, when);
			sends(i, i);
		}

	/* 2. dave dies: only his queues fail. */
	close_node(3);
	kill(pids[3], SIGKILL);
	waitpid(pids[3], &st, 0);
	if (nodes[0].q[3]) {
		double t0 = now_s();
		uint64_t *src = (uint64_t *)((uint8_t *)nodes[0].buf.addr + 2048);

		*src = 1;
		st = one(ssq_queue_producer(nodes[0].q[3]), IBV_WR_RDMA_WRITE,
		         &nodes[0].buf, 2048, &nodes[1].buf, 0, 999);
		CHECK((st == IBV_WC_RETRY_EXC_ERR || st == IBV_WC_WR_FLUSH_ERR ||
		       st == -1000 - EIO) &&
		          now_s() - t0 < 3.0,
		      "%s: a WRITE to dead dave: %d after %.2f s", when, st,
		      now_s() - t0);
	}
	for (i = 0; i < 3; i++)
		CHECK(cf_wait_ready(nodes[i].c, "dave/q0", 0, 10),
		      "%s: %s's queue to dave leaves READY", when, names[i]);
	for (i = 0; i < 10; i++) {
		write_to(0, 1, 0x2000u + i, when);
		write_to(1, 2, 0x3000u + i, when);
		write_to(2, 0, 0x4000u + i, when);
	}
	CHECK(cf_ready(nodes[0].c, "bob/q0") == 1 &&
	          cf_ready(nodes[1].c, "carol/q0") == 1 &&
	          cf_ready(nodes[2].c, "alice/q0") == 1,
	      "%s: the others stayed READY", when);

	/* 3. dave back: his queues on all three, nobody else restarted. */
	pids[3] = start(3);
	CHECK(!open_node(3), "%s: dave back, his queues ready", when);
	for (i = 0; i < 3; i++)
		CHECK(cf_wait_ready(nodes[i].c, "dave/q0", 1, 20),
		      "%s: %s's queue to dave back", when, names[i]);
	if (nodes[3].c)
		for (i = 0; i < 3; i++) {
			/* Their clients stayed attached while he was gone: the same
			 * opens. */
			write_to(i, 3, 0x5000u + i, when);
			write_to(3, i, 0x6000u + i, when);
		}
	for (i = 0; i < 3; i++)
		CHECK(!kill(pids[i], 0), "%s: %s never restarted", when, names[i]);
	for (i = 0; i < N; i++) {
		close_node(i);
		t_ssqd_stop(pids[i], &st, socks[i]);
	}
}

int main(void)
{
	char lport[16], stray_sock[108];
	const char *stray_args[] = { "--name",   "aaron", "--peers", peers_path,
		                     "--listen", lport,   "--eager", NULL };
	int i, st;
	pid_t stray;
	FILE *f;

	t_need_ssqd();
	snprintf(peers_path, sizeof(peers_path), "/tmp/ssq-cl-peers-%d", getpid());
	f = fopen(peers_path, "w");
	fprintf(f, "# the cluster: every daemon, this one too\n");
	for (i = 0; i < N; i++) {
		ports[i] = free_tcp_port();
		snprintf(socks[i], sizeof(socks[i]), "/tmp/ssq-cl-%s-%d.sock", names[i],
		         getpid());
		snprintf(logs[i], sizeof(logs[i]), "/tmp/ssq-cl-%s-%d.log", names[i],
		         getpid());
		fprintf(f, "%s 127.0.0.1:%u\n", names[i], ports[i]);
	}
	fclose(f);
	run(NULL);
	run("drop=0.05,dup=0.05,reorder=0.05,seed=7");

	/* 4. A stranger, and bad options, against a clean alice. */
	fault = NULL;
	pids[0] = start(0);
	snprintf(logs[N], sizeof(logs[N]), "/tmp/ssq-cl-aaron-%d.log", getpid());
	snprintf(lport, sizeof(lport), "%u", free_tcp_port());
	/*
	 * Its socket per pid: ctrl_cluster and ctrl_cluster_peerkey (this
	 * program under SSQ_TEST_PEER_KEY) run side by side, and one path for
	 * both made the second aaron exit at start, its socket taken. Up to
	 * 20 s for alice to say why: an ASan aaron on a busy box starts late.
	 */
	snprintf(stray_sock, sizeof(stray_sock), "/tmp/ssq-cl-aaron-%d.sock", getpid());
	stray = cf_start(stray_sock, logs[N], 0, NULL, stray_args);
	for (i = 0; i < 400 && !cf_file_has(logs[0], "'aaron' is not a peer of alice");
	     i++)
		usleep(50000);
	CHECK(cf_file_has(logs[0], "'aaron' is not a peer of alice"),
	      "alice says why aaron is refused");
	/* --peer-key: before its PROOF a stranger is told no names (docs/trust.md). */
	if (getenv("SSQ_TEST_PEER_KEY"))
		CHECK(cf_file_has(logs[N], "peer refused: authentication failed") &&
		          !cf_file_has(logs[N], "not a peer of alice"),
		      "aaron says alice refused it, and is told no names");
	else
		CHECK(
		    cf_file_has(logs[N], "peer refused: 'aaron' is not a peer of alice"),
		    "aaron says alice refused it, and why");
	t_ssqd_stop(stray, &st, NULL);
	t_ssqd_stop(pids[0], &st, NULL);
	{
		const char *a1[] = { "--peer", "bob", NULL };
		const char *a2[] = { "--peer", "b ob=h:1", "--listen", "1", NULL };
		const char *a3[] = { "--peer", "bob=h:1", "--peer", "bob=h:2", NULL };
		const char *a4[] = { "--name", "alice", "--peer", "bob=h:1", NULL };
		const char *a5[] = { "--name",   "alice", "--peer", "alice=h:1",
			             "--listen", "1",     NULL };
		const char *a6[] = { "--peers", "/nonexistent/peers", NULL };
		const char *a7[] = { "--name",   "a",     "--queues", "33",
			             "--peer",   "b=h:1", "--peer",   "c=h:2",
			             "--listen", "1",     NULL };
		const char *a8[] = { "--eager", NULL };
		const char *a9[] = { "--peer", "bob=h:http", "--listen", "1", NULL };
		const char *a10[] = { "--peer", "bob=h:65536", "--listen", "1", NULL };
		const char *a11[] = { "--peer", "bob=:1", "--listen", "1", NULL };

		bad_options(a1, "--peer 'bob': want NAME=HOST:PORT");
		bad_options(a2, "peer name 'b ob'");
		bad_options(a3, "peer bob named twice");
		bad_options(a4, "--listen is missing");
		bad_options(a5, "name no daemon but this one (alice)");
		bad_options(a6, "--peers /nonexistent/peers: No such file");
		bad_options(a7, "--queues 33 for each of 2 peers is 66 queues");
		bad_options(a8, "are for a cluster");
		bad_options(a9, "peer bob: address 'h:http': port must be 1..65535");
		bad_options(a10, "peer bob: address 'h:65536': port must be 1..65535");
		bad_options(a11, "peer bob: address ':1': want HOST:PORT");
	}
	for (i = 0; i <= N; i++)
		if (!getenv("KEEP_LOGS"))
			unlink(logs[i]);
	unlink(socks[0]);
	unlink(peers_path);
	unlink(stray_sock);
	return test_exit("ctrl_cluster");
}
