// SPDX-License-Identifier: MIT
//
// Emulated-device micro-benchmarks: the host side (build, doorbell, poll)
// and the device (emu_process) on the same core, so items_per_second is
// the WQE rate one core sustains for both. BENCHMARK_MAIN lives in
// micro_dv.cc.
//
//   BM_emu_sink           RDMA WRITEs the device checks and completes
//                         without moving data (SSQ_EMU_SINK): host cost +
//                         device parse/validate cost per WQE.
//   BM_emu_full_write64   64-byte RDMA WRITEs with the data moved.
//
// Batches of 32 WQEs, one signaled (the last) per batch, one doorbell (DBR
// and the 8-byte UAR write, ssq_sq_ring_db) per batch: the pattern the
// shared queue uses. The device, as a ConnectX, executes nothing the UAR
// doorbell has not covered, so there is no DBR-only variant.
#include <benchmark/benchmark.h>
#include <ssq/ssq.h>
#include "emu/emu.h"
#include "emu/testbed_pvt.h"

namespace
{

constexpr uint32_t kBatch = 32;

void run_writes(benchmark::State &state, enum emu_mode mode, uint32_t len)
{
	struct emu_dev_attr da = {};
	struct emu_tb_opts o = {};
	struct emu_tb tb;

	da.mode = mode;
	da.ignore_env = 1;
	o.sq_cnt = 256;
	o.cq_cnt = 256;
	o.dev_attr = &da;
	if (emu_tb_init(&tb, &o)) {
		state.SkipWithError("emulated testbed setup failed");
		return;
	}
	struct emu_tb_side *a = &tb.s[0], *b = &tb.s[1];
	struct ssq_cqe cqe[4];
	uint64_t bad = 0;

	for (auto _ : state) {
		uint32_t pi = a->sq.pi;

		for (uint32_t k = 0; k < kBatch; k++) {
			uint64_t off = (uint64_t)((pi + k) & 255) * 64;

			ssq_prep_rdma_write(&a->sq, pi + k, a->iova + off, a->key, len,
			                    b->iova + off, b->key,
			                    k == kBatch - 1 ? SSQ_WQE_SIGNALED : 0);
		}
		a->sq.pi = pi + kBatch;
		ssq_sq_ring_db(&a->sq, a->sq.pi,
		               (const struct mlx5_wqe_ctrl_seg *)ssq_sq_wqebb(
		                   &a->sq, pi + kBatch - 1));
		emu_process(tb.dev, kBatch);
		int n = ssq_cq_poll(&a->scq_v, cqe, 4);
		if (n != 1 || cqe[0].status != IBV_WC_SUCCESS)
			bad++;
		benchmark::DoNotOptimize(cqe[0].wqe_counter);
	}
	state.SetItemsProcessed(state.iterations() * kBatch);
	if (mode == SSQ_EMU_FULL)
		state.SetBytesProcessed(state.iterations() * kBatch * len);
	if (bad)
		state.SkipWithError("a batch did not complete with one good CQE");
	emu_tb_fini(&tb);
}

void BM_emu_sink(benchmark::State &state)
{
	run_writes(state, SSQ_EMU_SINK, 64);
}

void BM_emu_full_write64(benchmark::State &state)
{
	run_writes(state, SSQ_EMU_FULL, 64);
}

} // namespace

BENCHMARK(BM_emu_sink);
BENCHMARK(BM_emu_full_write64);
