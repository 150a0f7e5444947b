/* SPDX-License-Identifier: MIT */
/*
 * Two ssqd on the emulated device, as two hosts: one --listen, one
 * --connect; the exchanged GID carries each device's wire address, so the
 * shared queues talk RC over the emulated wire (UDP on loopback), here
 * under 5 % drop, duplicate and reorder on both sides.
 *  - Three producer processes attached to the connecting ssqd post
 *    messages (ssq_flow.h: a tagged WRITE and a FETCH_ADD each) through its
 *    one shared queue into the listening ssqd's data arena: every payload
 *    arrives, every counter is exactly 1 (nothing lost, nothing executed
 *    twice despite the wire's duplicates and retransmissions), and each
 *    process gets its completions in order.
 *  - The listening ssqd is killed: the sender's next request ends in
 *    TRANSPORT_RETRY_EXC_ERR (the rest flushed), new posts get -EIO, and the
 *    sending ssqd keeps serving its clients.
 */
#include "ssq_flow.h"

#define M 512u
#define P 3u

static pid_t start(const char *sock, const char *mode, const char *arg)
{
	const char *ssqd = getenv("SSQD");
	pid_t pid = fork();

	if (pid == 0) {
		setenv("SSQ_EMU_WIRE_FAULT", "drop=0.05,dup=0.05,reorder=0.05,seed=7", 1);
		execl(ssqd, ssqd, "--device", "emu", "--socket", sock, "--hugepages=off",
		      "--data-mib", "8", "--sq-size", "256", "--no-grants", mode, arg,
		      (char *)NULL);
		_exit(127);
	}
	return pid;
}

int main(void)
{
	char sa[108], sb[108], arg[32];
	uint16_t port = t_free_tcp_port();
	struct ssq_client *ca = NULL, *cb = NULL;
	struct ssq_queue *qa = NULL, *qb = NULL;
	struct ssq_queue_info info[1];
	struct ssq_buf dst, cnt, src;
	struct msg_area a;
	pid_t la, cb_pid, kids[P];
	int i, status, flushed = 0, retry_exc = 0;
	uint64_t pos;
	double t0;

	t_need_ssqd();
	snprintf(sa, sizeof(sa), "/tmp/ssq-wire-l-%d.sock", getpid());
	snprintf(sb, sizeof(sb), "/tmp/ssq-wire-c-%d.sock", getpid());
	snprintf(arg, sizeof(arg), "%u", port);
	la = start(sa, "--listen", arg);
	snprintf(arg, sizeof(arg), "127.0.0.1:%u", port);
	cb_pid = start(sb, "--connect", arg);
	ca = ssqd_connect_pid(sa, la);     /* the receiving host */
	cb = ssqd_connect_pid(sb, cb_pid); /* the sending host */
	CHECK(ca && cb, "both daemons serve clients");
	if (!ca || !cb)
		goto out;
	CHECK(wait_q0_ready(ca, 1, 10) >= 0, "the daemons never connected their queue");
	CHECK(ssq_queue_open(ca, "q0", &qa) == 0 && ssq_queue_open(cb, "q0", &qb) == 0,
	      "open: %s %s", ssq_client_error(ca), ssq_client_error(cb));
	CHECK(ssq_queue_peer_qpn(qb) == ssq_queue_qpn(qa), "peer QPN");
	/* Destination and counters in the receiving host's arena. */
	CHECK(ssq_buf_alloc(ca, P * M * CELL, &dst) == 0 &&
	          ssq_buf_alloc(ca, P * M * 8, &cnt) == 0 &&
	          ssq_buf_alloc(cb, 64 * (CELL + 8), &src) == 0,
	      "buffers");
	memset(dst.addr, 0, dst.len);
	memset(cnt.addr, 0, cnt.len);
	/* At the receiving host's buffers' remote descriptors. */
	msg_area_place(&a, &dst, &cnt);
	a.per_proc = M;
	a.nlong = P;
	a.short_len = 0;

	t0 = now_s();
	for (i = 0; i < (int)P; i++) {
		kids[i] = fork();
		if (kids[i] == 0)
			_exit(producer_process(sb, &a, (uint32_t)i, M));
	}
	for (i = 0; i < (int)P; i++) {
		waitpid(kids[i], &status, 0);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "producer %d exit 0x%x", i, status);
		CHECK(check_msgs(&a, (uint32_t)i, M, 1) == 0,
		      "producer %d: every message exactly once at the other host", i);
	}
	printf("%u processes x %u messages (%u WQEs) host to host over the lossy "
	       "emulated wire "
	       "in %.2f s\n",
	       P, M, 2 * P * M, now_s() - t0);

	/* The receiving host dies: retry exceeded, then flushes; -EIO after. */
	t_ssqd_kill(la, sa);
	la = 0;
	t0 = now_s();
	CHECK(post_to_dead_peer(ssq_queue_producer(qb), &src, dst.iova, a.rkey, 3,
	                        &retry_exc, &flushed) == 3,
	      "three reservations after the peer died");
	CHECK(retry_exc == 1 && flushed == 2,
	      "after the peer died: %d retry-exceeded, %d flushed", retry_exc, flushed);
	printf("peer killed: retry exceeded after %.2f s\n", now_s() - t0);
	CHECK(ssq_reserve(ssq_queue_producer(qb), 1, &pos) == -EIO,
	      "-EIO after the error");
	CHECK(ssq_client_list(cb, info, 1) == 1, "the sending ssqd still serves");
out:
	ssq_client_close(ca);
	ssq_client_close(cb);
	if (la) {
		t_ssqd_stop(la, NULL, NULL);
	}
	CHECK(t_ssqd_stop_ok(cb_pid, &status, NULL), "sending ssqd exit 0x%x", status);
	unlink(sa);
	unlink(sb);
	return test_exit("ctrl_wire");
}
