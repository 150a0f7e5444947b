/* SPDX-License-Identifier: MIT */
/*
 * Adversary, the arena header: every client maps the arena read-write, its
 * header (queue count, queue names, the data arena's IOVA, the device name,
 * the magic) included. Client A scribbles all of those. Then: A's LIST
 * still gives ssqd's two queues with their names and QPNs (before, ssqd
 * took the count from the header and overran its reply: SIGSEGV); a new
 * client B connects (before, the scribbled magic made every later connect
 * fail), its device is ssqd's, "q1" opens the queue LIST calls q1 (before,
 * a name copied into q0's entry sent B to q0), B's buffer has the IOVA
 * its place in the arena says, and a WRITE through q1, whose rings,
 * control block, doorbell page and peer key A also moved, lands in it
 * (before, the open of q1 was refused as out of bounds); ssqd is still
 * running.
 */
#define _GNU_SOURCE
#include "cluster_flow.h"

int main(void)
{
	const char *args[] = { "--queues", "2", NULL };
	struct ssq_queue_info before[SSQ_MAX_QUEUES], after[SSQ_MAX_QUEUES];
	struct ssq_completion comp[4];
	struct ssq_client *a = NULL, *b = NULL;
	struct ssq_queue *q1 = NULL;
	struct ssq_buf abuf, src, dst;
	struct shm_arena_header *h;
	char sock[108], dev[SSQ_NAME_MAX];
	int n0, n1 = -1, st, got = 0, rc;
	double t0;
	pid_t pid;

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	snprintf(sock, sizeof(sock), "/tmp/ssq-adv-header-%d.sock", getpid());
	pid = cf_start(sock, NULL, 0, NULL, args);
	a = ssqd_connect_pid(sock, pid);
	if (!a || ssq_buf_alloc(a, 64, &abuf)) {
		fprintf(stderr, "ssqd did not start: %s\n",
		        a ? ssq_client_error(a) : "-");
		kill(pid, SIGKILL);
		return 1;
	}
	n0 = ssq_client_list(a, before, SSQ_MAX_QUEUES);
	snprintf(dev, sizeof(dev), "%s", ssq_client_device(a));

	/* The header sits where the arena starts: off counts from it. */
	h = (struct shm_arena_header *)((uint8_t *)abuf.addr - abuf.off);
	h->nqueues = 100000;
	memcpy(h->queues[0].name, "q1", 3);
	memset(h->queues[1].name, 'x', SSQ_NAME_MAX);
	memset(h->device, 'y', SSQ_NAME_MAX);
	h->data_iova += 1u << 20;
	h->magic = 0;
	/* And q1's layout: its rings, control block, doorbell page, peer key. */
	h->queues[1].sq_off += 4096;
	h->queues[1].cq_off = 0;
	h->queues[1].ctl_off = h->arena_len;
	h->queues[1].uar_off += 1u << 20;
	h->queues[1].sq_wqe_cnt = 3;
	h->queues[1].peer_key ^= 0xff;
	h->queues[1].recv_log_off = 1;

	n1 = ssq_client_list(a, after, SSQ_MAX_QUEUES);
	CHECK(n0 == 2 && n1 == 2, "LIST after the scribble: %d queues (before %d), %s",
	      n1, n0, n1 < 0 ? ssq_client_error(a) : "");
	CHECK(n1 == 2 && !strcmp(after[0].name, "q0") && !strcmp(after[1].name, "q1") &&
	          after[0].qpn == before[0].qpn && after[1].qpn == before[1].qpn,
	      "LIST names and QPNs are ssqd's: %s 0x%x, %s 0x%x",
	      n1 > 0 ? after[0].name : "-", n1 > 0 ? after[0].qpn : 0,
	      n1 > 1 ? after[1].name : "-", n1 > 1 ? after[1].qpn : 0);

	rc = ssq_client_connect(sock, &b);
	CHECK(rc == 0, "a new client connects after the scribble: %s",
	      rc ? ssq_client_strerror_last() : "ok");
	if (b) {
		CHECK(!strcmp(ssq_client_device(b), dev), "its device is %s, want %s",
		      ssq_client_device(b), dev);
		rc = ssq_queue_open(b, "q1", &q1);
		CHECK(rc == 0 && ssq_queue_qpn(q1) == before[1].qpn,
		      "q1 opens the queue q1 (QPN 0x%x): got 0x%x (%s)", before[1].qpn,
		      q1 ? ssq_queue_qpn(q1) : 0, rc ? ssq_client_error(b) : "ok");
		rc = !q1 || ssq_buf_alloc(b, 64, &src) || ssq_buf_alloc(b, 64, &dst);
		CHECK(rc == 0, "q1 and two buffers: %s", rc ? ssq_client_error(b) : "ok");
		CHECK(rc || (dst.iova - dst.off == abuf.iova - abuf.off),
		      "a buffer's IOVA follows its place: 0x%llx at offset 0x%llx",
		      (unsigned long long)dst.iova, (unsigned long long)dst.off);
		if (!rc) {
			memset(src.addr, 0xa5, 64);
			memset(dst.addr, 0, 64);
			rc = ssq_post_write(ssq_queue_producer(q1), src.iova, src.lkey,
			                    64, dst.remote_addr, dst.rkey, 1,
			                    SSQ_WQE_SIGNALED);
			for (t0 = now_s(); !rc && !got && now_s() - t0 < 10;)
				got = ssq_poll(ssq_queue_producer(q1), comp, 4);
			CHECK(!rc && got == 1 && comp[0].status == 0 &&
			          ((uint8_t *)dst.addr)[63] == 0xa5,
			      "a WRITE into B's buffer lands: post %d, %d completion(s), "
			      "status %d",
			      rc, got, got > 0 ? (int)comp[0].status : -1);
		}
	}
	CHECK(waitpid(pid, &st, WNOHANG) == 0, "ssqd is still running (status 0x%x)", st);
	if (b)
		ssq_client_close(b);
	ssq_client_close(a);
	t_ssqd_stop(pid, &st, sock);
	return test_exit("ctrl_adv_header");
}
