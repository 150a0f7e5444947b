/* SPDX-License-Identifier: MIT */
/*
 * ssq_wait is woken by the device, not by the end of its slice: two ssqd
 * over the emulated wire, the receiving one's ACKs held 20 ms on the wire,
 * so a WRITE's completion lands long after its poster went to sleep in
 * ssq_wait, with nobody else to route. The device's completion event (the
 * backend's cq_event) has ssqd wake the sleeper (the queue's wake_seq
 * moves) and the completion is its WRITE's. Without it the sleeper finds
 * the completion only by routing at the end of each 1 ms slice, and nothing
 * moves wake_seq. Then the same through ssq_queue_wait_fd: the eventfd's
 * thread sleeps the same way and is woken the same way. Both lone waiters,
 * several rounds; all but one must be woken by ssqd (a sleeper whose slice
 * ends between the device's write of the CQE and its event routes the CQE
 * itself, uncounted, and rightly gets no wake).
 *
 * With SSQ_EMU_CQ_EVENTS=0 (ctrl_wait_event_poller) the device raises an
 * event only on a CQ ssqd armed for the sleeper (send_arm.c), as a
 * ConnectX does, and the event reaches ssqd's event thread through an fd
 * and the scheduler, which on a loaded machine can take longer than the
 * rest of a slice: there at least one round of each kind must be woken by
 * ssqd (without the arm none is: nothing else moves wake_seq here). So too
 * under the libmlx5 model (ctrl_wait_event_mlx5model), whose events come
 * the same way, through a completion channel's fd: a CI run beside other
 * work saw 3 of 5 rounds woken there.
 */
#include <poll.h>
#include "recv_flow.h"

#define ROUNDS 5

static char sa[108], sb[108];
static unsigned want_moved = ROUNDS - 1; /* rounds ssqd must wake */

/* One WRITE of @src into @dst through @p, signaled as @wr_id. */
static int post(struct ssq_producer *p, const struct ssq_buf *src,
                const struct ssq_buf *dst, uint64_t wr_id)
{
	return ssq_post_write(p, src->iova, src->lkey, 64, dst->remote_addr, dst->rkey,
	                      wr_id, SSQ_WQE_SIGNALED);
}

static void waits(struct ssq_queue *q, const struct ssq_buf *src,
                  const struct ssq_buf *dst)
{
	struct ssq_producer *p = ssq_queue_producer(q);
	struct ssq_completion comp = { 0 };
	unsigned moved = 0, r;
	double worst = 0;

	for (r = 0; r < ROUNDS; r++) {
		uint32_t seq0 = __atomic_load_n(&p->ctl->wake_seq, __ATOMIC_RELAXED);
		double t0 = now_s(), took;
		int rc;

		CHECK(post(p, src, dst, 100 + r) == 0, "round %u: post", r);
		rc = ssq_wait(p, 1, 3000000000ull);
		took = now_s() - t0;
		worst = took > worst ? took : worst;
		CHECK(rc == 1, "round %u: ssq_wait %d, want 1", r, rc);
		CHECK(ssq_poll(p, &comp, 1) == 1 && comp.wr_id == 100 + r &&
		          comp.status == IBV_WC_SUCCESS,
		      "round %u: the WRITE's completion (wr_id %llu, status %d)", r,
		      (unsigned long long)comp.wr_id, comp.status);
		CHECK(took >= 0.015,
		      "round %u: done %.1f ms after the post: the ACK was held 20 ms", r,
		      took * 1e3);
		moved += __atomic_load_n(&p->ctl->wake_seq, __ATOMIC_RELAXED) != seq0;
	}
	CHECK(moved >= want_moved,
	      "ssq_wait: ssqd woke the lone sleeper in %u of %u rounds (the rest found "
	      "their completion at the end of a slice)",
	      moved, ROUNDS);
	printf(
	    "ssq_wait: woken by the device in %u of %u rounds, the slowest %.1f ms after "
	    "its post\n",
	    moved, ROUNDS, worst * 1e3);
}

