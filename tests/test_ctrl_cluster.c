/* SPDX-License-Identifier: MIT */
/*
 * One ssqd serves several peers (--name, --peers, --listen): three daemons
 * on the emulated wire, a full mesh from one peers file, each daemon with
 * one queue per peer named "PEER/q0" in one arena.
 *  0. nothing links before a client opens a queue (on demand);
 *  1. every pair links (whoever's name sorts first dials; the other, when
 *     its client opens first, asks it to with a want); a client of each
 *     daemon WRITEs into a buffer of every other daemon's client, READs it
 *     back and FETCH_ADDs there: all land, from one arena on every queue;
 *  2. carol killed: alice's and bob's queues to her leave READY, while
 *     alice <-> bob keeps carrying WRITEs without an error;
 *  3. carol restarted: her queues come back on both, and WRITEs to and from
 *     her land again, alice and bob never restarted;
 *  4. a daemon whose name is not in the file (aaron, --eager, who dials:
 *     its name sorts first) is refused, with the reason
 *     in both logs; bad cluster options are refused naming what is wrong.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include "recv_flow.h"
#include "shm/layout.h"

#define N 3
static const char *const names[N] = { "alice", "bob", "carol" };
static char socks[N][108], logs[N + 1][108], peers_path[108];
static uint16_t ports[N];
static pid_t pids[N];

static pid_t start(int i)
{
	char lport[16];
	const char *args[] = { "--name",   names[i], "--peers", peers_path,
		               "--listen", lport,    NULL };
	int fd = open(logs[i], O_WRONLY | O_CREAT | O_APPEND, 0600);
	int saved = dup(2);
	pid_t pid;

	snprintf(lport, sizeof(lport), "%u", ports[i]);
	dup2(fd, 2); /* its log, for the checks of 4. */
	pid = rssqd_start(socks[i], NULL, args);
	dup2(saved, 2);
	close(fd);
	close(saved);
	return pid;
}

/* A LIST of @c: is its queue @name READY? 1, 0, or -1 when it has none such. */
static int ready(struct ssq_client *c, const char *name)
{
	struct ssq_queue_info info[SSQ_MAX_QUEUES];
	int n = ssq_client_list(c, info, SSQ_MAX_QUEUES), i;

	for (i = 0; i < n; i++)
		if (!strcmp(info[i].name, name))
			return info[i].ready;
	return -1;
}

static int wait_ready(struct ssq_client *c, const char *name, int want, double secs)
{
	double t0 = now_s();

	while (now_s() - t0 < secs) {
		if (ready(c, name) == want)
			return 1;
		usleep(10000);
	}
	return 0;
}

/* One signaled 8-byte @op; its status, or below 0 for none. */
static int one(struct ssq_producer *p, enum ibv_wr_opcode op, const struct ssq_buf *l,
               uint64_t loff, const struct ssq_buf *r, uint64_t roff, uint64_t id)
{
	struct ibv_sge sge = { l->iova + loff, 8, l->lkey };
	struct ibv_send_wr wr, *bad = NULL;
	struct ssq_completion comp;
	double t0 = now_s();
	int rc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.opcode = op;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = r->remote_addr + roff;
		wr.wr.atomic.rkey = r->rkey;
		wr.wr.atomic.compare_add = 5;
	} else {
		wr.wr.rdma.remote_addr = r->remote_addr + roff;
		wr.wr.rdma.rkey = r->rkey;
	}
	while ((rc = ssq_post_wr(p, &wr, &bad)) == -EAGAIN && now_s() - t0 < 5)
		usleep(100);
	if (rc)
		return -1000 + rc;
	while (now_s() - t0 < 15) {
		if (ssq_poll(p, &comp, 1) == 1)
			return comp.wr_id == id ? (int)comp.status : -2;
		usleep(100);
	}
	return -1;
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

		if (j == i)
			continue;
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

static int file_has(const char *path, const char *needle)
{
	char buf[65536];
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = 0;
	return strstr(buf, needle) != NULL;
}

/* ssqd with @args exits 2 saying @needle. */
static void bad_options(const char *const *args, const char *needle)
{
	char out[108];
	int fd, saved = dup(2), st;
	pid_t pid;

	snprintf(out, sizeof(out), "/tmp/ssq-cl-bad-%d.log", getpid());
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	dup2(fd, 2);
	pid = rssqd_start("/tmp/ssq-cl-bad.sock", NULL, args);
	dup2(saved, 2);
	close(fd);
	close(saved);
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2 && file_has(out, needle),
	      "bad options (%s ...): exit 0x%x, says '%s'", args[0], st, needle);
	unlink(out);
}

