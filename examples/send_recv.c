/* SPDX-License-Identifier: MIT */
/*
 * SENDs into the queue's receive pool, read back from its log. ssqd keeps
 * receive WQEs posted where the queue's other end receives (in loopback,
 * inside ssqd) and logs every arrival in the arena, numbered in arrival
 * order, for any process to read without a round trip; ssq_recv_wait
 * sleeps until a message has arrived. Exit 0 when the three messages sent
 * are read back intact, in order.
 */
#include <stdio.h>
#include <string.h>
#include <ssq/ssq.h>
#include <ssq/client.h>

#define MSGS 3

int main(void)
{
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_buf buf;
	struct ssq_completion comp = { 0 }; /* printed on error too */
	struct ssq_producer *p;
	uint64_t first;
	int rc, i, done = 0;

	if (ssq_client_connect(NULL, &c)) {
		fprintf(stderr, "connect: %s\n", ssq_client_strerror_last());
		return 1;
	}
	if (ssq_queue_open(c, "q0", &q) || ssq_buf_alloc(c, 4096, &buf)) {
		fprintf(stderr, "setup: %s\n", ssq_client_error(c));
		return 1;
	}
	if (!ssq_recv_depth(q)) {
		fprintf(stderr, "ssqd runs without a receive pool (--recv-depth 0)\n");
		return 1;
	}
	first = ssq_recv_arrived(q); /* messages before ours */
	p = ssq_queue_producer(q);
	for (i = 0; i < MSGS; i++) {
		char *msg = (char *)buf.addr + i * 64;

		snprintf(msg, 64, "message %d", i);
		rc = ssq_post_send(p, MLX5_OPCODE_SEND, buf.iova + (uint64_t)i * 64,
		                   buf.lkey, (uint32_t)strlen(msg) + 1, 0, (uint64_t)i,
		                   SSQ_WQE_SIGNALED);
		if (rc) {
			fprintf(stderr, "post: %d\n", rc);
			return 1;
		}
	}
	while (done < MSGS) {
		rc = ssq_poll(p, &comp, 1);
		if (rc < 0 || (rc == 1 && comp.status != IBV_WC_SUCCESS)) {
			fprintf(stderr, "completion: rc %d, status %d\n", rc,
			        comp.status);
			return 1;
		}
		done += rc;
	}
	for (i = 0; i < MSGS; i++) {
		char got[64], want[64];

		/*
		 * Asleep until it arrived (ssqd's poller wakes us), or spin
		 * while ssq_recv_copy says -EAGAIN; -ESTALE if the pool
		 * reused it.
		 */
		rc = ssq_recv_wait(q, first + (uint64_t)i, 1000000000);
		if (!rc)
			rc =
			    ssq_recv_copy(q, first + (uint64_t)i, got, sizeof(got), NULL);
		snprintf(want, sizeof(want), "message %d", i);
		if (rc || strcmp(got, want)) {
			fprintf(stderr, "message %llu: rc %d, '%s' (want '%s')\n",
			        (unsigned long long)(first + (uint64_t)i), rc,
			        rc ? "" : got, want);
			return 1;
		}
	}
	printf("send_recv: %d SENDs read back from the receive log\n", MSGS);
	ssq_client_close(c);
	return 0;
}
