/* SPDX-License-Identifier: MIT */
/*
 * Every opcode ssq posts, an error and its recovery, and a daemon restart,
 * on whatever device the test is given (test_device.h): the emulated device
 * in CI, a ConnectX when scripts/hw-check.sh sets SSQ_TEST_DEVICE. One line
 * per step says what passed, so a lab reads the verdict step by step.
 *  1. two client processes post into one loopback queue at once: one runs
 *     every opcode (RDMA WRITE, WRITE_IMM, SEND, SEND_IMM, RDMA READ,
 *     ATOMIC_FA, ATOMIC_CS that matches and one that does not), data checked
 *     at the destination, in the fetched values and in the receive log; the
 *     other streams WRITEs into its own cells;
 *  2. a WRITE with a wrong rkey completes with a remote access error, later
 *     reservations get -EIO, ssq_queue_recover brings the queue back and a
 *     WRITE works again;
 *  3. ssqd stopped with SIGTERM fences the queue (-EIO or -ENOTCONN to the attached
 *     client), a new ssqd on the same socket serves a new client.
 */
#include <arpa/inet.h>
#include "ctrl_flow.h"

#define STREAM 512u /* WRITEs of the second client */

static int verdict_failures;

/* Print one step's verdict from the failures CHECK counted during it. */
static void verdict(const char *step, int failures_before)
{
	int ok = test_failures == failures_before;

	printf("device_ops [%s]: %-48s %s\n", test_device(), step, ok ? "ok" : "FAILED");
	fflush(stdout);
	verdict_failures += !ok;
}

/* Post one WQE the caller built at @pos, signaled, and wait for its completion. */
static int finish(struct ssq_producer *p, uint64_t pos, uint64_t wr_id,
                  struct ssq_completion *comp)
{
	double t0 = now_s();
	int rc;

	ssq_publish(p, pos, 1, wr_id, SSQ_WQE_SIGNALED);
	ssq_submit(p);
	while (now_s() - t0 < 10) {
		rc = ssq_poll(p, comp, 1);
		if (rc < 0)
			return rc;
		if (rc == 1)
			return comp->wr_id == wr_id ? 0 : -EPROTO;
		usleep(10);
	}
	return -ETIMEDOUT;
}

static int reserve1(struct ssq_producer *p, uint64_t *pos)
{
	int rc, i;

	for (i = 0; i < 100000; i++) {
		rc = ssq_reserve(p, 1, pos);
		if (rc != -EAGAIN)
			return rc;
		ssq_progress(p);
		usleep(10);
	}
	return -EAGAIN;
}

/* Wait for receive-log message @k and copy it; 0 or the error. */
static int recv_wait(struct ssq_queue *q, uint64_t k, void *dst, size_t len,
                     struct ssq_recv_msg *m)
{
	double t0 = now_s();
	int rc;

	while ((rc = ssq_recv_copy(q, k, dst, len, m)) == -EAGAIN && now_s() - t0 < 10)
		usleep(10);
	return rc;
}

