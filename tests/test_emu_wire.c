/* SPDX-License-Identifier: MIT */
/*
 * The emulated wire: RC between two emulated devices in two processes over
 * UDP on loopback. A fork()ed child is the remote host (its own device, two
 * QPs, receive buffers); it reports every responder CQE, with a hash of the
 * bytes received, through a pipe, and hashes its memory on request. The
 * parent posts WRITEs, READs, atomics and SENDs (single and multi-packet,
 * across a PSN wrap), checks every CQE at both ends and the bytes, then
 * the same under 5% drop + duplicate + reorder + delay (every SEND arrives
 * exactly once, in order; every READ brings back what the WRITE before it
 * put there; FETCH_ADD k returns k), RNR retry exhaustion, a bad R_Key, and a killed
 * remote host (TRANSPORT_RETRY_EXC_ERR and flushes within timeout * (retry_cnt + 1)).
 * And a requester whose max_rd_atomic exceeds the responder's
 * max_dest_rd_atomic: the request beyond the responder's resources gets
 * REM_INV_REQ_ERR, is not executed, and the rest is flushed.
 */
#include "lib/tlib.h"
#include "wire_flow.h"

/* Clean wire: every opcode, single and multi-packet, both ends checked. */
static void test_clean(void)
{
	struct conn c;
	struct emu_tb_side *a;
	struct ssq_cqe e;
	uint16_t idx;
	double t0, dt;
	int ret;

	ret = conn_open(&c, NULL, 0);
	CHECK(ret == 0, "clean: setup");
	if (ret) {
		conn_close(&c, 1);
		return;
	}
	a = &c.tb.s[0];
	fill(a->mem, 65536, 1);

	/* PSNs start at 0xfffff0: the 10-packet WRITE crosses the wrap. */
	idx = post(&c, 0, MLX5_OPCODE_RDMA_WRITE, 0, 100, 0x1000, 0, SSQ_WQE_SIGNALED);
	CHECK(wait_cqe(&c, &a->scq_v, &e, 5), "WRITE 100: CQE");
	check_req(&e, idx, a->qpn, "WRITE 100");
	idx =
	    post(&c, 0, MLX5_OPCODE_RDMA_WRITE, 200, 10000, 0x2000, 0, SSQ_WQE_SIGNALED);
	CHECK(wait_cqe(&c, &a->scq_v, &e, 5), "WRITE 10000: CQE");
	check_req(&e, idx, a->qpn, "WRITE 10000");
	CHECK(remote_hash(&c, 0x1000, 100) == fnv(a->mem, 100), "WRITE 100: bytes");
	CHECK(remote_hash(&c, 0x2000, 10000) == fnv(a->mem + 200, 10000),
	      "WRITE 10000: bytes");

	/* READs: one response packet, then ten (responses across the wrap). */
	idx =
	    post(&c, 0, MLX5_OPCODE_RDMA_READ, 0x30000, 100, 0x1000, 0, SSQ_WQE_SIGNALED);
	CHECK(wait_cqe(&c, &a->scq_v, &e, 5), "READ 100: CQE");
	check_req(&e, idx, a->qpn, "READ 100");
	CHECK(e.byte_len == 100, "READ 100: byte_len %u", e.byte_len);
	CHECK(!memcmp(a->mem + 0x30000, a->mem, 100), "READ 100: bytes");
	idx = post(&c, 0, MLX5_OPCODE_RDMA_READ, 0x40000, 10000, 0x2000, 0,
	           SSQ_WQE_SIGNALED);
	CHECK(wait_cqe(&c, &a->scq_v, &e, 5), "READ 10000: CQE");
	check_req(&e, idx, a->qpn, "READ 10000");
	CHECK(e.byte_len == 10000, "READ 10000: byte_len %u", e.byte_len);
	CHECK(!memcmp(a->mem + 0x40000, a->mem + 200, 10000), "READ 10000: bytes");

	/* Atomics on the child's (zeroed) 0x7000: +5, then 5 -> 42. */
	idx = post_atomic(&c, MLX5_OPCODE_ATOMIC_FA, 0x50000, 0x7000, 5, 0);
	CHECK(wait_cqe(&c, &a->scq_v, &e, 5), "FETCH_ADD: CQE");
	check_req(&e, idx, a->qpn, "FETCH_ADD");
	CHECK(e.byte_len == 8, "FETCH_ADD: byte_len %u", e.byte_len);
	CHECK(u64_at(a->mem + 0x50000) == 0, "FETCH_ADD: old value");
	idx = post_atomic(&c, MLX5_OPCODE_ATOMIC_CS, 0x50008, 0x7000, 5, 42);
	CHECK(wait_cqe(&c, &a->scq_v, &e, 5), "CMP_SWAP: CQE");
	check_req(&e, idx, a->qpn, "CMP_SWAP");
	CHECK(u64_at(a->mem + 0x50008) == 5, "CMP_SWAP: old value %llu",
	      (unsigned long long)u64_at(a->mem + 0x50008));
	{
		uint64_t want = 42;

		CHECK(remote_hash(&c, 0x7000, 8) == fnv((uint8_t *)&want, 8),
		      "CMP_SWAP: target is 42");
	}

	/* Unsignaled, then signaled: one CQE, the second's index. */
	post(&c, 0, MLX5_OPCODE_RDMA_WRITE, 300, 2048, 0x5000, 0, 0);
	idx = post(&c, 0, MLX5_OPCODE_RDMA_WRITE, 400, 1, 0x5800, 0, SSQ_WQE_SIGNALED);
	CHECK(wait_cqe(&c, &a->scq_v, &e, 5), "unsignaled + signaled: CQE");
	check_req(&e, idx, a->qpn, "unsignaled + signaled");
	CHECK(remote_hash(&c, 0x5000, 2048) == fnv(a->mem + 300, 2048),
	      "unsignaled WRITE: bytes");

	idx = post(&c, 0, MLX5_OPCODE_RDMA_WRITE_IMM, 500, 3000, 0x6000,
	           htobe32(0xabcdef01), SSQ_WQE_SIGNALED);
	CHECK(wait_cqe(&c, &a->scq_v, &e, 5), "WRITE_IMM: CQE");
	check_req(&e, idx, a->qpn, "WRITE_IMM");
	check_resp(&c, MLX5_CQE_RESP_WR_IMM, 0, 3000, htobe32(0xabcdef01), NULL,
	           "WRITE_IMM resp");
	CHECK(remote_hash(&c, 0x6000, 3000) == fnv(a->mem + 500, 3000),
	      "WRITE_IMM: bytes");

	idx = post(&c, 0, MLX5_OPCODE_SEND, 600, 200, 0, 0, SSQ_WQE_SIGNALED);
	CHECK(wait_cqe(&c, &a->scq_v, &e, 5), "SEND 200: CQE");
	check_req(&e, idx, a->qpn, "SEND 200");
	check_resp(&c, MLX5_CQE_RESP_SEND, 1, 200, 0, a->mem + 600, "SEND 200 resp");

	idx = post(&c, 0, MLX5_OPCODE_SEND_IMM, 700, 5000, 0, htobe32(0x5eed),
	           SSQ_WQE_SIGNALED);
	CHECK(wait_cqe(&c, &a->scq_v, &e, 5), "SEND_IMM 5000: CQE");
	check_req(&e, idx, a->qpn, "SEND_IMM 5000");
	check_resp(&c, MLX5_CQE_RESP_SEND_IMM, 2, 5000, htobe32(0x5eed), a->mem + 700,
	           "SEND_IMM 5000 resp");

	/* RNR: the child's QP 1 has no receive posted; rnr_retry 2 means
	 * three RNR NAKs and two waits of the responder's timer (1.28 ms). */
	t0 = now_s();
	idx = post(&c, 1, MLX5_OPCODE_SEND, 0, 64, 0, 0, SSQ_WQE_SIGNALED);
	CHECK(wait_cqe(&c, &c.tb.s[1].scq_v, &e, 5), "RNR: CQE");
	dt = now_s() - t0;
	CHECK(e.opcode == MLX5_CQE_REQ_ERR &&
	          e.syndrome == MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR,
	      "RNR: opcode %u syndrome 0x%x", e.opcode, e.syndrome);
	CHECK(e.wqe_counter == idx, "RNR: wqe_counter %u", e.wqe_counter);
	CHECK(dt >= 2 * 0.00128, "RNR: failed after %.3f ms, before 2 RNR timers",
	      dt * 1e3);
	CHECK(emu_qp_state(c.tb.s[1].qp) == IBV_QPS_ERR, "RNR: QP in ERR");

	/* A bad R_Key: REMOTE_ACCESS_ERR, the next WQE flushed. */
	{
		uint32_t pi = a->sq.pi;

		a->sq.pi += (uint32_t)ssq_prep_rdma_write(
		    &a->sq, pi, a->iova, a->key, 64, c.peer.iova[0], c.peer.key[0] ^ 0x80,
		    SSQ_WQE_SIGNALED);
		a->sq.pi += (uint32_t)ssq_prep_rdma_write(
		    &a->sq, pi + 1, a->iova, a->key, 64, c.peer.iova[0], c.peer.key[0],
		    SSQ_WQE_SIGNALED);
		emu_tb_ring(&c.tb, 0, pi + 1);
		CHECK(wait_cqe(&c, &a->scq_v, &e, 5), "bad rkey: CQE");
		CHECK(e.opcode == MLX5_CQE_REQ_ERR &&
		          e.syndrome == MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR &&
		          e.wqe_counter == (uint16_t)pi,
		      "bad rkey: opcode %u syndrome 0x%x wqe_counter %u", e.opcode,
		      e.syndrome, e.wqe_counter);
		CHECK(wait_cqe(&c, &a->scq_v, &e, 5), "bad rkey: flush CQE");
		CHECK(e.opcode == MLX5_CQE_REQ_ERR &&
		          e.syndrome == MLX5_CQE_SYNDROME_WR_FLUSH_ERR &&
		          e.wqe_counter == (uint16_t)(pi + 1),
		      "bad rkey: flush opcode %u syndrome 0x%x wqe_counter %u", e.opcode,
		      e.syndrome, e.wqe_counter);
	}
	ret = conn_close(&c, 0);
	CHECK(ret == 0, "clean: child exit %d", ret);
	emu_tb_fini(&c.tb);
}

