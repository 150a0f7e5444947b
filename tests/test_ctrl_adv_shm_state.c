/* SPDX-License-Identifier: MIT */
/*
 * A queue's state in the arena header is client memory. Client A writes
 * ERROR into q0's entry; client B, connected before, still opens q0 and
 * writes through it, and LIST still says q0 is ready: ssqd acts on its own
 * word of the state. A client connecting after the store finds the header
 * saying READY again (ssqd puts it back before a client maps the arena).
 * Before, B's open was refused (-EAGAIN, "not connected yet") and RECOVER
 * found nothing to recover, for as long as the store stood.
 */
#define _GNU_SOURCE
#include "cluster_flow.h"

int main(void)
{
	const char *args[] = { "--queues", "1", NULL };
	struct ssq_client *a, *b = NULL, *c = NULL;
	struct ssq_queue *q = NULL;
	struct ssq_buf abuf, src, dst;
	struct shm_arena_header *h;
	char sock[108];
	int rc, st, w = -1;
	pid_t pid;

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	snprintf(sock, sizeof(sock), "/tmp/ssq-adv-state-%d.sock", getpid());
	pid = cf_start(sock, NULL, 0, NULL, args);
	a = ssqd_connect_pid(sock, pid);
	if (!a || ssq_buf_alloc(a, 64, &abuf) || ssq_client_connect(sock, &b)) {
		kill(pid, SIGKILL);
		return 1;
	}
	h = (struct shm_arena_header *)((uint8_t *)abuf.addr - abuf.off);
	__atomic_store_n(&h->queues[0].state, SSQ_QUEUE_ERROR, __ATOMIC_RELEASE);

	CHECK(cf_ready(b, "q0") == 1, "LIST says q0 is ready (ssqd's word)");
	rc = ssq_queue_open(b, "q0", &q);
	CHECK(rc == 0, "B opens q0 with its header entry saying ERROR: %d (%s)", rc,
	      rc ? ssq_client_error(b) : "ok");
	if (!rc && !ssq_buf_alloc(b, 64, &src) && !ssq_buf_alloc(b, 64, &dst)) {
		memset(src.addr, 0x77, 64);
		w = cf_one(ssq_queue_producer(q), IBV_WR_RDMA_WRITE, &src, 0, 64, &dst, 0,
		           1, 2, 0);
		CHECK(w == 0 && ((uint8_t *)dst.addr)[63] == 0x77,
		      "a WRITE through it lands: %d", w);
	}
	CHECK(ssq_client_connect(sock, &c) == 0 &&
	          __atomic_load_n(&h->queues[0].state, __ATOMIC_ACQUIRE) ==
	              SSQ_QUEUE_READY,
	      "a client connecting later finds q0 READY in the header again");
	if (c)
		ssq_client_close(c);
	ssq_client_close(b);
	ssq_client_close(a);
	t_ssqd_stop(pid, &st, sock);
	return test_exit("ctrl_adv_shm_state");
}