/* Client 1: every opcode, each checked. */
static void every_opcode(struct ssq_client *c, struct ssq_queue *q)
{
	struct ssq_producer *p = ssq_queue_producer(q);
	const struct ssq_sq *sq = ssq_producer_sq(p);
	uint32_t rkey;
	struct ssq_completion comp;
	struct ssq_recv_msg m;
	struct ssq_buf src, dst, old;
	uint64_t pos, k;
	char got[64];
	int f, rc;

	CHECK(ssq_buf_alloc(c, 4096, &src) == 0 && ssq_buf_alloc(c, 4096, &dst) == 0 &&
	          ssq_buf_alloc(c, 64, &old) == 0,
	      "buffers: %s", ssq_client_error(c));
	rkey = dst.rkey; /* every remote access below is into dst */
	memset(src.addr, 0x5a, 4096);
	memset(dst.addr, 0, 4096);

	f = test_failures;
	CHECK(reserve1(p, &pos) == 0, "reserve");
	ssq_prep_rdma_write(sq, (uint32_t)pos, src.iova, src.lkey, 4096, dst.iova, rkey,
	                    ssq_wqe_flags(p, pos, 1, SSQ_WQE_SIGNALED));
	rc = finish(p, pos, 1, &comp);
	CHECK(rc == 0 && comp.status == IBV_WC_SUCCESS, "WRITE: rc %d status %d", rc,
	      comp.status);
	CHECK(!memcmp(src.addr, dst.addr, 4096), "WRITE: the bytes did not land");
	verdict("RDMA WRITE 4096 B, bytes checked", f);

	f = test_failures;
	k = ssq_recv_arrived(q);
	CHECK(reserve1(p, &pos) == 0, "reserve");
	memset(src.addr, 0x33, 128);
	ssq_prep_rdma_write_imm(sq, (uint32_t)pos, src.iova, src.lkey, 128,
	                        dst.iova + 1024, rkey, htonl(0xabcd0001),
	                        ssq_wqe_flags(p, pos, 1, SSQ_WQE_SIGNALED));
	rc = finish(p, pos, 2, &comp);
	CHECK(rc == 0 && comp.status == IBV_WC_SUCCESS, "WRITE_IMM: rc %d status %d", rc,
	      comp.status);
	rc = recv_wait(q, k, NULL, 0, &m);
	CHECK(rc == 0 && m.opcode == MLX5_CQE_RESP_WR_IMM && m.imm == htonl(0xabcd0001) &&
	          m.byte_len == 128,
	      "WRITE_IMM log: rc %d opcode %u imm 0x%x len %u", rc, m.opcode,
	      ntohl(m.imm), m.byte_len);
	CHECK(!memcmp((char *)dst.addr + 1024, src.addr, 128), "WRITE_IMM: bytes");
	verdict("RDMA WRITE_IMM, immediate in the receive log", f);

	f = test_failures;
	k = ssq_recv_arrived(q);
	snprintf((char *)src.addr, 64, "send %d", 1);
	CHECK(ssq_post_send(p, MLX5_OPCODE_SEND, src.iova, src.lkey, 7, 0, 3,
	                    SSQ_WQE_SIGNALED) == 0,
	      "SEND post");
	snprintf((char *)src.addr + 64, 64, "send %d", 2);
	CHECK(ssq_post_send(p, MLX5_OPCODE_SEND_IMM, src.iova + 64, src.lkey, 7,
	                    htonl(77), 4, SSQ_WQE_SIGNALED) == 0,
	      "SEND_IMM post");
	for (rc = 0; rc < 2; rc++) {
		double t0 = now_s();
		int n;

		while ((n = ssq_poll(p, &comp, 1)) == 0 && now_s() - t0 < 10)
			usleep(10);
		CHECK(n == 1 && comp.status == IBV_WC_SUCCESS &&
		          comp.wr_id == 3u + (unsigned)rc,
		      "SEND completion %d: n %d status %d wr_id %llu", rc, n, comp.status,
		      (unsigned long long)comp.wr_id);
	}
	memset(got, 0, sizeof(got));
	rc = recv_wait(q, k, got, sizeof(got), &m);
	CHECK(rc == 0 && m.opcode == MLX5_CQE_RESP_SEND && !strcmp(got, "send 1"),
	      "SEND log: rc %d opcode %u '%s'", rc, m.opcode, got);
	memset(got, 0, sizeof(got));
	rc = recv_wait(q, k + 1, got, sizeof(got), &m);
	CHECK(rc == 0 && m.opcode == MLX5_CQE_RESP_SEND_IMM && m.imm == htonl(77) &&
	          !strcmp(got, "send 2"),
	      "SEND_IMM log: rc %d opcode %u imm %u '%s'", rc, m.opcode, ntohl(m.imm),
	      got);
	verdict("SEND and SEND_IMM, read from the receive log", f);

	f = test_failures;
	memset((char *)dst.addr + 2048, 0xc7, 256);
	memset((char *)src.addr + 2048, 0, 256);
	CHECK(reserve1(p, &pos) == 0, "reserve");
	ssq_prep_rdma_read(sq, (uint32_t)pos, src.iova + 2048, src.lkey, 256,
	                   dst.iova + 2048, rkey,
	                   ssq_wqe_flags(p, pos, 1, SSQ_WQE_SIGNALED));
	rc = finish(p, pos, 5, &comp);
	CHECK(rc == 0 && comp.status == IBV_WC_SUCCESS && comp.byte_len == 256,
	      "READ: rc %d status %d byte_len %u", rc, comp.status, comp.byte_len);
	CHECK(!memcmp((char *)src.addr + 2048, (char *)dst.addr + 2048, 256),
	      "READ: bytes");
	verdict("RDMA READ 256 B, bytes checked", f);

	f = test_failures;
	*(volatile uint64_t *)((char *)dst.addr + 3072) = 40;
	CHECK(reserve1(p, &pos) == 0, "reserve");
	ssq_prep_atomic(sq, (uint32_t)pos, MLX5_OPCODE_ATOMIC_FA, old.iova, old.lkey,
	                dst.iova + 3072, rkey, 2, 0,
	                ssq_wqe_flags(p, pos, 1, SSQ_WQE_SIGNALED));
	rc = finish(p, pos, 6, &comp);
	CHECK(rc == 0 && comp.status == IBV_WC_SUCCESS, "FA: rc %d status %d", rc,
	      comp.status);
	CHECK(*(volatile uint64_t *)old.addr == 40 &&
	          *(volatile uint64_t *)((char *)dst.addr + 3072) == 42,
	      "FA: fetched %llu (want 40), now %llu (want 42)",
	      (unsigned long long)*(volatile uint64_t *)old.addr,
	      (unsigned long long)*(volatile uint64_t *)((char *)dst.addr + 3072));
	verdict("ATOMIC_FA, fetched value in host order", f);

	f = test_failures;
	CHECK(reserve1(p, &pos) == 0, "reserve");
	ssq_prep_atomic(sq, (uint32_t)pos, MLX5_OPCODE_ATOMIC_CS, old.iova, old.lkey,
	                dst.iova + 3072, rkey, 42, 1000,
	                ssq_wqe_flags(p, pos, 1, SSQ_WQE_SIGNALED));
	rc = finish(p, pos, 7, &comp);
	CHECK(rc == 0 && comp.status == IBV_WC_SUCCESS, "CS: rc %d status %d", rc,
	      comp.status);
	CHECK(*(volatile uint64_t *)old.addr == 42 &&
	          *(volatile uint64_t *)((char *)dst.addr + 3072) == 1000,
	      "CS (match): fetched %llu, now %llu",
	      (unsigned long long)*(volatile uint64_t *)old.addr,
	      (unsigned long long)*(volatile uint64_t *)((char *)dst.addr + 3072));
	CHECK(reserve1(p, &pos) == 0, "reserve");
	ssq_prep_atomic(sq, (uint32_t)pos, MLX5_OPCODE_ATOMIC_CS, old.iova, old.lkey,
	                dst.iova + 3072, rkey, 42, 7,
	                ssq_wqe_flags(p, pos, 1, SSQ_WQE_SIGNALED));
	rc = finish(p, pos, 8, &comp);
	CHECK(rc == 0 && comp.status == IBV_WC_SUCCESS, "CS: rc %d status %d", rc,
	      comp.status);
	CHECK(*(volatile uint64_t *)old.addr == 1000 &&
	          *(volatile uint64_t *)((char *)dst.addr + 3072) == 1000,
	      "CS (no match): fetched %llu, now %llu",
	      (unsigned long long)*(volatile uint64_t *)old.addr,
	      (unsigned long long)*(volatile uint64_t *)((char *)dst.addr + 3072));
	verdict("ATOMIC_CS, matching and not matching", f);
}

