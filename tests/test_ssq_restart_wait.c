/* SPDX-License-Identifier: MIT */
/*
 * A restart is a wait, not an error: while ssqd starts a queue over
 * (ssq_ctl_quiesce .. ssq_ctl_rebuild) a producer's ssq_reserve and
 * ssq_post_write answer -EAGAIN, as for a full ring, and work again once
 * the rebuild is done. The rebuild delivers what was in flight as flushed
 * before it says READY, so an owner that sees its flush and posts at once
 * lands in that window; -EIO there made it give up on a healthy queue.
 */
#include "dv/ctl.h"
#include "ssq_flow.h"
#include "tb_flow.h"

#define RING  64u
#define OWNER (SSQ_MAX_PRODUCERS - 1)

int main(void)
{
	struct emu_tb_opts o = { 0 };
	struct ssq_producer owner, p;
	struct ssq_ctl *ctl;
	struct emu_tb tb;
	uint64_t pos = ~0ull;
	int rc, id;

	o.sq_cnt = RING;
	o.mem_len = 1 << 16;
	ctl = tb_ctl_up(&tb, &o, RING, 16);
	CHECK(tb_producer(&owner, ctl, OWNER, &tb) == 0, "owner's record");
	id = ssq_ctl_claim(ctl, (uint32_t)getpid(), OWNER);
	CHECK(id >= 0 && ssq_producer_bind(&p, ctl, (uint32_t)id, &tb.s[0].sq,
	                                   &tb.s[0].scq_v) == 0,
	      "a producer: claim %d", id);

	/* An error stays an error (until a recovery or a restart). */
	ssq_ctl_set_error(ctl);
	rc = ssq_reserve(&p, 1, &pos);
	CHECK(rc == -EIO, "ssq_reserve on a queue in error: %d, want -EIO", rc);

	CHECK(ssq_ctl_quiesce(&owner, 1ull << id, 1) == 0, "quiesce");
	rc = ssq_reserve(&p, 1, &pos);
	CHECK(rc == -EAGAIN, "ssq_reserve while the queue restarts: %d, want -EAGAIN",
	      rc);
	rc = ssq_post_write(&p, tb.s[0].iova, tb.s[0].key, 64, tb.s[1].iova, tb.s[1].key,
	                    1, SSQ_WQE_SIGNALED);
	CHECK(rc == -EAGAIN, "ssq_post_write while the queue restarts: %d, want -EAGAIN",
	      rc);
	CHECK(ssq_ctl_rebuild(&owner, 1, 1ull << id, 1) == 0, "rebuild");
	rc = ssq_reserve(&p, 1, &pos);
	CHECK(rc == 0 && pos == 0, "ssq_reserve after the rebuild: %d at %llu", rc,
	      (unsigned long long)pos);
	/* (Its WQEBB stays unpublished: nothing runs this queue any further.) */

	free(ctl);
	emu_tb_fini(&tb);
	return test_exit("ssq_restart_wait");
}
