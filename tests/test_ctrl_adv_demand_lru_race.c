/* SPDX-License-Identifier: MIT */
/*
 * Two opens on demand racing for one --max-active-peers slot. alice
 * (--max-active-peers 1) has two peers, bob and carol; two of its clients
 * open bob/q0 and carol/q0 at the same moment, each holding its queue
 * until both opens have answered; in the second round both peers are
 * slow (stopped for a second). One link fits: one open succeeds, the
 * other is refused -EBUSY naming the limit, and no link is closed for the
 * other meanwhile. Before, a peer being linked for a waiting open counted
 * as idle: each open's retry, every 10 ms, closed the other's link under
 * way as the least recently used, both opens waited while it went back and
 * forth (some 250 links closed in the two rounds) until one attached by
 * chance, with slower links or a third open long enough for both to fail
 * -ETIMEDOUT.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include "cluster_flow.h"

#define N 3
static const char *const names[N] = { "alice", "bob", "carol" };
static struct t_cluster cl;

struct opener {
	struct ssq_client *c;
	const char *name;
	struct ssq_queue *q;
	int rc;
	double took;
	char err[256];
};

static pthread_barrier_t go, done;

static void *open_thread(void *arg)
{
	struct opener *o = arg;
	double t0;

	pthread_barrier_wait(&go);
	t0 = now_s();
	o->rc = ssq_queue_open(o->c, o->name, &o->q);
	o->took = now_s() - t0;
	snprintf(o->err, sizeof(o->err), "%s", o->rc ? ssq_client_error(o->c) : "");
	pthread_barrier_wait(&done); /* held open until both have answered */
	return NULL;
}

int main(void)
{
	struct opener o[2] = { { .name = "bob/q0" }, { .name = "carol/q0" } };
	pthread_t t[2];
	int i, st, round, ok, busy;

	t_need_ssqd();
	cf_cluster_files(&cl, "ci-lru", N, names, 1);
	t_cluster_start(&cl, 0, T_ARGS("--max-active-peers", "1"));
	for (i = 1; i < N; i++)
		t_cluster_start(&cl, i, NULL);
	for (i = 0; i < 2; i++) {
		o[i].c = t_cluster_connect(&cl, 0);
		CHECK(o[i].c != NULL, "alice serves client %d", i);
		if (!o[i].c)
			goto out;
	}
	for (i = 1; i < N; i++) { /* both peers up before the race */
		struct ssq_client *c = t_cluster_connect(&cl, i);

		CHECK(c != NULL, "%s serves", names[i]);
		ssq_client_close(c);
	}
	for (round = 0; round < 2; round++) {
		pthread_barrier_init(&go, NULL, 2);
		pthread_barrier_init(&done, NULL, 2);
		if (round) { /* slow peers: both links take a second */
			kill(cl.pid[1], SIGSTOP);
			kill(cl.pid[2], SIGSTOP);
		}
		for (i = 0; i < 2; i++)
			pthread_create(&t[i], NULL, open_thread, &o[i]);
		if (round) {
			usleep(1000000);
			kill(cl.pid[1], SIGCONT);
			kill(cl.pid[2], SIGCONT);
		}
		for (i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
		pthread_barrier_destroy(&go);
		pthread_barrier_destroy(&done);
		ok = busy = 0;
		for (i = 0; i < 2; i++) {
			fprintf(stderr, "round %d: %s: %d after %.2f s (%s)\n", round,
			        o[i].name, o[i].rc, o[i].took, o[i].err);
			ok += !o[i].rc;
			busy +=
			    o[i].rc == -EBUSY && strstr(o[i].err, "--max-active-peers 1");
			if (o[i].q)
				ssq_queue_close(o[i].q);
			o[i].q = NULL;
		}
		CHECK(ok == 1 && busy == 1 && o[0].took < 4 && o[1].took < 4,
		      "round %d: one open links, the other is refused -EBUSY at once "
		      "(%d opened, %d -EBUSY)",
		      round, ok, busy);
		usleep(100000); /* both peers hear alice is idle */
		if (!round) {   /* round 1 starts with no link: alice anew */
			for (i = 0; i < 2; i++)
				ssq_client_close(o[i].c);
			t_ssqd_stop(cl.pid[0], &st, NULL);
			t_cluster_start(&cl, 0, T_ARGS("--max-active-peers", "1"));
			for (i = 0; i < 2; i++)
				o[i].c = t_cluster_connect(&cl, 0);
			if (!o[0].c || !o[1].c)
				break;
			usleep(300000); /* bob and carol see alice gone */
		}
	}
	{
		char buf[1 << 16];
		int fd = open(cl.log[0], O_RDONLY), closes = 0;
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : 0;
		char *at = buf;

		buf[n > 0 ? n : 0] = 0;
		while ((at = strstr(at, "link closed (the least recently used"))) {
			closes++;
			at++;
		}
		if (fd >= 0)
			close(fd);
		CHECK(closes <= 1, "alice closed %d links under way for the other open",
		      closes);
	}
out:
	for (i = 0; i < 2; i++)
		if (o[i].c)
			ssq_client_close(o[i].c);
	t_cluster_stop(&cl);
	return test_exit("ctrl_adv_demand_lru_race");
}