/* Client 2: STREAM WRITEs of 64 bytes into its own cells, every 16th signaled. */
static int stream_writes(void)
{
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_buf src, dst;
	struct ssq_completion comp;
	struct ssq_producer *p;
	uint32_t i, done = 0, want = STREAM / 16;
	double t0;

	if (ssq_client_connect(sock_path, &c) || ssq_queue_open(c, "q0", &q) ||
	    ssq_buf_alloc(c, 64 * STREAM, &src) || ssq_buf_alloc(c, 64 * STREAM, &dst))
		return 2;
	p = ssq_queue_producer(q);
	for (i = 0; i < STREAM; i++)
		memset((char *)src.addr + 64 * i, (int)(i & 0xff), 64);
	for (i = 0; i < STREAM; i++) {
		unsigned fl = (i % 16 == 15) ? SSQ_WQE_SIGNALED : 0;
		int rc;

		t0 = now_s();
		while ((rc = ssq_post_write(p, src.iova + 64 * i, src.lkey, 64,
		                            dst.remote_addr + 64 * i, dst.rkey, i, fl)) ==
		           -EAGAIN &&
		       now_s() - t0 < 10)
			done += (uint32_t)ssq_poll(p, &comp, 1);
		if (rc)
			return 3;
	}
	t0 = now_s();
	while (done < want && now_s() - t0 < 10) {
		int n = ssq_poll(p, &comp, 1);

		if (n == 1 && comp.status != IBV_WC_SUCCESS)
			return 4;
		done += (uint32_t)(n > 0 ? n : 0);
	}
	if (done != want || memcmp(src.addr, dst.addr, 64 * STREAM))
		return 5;
	ssq_client_close(c);
	return 0;
}

