// SPDX-License-Identifier: MIT
//
// Shared-queue micro-benchmarks: the full producer path of <ssq/queue.h>
// (reserve, build, publish, submit with the doorbell lease, route, poll)
// against the emulated device in sink mode.
//
//   BM_post_write64_batch32          one producer, 64-byte RDMA WRITEs, one
//                                    reservation and one doorbell per 32
//                                    WQEs. Host side only: the clock runs
//                                    while the producer reserves, builds,
//                                    publishes, rings and polls, and stops
//                                    while the emulated device executes (a
//                                    NIC does that on its own silicon).
//   BM_post_write64_batch32_device   the same with the device's work on
//                                    the same core counted in.
//   BM_post_write64_single           ssq_post_write: a reservation and a
//                                    doorbell per WQE, device counted in.
//   BM_post_write64_single_host/spinlock:L
//                                    the same, host side only; L = 1 takes
//                                    a process-shared spinlock around each
//                                    post and poll (--mode spinlock), once
//                                    per WQE: what the lock alone costs.
//   BM_reserve_publish/threads:N     N producer threads of one process on
//                                    one queue, each posting single WQEs;
//                                    whoever finds the ring full runs the
//                                    device. Contention on reserve,
//                                    published and the doorbell lease.
//                                    With more threads than cores this
//                                    measures the scheduler: a thread that
//                                    waits in ssq_reserve for the device
//                                    cannot run it, so both cores can wait
//                                    for a preempted one.
//   BM_reserve_publish_devthread/threads:N
//                                    the same with the device also running
//                                    on a thread of its own (as a NIC).
//   BM_reserve_publish_combined/threads:N
//                                    BM_reserve_publish through
//                                    ssq_post_write_combined (<ssq/combine.h>):
//                                    a thread that finds another posting
//                                    hands its WRITE over. No poster waits
//                                    for another to take its request (a
//                                    combiner that finds the ring full
//                                    returns -EAGAIN, and its caller runs
//                                    the device), so the device runs as in
//                                    BM_reserve_publish: the two compare
//                                    like for like.
//   BM_reserve_publish_combined_devthread/threads:N
//                                    that with the device on a thread of
//                                    its own: on 2 cores it sets the pace.
#include <benchmark/benchmark.h>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <pthread.h>
#include <ssq/ssq.h>
#include "dv/ctl.h"
#include "emu/emu.h"
#include "emu/testbed_pvt.h"

#ifdef SSQ_LINE_COUNTS
// ssq_micro_lines (cmake -DSSQ_BENCH_LINE_COUNTS=ON): <ssq/queue_pvt.h>'s
// per-thread counts of writes to each shared line, reported per WQE.
__thread uint64_t ssq_line_writes[SSQ_LINE_COUNT];
#endif

namespace
{

constexpr uint32_t kRing = 1024;
constexpr uint32_t kBatch = 32;
constexpr uint32_t kBatchesPerRound = 8; // 256 WQEs between device runs

struct Shared {
	struct emu_tb tb;
	struct ssq_ctl *ctl = nullptr;
	struct ssq_producer prod[SSQ_MAX_PRODUCERS];
	bool ok = false;
	// ssq_write_bw --mode spinlock: one process-shared lock taken around
	// every post and every poll (not around the device: that is the NIC).
	bool locked;
	pthread_spinlock_t lock;

	// With @device_thread the emulated device also runs on a thread of its
	// own, as a NIC runs by itself (combining needs it: a producer waiting
	// for the combiner to post its request does not run the device).
	bool device_thread = false;

