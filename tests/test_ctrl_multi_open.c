/* SPDX-License-Identifier: MIT */
/*
 * One connection, many opens of one queue: against ssqd on the emulated
 * device, one client opens q0 twice and two threads post 2000 signaled
 * WRITEs each through their own open at once; each gets exactly its own
 * completions, in order. The same queue opens up to 16 times on one
 * connection (then -EUSERS, said why); an open closed gives its record
 * back (another open works again), and the rest keep posting.
 */
#include <pthread.h>
#include "stall_flow.h"

#define N 2000u

struct worker {
	struct ssq_producer *p;
	struct ssq_buf src, dst;
	uint32_t rkey, tag;
	unsigned got, wrong, errors;
};

static void *post_all(void *arg)
{
	struct worker *w = arg;
	struct ssq_completion comp[16];
	unsigned sent = 0;
	double t0 = now_s();
	int n, i;

	while (w->got < N && now_s() - t0 < 30.0) {
		if (sent < N &&
		    ssq_post_write(w->p, w->src.iova, w->src.lkey, 64, w->dst.remote_addr,
		                   w->rkey, (uint64_t)w->tag << 32 | sent,
		                   SSQ_WQE_SIGNALED) == 0)
			sent++;
		n = ssq_poll(w->p, comp, 16);
		for (i = 0; i < n; i++) {
			if (comp[i].status != IBV_WC_SUCCESS)
				w->errors++;
			else if (comp[i].wr_id != ((uint64_t)w->tag << 32 | w->got))
				w->wrong++;
			w->got++;
		}
	}
	return NULL;
}

int main(void)
{
	struct ssq_queue *q[17] = { 0 };
	struct worker w[2];
	struct ssq_client *c;
	pthread_t t[2];
	pid_t d;
	int i, rc;

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	d = stall_ssqd_up("multi-open");
	if (d < 0)
		return 1;
	CHECK(ssq_client_connect(sock_path, &c) == 0, "connect");
	CHECK(ssq_queue_open(c, "q0", &q[0]) == 0, "first open: %s", ssq_client_error(c));
	rc = ssq_queue_open(c, "q0", &q[1]);
	CHECK(rc == 0, "second open of q0 on one connection: %d (%s)", rc,
	      ssq_client_error(c));
	if (rc) {
		ssq_client_close(c);
		stall_ssqd_down(d);
		return test_exit("ctrl_multi_open");
	}
	for (i = 0; i < 2; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].p = ssq_queue_producer(q[i]);
		w[i].tag = (uint32_t)i + 1;
		CHECK(ssq_buf_alloc(c, 4096, &w[i].src) == 0 &&
		          ssq_buf_alloc(c, 4096, &w[i].dst) == 0,
		      "buffers");
		w[i].rkey = w[i].dst.rkey;
	}
	CHECK(w[0].p->id != w[1].p->id, "two producer records (%u, %u)", w[0].p->id,
	      w[1].p->id);
	for (i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, post_all, &w[i]);
	for (i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		CHECK(w[i].got == N && !w[i].wrong && !w[i].errors,
		      "thread %d: %u of %u completions, %u not its own or out of order, "
		      "%u errors",
		      i, w[i].got, N, w[i].wrong, w[i].errors);
	}

	for (i = 2; i < 16; i++)
		CHECK(ssq_queue_open(c, "q0", &q[i]) == 0, "open %d: %s", i + 1,
		      ssq_client_error(c));
	rc = ssq_queue_open(c, "q0", &q[16]);
	CHECK(rc == -EUSERS && strstr(ssq_client_error(c), "16"),
	      "open 17: %d, want -EUSERS (%s)", rc, ssq_client_error(c));
	CHECK(ssq_queue_close(q[5]) == 0, "close one open");
	q[5] = NULL;
	CHECK(ssq_queue_open(c, "q0", &q[16]) == 0, "an open again after a close: %s",
	      ssq_client_error(c));
	for (i = 0; i < 2; i++) {
		w[i].got = 0;
		w[i].tag += 10;
		pthread_create(&t[i], NULL, post_all, &w[i]);
	}
	for (i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		CHECK(w[i].got == N && !w[i].wrong && !w[i].errors,
		      "again, thread %d: %u of %u, %u wrong, %u errors", i, w[i].got, N,
		      w[i].wrong, w[i].errors);
	}
	for (i = 0; i < 17; i++)
		if (q[i])
			CHECK(ssq_queue_close(q[i]) == 0, "close %d", i);
	ssq_client_close(c);
	stall_ssqd_down(d);
	return test_exit("ctrl_multi_open");
}
