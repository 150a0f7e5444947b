/* SPDX-License-Identifier: MIT */
/*
 * A message number that has not arrived reads as -EAGAIN from every call of
 * the receive log, at any distance: ssq_recv_peek and ssq_recv_copy of
 * UINT64_MAX (whose k + 1 wraps to 0, the seq of a slot never written:
 * before issue 28's fix they returned that empty slot as a message), and
 * ssq_recv_check of a number not yet arrived (it answered 0, "intact").
 * Checked on an empty log, then after one SEND has arrived (number 0
 * readable, 1 and UINT64_MAX not).
 */
#include "recv_flow.h"

static char sock[108];

/* Every call on message @k: -EAGAIN, not arrived. */
static void unarrived(struct ssq_queue *q, uint64_t k, const char *when)
{
	struct ssq_recv_msg m;
	char buf[16];
	int rc;

	rc = ssq_recv_peek(q, k, &m);
	CHECK(rc == -EAGAIN, "%s: ssq_recv_peek(%llu) = %d, want -EAGAIN", when,
	      (unsigned long long)k, rc);
	rc = ssq_recv_copy(q, k, buf, sizeof(buf), &m);
	CHECK(rc == -EAGAIN, "%s: ssq_recv_copy(%llu) = %d, want -EAGAIN", when,
	      (unsigned long long)k, rc);
	rc = ssq_recv_check(q, k);
	CHECK(rc == -EAGAIN, "%s: ssq_recv_check(%llu) = %d, want -EAGAIN", when,
	      (unsigned long long)k, rc);
}

int main(void)
{
	struct ssq_client *c = NULL;
	struct ssq_queue *q = NULL;
	struct ssq_recv_msg m;
	struct ssq_buf src;
	struct ssq_completion comp;
	char buf[RMAX];
	double t0;
	pid_t d;
	int status, rc;

	t_need_ssqd();
	snprintf(sock, sizeof(sock), "/tmp/ssq-unarr-%d.sock", getpid());
	d = rssqd_start(sock, NULL, NULL);
	c = ssqd_connect_pid(sock, d);
	CHECK(c && ssq_queue_open(c, "q0", &q) == 0 && ssq_buf_alloc(c, RMAX, &src) == 0,
	      "setup: %s", c ? ssq_client_error(c) : ssq_client_strerror_last());
	if (!q)
		goto out;
	CHECK(ssq_recv_arrived(q) == 0, "arrived %llu before any SEND",
	      (unsigned long long)ssq_recv_arrived(q));
	unarrived(q, 0, "empty log");
	unarrived(q, RDEPTH - 1, "empty log");
	unarrived(q, UINT64_MAX, "empty log");

	memset(src.addr, 0x3c, 32);
	rc = ssq_post_send(ssq_queue_producer(q), MLX5_OPCODE_SEND, src.iova, src.lkey,
	                   32, 0, 7, SSQ_WQE_SIGNALED);
	CHECK(rc == 0, "send: %d", rc);
	CHECK(ssq_recv_wait(q, 0, 10 * 1000000000ll) == 0, "message 0 did not arrive");
	t0 = now_s();
	while (ssq_poll(ssq_queue_producer(q), &comp, 1) == 0 && now_s() - t0 < 10)
		usleep(100);
	rc = ssq_recv_copy(q, 0, buf, sizeof(buf), &m);
	CHECK(rc == 0 && m.byte_len == 32 && buf[0] == 0x3c, "message 0: %d, %u bytes",
	      rc, m.byte_len);
	CHECK(ssq_recv_check(q, 0) == 0, "message 0 not intact");
	unarrived(q, 1, "one arrived");
	unarrived(q, UINT64_MAX, "one arrived");
out:
	if (c)
		ssq_client_close(c);
	CHECK(t_ssqd_stop_ok(d, &status, NULL), "ssqd exit 0x%x", status);
	unlink(sock);
	return test_exit("ctrl_recv_unarrived");
}
