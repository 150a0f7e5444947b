/* SPDX-License-Identifier: MIT */
/*
 * The emulated wire at the fault rates of ctrl_adv_mem_wire_files and
 * above, in one process: two emulated devices, each with its own wire
 * socket on loopback, stepped in turn by this thread, so every packet sent
 * in a step is in the other's socket at its next step and the outcome
 * depends only on the fault injector's seeds, not on scheduling. ROUNDS
 * times: a 64 KiB RDMA READ (64 responses at MTU 1024), then a FETCH_ADD
 * and a CMP_SWAP on one counter. Wanted: every WQE completes without error
 * (a live peer behind a lossy wire never runs out of retries), every byte
 * read is right, every atomic returns the counter as it was, and the
 * counter ends at 2 * ROUNDS: nothing lost, nothing executed twice.
 *
 * The loss rates are ones a live RC link survives: at 5 % drop each way a
 * retransmission fails (the request or its answer lost) about 10 % of the
 * time, and the requester gives up only after retry_cnt + 1 = 8 failed ACK
 * periods in a row (about 1e-8): one go-back and one retry counted per
 * expiry of the local ACK timer, as the kernel's soft RoCE counts them
 * (drivers/infiniband/sw/rxe/rxe_comp.c: rxe_completer, a timer expiry sets
 * comp.timeout_retry and COMPST_ERROR_RETRY takes one off retry_cnt).
 * Duplication and reordering run
 * high: they are what a responder must survive without executing anything
 * twice. At 20 % drop a live peer runs out of retries now and then, on a
 * NIC too, so no test runs there (ctrl_adv_mem_wire_files did, and failed
 * one run in about fifty with TRANSPORT_RETRY_EXC_ERR on its 64 KiB READ).
 *
 * Then the peer is off the CPU (its device not stepped, its socket open
 * with our packets unread) for three times timeout * (retry_cnt + 1): the
 * requester waits for it, as for a NIC, whose responder answers whether
 * its host runs or not (before wire_peer.c it gave up with
 * TRANSPORT_RETRY_EXC_ERR); once stepped again the WQE completes. And
 * then the peer dies (its device and socket closed): the requester gives
 * up with TRANSPORT_RETRY_EXC_ERR, no sooner than timeout * (retry_cnt + 1).
 */
#include <time.h>
#include "helpers.h"
#include "emu/testbed_pvt.h"

enum {
	MEM_LEN = 1 << 20,
	SRC_OFF = 0,       /* B: the bytes READ, 64 KiB */
	DST_OFF = 0x20000, /* A: where they land */
	CNT_OFF = 0x40000, /* B: the counter */
	OLD_OFF = 0x40100, /* A: the atomics' old values */
	LEN = 64 * 1024,
	ROUNDS = 150,
	TIMEOUT = 8, /* 4.096 us * 2^8 = 1 ms: the emulation's floor */
	RETRY = 7,
};

#define OFF_CPU_S 0.3

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* One host: a device with a wire, side 0's QP used, side 1's idle. */
static int host_init(struct emu_tb *tb, const char *fault, char *addr, size_t len)
{
	const struct emu_tb_opts o = { .rq_cnt = 16, .mem_len = MEM_LEN };
	struct emu_wire_fault f;
	int ret = emu_tb_host(tb, &o);

	if (!ret)
		ret = emu_wire_open(tb->dev, "127.0.0.1:0", addr, len);
	if (!ret)
		ret = emu_wire_parse_fault(fault, &f);
	if (!ret)
		ret = emu_wire_set_fault(tb->dev, &f);
	return ret;
}

/* RESET -> RTS facing QP @dest at wire address @peer; PSNs @rq, @sq. */
static int connect_remote(struct emu_qp *qp, const char *peer, uint32_t dest, uint32_t rq,
                          uint32_t sq)
{
	const struct emu_tb_rts_attr w = {
		.rq_psn = rq,
		.sq_psn = sq,
		.timeout = TIMEOUT,
		.retry_cnt = RETRY,
		.max_rd_atomic = 1,
		.min_rnr_timer = 12,
	};

	return emu_tb_wire_connect(qp, peer, dest, &w);
}

/* Step A, and B unless @b_dead, until A's send CQ has a CQE or @secs pass. */
static int step_until_cqe(struct emu_tb *a, struct emu_tb *b, int b_dead,
                          struct ssq_cqe *e, double secs)
{
	double end = now_s() + secs;

