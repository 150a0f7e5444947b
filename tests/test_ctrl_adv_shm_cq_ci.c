/* SPDX-License-Identifier: MIT */
/*
 * Adversary, a CQ's consumer-index doorbell record: every client maps the
 * arena read-write, the send CQ's doorbell record included. Client A sets
 * q0's consumer index a ring back, as if every CQE were still unread. The
 * device must not take that for an overrun: ssqd creates its CQs to ignore
 * overruns (IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN), and its routers count CQEs
 * by their own index (ctl->cq_ci), so the record says nothing ssqd relies
 * on. Then client B's WRITEs through q0 complete, q0 stays listed READY,
 * and ssqd is still running. Before, the next CQE found "no room", the CQ
 * went to error (IBV_EVENT_CQ_ERR) and q0 stayed in ERROR for good: RECOVER
 * refused ("restart ssqd") for every client of the queue. Then A sets the
 * record far from the routers' index: ssqd's guard resets q0, and B's
 * WRITEs complete again within seconds (before, the reset took the record
 * for where the device writes, and q0's routers waited at the wrong CQ
 * slot for good).
 */
#define _GNU_SOURCE
#include "cluster_flow.h"

/*
 * B's signaled WRITEs, one in flight, until one completes successfully (a
 * queue starting over refuses posts or flushes what it had): 0 within
 * 10 s, else -1.
 */
static int b_writes(struct ssq_queue *q, const struct ssq_buf *src,
                    const struct ssq_buf *dst)
{
	struct ssq_producer *p = ssq_queue_producer(q);
	double t0 = now_s(), posted = 0;
	uint64_t id = 100;

	while (now_s() - t0 < 10) {
		struct ssq_completion comp[8];
		int n, k;

		if (now_s() - posted > 1 &&
		    ssq_post_write(p, src->iova, src->lkey, 64, dst->remote_addr,
		                   dst->rkey, ++id, SSQ_WQE_SIGNALED) == 0)
			posted = now_s();
		n = ssq_poll(p, comp, 8);
		for (k = 0; k < n; k++)
			if (comp[k].status == IBV_WC_SUCCESS)
				return 0;
		if (n <= 0)
			usleep(1000);
	}
	return -1;
}

int main(void)
{
	const char *args[] = { "--queues", "1", NULL };
	struct ssq_client *a = NULL, *b = NULL;
	struct ssq_queue *qa = NULL, *qb = NULL;
	struct ssq_buf src, dst;
	char sock[108];
	int st, rc, k;
	pid_t pid;

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	snprintf(sock, sizeof(sock), "/tmp/ssq-adv-shm-cq-%d.sock", getpid());
	pid = cf_start(sock, NULL, 0, NULL, args);
	if (cf_two_clients(sock, pid, &a, &b, &qa, &qb, &src, &dst)) {
		kill(pid, SIGKILL);
		return 1;
	}
	rc = cf_one(ssq_queue_producer(qb), IBV_WR_RDMA_WRITE, &src, 0, 64, &dst, 0, 1, 5,
	            0);
	CHECK(rc == IBV_WC_SUCCESS, "B's WRITE before the scribble: %d", rc);

	/* A: q0's send CQ consumer index a whole ring back. */
	{
		const struct ssq_cq *cq = ssq_queue_cq(qa);
		uint32_t ci =
		    be32toh(__atomic_load_n(&cq->dbrec[SSQ_CQ_SET_CI], __ATOMIC_ACQUIRE));

		__atomic_store_n(&cq->dbrec[SSQ_CQ_SET_CI],
		                 htobe32((ci - cq->cqe_cnt) & 0xffffff),
		                 __ATOMIC_RELEASE);
	}
	for (k = 0; k < 4; k++) {
		rc = cf_one(ssq_queue_producer(qb), IBV_WR_RDMA_WRITE, &src, 0, 64, &dst,
		            0, 10 + (uint64_t)k, 5, 0);
		CHECK(rc == IBV_WC_SUCCESS,
		      "B's WRITE %d after A moved the CQ's consumer index: %d (%s)", k,
		      rc,
		      rc >= 0 ? ibv_wc_status_str((enum ibv_wc_status)rc)
		              : "not posted or no completion");
		if (rc != IBV_WC_SUCCESS)
			break;
	}
	CHECK(cf_ready(b, "q0") == 1, "q0 is listed READY after the scribble");

	/*
	 * A: the record far from where the routers are. ssqd's guard finds
	 * it and starts q0 over; the routers must go on from where the device
	 * writes, not from the record.
	 */
	{
		const struct ssq_cq *cq = ssq_queue_cq(qa);
		uint32_t ci =
		    be32toh(__atomic_load_n(&cq->dbrec[SSQ_CQ_SET_CI], __ATOMIC_ACQUIRE));

		__atomic_store_n(&cq->dbrec[SSQ_CQ_SET_CI],
		                 htobe32((ci + 0x12345) & 0xffffff), __ATOMIC_RELEASE);
	}
	usleep(300 * 1000); /* the guard looks every 10 ms; no router moves it back */
	rc = b_writes(qb, &src, &dst);
	CHECK(rc == 0, "B's WRITE completes within 10 s after A moved the record far");
	CHECK(waitpid(pid, &st, WNOHANG) == 0, "ssqd is still running (status 0x%x)", st);
	ssq_client_close(b);
	ssq_client_close(a);
	t_ssqd_stop(pid, &st, sock);
	return test_exit("ctrl_adv_shm_cq_ci");
}