int main(void)
{
	char lport[16];
	const char *stray_args[] = { "--name",   "aaron", "--peers", peers_path,
		                     "--listen", lport,   "--eager", NULL };
	struct ssq_client *probe;
	int i, j, st;
	pid_t stray;
	FILE *f;

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	signal(SIGPIPE, SIG_IGN);
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
	for (i = 0; i < N; i++)
		pids[i] = start(i);

	/* 0. On demand: no link before a client opens a queue of it. */
	probe = ssqd_connect_pid(socks[0], pids[0]);
	usleep(300000);
	CHECK(probe && ready(probe, "bob/q0") == 0 && ready(probe, "carol/q0") == 0,
	      "alice linked a peer nobody opened a queue of");
	ssq_client_close(probe);

	/*
	 * 1. The mesh, carol's client first: her queues' peers both dial her
	 * (their names sort first), so her opens go through wants.
	 */
	for (i = N - 1; i >= 0; i--)
		CHECK(!open_node(i), "%s: its queues to both peers ready", names[i]);
	for (i = 0; i < N; i++)
		for (j = 0; j < N; j++)
			if (i != j && nodes[i].q[j])
				write_to(i, j, 0x1000u * (i + 1) + j, "mesh");
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
			      "%s FETCH_ADD at %s: %d, old %llu", names[i], names[j], st,
			      (unsigned long long)*old);
		}
	for (j = 0; j < N; j++)
		CHECK(*(uint64_t *)((uint8_t *)nodes[j].buf.addr + 512) == 5 * (N - 1),
		      "%s took both peers' FETCH_ADDs", names[j]);

	/* 2. carol dies: only her queues fail. */
	close_node(2);
	kill(pids[2], SIGKILL);
	waitpid(pids[2], &st, 0);
	CHECK(wait_ready(nodes[0].c, "carol/q0", 0, 10) &&
	          wait_ready(nodes[1].c, "carol/q0", 0, 10),
	      "queues to carol leave READY on alice and bob");
	for (i = 0; i < 20; i++) {
		write_to(0, 1, 0x2000u + i, "carol dead");
		write_to(1, 0, 0x3000u + i, "carol dead");
	}
	CHECK(ready(nodes[0].c, "bob/q0") == 1 && ready(nodes[1].c, "alice/q0") == 1,
	      "alice <-> bob stayed READY");

	/* 3. carol back: her queues on both, nobody else restarted. */
	pids[2] = start(2);
	CHECK(!open_node(2), "carol back, her queues ready");
	CHECK(wait_ready(nodes[0].c, "carol/q0", 1, 20) &&
	          wait_ready(nodes[1].c, "carol/q0", 1, 20),
	      "alice's and bob's queues to carol back");
	if (nodes[2].c) {
		for (i = 0; i < 2; i++) {
			/* Their clients attached before she died: the same opens. */
			write_to(i, 2, 0x4000u + i, "carol back");
			write_to(2, i, 0x5000u + i, "carol back");
		}
	}
	CHECK(!kill(pids[0], 0) && !kill(pids[1], 0), "alice and bob still the same");

	/* 4. A stranger, and bad options. */
	snprintf(logs[N], sizeof(logs[N]), "/tmp/ssq-cl-aaron-%d.log", getpid());
	snprintf(lport, sizeof(lport), "%u", free_tcp_port());
	{
		int fd = open(logs[N], O_WRONLY | O_CREAT | O_TRUNC, 0600),
		    saved = dup(2);

		dup2(fd, 2);
		stray = rssqd_start("/tmp/ssq-cl-aaron.sock", NULL, stray_args);
		dup2(saved, 2);
		close(fd);
		close(saved);
	}
	for (i = 0; i < 100 && !file_has(logs[0], "'aaron' is not a peer of alice"); i++)
		usleep(50000);
	CHECK(file_has(logs[0], "'aaron' is not a peer of alice"),
	      "alice says why aaron is refused");
	CHECK(file_has(logs[N], "peer refused: 'aaron' is not a peer of alice"),
	      "aaron says alice refused it, and why");
	kill(stray, SIGTERM);
	waitpid(stray, &st, 0);
	{
		const char *a1[] = { "--peer", "bob", NULL };
		const char *a2[] = { "--peer", "b ob=h:1", "--listen", "1", NULL };
		const char *a3[] = { "--peer", "bob=h:1", "--peer", "bob=h:2", NULL };
		const char *a4[] = { "--name", "alice", "--peer", "bob=h:1", NULL };
		const char *a5[] = { "--name",   "alice", "--peer", "alice=h:1",
			             "--listen", "1",     NULL };
		const char *a6[] = { "--peers", "/nonexistent/peers", NULL };
		const char *a7[] = { "--name",   "a",     "--queues", "9",
			             "--peer",   "b=h:1", "--peer",   "c=h:2",
			             "--listen", "1",     NULL };

		bad_options(a1, "--peer 'bob': want NAME=HOST:PORT");
		bad_options(a2, "peer name 'b ob'");
		bad_options(a3, "peer bob named twice");
		bad_options(a4, "--listen is missing");
		bad_options(a5, "name no daemon but this one (alice)");
		bad_options(a6, "--peers /nonexistent/peers: No such file");
		bad_options(a7, "--queues 9 for each of 2 peers is 18 queues");
	}

	for (i = 0; i < N; i++) {
		close_node(i);
		kill(pids[i], SIGTERM);
		waitpid(pids[i], &st, 0);
		unlink(socks[i]);
	}
	for (i = 0; i <= N; i++)
		if (getenv("KEEP_LOGS") == NULL)
			unlink(logs[i]);
	unlink(peers_path);
	unlink("/tmp/ssq-cl-aaron.sock");
	return test_exit("ctrl_cluster");
}