	do {
		if (ssq_cq_poll(&a->s[0].scq_v, e, 1) == 1)
			return 1;
		emu_process(a->dev, 1024);
		if (!b_dead)
			emu_process(b->dev, 1024);
	} while (now_s() < end);
	return 0;
}

static uint64_t u64_at(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* Post on A's side 0 and ring; @atomic_op 0: READ. */
static void post(struct emu_tb *a, const struct emu_tb_side *bs, uint8_t atomic_op,
                 uint64_t compare_add, uint64_t swap)
{
	struct emu_tb_side *s = &a->s[0];
	uint32_t pi = s->sq.pi;
	int n;

	if (!atomic_op)
		n = ssq_prep_rdma_read(&s->sq, pi, s->iova + DST_OFF, s->key, LEN,
		                       bs->iova + SRC_OFF, bs->key, SSQ_WQE_SIGNALED);
	else
		n = ssq_prep_atomic(&s->sq, pi, atomic_op, s->iova + OLD_OFF, s->key,
		                    bs->iova + CNT_OFF, bs->key, compare_add, swap,
		                    SSQ_WQE_SIGNALED);
	CHECK(n == 1, "prep: %d", n);
	s->sq.pi += (uint32_t)n;
	emu_tb_ring(a, 0, pi);
}

/* Run one WQE to its CQE; 0 when it completed without error. */
static int run_one(struct emu_tb *a, struct emu_tb *b, const char *what, unsigned r)
{
	struct ssq_cqe e;

	if (!step_until_cqe(a, b, 0, &e, 30)) {
		CHECK(0, "round %u: %s: no CQE in 30 s", r, what);
		return -1;
	}
	CHECK(e.opcode == MLX5_CQE_REQ && e.status == IBV_WC_SUCCESS,
	      "round %u: %s: opcode %u syndrome 0x%x", r, what, e.opcode, e.syndrome);
	return e.opcode == MLX5_CQE_REQ ? 0 : -1;
}

static void test_lossy(const char *fault_a, const char *fault_b)
{
	struct emu_tb a, b;
	struct emu_tb_side *as, *bs, b0;
	struct emu_wire_stats st;
	char addr_a[64], addr_b[64];
	uint64_t want = 0;
	unsigned r, k, bad_bytes = 0, bad_old = 0;
	struct ssq_cqe e;
	double t0, dt, bound;
	int ret;

	ret = host_init(&a, fault_a, addr_a, sizeof(addr_a));
	if (!ret)
		ret = host_init(&b, fault_b, addr_b, sizeof(addr_b));
	if (!ret)
		ret = connect_remote(a.s[0].qp, addr_b, b.s[0].qpn, 0x10, 0xfffff0);
	if (!ret)
		ret = connect_remote(b.s[0].qp, addr_a, a.s[0].qpn, 0xfffff0, 0x10);
	CHECK(ret == 0, "%s: setup: %d", fault_a, ret);
	if (ret)
		return;
	as = &a.s[0];
	bs = &b.s[0];
	for (k = 0; k < LEN; k++)
		bs->mem[SRC_OFF + k] = (uint8_t)(k * 13 + 1 + (k >> 10));
	for (r = 0; r < ROUNDS; r++) {
		memset(as->mem + DST_OFF, 0, LEN);
		post(&a, bs, 0, 0, 0);
		if (run_one(&a, &b, "64 KiB READ", r))
			break;
		bad_bytes += memcmp(as->mem + DST_OFF, bs->mem + SRC_OFF, LEN) != 0;
		memset(as->mem + OLD_OFF, 0xff, 8);
		post(&a, bs, MLX5_OPCODE_ATOMIC_FA, 1, 0);
		if (run_one(&a, &b, "FETCH_ADD", r))
			break;
		bad_old += u64_at(as->mem + OLD_OFF) != want++;
		memset(as->mem + OLD_OFF, 0xff, 8);
		post(&a, bs, MLX5_OPCODE_ATOMIC_CS, want, want + 1);
		if (run_one(&a, &b, "CMP_SWAP", r))
			break;
		bad_old += u64_at(as->mem + OLD_OFF) != want++;
	}
	CHECK(r == ROUNDS, "%s: %u of %u rounds", fault_a, r, ROUNDS);
	CHECK(bad_bytes == 0, "%s: %u READs brought back other bytes", fault_a,
	      bad_bytes);
	CHECK(bad_old == 0, "%s: %u atomics returned another old value", fault_a,
	      bad_old);
	CHECK(u64_at(bs->mem + CNT_OFF) == want,
	      "%s: counter %llu, want %llu: an atomic lost or executed twice", fault_a,
	      (unsigned long long)u64_at(bs->mem + CNT_OFF), (unsigned long long)want);
	CHECK(emu_wire_stats(a.dev, &st) == 0, "stats");
	printf("%s: %u rounds; A sent %llu packets, %llu dropped, %llu duplicated, %llu "
	       "held; %llu timeouts\n",
	       fault_a, r, (unsigned long long)st.tx_pkts, (unsigned long long)st.dropped,
	       (unsigned long long)st.duplicated, (unsigned long long)st.held,
	       (unsigned long long)st.timeouts);
	CHECK(st.dropped > 10 && st.duplicated > 100 && st.held > 100,
	      "%s: the faults fired", fault_a);

	/*
	 * B off the CPU (not stepped, its socket open and unread) for
	 * OFF_CPU_S, six times as long as A took to give up on a dead B
	 * (8.4 ms of timers, ~47 ms with this loop's own pace and the
	 * faults): A's FETCH_ADD waits for it, as for a NIC, which answers
	 * whether its host runs or not; once B runs again it completes, and
	 * the counter moved once.
	 */
	if (r == ROUNDS) {
		uint64_t waits = st.peer_waits;

		bound = 4.096e-6 * (1 << TIMEOUT) * (RETRY + 1);
		post(&a, bs, MLX5_OPCODE_ATOMIC_FA, 1, 0);
		CHECK(!step_until_cqe(&a, &b, 1, &e, OFF_CPU_S),
		      "%s: B off the CPU %.0f ms: a CQE came (opcode %u syndrome 0x%x)",
		      fault_a, OFF_CPU_S * 1e3, e.opcode, e.syndrome);
		CHECK(emu_wire_stats(a.dev, &st) == 0 && st.peer_waits > waits,
		      "%s: B off the CPU: %llu expiries waited for it", fault_a,
		      (unsigned long long)(st.peer_waits - waits));
		bad_old = run_one(&a, &b, "FETCH_ADD after B ran again", r) ||
		          u64_at(as->mem + OLD_OFF) != want++;
		CHECK(!bad_old && u64_at(bs->mem + CNT_OFF) == want,
		      "%s: the FETCH_ADD B was off the CPU for: old %llu, counter %llu",
		      fault_a, (unsigned long long)u64_at(as->mem + OLD_OFF),
		      (unsigned long long)u64_at(bs->mem + CNT_OFF));
	}

	/* B dies (its device and socket closed): A's FETCH_ADD runs out of
	 * retries, no sooner than timeout * (retry_cnt + 1). */
	b0 = *bs; /* its IOVA and key, for a WQE nobody will answer */
	emu_tb_fini(&b);
	if (r == ROUNDS) {
		post(&a, &b0, MLX5_OPCODE_ATOMIC_FA, 1, 0);
		t0 = now_s();
		CHECK(step_until_cqe(&a, &b, 1, &e, 30), "%s: dead peer: CQE", fault_a);
		dt = now_s() - t0;
		CHECK(e.opcode == MLX5_CQE_REQ_ERR &&
		          e.syndrome == MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR,
		      "%s: dead peer: opcode %u syndrome 0x%x", fault_a, e.opcode,
		      e.syndrome);
		CHECK(dt >= bound * 0.95,
		      "%s: dead peer: error after %.2f ms, bound %.2f", fault_a, dt * 1e3,
		      bound * 1e3);
		printf("%s: dead peer: TRANSPORT_RETRY_EXC_ERR after %.2f ms (timeout x "
		       "(retry_cnt + 1) = %.2f ms)\n",
		       fault_a, dt * 1e3, bound * 1e3);
	}
	emu_tb_fini(&a);
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	/* ctrl_adv_mem_wire_files' first setting, then more of each fault. */
	test_lossy("drop=0.05,dup=0.2,reorder=0.2,seed=3",
	           "drop=0.05,dup=0.2,reorder=0.2,seed=4");
	test_lossy("drop=0.1,dup=0.3,reorder=0.3,seed=5",
	           "drop=0.1,dup=0.3,reorder=0.3,seed=6");
	return test_exit("test_emu_wire_lossy");
}