/*
 * Lossy wire both ways: 5% drop, duplicate, reorder and delay. WRITEs into
 * a log region and SENDs carrying their sequence number; every SEND must
 * arrive exactly once and in order, every REQ CQE in order, every byte
 * right. Then the remote host is killed.
 */
static void test_lossy_and_kill(void)
{
	enum { N = 300, MAXOUT = 24 };
	struct emu_wire_fault f;
	struct conn c;
	struct emu_tb_side *a;
	struct ssq_cqe e;
	struct msg m;
	uint32_t posted = 0, done = 0, got = 0, k, first_pi;
	uint64_t h;
	double t0, last, dt, bound, waited;
	int ret, i;

	/* The child's device runs its own thread here. */
	ret = conn_open(
	    &c, "drop=0.05,dup=0.05,reorder=0.05,delay=0.05,delay_us=300,seed=7", 1);
	CHECK(ret == 0, "lossy: setup");
	if (ret) {
		conn_close(&c, 1);
		return;
	}
	a = &c.tb.s[0];
	CHECK(emu_wire_parse_fault("drop=0.05,dup=0.05,reorder=0.05,delay=0.05,seed=11",
	                           &f) == 0,
	      "parse fault");
	CHECK(emu_wire_set_fault(c.tb.dev, &f) == 0, "set fault");
	for (k = 0; k < N; k++) {
		fill(a->mem + LOG_OFF + (size_t)k * 2048, 1500, k);
		fill(a->mem + RECV_OFF + (size_t)(k % 64) * 4096, 3000, k + 1000);
	}
	first_pi = a->sq.pi;
	t0 = now_s();
	/* Four WQEs per k: WRITE k, READ it back (with the gap after it: two
	 * response packets), FETCH_ADD 1 to the counter (old value must be k:
	 * executed exactly once, in order), SEND k (3 packets, seq in front). */
	/*
	 * 2 s on a quiet machine, 10-20 s with three to six busy loops
	 * beside it on two cores, and more on a CI machine loaded further
	 * (162 of 300 SENDs in, against the 15 s limit this loop once had):
	 * its length is the machine's, not the transport's. What would be a
	 * hang is no WQE completing for 30 s, 400 times the retransmit
	 * timeout: the limit runs from the last completion, not the start.
	 */
	last = t0;
	while (done < 4 * N && now_s() - last < 30) {
		while (posted < 4 * N && posted - done < MAXOUT) {
			k = posted / 4;
			if (posted % 4 == 2) {
				post_atomic(&c, MLX5_OPCODE_ATOMIC_FA, ATOM_OFF + k * 8,
				            CNT_OFF, 1, 0);
			} else if (posted % 4 == 0) {
				post(&c, 0, MLX5_OPCODE_RDMA_WRITE, LOG_OFF + k * 2048,
				     1500, LOG_OFF + (uint64_t)k * 2048, 0,
				     SSQ_WQE_SIGNALED);
			} else if (posted % 4 == 1) {
				post(&c, 0, MLX5_OPCODE_RDMA_READ, READ_OFF + k * 2048,
				     2048, LOG_OFF + (uint64_t)k * 2048, 0,
				     SSQ_WQE_SIGNALED);
			} else {
				uint8_t *p = a->mem + RECV_OFF + (size_t)(k % 64) * 4096;

				/* The buffer is reused 64 SENDs later, long after
				 * this one completed (MAXOUT < 64). */
				fill(p, 3000, k + 1000);
				memcpy(p, &k, 4);
				post(&c, 0, MLX5_OPCODE_SEND, RECV_OFF + (k % 64) * 4096,
				     3000, 0, 0, SSQ_WQE_SIGNALED);
			}
			posted++;
		}
		emu_process(c.tb.dev, 1024);
		while (ssq_cq_poll(&a->scq_v, &e, 1) == 1) {
			check_req(&e, (uint16_t)(first_pi + done), a->qpn, "lossy REQ");
			done++;
			last = now_s();
		}
		while (poll(&(struct pollfd){ c.rep, POLLIN, 0 }, 1, 0) == 1) {
			uint8_t exp[3000];

			if (xfer(c.rep, &m, 0))
				break;
			fill(exp, 3000, got + 1000);
			memcpy(exp, &got, 4);
			CHECK(m.opcode == MLX5_CQE_RESP_SEND && m.byte_len == 3000 &&
			          m.seq == got && m.hash == fnv(exp, 3000),
			      "lossy SEND %u: opcode %u len %u seq %u", got, m.opcode,
			      m.byte_len, m.seq);
			got++;
		}
	}
	CHECK(done == 4 * N, "lossy: %u of %u WQEs completed (none in the last %.0f s)",
	      done, 4 * N, now_s() - last);
	for (k = 0; k < N; k++)
		if (u64_at(a->mem + ATOM_OFF + (size_t)k * 8) != k)
			break;
	CHECK(k == N, "lossy: FETCH_ADD %u returned %llu", k,
	      k < N ? (unsigned long long)u64_at(a->mem + ATOM_OFF + (size_t)k * 8)
	            : 0ull);
	for (k = 0; k < N; k++)
		if (memcmp(a->mem + READ_OFF + (size_t)k * 2048,
		           a->mem + LOG_OFF + (size_t)k * 2048, 2048))
			break;
	CHECK(k == N, "lossy: READ %u brought back other bytes", k);
	/* The last reports may still be in the pipe. */
	while (got < N && wait_report(&c, &m, 5)) {
		CHECK(m.seq == got, "lossy SEND %u: seq %u", got, m.seq);
		got++;
	}
	CHECK(got == N, "lossy: %u of %u SENDs received", got, N);
	{
		uint64_t want = N;

		CHECK(remote_hash(&c, CNT_OFF, 8) == fnv((uint8_t *)&want, 8),
		      "lossy: counter is %u", N);
	}
	h = fnv(a->mem + LOG_OFF, (size_t)N * 2048 - 548);
	CHECK(remote_hash(&c, LOG_OFF, (uint64_t)N * 2048 - 548) == h,
	      "lossy: log bytes");
	{
		struct emu_wire_stats st;

		CHECK(emu_wire_stats(c.tb.dev, &st) == 0, "stats");
		printf(
		    "lossy: %u WQEs in %.2f s; parent sent %llu packets: %llu dropped, "
		    "%llu duplicated, %llu held, %llu retransmitted, %llu timeouts\n",
		    4 * N, now_s() - t0, (unsigned long long)st.tx_pkts,
		    (unsigned long long)st.dropped, (unsigned long long)st.duplicated,
		    (unsigned long long)st.held, (unsigned long long)st.retransmits,
		    (unsigned long long)st.timeouts);
		/* 300 * (2 + 3) request packets at 5% each: the faults did fire
		 * and the transport recovered from them. */
		CHECK(st.dropped > 10 && st.duplicated > 10 && st.held > 10,
		      "lossy: faults fired (%llu dropped, %llu dup, %llu held)",
		      (unsigned long long)st.dropped, (unsigned long long)st.duplicated,
		      (unsigned long long)st.held);
		CHECK(st.retransmits > 0, "lossy: retransmissions happened");
	}

	/* The remote host dies: retries run out, then flushes. */
	CHECK(emu_wire_set_fault(c.tb.dev, NULL) == 0, "clear fault");
	ret = conn_close(&c, 1);
	first_pi = a->sq.pi;
	/*
	 * This process is the requester's device: its timer fires when this
	 * loop runs after the deadline, never before it, so the error comes no
	 * earlier than the bound, and later by the time it spent waiting for
	 * a CPU (a loaded runner: seconds). That wait is not counted in the
	 * upper bound (t_proc_run_wait).
	 */
	waited = t_proc_run_wait(0);
	t0 = now_s();
	for (i = 0; i < 3; i++)
		post(&c, 0, MLX5_OPCODE_RDMA_WRITE, 0, 100, 0, 0, SSQ_WQE_SIGNALED);
	bound = 4.096e-6 * (1 << TIMEOUT) * (RETRY + 1);
	CHECK(wait_cqe(&c, &a->scq_v, &e, bound + 60), "kill: CQE");
	dt = now_s() - t0;
	waited = waited < 0 ? 0 : t_proc_run_wait(0) - waited;
	CHECK(e.opcode == MLX5_CQE_REQ_ERR &&
	          e.syndrome == MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR &&
	          e.wqe_counter == (uint16_t)first_pi,
	      "kill: opcode %u syndrome 0x%x wqe_counter %u", e.opcode, e.syndrome,
	      e.wqe_counter);
	CHECK(dt >= bound * 0.95 && dt - waited < bound + 2.0,
	      "kill: error after %.1f ms (%.1f ms of it waiting for a CPU), bound %.1f",
	      dt * 1e3, waited * 1e3, bound * 1e3);
	for (i = 1; i < 3; i++) {
		CHECK(wait_cqe(&c, &a->scq_v, &e, 30), "kill: flush %d", i);
		CHECK(e.opcode == MLX5_CQE_REQ_ERR &&
		          e.syndrome == MLX5_CQE_SYNDROME_WR_FLUSH_ERR &&
		          e.wqe_counter == (uint16_t)(first_pi + i),
		      "kill: flush %d: opcode %u syndrome 0x%x wqe_counter %u", i,
		      e.opcode, e.syndrome, e.wqe_counter);
	}
	CHECK(emu_qp_state(a->qp) == IBV_QPS_ERR, "kill: QP in ERR");
	printf("kill: TRANSPORT_RETRY_EXC_ERR after %.1f ms, %.1f ms of it waiting for a "
	       "CPU (timeout x (retry_cnt + 1) = %.1f ms)\n",
	       dt * 1e3, waited * 1e3, bound * 1e3);
	emu_tb_fini(&c.tb);
}