	explicit Shared(unsigned producers = 1, bool with_lock = false,
	                bool with_device_thread = false)
	    : locked(with_lock)
	{
		struct emu_dev_attr da = {};
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
		if (!ctl || ssq_ctl_init(ctl, kRing, 64))
			return;
		for (unsigned i = 0; i < producers; i++)
			if (ssq_producer_init(&prod[i], ctl, i, &tb.s[0].sq,
			                      &tb.s[0].scq_v, 1))
				return;
		ok = pthread_spin_init(&lock, PTHREAD_PROCESS_SHARED) == 0;
		if (ok && with_device_thread)
			ok = device_thread = emu_start(tb.dev) == 0;
	}
	~Shared()
	{
		if (device_thread)
			emu_stop(tb.dev);
		emu_tb_fini(&tb);
		free(ctl);
		pthread_spin_destroy(&lock);
	}
	void enter()
	{
		if (locked)
			pthread_spin_lock(&lock);
	}
	void leave()
	{
		if (locked)
			pthread_spin_unlock(&lock);
	}
	// Producer @i's completions, inside the lock when there is one.
	int poll(unsigned i, struct ssq_completion *comp, int max)
	{
		enter();
		int n = ssq_poll(&prod[i], comp, max);
		leave();
		return n;
	}
	// One 64-byte WRITE by producer @i (ssq_post_write), inside the lock
	// when there is one: 0, -EAGAIN (ring full) or another -errno.
	int post_write64(unsigned i, uint64_t off, uint64_t wr_id, unsigned flags,
	                 bool combined = false)
	{
		struct emu_tb_side *a = &tb.s[0], *b = &tb.s[1];

		enter();
		int rc = combined ? ssq_post_write_combined(&prod[i], a->iova + off,
		                                            a->key, 64, b->iova + off,
		                                            b->key, wr_id, flags)
		                  : ssq_post_write(&prod[i], a->iova + off, a->key, 64,
		                                   b->iova + off, b->key, wr_id, flags);
		leave();
		return rc;
	}
	// Let the device run (serialised by its lock), then take our completions.
	void drain(unsigned i, uint64_t *reaped)
	{
		struct ssq_completion comp[16];

		emu_process(tb.dev, 256);
		*reaped += (uint64_t)poll(i, comp, 16);
	}
};

// One reservation of kBatch 64-byte WRITEs, the last one signaled, one submit.
inline bool post_batch(Shared &s)
{
	struct ssq_producer *p = &s.prod[0];
	struct emu_tb_side *a = &s.tb.s[0], *b = &s.tb.s[1];
	uint64_t pos = 0;

	if (ssq_reserve(p, kBatch, &pos) == -EAGAIN)
		return false;
	for (uint32_t k = 0; k < kBatch; k++) {
		uint64_t off = ((pos + k) & 255) * 64;
		unsigned f = k == kBatch - 1 ? SSQ_WQE_SIGNALED : 0;

		ssq_prep_rdma_write(&p->sq, (uint32_t)(pos + k), a->iova + off, a->key,
		                    64, b->iova + off, b->key,
		                    ssq_wqe_flags(p, pos + k, 1, f));
		ssq_publish(p, pos + k, 1, pos + k, f);
	}
	ssq_submit(p);
	return true;
}

// A host-side-only benchmark: each round, @post (producer 0's posting,
// counted in @posted; false: it failed and said why) timed, the emulated
// device's share untimed (a NIC does that on its own silicon), then
// producer 0's polling timed; the rounds' host time is the manual clock.
template <typename Post>
void host_run(benchmark::State &state, Shared &s, const uint64_t &posted, Post post)
{
	using clock = std::chrono::steady_clock;
	struct ssq_completion comp[64];
	uint64_t reaped = 0;

	for (auto _ : state) {
		auto t0 = clock::now();

		if (!post())
			return;
		auto t1 = clock::now();
		emu_process(s.tb.dev, 4096); /* the NIC's share: not timed */
		auto t2 = clock::now();
		for (int n; (n = s.poll(0, comp, 64)) > 0;)
			reaped += (uint64_t)n;
		state.SetIterationTime(
		    std::chrono::duration<double>((t1 - t0) + (clock::now() - t2))
		        .count());
	}
	state.SetItemsProcessed((int64_t)posted);
	state.counters["ns_per_wqe"] = benchmark::Counter(
	    (double)posted, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
	state.counters["completions"] = (double)reaped;
}

void BM_post_write64_batch32(benchmark::State &state)
{
	Shared s;
	uint64_t posted = 0;

	if (!s.ok) {
		state.SkipWithError("shared queue setup failed");
		return;
	}
	host_run(state, s, posted, [&] {
		for (uint32_t i = 0; i < kBatchesPerRound; i++, posted += kBatch)
			if (!post_batch(s)) {
				state.SkipWithError("ring full: the device fell behind");
				return false;
			}
		return true;
	});
}
BENCHMARK(BM_post_write64_batch32)->UseManualTime();

void BM_post_write64_batch32_device(benchmark::State &state)
{
	Shared s;
	uint64_t reaped = 0, posted = 0;

	if (!s.ok) {
		state.SkipWithError("shared queue setup failed");
		return;
	}
	for (auto _ : state) {
		while (!post_batch(s))
			s.drain(0, &reaped);
		posted += kBatch;
		s.drain(0, &reaped);
	}
	state.SetItemsProcessed((int64_t)posted);
	state.counters["completions"] = (double)reaped;
}
BENCHMARK(BM_post_write64_batch32_device);

void BM_post_write64_single(benchmark::State &state)
{
	Shared s;
	uint64_t reaped = 0, posted = 0;

	if (!s.ok) {
		state.SkipWithError("shared queue setup failed");
		return;
	}
	for (auto _ : state) {
		unsigned f = (posted & 31) == 31 ? SSQ_WQE_SIGNALED : 0;

		while (s.post_write64(0, (posted & 255) * 64, posted, f) == -EAGAIN)
			s.drain(0, &reaped);
		posted++;
		if ((posted & 31) == 0)
			s.drain(0, &reaped);
	}
	state.SetItemsProcessed((int64_t)posted);
}
BENCHMARK(BM_post_write64_single);

// Single posts, host side only (the device's share untimed, as in
// BM_post_write64_batch32); with arg 1 every post and every poll inside one
// process-shared spinlock, as ssq_write_bw --mode spinlock does. One thread,
// so the lock is never contended: the ratio of the two is what the lock
// alone adds to a post when the senders only time-slice one core.
void BM_post_write64_single_host(benchmark::State &state)
{
	Shared s(1, state.range(0) != 0);
	uint64_t posted = 0;

	if (!s.ok) {
		state.SkipWithError("shared queue setup failed");
		return;
	}
	host_run(state, s, posted, [&] {
		for (uint32_t k = 0; k < kBatch; k++, posted++)
			if (s.post_write64(0, (posted & 255) * 64, posted,
			                   k == kBatch - 1 ? SSQ_WQE_SIGNALED : 0)) {
				state.SkipWithError(
				    "post failed: the device fell behind");
				return false;
			}
		return true;
	});
}
BENCHMARK(BM_post_write64_single_host)
    ->ArgName("spinlock")
    ->Arg(0)
    ->Arg(1)
    ->UseManualTime();

// One Shared for all threads of a BM_reserve_publish run: the first thread
// in makes it, the last one out frees it.
std::mutex g_mu;
std::shared_ptr<Shared> g_shared;

void reserve_publish(benchmark::State &state, bool combined, bool device_thread)
{
	std::shared_ptr<Shared> sp;
	unsigned me = (unsigned)state.thread_index();
	uint64_t reaped = 0, posted = 0;

	{
		std::lock_guard<std::mutex> g(g_mu);
		if (!g_shared)
			g_shared = std::make_shared<Shared>((unsigned)state.threads(),
			                                    false, device_thread);
		sp = g_shared;
	}
	Shared &s = *sp;
	if (!s.ok) {
		state.SkipWithError("shared queue setup failed");
		return;
	}
	for (auto _ : state) {
		unsigned f = (posted & 31) == 31 ? SSQ_WQE_SIGNALED : 0;
		int rc;

		while ((rc = s.post_write64(me, ((posted + me * 64) & 255) * 64, posted,
		                            f, combined)) == -EAGAIN)
			s.drain(me, &reaped);
		if (rc) {
			state.SkipWithError("post failed");
			break;
		}
		posted++;
		if ((posted & 31) == 0)
			s.drain(me, &reaped);
	}
	state.SetItemsProcessed((int64_t)posted);
#ifdef SSQ_LINE_COUNTS
	// Per WQE this thread posted, averaged over the threads: w_<line>.
	static const char *const names[SSQ_LINE_COUNT] = {
		"w_reserve",  "w_combine", "w_published", "w_doorbell", "w_completed",
		"w_cq_lease", "w_slot",    "w_routed",    "w_hand_own", "w_hand_other"
	};
	double total = 0;
	for (unsigned l = 0; l < SSQ_LINE_COUNT; l++) {
		double v = posted ? (double)ssq_line_writes[l] / (double)posted : 0;

		state.counters[names[l]] =
		    benchmark::Counter(v, benchmark::Counter::kAvgThreads);
		total += v;
		ssq_line_writes[l] = 0;
	}
	state.counters["w_all"] =
	    benchmark::Counter(total, benchmark::Counter::kAvgThreads);
#endif
	std::lock_guard<std::mutex> g(g_mu);
	sp.reset();
	if (g_shared.use_count() == 1)
		g_shared.reset();
}
void BM_reserve_publish(benchmark::State &state)
{
	reserve_publish(state, false, false);
}
BENCHMARK(BM_reserve_publish)->Threads(1)->Threads(2)->Threads(4)->UseRealTime();

void BM_reserve_publish_devthread(benchmark::State &state)
{
	reserve_publish(state, false, true);
}
BENCHMARK(BM_reserve_publish_devthread)
    ->Threads(1)
    ->Threads(2)
    ->Threads(4)
    ->UseRealTime();

void BM_reserve_publish_combined(benchmark::State &state)
{
	reserve_publish(state, true, false);
}
BENCHMARK(BM_reserve_publish_combined)->Threads(1)->Threads(2)->Threads(4)->UseRealTime();

void BM_reserve_publish_combined_devthread(benchmark::State &state)
{
	reserve_publish(state, true, true);
}
BENCHMARK(BM_reserve_publish_combined_devthread)
    ->Threads(1)
    ->Threads(2)
    ->Threads(4)
    ->UseRealTime();

} // namespace