/* Step 2: a WRITE with a wrong rkey, the error, -EIO, recovery. */
static void error_and_recover(struct ssq_client *c, struct ssq_queue *q)
{
	struct ssq_producer *p = ssq_queue_producer(q);
	struct ssq_completion comp;
	struct ssq_buf a, b;
	uint64_t pos;
	double t0;
	int rc, f = test_failures;

	CHECK(ssq_buf_alloc(c, 64, &a) == 0 && ssq_buf_alloc(c, 64, &b) == 0, "buffers");
	CHECK(reserve1(p, &pos) == 0, "reserve");
	ssq_prep_rdma_write(ssq_producer_sq(p), (uint32_t)pos, a.iova, a.lkey, 64, b.iova,
	                    b.rkey ^ 0x5500u, ssq_wqe_flags(p, pos, 1, SSQ_WQE_SIGNALED));
	rc = finish(p, pos, 9, &comp);
	CHECK(rc == 0 && comp.status == IBV_WC_REM_ACCESS_ERR,
	      "bad rkey: rc %d status %d (want IBV_WC_REM_ACCESS_ERR %d)", rc,
	      comp.status, IBV_WC_REM_ACCESS_ERR);
	CHECK(ssq_reserve(p, 1, &pos) == -EIO,
	      "a reservation after the error is not -EIO");
	verdict("wrong rkey: REM_ACCESS_ERR, then -EIO", f);

	f = test_failures;
	t0 = now_s();
	while ((rc = ssq_queue_recover(q)) == -EBUSY && now_s() - t0 < 10) {
		ssq_poll(p, &comp, 1);
		usleep(1000);
	}
	CHECK(rc == 0, "recover: %d (%s)", rc, ssq_client_error(c));
	memset(a.addr, 0x77, 64);
	CHECK(reserve1(p, &pos) == 0, "reserve after recovery");
	ssq_prep_rdma_write(ssq_producer_sq(p), (uint32_t)pos, a.iova, a.lkey, 64,
	                    b.remote_addr, b.rkey,
	                    ssq_wqe_flags(p, pos, 1, SSQ_WQE_SIGNALED));
	rc = finish(p, pos, 10, &comp);
	CHECK(rc == 0 && comp.status == IBV_WC_SUCCESS && !memcmp(a.addr, b.addr, 64),
	      "WRITE after recovery: rc %d status %d", rc, comp.status);
	verdict("ssq_queue_recover, then a WRITE works", f);
}