/* The API's argument checks. */
static void test_api(void)
{
	struct emu_wire_fault f;
	struct emu_tb tb;
	char addr[64], small[4];

	CHECK(emu_wire_parse_fault("drop=2", &f) == -EINVAL, "drop=2 refused");
	CHECK(emu_wire_parse_fault("bogus=1", &f) == -EINVAL, "bogus refused");
	CHECK(emu_wire_parse_fault("dup=0.5,delay_us=10,seed=3", &f) == 0 &&
	          f.dup == 0.5 && f.delay_us == 10 && f.seed == 3,
	      "parse dup/delay_us/seed");
	if (host_init(&tb)) {
		CHECK(0, "api: setup");
		return;
	}
	CHECK(emu_qp_set_remote(tb.s[0].qp, "127.0.0.1:1") == -EINVAL,
	      "set_remote without a wire");
	CHECK(emu_wire_set_fault(tb.dev, NULL) == -EINVAL, "set_fault without a wire");
	CHECK(emu_wire_open(tb.dev, "localhost:0", addr, sizeof(addr)) == -EINVAL,
	      "bad bind address");
	CHECK(emu_wire_open(tb.dev, NULL, small, sizeof(small)) == -ENOSPC,
	      "small output");
	CHECK(emu_wire_open(tb.dev, NULL, addr, sizeof(addr)) == 0, "open");
	CHECK(!strncmp(addr, "127.0.0.1:", 10) && atoi(addr + 10) > 0, "bound %s", addr);
	CHECK(emu_wire_open(tb.dev, NULL, addr, sizeof(addr)) == -EEXIST, "open twice");
	CHECK(emu_qp_set_remote(tb.s[0].qp, "127.0.0.1") == -EINVAL, "no port");
	CHECK(emu_qp_set_remote(tb.s[0].qp, addr) == 0, "set_remote");
	CHECK(emu_qp_set_remote(tb.s[0].qp, NULL) == 0, "set_remote back to local");
	emu_tb_fini(&tb);
}

