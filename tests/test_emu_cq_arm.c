/* SPDX-License-Identifier: MIT */
/*
 * Armed CQs (emu_cq_arm), a ConnectX's completion channel: an arm at the
 * consumer's index raises one event (1 on the eventfd) at the next CQE, at
 * once when a CQE past that index is there already, and none after it
 * until the CQ is armed again; also on a device without emu_cq_set_event's
 * events (no_cq_events: a ConnectX arms). Bad arguments are -EINVAL.
 */
#include <sys/eventfd.h>
#include <unistd.h>
#include "helpers.h"
#include "emu/testbed_pvt.h"

/* Events on @fd since the last look (0: none). */
static uint64_t events(int fd)
{
	uint64_t n = 0;

	return read(fd, &n, sizeof(n)) == sizeof(n) ? n : 0;
}

static void send_one(struct emu_tb *tb)
{
	struct emu_tb_side *a = &tb->s[0];
	uint32_t pi = a->sq.pi;

	a->sq.pi += ssq_prep_send(&a->sq, pi, MLX5_OPCODE_SEND, a->iova, a->key, 64, 0,
	                          SSQ_WQE_SIGNALED);
	emu_tb_ring(tb, 0, pi);
	emu_process(tb->dev, 1024);
}

static void run(const char *what, int no_cq_events)
{
	struct emu_dev_attr attr = { .ignore_env = 1, .no_cq_events = no_cq_events };
	struct emu_tb_opts o = { .dev_attr = &attr };
	struct emu_tb tb;
	struct emu_tb_side *b;
	struct ssq_cqe c[4];
	int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), i;

	if (fd < 0 || emu_tb_init(&tb, &o)) {
		CHECK(0, "%s: eventfd and testbed", what);
		return;
	}
	b = &tb.s[1];
	for (i = 0; i < 16; i++) {
		struct ibv_sge sge = { b->iova + 0x1000 + (uint64_t)i * 256, 256,
			               b->key };

		ssq_rq_post_recv(&b->rq, &sge, 1);
	}
	ssq_rq_ring(&b->rq);

	CHECK(emu_cq_arm(NULL, 0, fd) == -EINVAL, "%s: NULL CQ", what);
	CHECK(emu_cq_arm(b->rcq, 0, -1) == -EINVAL, "%s: no fd", what);
	CHECK(emu_cq_arm(b->rcq, 0, fd) == 0, "%s: arm an empty CQ", what);
	CHECK(events(fd) == 0, "%s: an event with no CQE", what);
	send_one(&tb);
	CHECK(events(fd) == 1, "%s: no event at the first CQE after the arm", what);
	send_one(&tb);
	CHECK(events(fd) == 0, "%s: a second event without a second arm", what);

	CHECK(ssq_cq_poll(&b->rcq_v, c, 4) == 2, "%s: the two receives", what);
	CHECK(emu_cq_arm(b->rcq, b->rcq_v.ci - 1, fd) == 0 && events(fd) == 1,
	      "%s: armed behind a CQE already written: no event at once", what);
	CHECK(emu_cq_arm(b->rcq, b->rcq_v.ci, fd) == 0 && events(fd) == 0,
	      "%s: armed at the consumer's index: an event with no new CQE", what);
	send_one(&tb);
	CHECK(events(fd) == 1, "%s: no event at the CQE after the second arm", what);
	emu_tb_fini(&tb);
	close(fd);
}

int main(void)
{
	run("device with events", 0);
	run("no_cq_events", 1);
	return test_exit("emu_cq_arm");
}
