// SPDX-License-Identifier: MIT
//
// ssq_micro, fast-path part: nanoseconds per WQE built, per opcode, and the
// cost of a doorbell and of polling a CQE. One WQE per iteration, so the
// time column is ns per WQE; items_per_second is WQEs per second.
#include <benchmark/benchmark.h>
#include <vector>
#include <ssq/ssq.h>

namespace
{

constexpr uint32_t kRingWqebbs = 256;

struct Ring {
	std::vector<uint8_t> buf =
	    std::vector<uint8_t>(kRingWqebbs * MLX5_SEND_WQE_BB + 64);
	std::vector<uint64_t> uar = std::vector<uint64_t>(128);
	__be32 dbrec[2] = { 0, 0 };
	ssq_sq sq{};

	Ring()
	{
		mlx5dv_qp dv{};
		dv.dbrec = dbrec;
		// 64-byte aligned, as the NIC's buffers are.
		dv.sq.buf =
		    buf.data() + (64 - reinterpret_cast<uintptr_t>(buf.data()) % 64) % 64;
		dv.sq.wqe_cnt = kRingWqebbs;
		dv.sq.stride = MLX5_SEND_WQE_BB;
		dv.bf.reg = uar.data();
		dv.bf.size = 256;
		if (ssq_sq_init(&sq, &dv, 0x123, 256, 8))
			abort();
	}
};

void BM_build_write_1sge(benchmark::State &state)
{
	Ring r;
	uint64_t i = 0;
	for (auto _ : state) {
		int n = ssq_prep_rdma_write(&r.sq, r.sq.pi, 0x100000 + i * 64, 0x11, 64,
		                            0x200000 + i * 64, 0x22, 0);
		r.sq.pi += n;
		i++;
		benchmark::ClobberMemory();
	}
	state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_build_write_1sge);

void BM_build_write_imm_1sge(benchmark::State &state)
{
	Ring r;
	uint64_t i = 0;
	for (auto _ : state) {
		r.sq.pi +=
		    ssq_prep_rdma_write_imm(&r.sq, r.sq.pi, 0x100000 + i * 64, 0x11, 64,
		                            0x200000, 0x22, htobe32(i), 0);
		i++;
		benchmark::ClobberMemory();
	}
	state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_build_write_imm_1sge);

void BM_build_read_1sge(benchmark::State &state)
{
	Ring r;
	uint64_t i = 0;
	for (auto _ : state) {
		r.sq.pi += ssq_prep_rdma_read(&r.sq, r.sq.pi, 0x100000 + i * 64, 0x11, 64,
		                              0x200000, 0x22, 0);
		i++;
		benchmark::ClobberMemory();
	}
	state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_build_read_1sge);

void BM_build_send_1sge(benchmark::State &state)
{
	Ring r;
	uint64_t i = 0;
	const uint8_t op = state.range(0) ? MLX5_OPCODE_SEND_IMM : MLX5_OPCODE_SEND;
	for (auto _ : state) {
		r.sq.pi += ssq_prep_send(&r.sq, r.sq.pi, op, 0x100000 + i * 64, 0x11, 64,
		                         htobe32(i), 0);
		i++;
		benchmark::ClobberMemory();
	}
	state.SetItemsProcessed(state.iterations());
	state.SetLabel(state.range(0) ? "SEND_IMM" : "SEND");
}
BENCHMARK(BM_build_send_1sge)->Arg(0)->Arg(1);

void BM_build_atomic(benchmark::State &state)
{
	Ring r;
	uint64_t i = 0;
	const uint8_t op = state.range(0) ? MLX5_OPCODE_ATOMIC_FA : MLX5_OPCODE_ATOMIC_CS;
	for (auto _ : state) {
		r.sq.pi +=
		    ssq_prep_atomic(&r.sq, r.sq.pi, op, 0x100000, 0x11, 0x200000 + i * 8,
		                    0x22, i, i + 1, SSQ_WQE_SIGNALED);
		i++;
		benchmark::ClobberMemory();
	}
	state.SetItemsProcessed(state.iterations());
	state.SetLabel(state.range(0) ? "ATOMIC_FA" : "ATOMIC_CS");
}
BENCHMARK(BM_build_atomic)->Arg(0)->Arg(1);

void BM_build_nop(benchmark::State &state)
{
	Ring r;
	for (auto _ : state) {
		r.sq.pi += ssq_prep_nop(&r.sq, r.sq.pi, 0);
		benchmark::ClobberMemory();
	}
	state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_build_nop);

// The general builder: opcode from the work request, N-entry gather list.
void BM_build_generic_write(benchmark::State &state)
{
	Ring r;
	ibv_sge sge[8];
	for (int i = 0; i < 8; i++)
		sge[i] = ibv_sge{ 0x100000u + 4096u * i, 512, 0x11 };
	ssq_wr wr{};
	wr.opcode = MLX5_OPCODE_RDMA_WRITE;
	wr.num_sge = static_cast<uint32_t>(state.range(0));
	wr.sg_list = sge;
	wr.raddr = 0x200000;
	wr.rkey = 0x22;
	for (auto _ : state) {
		r.sq.pi += ssq_wqe_build(&r.sq, r.sq.pi, &wr);
		benchmark::ClobberMemory();
	}
	state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_build_generic_write)->Arg(1)->Arg(4)->Arg(8);

void BM_build_send_inline(benchmark::State &state)
{
	Ring r;
	static uint8_t payload[256];
	ibv_sge sge{ reinterpret_cast<uintptr_t>(payload),
		     static_cast<uint32_t>(state.range(0)), 0 };
	ssq_wr wr{};
	wr.opcode = MLX5_OPCODE_SEND;
	wr.inline_data = 1;
	wr.num_sge = 1;
	wr.sg_list = &sge;
	for (auto _ : state) {
		r.sq.pi += ssq_wqe_build(&r.sq, r.sq.pi, &wr);
		benchmark::ClobberMemory();
	}
	state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_build_send_inline)->Arg(32)->Arg(64)->Arg(200);

// Doorbell into ordinary memory standing in for the UAR: the barriers and
// stores, not the PCIe write a real UAR costs.
void BM_doorbell_8byte(benchmark::State &state)
{
	Ring r;
	for (auto _ : state) {
		uint32_t pi = r.sq.pi;
		r.sq.pi +=
		    ssq_prep_rdma_write(&r.sq, pi, 0x100000, 0x11, 64, 0x200000, 0x22, 0);
		ssq_sq_ring_db(
		    &r.sq, r.sq.pi,
		    static_cast<const mlx5_wqe_ctrl_seg *>(ssq_sq_wqebb(&r.sq, pi)));
	}
	state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_doorbell_8byte);

void BM_doorbell_blueflame(benchmark::State &state)
{
	Ring r;
	for (auto _ : state) {
		uint32_t pi = r.sq.pi;
		int n =
		    ssq_prep_rdma_write(&r.sq, pi, 0x100000, 0x11, 64, 0x200000, 0x22, 0);
		r.sq.pi += n;
		ssq_sq_ring_bf(&r.sq, pi, n);
	}
	state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_doorbell_blueflame);

// Poll CQEs written the way the NIC writes them (owner bit per pass).
void BM_cq_poll_one(benchmark::State &state)
{
	constexpr uint32_t kCqes = 256;
	std::vector<mlx5_cqe64> cqes(kCqes);
	__be32 dbrec[2] = { 0, 0 };
	mlx5dv_cq dv{};
	dv.buf = cqes.data();
	dv.dbrec = dbrec;
	dv.cqe_cnt = kCqes;
	dv.cqe_size = sizeof(mlx5_cqe64);
	ssq_cq cq{};
	if (ssq_cq_init(&cq, &dv))
		abort();
	ssq_cqe out;
	uint32_t pi = 0;
	for (auto _ : state) {
		mlx5_cqe64 *c = &cqes[pi & (kCqes - 1)];
		c->wqe_counter = htobe16(pi);
		c->sop_drop_qpn = htobe32(0x123);
		c->op_own = static_cast<uint8_t>(MLX5_CQE_REQ << 4 | ((pi / kCqes) & 1));
		pi++;
		benchmark::DoNotOptimize(ssq_cq_poll(&cq, &out, 1));
	}
	state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_cq_poll_one);

} // namespace

BENCHMARK_MAIN();