/*
 * The requester may have 4 READs/atomics outstanding, the responder holds
 * 1 (max_dest_rd_atomic): READ, FETCH_ADD, READ, READ posted together. The
 * first READ is answered; the FETCH_ADD is the second outstanding, beyond
 * the responder's resources: NAK Invalid Request, REM_INV_REQ_ERR at the
 * requester, the counter untouched, the READs after it flushed.
 */
static void test_rd_atomic_over(void)
{
	struct conn c;
	struct emu_tb_side *a;
	struct ssq_cqe e;
	struct msg m;
	uint64_t before;
	uint32_t pi;
	int ret, k;

	req_rd_atomic = 4;
	ret = conn_open(&c, NULL, 0);
	req_rd_atomic = 1;
	CHECK(ret == 0, "rd_atomic: setup");
	if (ret) {
		conn_close(&c, 1);
		return;
	}
	a = &c.tb.s[0];
	before = remote_hash(&c, CNT_OFF, 8);
	pi = a->sq.pi;
	post(&c, 0, MLX5_OPCODE_RDMA_READ, READ_OFF, 64, LOG_OFF, 0, SSQ_WQE_SIGNALED);
	post_atomic(&c, MLX5_OPCODE_ATOMIC_FA, ATOM_OFF, CNT_OFF, 1, 0);
	post(&c, 0, MLX5_OPCODE_RDMA_READ, READ_OFF + 64, 64, LOG_OFF, 0,
	     SSQ_WQE_SIGNALED);
	post(&c, 0, MLX5_OPCODE_RDMA_READ, READ_OFF + 128, 64, LOG_OFF, 0,
	     SSQ_WQE_SIGNALED);
	CHECK(wait_cqe(&c, &a->scq_v, &e, 5), "rd_atomic: first READ's CQE");
	check_req(&e, (uint16_t)pi, a->qpn, "rd_atomic: READ within the resources");
	CHECK(wait_cqe(&c, &a->scq_v, &e, 5), "rd_atomic: FETCH_ADD's CQE");
	CHECK(e.opcode == MLX5_CQE_REQ_ERR &&
	          e.syndrome == MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR &&
	          e.status == IBV_WC_REM_INV_REQ_ERR &&
	          e.wqe_counter == (uint16_t)(pi + 1),
	      "rd_atomic: beyond max_dest_rd_atomic: opcode %u syndrome 0x%x "
	      "wqe_counter %u",
	      e.opcode, e.syndrome, e.wqe_counter);
	for (k = 2; k < 4; k++) {
		CHECK(wait_cqe(&c, &a->scq_v, &e, 5), "rd_atomic: flush CQE %d", k);
		CHECK(e.opcode == MLX5_CQE_REQ_ERR &&
		          e.syndrome == MLX5_CQE_SYNDROME_WR_FLUSH_ERR &&
		          e.wqe_counter == (uint16_t)(pi + (uint32_t)k),
		      "rd_atomic: flush %d: opcode %u syndrome 0x%x", k, e.opcode,
		      e.syndrome);
	}
	/* The responder's QP went to ERR: its receives come back flushed first. */
	memset(&m, 0, sizeof(m));
	m.type = M_HASH;
	m.off = CNT_OFF;
	m.len = 8;
	CHECK(xfer(c.cmd, &m, 1) == 0, "rd_atomic: ask for the counter");
	for (k = 0; k < NRECV + 1 && wait_report(&c, &m, 5) && m.type != M_HASH; k++)
		CHECK(m.opcode == MLX5_CQE_RESP_ERR &&
		          m.syndrome == MLX5_CQE_SYNDROME_WR_FLUSH_ERR,
		      "rd_atomic: responder CQE opcode %u syndrome 0x%x", m.opcode,
		      m.syndrome);
	CHECK(m.type == M_HASH && before && m.hash == before,
	      "rd_atomic: the refused FETCH_ADD did not execute");
	ret = conn_close(&c, 0);
	CHECK(ret == 0, "rd_atomic: child exit %d", ret);
	emu_tb_fini(&c.tb);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	test_api();
	test_clean();
	test_rd_atomic_over();
	test_lossy_and_kill();
	return test_exit("test_emu_wire");
}
