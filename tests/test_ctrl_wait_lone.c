/* SPDX-License-Identifier: MIT */
/*
 * A lone producer asleep in ssq_wait is woken by ssqd when its completion
 * lands, on any device: a WRITE of 4 MiB over q0 (loopback) takes long
 * enough that its poster is asleep before the CQE comes, and nobody else
 * routes. ssqd wakes it (the queue's wake_seq moves): on the emulated
 * device from the device's completion event, with SSQ_EMU_CQ_EVENTS=0
 * (ctrl_wait_lone_poller) and on a ConnectX (scripts/hw-check.sh) through
 * the send CQ it arms when the sleeper asks (send_arm.c). Without that a
 * sleeper finds its completion only by routing at the end of its 1 ms
 * slice, and nothing moves wake_seq: no round is woken by ssqd.
 *
 * A slice that ends between the CQE and ssqd's wake routes the CQE
 * itself, uncounted. The device's own event wakes from the thread that
 * wrote the CQE, so all rounds but one must be woken that way; an armed
 * CQ's event reaches ssqd's event thread through the kernel and a
 * scheduler, which on a loaded machine can take longer than a slice, so
 * there at least one round must be (ssqd's own routing, as the router of
 * last resort, can move wake_seq too: on the emulated device ctrl_wait_arm
 * is the exact check of the armed path). So where CQs are armed, the
 * verdict also takes what ssqd counted: the line it logs at SIGTERM
 * ("send CQ armed N times, M events", ssqd.c) must show at least one arm
 * and one event taken - the armed send CQ's event reached ssqd (hardware
 * review 2026-11-28, section 4). Each WRITE's bytes checked.
 */
#include <fcntl.h>
#include "ctrl_flow.h"

/* ssqd's send-CQ counters from its log @path: 1 when found. */
static int arm_counts(const char *path, unsigned long long *arms,
                      unsigned long long *events)
{
	FILE *f = fopen(path, "r");
	char line[512];
	int found = 0;

	while (f && fgets(line, sizeof(line), f)) {
		const char *p = strstr(line, "send CQ armed ");

		if (p &&
		    sscanf(p, "send CQ armed %llu times, %llu events", arms, events) == 2)
			found = 1;
	}
	if (f)
		fclose(f);
	return found;
}

#define ROUNDS 8
#define LEN    (4u << 20)

static int landed(const struct ssq_buf *dst, uint8_t v)
{
	const uint8_t *p = dst->addr;

	return p[0] == v && p[LEN / 2] == v && p[LEN - 1] == v;
}

int main(void)
{
	struct ssq_buf a = { 0 }, b = { 0 }, src = { 0 }, dst = { 0 };
	struct ssq_completion comp = { 0 };
	struct ssq_client *c = NULL;
	struct ssq_queue *q = NULL;
	struct ssq_producer *p;
	unsigned moved = 0, r;
	unsigned long long arms = 0, events = 0;
	char log[64];
	int err, lfd;
	/* The device raises events only on armed CQs: a ConnectX, or events off. */
	int armed = !test_device_is_emu() || (getenv("SSQ_EMU_CQ_EVENTS") &&
	                                      !strcmp(getenv("SSQ_EMU_CQ_EVENTS"), "0"));
	pid_t d;

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	flow_ssqd_opt = "--data-mib=16";
	/* ssqd's stderr into a log of its own, read once it has stopped. */
	snprintf(log, sizeof(log), "/tmp/ssq-wait-lone-%d.log", getpid());
	err = dup(2);
	lfd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (err < 0 || lfd < 0 || dup2(lfd, 2) < 0) {
		perror("ssqd's log");
		return 1;
	}
	d = flow_start_q0("wait-lone", &c, &q, &a, &b);
	dup2(err, 2);
	close(err);
	close(lfd);
	CHECK(d >= 0, "ssqd on %s serves a client", test_device());
	if (d < 0)
		return test_exit("ctrl_wait_lone");
	CHECK(ssq_buf_alloc(c, LEN, &src) == 0 && ssq_buf_alloc(c, LEN, &dst) == 0,
	      "two %u-byte buffers: %s", LEN, ssq_client_error(c));
	p = ssq_queue_producer(q);
	for (r = 0; src.addr && dst.addr && r < ROUNDS; r++) {
		uint32_t seq0 = __atomic_load_n(&p->ctl->wake_seq, __ATOMIC_RELAXED);
		int rc;

		memset(src.addr, 0x10 + (int)r, LEN);
		rc = ssq_post_write(p, src.iova, src.lkey, LEN, dst.remote_addr, dst.rkey,
		                    100 + r, SSQ_WQE_SIGNALED);
		CHECK(rc == 0, "round %u: post: %d", r, rc);
		rc = ssq_wait(p, 1, 5000000000ull);
		CHECK(rc == 1, "round %u: ssq_wait %d, want 1", r, rc);
		CHECK(ssq_poll(p, &comp, 1) == 1 && comp.wr_id == 100 + r &&
		          comp.status == IBV_WC_SUCCESS,
		      "round %u: the WRITE's completion (wr_id %llu, status %d)", r,
		      (unsigned long long)comp.wr_id, comp.status);
		CHECK(landed(&dst, (uint8_t)(0x10 + r)), "round %u: the bytes landed", r);
		moved += __atomic_load_n(&p->ctl->wake_seq, __ATOMIC_RELAXED) != seq0;
	}
	CHECK(moved >= (armed ? 1u : ROUNDS - 1),
	      "ssq_wait on %s: ssqd woke the lone sleeper in %u of %u rounds (the rest "
	      "found their completion at the end of a slice)",
	      test_device(), moved, ROUNDS);
	printf("ssq_wait on %s%s: ssqd woke the lone sleeper in %u of %u rounds\n",
	       test_device(), armed ? " (armed CQs)" : "", moved, ROUNDS);
	ssq_client_close(c);
	t_ssqd_stop(d, NULL, sock_path);
	if (armed) {
		int found = arm_counts(log, &arms, &events);

		CHECK(found && arms >= 1 && events >= 1,
		      "ssqd on %s counted %llu send-CQ arms and %llu events (%s): want "
		      "at least one of each",
		      test_device(), arms, events,
		      found ? "its log's count" : "no count in its log");
		printf("ssqd on %s armed the send CQ %llu times and took %llu events\n",
		       test_device(), arms, events);
	}
	if (test_failures) {
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "cat %s >&2", log);
		(void)!system(cmd);
	}
	unlink(log);
	return test_exit("ctrl_wait_lone");
}
