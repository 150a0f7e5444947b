/* SPDX-License-Identifier: MIT */
/*
 * Adversary, a queue's listed state in the arena header: client A, with
 * q0 open, writes SSQ_QUEUE_UNUSED into q0's entry, then zeroes the magic
 * of q0's control block. ssqd must still guard q0: it finds the block
 * scribbled and rebuilds it within a couple of seconds, and client B's
 * WRITE through q0 completes. Before, ssqd's loop took the shared state
 * for its own and skipped an UNUSED queue's guard and routing: one store
 * turned the guard off for good.
 */
#define _GNU_SOURCE
#include "cluster_flow.h"

int main(void)
{
	const char *args[] = { "--queues", "1", NULL };
	struct ssq_client *a = NULL, *b = NULL;
	struct ssq_queue *qa = NULL, *qb = NULL;
	struct shm_arena_header *h;
	struct ssq_buf src, dst;
	char sock[108], logp[128];
	double t0;
	int st, rc, rebuilt = 0;
	pid_t pid;

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	snprintf(sock, sizeof(sock), "/tmp/ssq-adv-shm-listed-%d.sock", getpid());
	snprintf(logp, sizeof(logp), "/tmp/ssq-adv-shm-listed-%d.log", getpid());
	pid = cf_start(sock, logp, 0, NULL, args);
	if (cf_two_clients(sock, pid, &a, &b, &qa, &qb, &src, &dst)) {
		kill(pid, SIGKILL);
		return 1;
	}
	rc = cf_one(ssq_queue_producer(qb), IBV_WR_RDMA_WRITE, &src, 0, 64, &dst, 0, 1, 5,
	            0);
	CHECK(rc == IBV_WC_SUCCESS, "B's WRITE before the scribble: %d", rc);

	h = (struct shm_arena_header *)((uint8_t *)src.addr - src.off);
	__atomic_store_n(&h->queues[0].state, SSQ_QUEUE_UNUSED, __ATOMIC_RELEASE);
	usleep(100 * 1000);
	__atomic_store_n(&ssq_queue_producer(qa)->ctl->magic, 0, __ATOMIC_RELEASE);
	for (t0 = now_s(); now_s() - t0 < 3 && !rebuilt; usleep(10 * 1000))
		rebuilt = cf_file_has(logp, "control block rebuilt");
	CHECK(rebuilt, "ssqd rebuilt q0's scribbled control block with q0 listed UNUSED");
	rc = cf_one(ssq_queue_producer(qb), IBV_WR_RDMA_WRITE, &src, 0, 64, &dst, 0, 2, 3,
	            1);
	CHECK(rc == IBV_WC_SUCCESS, "B's WRITE after the scribble: %d", rc);
	CHECK(waitpid(pid, &st, WNOHANG) == 0, "ssqd is still running (status 0x%x)", st);
	ssq_client_close(b);
	ssq_client_close(a);
	t_ssqd_stop(pid, &st, sock);
	if (!test_failures)
		unlink(logp);
	return test_exit("ctrl_adv_shm_listed");
}
