/* SPDX-License-Identifier: MIT */
/*
 * One peer of a cluster flapping must cost only its own queues. alice,
 * bob and carol from one peers file; carol is killed and started again
 * every 250 ms, ten times, while alice and bob stream WRITEs both ways on
 * their queue to each other and a client of alice LISTs: not one of those
 * WRITEs may fail or go missing, and every LIST is answered at once. At
 * the end carol's queues come back on both.
 */
#define _GNU_SOURCE
#include "cluster_flow.h"

#define SLOTS 512u

static const char *const names[3] = { "alice", "bob", "carol" };
static char socks[3][108], peers_path[108], lports[3][16];
static pid_t pids[3];

static pid_t start(int i)
{
	const char *args[] = { "--eager",  "--name",   names[i],  "--peers",
		               peers_path, "--listen", lports[i], NULL };

	/* carol's many starts say nothing */
	return i == 2 ? cf_start(socks[i], NULL, 0, NULL, args)
	              : rssqd_start(socks[i], NULL, args);
}

struct side {
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_buf buf, src;
	uint64_t posted, done, ok, bad;
	char first[160];
};

static void post_some(struct side *s, struct side *t)
{
	struct ssq_producer *p = ssq_queue_producer(s->q);

	while (s->posted - s->done < 32) {
		uint64_t v = s->posted + 1, slot = v % SLOTS;
		struct ibv_sge sge = { s->src.iova + slot * 8, 8, s->src.lkey };
		struct ibv_send_wr wr, *bad = NULL;
		int rc;

		((uint64_t *)s->src.addr)[slot] = v;
		t_wr_one(&wr, &sge, IBV_WR_RDMA_WRITE, v, t->buf.remote_addr + slot * 8,
		         t->buf.rkey);
		rc = ssq_post_wr(p, &wr, &bad);
		if (rc == -EAGAIN)
			return;
		if (rc) {
			if (!s->bad++)
				snprintf(s->first, sizeof(s->first), "post %llu: %d",
				         (unsigned long long)v, rc);
			return;
		}
		s->posted++;
	}
}

static void reap_side(struct side *s, struct side *t)
{
	struct ssq_completion comp[32];
	int n = ssq_poll(ssq_queue_producer(s->q), comp, 32), i;

	for (i = 0; i < n; i++) {
		uint64_t v = comp[i].wr_id,
		         got = ((volatile uint64_t *)t->buf.addr)[v % SLOTS];

		s->done++;
		if (comp[i].status == IBV_WC_SUCCESS && got >= v && !((got - v) % SLOTS))
			s->ok++;
		else if (!s->bad++)
			snprintf(s->first, sizeof(s->first),
			         "WRITE %llu: status %d, slot holds %llu",
			         (unsigned long long)v, comp[i].status,
			         (unsigned long long)got);
	}
}

int main(void)
{
	struct side a = { 0 }, b = { 0 };
	double t0, next, worst = 0;
	int i, st, flaps = 0, lfail = 0;
	FILE *f;

	t_need_ssqd();
	snprintf(peers_path, sizeof(peers_path), "/tmp/ssq-advf-peers-%d", getpid());
	f = fopen(peers_path, "w");
	for (i = 0; i < 3; i++) {
		uint16_t port = free_tcp_port();

		snprintf(lports[i], sizeof(lports[i]), "%u", port);
		snprintf(socks[i], sizeof(socks[i]), "/tmp/ssq-advf-%s-%d.sock", names[i],
		         getpid());
		fprintf(f, "%s 127.0.0.1:%u\n", names[i], port);
	}
	fclose(f);
	for (i = 0; i < 3; i++)
		pids[i] = start(i);
	a.c = ssqd_connect_pid(socks[0], pids[0]);
	b.c = a.c ? ssqd_connect_pid(socks[1], pids[1]) : NULL;
	for (t0 = now_s(); a.c && b.c && now_s() - t0 < 20; usleep(10000))
		if (cf_ready(a.c, "bob/q0") == 1 && cf_ready(b.c, "alice/q0") == 1 &&
		    cf_ready(a.c, "carol/q0") == 1)
			break;
	CHECK(a.c && b.c && cf_ready(a.c, "bob/q0") == 1 &&
	          cf_ready(b.c, "alice/q0") == 1,
	      "the cluster linked");
	if (!a.c || !b.c || ssq_queue_open(a.c, "bob/q0", &a.q) ||
	    ssq_queue_open(b.c, "alice/q0", &b.q) || ssq_buf_alloc(a.c, 4096, &a.buf) ||
	    ssq_buf_alloc(b.c, 4096, &b.buf) || ssq_buf_alloc(a.c, SLOTS * 8, &a.src) ||
	    ssq_buf_alloc(b.c, SLOTS * 8, &b.src))
		goto out;
	memset(a.buf.addr, 0, 4096);
	memset(b.buf.addr, 0, 4096);
	t0 = now_s();
	next = t0 + 0.25;
	while (flaps < 10 || now_s() < next) {
		post_some(&a, &b);
		post_some(&b, &a);
		reap_side(&a, &b);
		reap_side(&b, &a);
		if (now_s() >= next && flaps < 10) {
			struct ssq_queue_info info[SSQ_MAX_QUEUES];
			double t;

			kill(pids[2], SIGKILL);
			waitpid(pids[2], &st, 0);
			pids[2] = start(2);
			flaps++;
			next = now_s() + 0.25;
			t = now_s();
			if (ssq_client_list(a.c, info, SSQ_MAX_QUEUES) < 2)
				lfail++;
			if (now_s() - t > worst)
				worst = now_s() - t;
		}
	}
	for (t0 = now_s(); now_s() - t0 < 10 && (a.done < a.posted || b.done < b.posted);)
		reap_side(&a, &b), reap_side(&b, &a), usleep(100);
	printf("alice -> bob: %llu ok of %llu; bob -> alice: %llu ok of %llu\n",
	       (unsigned long long)a.ok, (unsigned long long)a.posted,
	       (unsigned long long)b.ok, (unsigned long long)b.posted);
	CHECK(!a.bad && !b.bad && a.done == a.posted && b.done == b.posted,
	      "carol flapping: alice <-> bob lost nothing: %llu, %llu bad (%s%s)",
	      (unsigned long long)a.bad, (unsigned long long)b.bad, a.first, b.first);
	CHECK(!lfail && worst < 0.8,
	      "alice answers LIST throughout: %d failed, slowest %.2f s", lfail, worst);
	for (t0 = now_s(); now_s() - t0 < 20; usleep(20000))
		if (cf_ready(a.c, "carol/q0") == 1 && cf_ready(b.c, "carol/q0") == 1)
			break;
	CHECK(cf_ready(a.c, "carol/q0") == 1 && cf_ready(b.c, "carol/q0") == 1,
	      "carol's queues back on alice and bob");
out:
	ssq_client_close(a.c);
	ssq_client_close(b.c);
	for (i = 0; i < 3; i++) {
		t_ssqd_stop(pids[i], &st, socks[i]);
	}
	unlink(peers_path);
	return test_exit("ctrl_adv_peer_flap");
}