static void wait_fd(struct ssq_queue *q, const struct ssq_buf *src,
                    const struct ssq_buf *dst)
{
	struct ssq_producer *p = ssq_queue_producer(q);
	struct ssq_completion comp = { 0 };
	int fd = ssq_queue_wait_fd(q);
	unsigned moved = 0, r;

	CHECK(fd >= 0, "ssq_queue_wait_fd: %d", fd);
	if (fd < 0)
		return;
	usleep(20000); /* its thread asleep */
	for (r = 0; r < ROUNDS; r++) {
		uint32_t seq0 = __atomic_load_n(&p->ctl->wake_seq, __ATOMIC_RELAXED);
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		uint64_t v;

		CHECK(post(p, src, dst, 200 + r) == 0, "fd round %u: post", r);
		CHECK(poll(&pf, 1, 3000) == 1, "fd round %u: the eventfd became readable",
		      r);
		(void)!read(fd, &v, sizeof(v));
		CHECK(ssq_poll(p, &comp, 1) == 1 && comp.wr_id == 200 + r &&
		          comp.status == IBV_WC_SUCCESS,
		      "fd round %u: the WRITE's completion", r);
		moved += __atomic_load_n(&p->ctl->wake_seq, __ATOMIC_RELAXED) != seq0;
	}
	CHECK(moved >= want_moved, "wait fd: ssqd woke its thread in %u of %u rounds",
	      moved, ROUNDS);
}

int main(void)
{
	uint16_t port = free_tcp_port();
	char arg[16], carg[32];
	const char *la_args[] = { "--listen", arg, NULL };
	const char *cb_args[] = { "--connect", carg, NULL };
	struct ssq_client *ca = NULL, *cb = NULL;
	struct ssq_queue *qb = NULL;
	struct ssq_buf dst = { 0 }, src = { 0 };
	pid_t la, lb;

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	if ((getenv("SSQ_EMU_CQ_EVENTS") && !strcmp(getenv("SSQ_EMU_CQ_EVENTS"), "0")) ||
	    getenv("SSQ_MLX5MODEL"))
		want_moved = 1;
	signal(SIGPIPE, SIG_IGN);
	CHECK(port != 0, "a free TCP port");
	snprintf(sa, sizeof(sa), "/tmp/ssq-wev-l-%d.sock", getpid());
	snprintf(sb, sizeof(sb), "/tmp/ssq-wev-c-%d.sock", getpid());
	snprintf(arg, sizeof(arg), "%u", port);
	snprintf(carg, sizeof(carg), "127.0.0.1:%u", port);
	/* The receiving host holds every packet it sends (its ACKs) 20 ms. */
	la = rssqd_start(sa, "delay=1,delay_us=20000", la_args);
	lb = rssqd_start(sb, NULL, cb_args);
	ca = ssqd_connect_pid(sa, la);
	cb = ssqd_connect_pid(sb, lb);
	CHECK(ca && cb, "both daemons serve clients");
	if (ca && cb) {
		CHECK(wait_q0_ready(cb, 1, 10) >= 0, "the daemons never linked q0");
		CHECK(ssq_buf_alloc(ca, 4096, &dst) == 0,
		      "the destination, at the receiver");
		CHECK(ssq_queue_open(cb, "q0", &qb) == 0 &&
		          ssq_buf_alloc(cb, 4096, &src) == 0,
		      "q0 and a source at the sender: %s", ssq_client_error(cb));
	}
	if (qb && src.addr && dst.addr) {
		memset(src.addr, 0x5a, 64);
		waits(qb, &src, &dst);
		wait_fd(qb, &src, &dst);
		CHECK(((uint8_t *)dst.addr)[63] == 0x5a, "the bytes landed");
	}
	ssq_client_close(ca);
	ssq_client_close(cb);
	kill(la, SIGTERM);
	kill(lb, SIGTERM);
	waitpid(la, NULL, 0);
	waitpid(lb, NULL, 0);
	unlink(sa);
	unlink(sb);
	return test_exit("ctrl_wait_event");
}
