/* SPDX-License-Identifier: MIT */
/*
 * A stranger that keeps every knock slot of a peer port full. From
 * 127.0.0.2 it holds twelve silent connections to bob's peer port and
 * opens a new one the moment ssqd closes one (at its 5 s deadline, or
 * because no slot was free). alice's client then opens bob/q0: alice
 * dials bob from 127.0.0.1, and its knock must get a slot and link
 * within the open's 5 s. Before, a full table closed every newcomer, the
 * stranger's reconnects won each slot freed at a deadline, and the real
 * peer was kept out for as long as the stranger kept at it: the open
 * failed -ETIMEDOUT, again and again.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include "cluster_flow.h"

#define N     2
#define HOLDS 12
static const char *const names[N] = { "alice", "bob" };
static struct t_cluster cl;
static volatile int stop;
static unsigned reconnects;

/* A silent connection to 127.0.0.1:@port from 127.0.0.2, or -1. */
static int knock_from_2(uint16_t port)
{
	struct sockaddr_in sa;
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (s < 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(0x7f000002);
	if (bind(s, (struct sockaddr *)&sa, sizeof(sa))) {
		close(s);
		return -1;
	}
	return t_tcp_connect(s, port);
}

static void *stranger(void *arg)
{
	uint16_t port = *(uint16_t *)arg;
	struct pollfd pfd[HOLDS];
	int i;

	for (i = 0; i < HOLDS; i++) {
		pfd[i].fd = knock_from_2(port);
		pfd[i].events = POLLIN;
	}
	while (!stop) {
		if (poll(pfd, HOLDS, 10) <= 0)
			continue;
		usleep(1000); /* a few hundred a second: enough, on a small machine */
		for (i = 0; i < HOLDS; i++) {
			char c;

			if (pfd[i].fd >= 0 && !pfd[i].revents)
				continue;
			if (pfd[i].fd >= 0 && recv(pfd[i].fd, &c, 1, MSG_DONTWAIT) > 0)
				continue;
			/* Closed by ssqd: straight back in. */
			if (pfd[i].fd >= 0)
				close(pfd[i].fd);
			pfd[i].fd = knock_from_2(port);
			__atomic_add_fetch(&reconnects, 1, __ATOMIC_RELAXED);
		}
	}
	for (i = 0; i < HOLDS; i++)
		if (pfd[i].fd >= 0)
			close(pfd[i].fd);
	return NULL;
}

int main(void)
{
	struct ssq_client *a = NULL, *b = NULL;
	struct ssq_queue *q = NULL;
	pthread_t t;
	double t0, took;
	int i, st, s;

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	s = knock_from_2(free_tcp_port());
	if (s >= 0)
		close(s);
	signal(SIGPIPE, SIG_IGN);
	cf_cluster_files(&cl, "ci-kh", N, names, 0);
	for (i = 0; i < N; i++)
		t_cluster_start(&cl, i, NULL);
	a = t_cluster_connect(&cl, 0);
	b = t_cluster_connect(&cl, 1);
	CHECK(a && b, "alice and bob serve");
	if (!a || !b)
		goto out;
	s = knock_from_2(cl.port[1]);
	if (s < 0) {
		CHECK(1, "no 127.0.0.2 to knock from: skipped");
		goto out;
	}
	close(s);
	pthread_create(&t, NULL, stranger, &cl.port[1]);
	for (i = 0; i < 500 && !cf_file_has(cl.log[1], "are still to say who they are");
	     i++)
		usleep(10000);
	CHECK(cf_file_has(cl.log[1], "are still to say who they are"),
	      "the stranger fills bob's knock slots");
	usleep(100000);
	t0 = now_s();
	st = ssq_queue_open(a, "bob/q0", &q);
	took = now_s() - t0;
	CHECK(!st && took < 3,
	      "bob/q0 links while a stranger keeps bob's knock slots full: %d after "
	      "%.2f s (%s)",
	      st, took, st ? ssq_client_error(a) : "");
	if (!st)
		ssq_queue_close(q);
	{
		struct ssq_queue_info info[2];

		t0 = now_s();
		st = ssq_client_list(b, info, 2);
		CHECK(st > 0 && now_s() - t0 < 0.5, "bob serves its clients meanwhile");
	}
	stop = 1;
	pthread_join(t, NULL);
	fprintf(stderr, "the stranger reconnected %u times\n", reconnects);
out:
	ssq_client_close(a);
	ssq_client_close(b);
	t_cluster_stop(&cl);
	return test_exit("ctrl_adv_demand_knock_hold");
}
