// SPDX-License-Identifier: MIT
//
// Shared-queue micro-benchmarks: the full producer path of <ssq/queue.h>
// (reserve, build, publish, submit with the doorbell lease, route, poll)
// against the emulated device in sink mode, device and producer on one
// core, so items_per_second is what one core sustains for both.
//
//   BM_post_write64_batch32   one producer, 64-byte RDMA WRITEs, one
//                             reservation and one doorbell per 32 WQEs
//   BM_post_write64_single    the same with ssq_post_write: a reservation
//                             and a doorbell per WQE
#include <benchmark/benchmark.h>
#include <cstdlib>
#include <ssq/ssq.h>
#include <ssq/emu.h>
#include "emu/testbed_pvt.h"

namespace
{

constexpr uint32_t kRing = 1024;

struct Shared {
	struct emu_tb tb;
	struct ssq_ctl *ctl = nullptr;
	struct ssq_producer prod;
	bool ok = false;

	Shared()
	{
		struct ssq_emu_dev_attr da = {};
		struct emu_tb_opts o = {};

		da.mode = SSQ_EMU_SINK;
		da.ignore_env = 1;
		o.sq_cnt = kRing;
		o.cq_cnt = kRing;
		o.dev_attr = &da;
		if (emu_tb_init(&tb, &o))
			return;
		ctl = static_cast<struct ssq_ctl *>(
		    aligned_alloc(64, (ssq_ctl_size(kRing) + 63) & ~size_t(63)));
		ok =
		    ssq_ctl_init(ctl, kRing, 64) == 0 &&
		    ssq_producer_init(&prod, ctl, 0, &tb.s[0].sq, &tb.s[0].scq_v, 1) == 0;
	}
	~Shared()
	{
		emu_tb_fini(&tb);
		free(ctl);
	}
	// Let the device run and take our completions.
	void drain(uint64_t *reaped)
	{
		struct ssq_completion comp[16];

		ssq_emu_process(tb.dev, 256);
		*reaped += (uint64_t)ssq_poll(&prod, comp, 16);
	}
};

void BM_post_write64_batch32(benchmark::State &state)
{
	Shared s;
	const uint32_t batch = 32;
	uint64_t reaped = 0, posted = 0;

	if (!s.ok) {
		state.SkipWithError("shared queue setup failed");
		return;
	}
	struct emu_tb_side *a = &s.tb.s[0], *b = &s.tb.s[1];
	for (auto _ : state) {
		uint64_t pos = 0;

		while (ssq_reserve(&s.prod, batch, &pos) == -EAGAIN)
			s.drain(&reaped);
		for (uint32_t k = 0; k < batch; k++) {
			uint64_t off = ((pos + k) & 255) * 64;
			unsigned f = k == batch - 1 ? SSQ_WQE_SIGNALED : 0;

			ssq_prep_rdma_write(
			    &s.prod.sq, (uint32_t)(pos + k), a->iova + off, a->key, 64,
			    b->iova + off, b->key, ssq_wqe_flags(&s.prod, pos + k, 1, f));
			ssq_publish(&s.prod, pos + k, 1, pos + k, f);
		}
		ssq_submit(&s.prod);
		posted += batch;
		s.drain(&reaped);
	}
	state.SetItemsProcessed((int64_t)posted);
	state.counters["completions"] = (double)reaped;
}
BENCHMARK(BM_post_write64_batch32);

void BM_post_write64_single(benchmark::State &state)
{
	Shared s;
	uint64_t reaped = 0, posted = 0;

	if (!s.ok) {
		state.SkipWithError("shared queue setup failed");
		return;
	}
	struct emu_tb_side *a = &s.tb.s[0], *b = &s.tb.s[1];
	for (auto _ : state) {
		uint64_t off = (posted & 255) * 64;
		unsigned f = (posted & 31) == 31 ? SSQ_WQE_SIGNALED : 0;

		while (ssq_post_write(&s.prod, a->iova + off, a->key, 64, b->iova + off,
		                      b->key, posted, f) == -EAGAIN)
			s.drain(&reaped);
		posted++;
		if ((posted & 31) == 0)
			s.drain(&reaped);
	}
	state.SetItemsProcessed((int64_t)posted);
}
BENCHMARK(BM_post_write64_single);

} // namespace
