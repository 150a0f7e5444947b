/* SPDX-License-Identifier: MIT */
/*
 * A verbs sender's list, unchanged but for the call: three struct
 * ibv_send_wr linked as for ibv_post_send - a WRITE gathering two pieces,
 * a fetch-and-add, and a READ of the written bytes back - posted with
 * ssq_post_wr (one doorbell for the list). Exit 0 when the READ brought
 * back what the WRITE wrote and the atomic fetched the counter's old value.
 */
#include <stdio.h>
#include <string.h>
#include <ssq/ssq.h>
#include <ssq/client.h>

int main(void)
{
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_buf src, dst;
	struct ssq_completion comp[4];
	struct ibv_send_wr wr[3], *bad = NULL;
	struct ibv_sge gather[2], fetched, back;
	uint64_t counter = 41, old = 0;
	int rc, n = 0, i;

	if (ssq_client_connect(NULL, &c)) {
		fprintf(stderr, "connect: %s\n", ssq_client_strerror_last());
		return 1;
	}
	if (ssq_queue_open(c, "q0", &q) || ssq_buf_alloc(c, 4096, &src) ||
	    ssq_buf_alloc(c, 4096, &dst)) {
		fprintf(stderr, "setup: %s\n", ssq_client_error(c));
		return 1;
	}
	memset(dst.addr, 0, 4096);
	memcpy(src.addr, "hello, ", 7);
	memcpy((char *)src.addr + 64, "verbs!", 6);
	memcpy((char *)dst.addr + 512, &counter, 8);

	gather[0] = (struct ibv_sge){ src.iova, 7, src.lkey };
	gather[1] = (struct ibv_sge){ src.iova + 64, 6, src.lkey };
	fetched = (struct ibv_sge){ src.iova + 1024, 8, src.lkey };
	back = (struct ibv_sge){ src.iova + 2048, 13, src.lkey };
	memset(wr, 0, sizeof(wr));
	wr[0].wr_id = 1;
	wr[0].sg_list = gather;
	wr[0].num_sge = 2;
	wr[0].opcode = IBV_WR_RDMA_WRITE;
	wr[0].wr.rdma.remote_addr = dst.remote_addr;
	wr[0].wr.rdma.rkey = dst.rkey;
	wr[0].next = &wr[1];
	wr[1].wr_id = 2;
	wr[1].sg_list = &fetched;
	wr[1].num_sge = 1;
	wr[1].opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr[1].send_flags = IBV_SEND_SIGNALED;
	wr[1].wr.atomic.remote_addr = dst.remote_addr + 512;
	wr[1].wr.atomic.compare_add = 1;
	wr[1].wr.atomic.rkey = dst.rkey;
	wr[1].next = &wr[2];
	wr[2].wr_id = 3;
	wr[2].sg_list = &back;
	wr[2].num_sge = 1;
	wr[2].opcode = IBV_WR_RDMA_READ;
	wr[2].send_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE; /* after the WRITE */
	wr[2].wr.rdma.remote_addr = dst.remote_addr;
	wr[2].wr.rdma.rkey = dst.rkey;

	rc = ssq_post_wr(ssq_queue_producer(q), wr, &bad);
	if (rc) {
		char why[256];

		fprintf(stderr, "ssq_post_wr: %s\n",
		        ssq_post_wr_strerror(ssq_queue_producer(q), bad, rc, why,
		                             sizeof(why)));
		return 1;
	}
	while (n < 2) {
		rc = ssq_poll(ssq_queue_producer(q), comp + n, 2 - n);
		if (rc < 0) {
			fprintf(stderr, "poll: %d\n", rc);
			return 1;
		}
		n += rc;
	}
	/* As ibv_wc: the FETCH_ADD (wr_id 2), then the READ (3) with its bytes. */
	for (i = 0; i < n; i++)
		if (comp[i].status != IBV_WC_SUCCESS ||
		    comp[i].wr_id != (uint64_t)i + 2 ||
		    comp[i].opcode != (i ? IBV_WC_RDMA_READ : IBV_WC_FETCH_ADD) ||
		    comp[i].byte_len != (i ? back.length : 8)) {
			fprintf(stderr,
			        "completion %d: wr_id %llu, %s, opcode %d, %u bytes\n", i,
			        (unsigned long long)comp[i].wr_id,
			        ibv_wc_status_str((enum ibv_wc_status)comp[i].status),
			        (int)comp[i].opcode, comp[i].byte_len);
			return 1;
		}
	memcpy(&old, (char *)src.addr + 1024, 8);
	if (memcmp((char *)src.addr + 2048, "hello, verbs!", 13) || old != 41) {
		fprintf(stderr, "read back '%.13s', fetched %llu\n",
		        (char *)src.addr + 2048, (unsigned long long)old);
		return 1;
	}
	printf("verbs_list: WRITE, FETCH_ADD and READ in one list, checked\n");
	ssq_client_close(c);
	return 0;
}
