/* SPDX-License-Identifier: MIT */
/*
 * SENDs of 1, 7, 32, 33 and 4096 bytes into the receive pool, on
 * test_device(), each read back through ssq_recv_copy with its length and
 * every byte checked, then SEND_IMMs of 1 and 32 bytes with their
 * immediates.
 *
 * Hardware review 2026-11-28 N2: libmlx5 creates every QP with responder
 * scatter-to-CQE unless told not to (providers/mlx5/verbs.c create_qp,
 * MLX5_QP_FLAG_SCATTER_CQE), and a ConnectX then writes a SEND of at most
 * 32 bytes into the receive CQE (MLX5_INLINE_SCATTER_32), not the buffer:
 * ssqd's pool, which reaps through mlx5dv and points readers at the
 * buffer, logged the right length over stale bytes. The emulated device
 * does the same unless the QP is made with disable_scatter_to_cqe, as
 * backend_mlx5.c now makes its QPs with
 * MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE. Before the fix the 1-, 7- and
 * 32-byte messages (and the small SEND_IMMs) failed here; 33 and 4096
 * passed.
 */
#include "ctrl_flow.h"

static const uint32_t lens[] = { 1, 7, 32, 33, 4096 };
#define NLENS (sizeof(lens) / sizeof(lens[0]))

/* Message @k's payload: bytes no other message or stale buffer holds. */
static uint8_t pattern(unsigned k, uint32_t i)
{
	return (uint8_t)(0x41 + k * 29 + i * 7);
}

/* Post one SEND (@imm nonzero: SEND_IMM) of @len bytes and poll it. */
static int send_one(struct ssq_producer *p, const struct ssq_buf *src, uint32_t len,
                    __be32 imm, uint64_t wr_id)
{
	struct ssq_completion comp = { 0 };
	double t0 = now_s();
	int rc = ssq_post_send(p, imm ? MLX5_OPCODE_SEND_IMM : MLX5_OPCODE_SEND,
	                       src->iova, src->lkey, len, imm, wr_id, SSQ_WQE_SIGNALED);

	if (rc)
		return rc;
	while (now_s() - t0 < 10) {
		rc = ssq_poll(p, &comp, 1);
		if (rc == 1)
			return comp.status == IBV_WC_SUCCESS && comp.wr_id == wr_id
			           ? 0
			           : -EIO;
		if (rc < 0)
			return rc;
		usleep(100);
	}
	return -ETIMEDOUT;
}

/* Message @k read back: its length, opcode, immediate and every byte. */
static void check_msg(struct ssq_queue *q, uint64_t k, unsigned pat, uint32_t len,
                      __be32 imm)
{
	static uint8_t got[4096];
	struct ssq_recv_msg m;
	uint32_t i, bad = len;
	int rc = ssq_recv_wait(q, k, 10000000000ull);

	if (!rc)
		rc = ssq_recv_copy(q, k, got, sizeof(got), &m);
	CHECK(rc == 0, "message %llu (%u bytes): %d", (unsigned long long)k, len, rc);
	if (rc)
		return;
	for (i = 0; i < len && bad == len; i++)
		if (got[i] != pattern(pat, i))
			bad = i;
	CHECK(m.byte_len == len && bad == len,
	      "message %llu: %u bytes, first wrong byte at %u (0x%02x, want 0x%02x): "
	      "want %u bytes as sent",
	      (unsigned long long)k, m.byte_len, bad, bad < len ? got[bad] : 0,
	      bad < len ? pattern(pat, bad) : 0, len);
	CHECK(m.opcode == (imm ? MLX5_CQE_RESP_SEND_IMM : MLX5_CQE_RESP_SEND) &&
	          m.imm == imm,
	      "message %llu: opcode 0x%x imm 0x%x", (unsigned long long)k, m.opcode,
	      be32toh(m.imm));
	printf("%u-byte SEND%s: %s\n", len, imm ? "_IMM" : "",
	       m.byte_len == len && bad == len ? "read back whole" : "WRONG");
}

int main(void)
{
	struct ssq_buf a = { 0 }, b = { 0 }, src = { 0 };
	struct ssq_client *c = NULL;
	struct ssq_queue *q = NULL;
	struct ssq_producer *p;
	uint64_t first, k;
	unsigned i;
	pid_t d;

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	d = flow_start_q0("recv-small", &c, &q, &a, &b);
	CHECK(d >= 0, "ssqd on %s serves a client", test_device());
	if (d < 0)
		return test_exit("ctrl_recv_small");
	CHECK(ssq_buf_alloc(c, 4096, &src) == 0, "a 4096-byte buffer: %s",
	      ssq_client_error(c));
	CHECK(ssq_recv_depth(q) > 0 && ssq_recv_size(q) >= 4096,
	      "a receive pool of 4096-byte buffers (depth %u, size %u)",
	      ssq_recv_depth(q), ssq_recv_size(q));
	if (!src.addr || !ssq_recv_depth(q))
		goto out;
	p = ssq_queue_producer(q);
	first = ssq_recv_arrived(q);
	/*
	 * Every buffer of the pool first holds a 4096-byte message of its own
	 * pattern, so a small message that never reaches its buffer shows
	 * stale bytes there, not zeroes that might pass for data.
	 */
	for (k = 0; k < 2ull * ssq_recv_depth(q) && k < 512; k++) {
		uint32_t j;

		for (j = 0; j < 4096; j++)
			((uint8_t *)src.addr)[j] = (uint8_t)(0xf0 ^ k ^ j);
		if (send_one(p, &src, 4096, 0, 1000 + k)) {
			CHECK(0, "filler SEND %llu failed", (unsigned long long)k);
			goto out;
		}
	}
	first += k; /* nobody else sends: the fillers are messages first.. */
	for (i = 0; i < NLENS + 2; i++) {
		uint32_t len = i < NLENS ? lens[i] : (i == NLENS ? 1 : 32), j;
		__be32 imm = i < NLENS ? 0 : htobe32(0xabc0 + i);
		int rc;

		for (j = 0; j < len; j++)
			((uint8_t *)src.addr)[j] = pattern(i, j);
		rc = send_one(p, &src, len, imm, i + 1);
		CHECK(rc == 0, "%u-byte SEND%s: %d", len, imm ? "_IMM" : "", rc);
		if (!rc)
			check_msg(q, first + i, i, len, imm);
	}
out:
	ssq_client_close(c);
	t_ssqd_stop(d, NULL, sock_path);
	return test_exit("ctrl_recv_small");
}
