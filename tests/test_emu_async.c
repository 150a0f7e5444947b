/* SPDX-License-Identifier: MIT */
/*
 * The emulated device reports the errors no CQE can carry as async events,
 * as a ConnectX does through ibv_get_async_event (issue 15, item 2):
 *  - a CQ that overruns: IBV_EVENT_CQ_ERR naming it (the CQ stops);
 *  - a UAR doorbell naming a WQE ahead of the doorbell record (a device
 *    error: the QP goes to ERR with no CQE): IBV_EVENT_QP_FATAL naming it;
 *  - an RDMA WRITE with a bad R_Key: the requester gets its error CQE, the
 *    responder QP goes to ERR with no CQE: IBV_EVENT_QP_ACCESS_ERR naming
 *    the responder.
 * None is queued while nothing failed. The device's async fd
 * (emu_async_fd) polls readable while an event waits and not once it is
 * taken, as a verbs context's async_fd does (ib_uverbs_event_poll), so
 * ssqd's serve loop wakes on it (hardware review 2026-11-28 C1).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include "helpers.h"
#include "emu/testbed_pvt.h"

static int setup(struct emu_tb *tb, const struct emu_tb_opts *o)
{
	int rc = emu_tb_init(tb, o);

	CHECK(rc == 0, "testbed: %d", rc);
	return rc;
}

/* The async fd's readiness now, without waiting. */
static int fd_ready(struct emu_tb *tb)
{
	struct pollfd p = { emu_async_fd(tb->dev), POLLIN, 0 };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static void expect_event(struct emu_tb *tb, enum ibv_event_type type, uint32_t qpn,
                         uint32_t cqn, const char *what)
{
	struct emu_async_event ev;
	int ready = fd_ready(tb);
	int rc = emu_get_async_event(tb->dev, &ev);

	CHECK(rc == 0, "%s: no async event (%d)", what, rc);
	if (rc)
		return;
	printf("%s: %s, QP 0x%x, CQ 0x%x\n", what, ibv_event_type_str(ev.type), ev.qpn,
	       ev.cqn);
	CHECK(ev.type == type && ev.qpn == qpn && ev.cqn == cqn,
	      "%s: event %s QP 0x%x CQ 0x%x, want %s QP 0x%x CQ 0x%x", what,
	      ibv_event_type_str(ev.type), ev.qpn, ev.cqn, ibv_event_type_str(type), qpn,
	      cqn);
	CHECK(emu_get_async_event(tb->dev, &ev) == -EAGAIN, "%s: a second event (%s)",
	      what, ibv_event_type_str(ev.type));
	CHECK(ready && !fd_ready(tb),
	      "%s: the async fd readable with the event waiting (%d), not after (%d)",
	      what, ready, fd_ready(tb));
}

static void cq_overrun(void)
{
	struct emu_tb_opts o = { .cq_cnt = 4 };
	struct emu_async_event ev;
	struct emu_tb tb;
	struct emu_tb_side *a;
	int k;

	if (setup(&tb, &o))
		return;
	a = &tb.s[0];
	for (k = 0; k < 4; k++)
		a->sq.pi += ssq_prep_nop(&a->sq, a->sq.pi, SSQ_WQE_SIGNALED);
	emu_tb_ring(&tb, 0, a->sq.pi - 1);
	emu_process(tb.dev, 64);
	CHECK(emu_get_async_event(tb.dev, &ev) == -EAGAIN, "an event with the CQ full, "
	                                                   "not overrun");
	a->sq.pi += ssq_prep_nop(&a->sq, a->sq.pi, SSQ_WQE_SIGNALED);
	emu_tb_ring(&tb, 0, a->sq.pi - 1);
	emu_process(tb.dev, 64);
	expect_event(&tb, IBV_EVENT_CQ_ERR, 0, a->scq_v.cqn, "CQ overrun");
	emu_tb_fini(&tb);
}

static void doorbell_ahead(void)
{
	struct emu_tb tb;
	struct emu_tb_side *a;
	uint64_t v;

	if (setup(&tb, NULL))
		return;
	a = &tb.s[0];
	/* A WQE at 0 and its doorbell, but the doorbell record still at 0. */
	ssq_prep_nop(&a->sq, 0, SSQ_WQE_SIGNALED);
	memcpy(&v, ssq_sq_wqebb(&a->sq, 0), sizeof(v));
	__atomic_store_n((uint64_t *)a->sq.bf_reg, v, __ATOMIC_RELEASE);
	emu_process(tb.dev, 64);
	CHECK(emu_qp_state(a->qp) == IBV_QPS_ERR, "QP in ERR after the bad doorbell");
	expect_event(&tb, IBV_EVENT_QP_FATAL, a->qpn, 0, "doorbell ahead of the DBR");
	emu_tb_fini(&tb);
}

static void access_violation(void)
{
	struct emu_tb tb;
	struct emu_tb_side *a, *b;
	struct ssq_cqe c;

	if (setup(&tb, NULL))
		return;
	a = &tb.s[0];
	b = &tb.s[1];
	a->sq.pi += ssq_prep_rdma_write(&a->sq, a->sq.pi, a->iova, a->key, 64, b->iova,
	                                b->key ^ 0x5a00, SSQ_WQE_SIGNALED);
	emu_tb_ring(&tb, 0, a->sq.pi - 1);
	CHECK(emu_tb_poll(&tb, &a->scq_v, &c, 1) == 1 &&
	          c.syndrome == MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR,
	      "requester's REMOTE_ACCESS_ERR CQE");
	expect_event(&tb, IBV_EVENT_QP_ACCESS_ERR, b->qpn, 0, "bad R_Key");
	emu_tb_fini(&tb);
}

int main(void)
{
	cq_overrun();
	doorbell_ahead();
	access_violation();
	return test_exit("emu_async");
}