/* Step 3: SIGTERM fences, a new ssqd on the same socket serves. */
static void restart(pid_t *daemon, struct ssq_client *c, struct ssq_queue *q)
{
	struct ssq_producer *p = ssq_queue_producer(q);
	struct ssq_client *c2;
	struct ssq_queue *q2;
	struct ssq_buf a, b;
	uint64_t pos;
	int status = 0, f = test_failures, rc;

	kill(*daemon, SIGTERM);
	CHECK(waitpid(*daemon, &status, 0) == *daemon && WIFEXITED(status),
	      "ssqd did not exit on SIGTERM (status 0x%x)", status);
	rc = ssq_reserve(p, 1, &pos);
	CHECK(rc == -EIO || rc == -ENOTCONN,
	      "a reservation after ssqd stopped: %d, want -EIO (its fence) or -ENOTCONN",
	      rc);
	ssq_client_close(c);
	verdict("SIGTERM: ssqd fences its queues and exits", f);

	f = test_failures;
	*daemon = start_ssqd("off");
	c2 = connect_retry(*daemon);
	CHECK(c2 != NULL, "no new ssqd");
	if (!c2)
		return;
	CHECK(ssq_queue_open(c2, "q0", &q2) == 0 && ssq_buf_alloc(c2, 64, &a) == 0 &&
	          ssq_buf_alloc(c2, 64, &b) == 0,
	      "new ssqd: %s", ssq_client_error(c2));
	memset(a.addr, 0x19, 64);
	CHECK(write_and_wait(q2, &a, &b, 64) == 0 && !memcmp(a.addr, b.addr, 64),
	      "WRITE through the new ssqd");
	ssq_client_close(c2);
	verdict("a new ssqd on the same socket serves a WRITE", f);
}

int main(void)
{
	struct ssq_client *c;
	struct ssq_queue *q;
	pid_t daemon, streamer;
	int status = 0, f;

	signal(SIGPIPE, SIG_IGN);
	snprintf(sock_path, sizeof(sock_path), "/tmp/ssq-devops-%d.sock", getpid());
	daemon = start_ssqd("off");
	c = connect_retry(daemon);
	CHECK(c != NULL, "no ssqd on %s", test_device());
	if (!c) {
		kill(daemon, SIGKILL);
		waitpid(daemon, NULL, 0);
		return test_exit("ctrl_device_ops");
	}
	CHECK(!strcmp(ssq_client_device(c), test_device()),
	      "ssqd runs on %s, asked for %s", ssq_client_device(c), test_device());
	CHECK(ssq_queue_open(c, "q0", &q) == 0, "open q0: %s", ssq_client_error(c));
	if (test_failures) {
		kill(daemon, SIGKILL);
		waitpid(daemon, NULL, 0);
		return test_exit("ctrl_device_ops");
	}

	streamer = fork();
	if (streamer == 0)
		_exit(stream_writes());
	every_opcode(c, q);
	f = test_failures;
	CHECK(waitpid(streamer, &status, 0) == streamer && WIFEXITED(status) &&
	          WEXITSTATUS(status) == 0,
	      "the second client's WRITE stream failed (status 0x%x)", status);
	verdict("a second process streamed 512 WRITEs meanwhile", f);

	error_and_recover(c, q);
	restart(&daemon, c, q);

	t_ssqd_stop(daemon, NULL, sock_path);
	printf("device_ops [%s]: %s\n", test_device(),
	       verdict_failures ? "some steps FAILED" : "every step passed");
	return test_exit("ctrl_device_ops");
}
