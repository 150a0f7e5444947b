/* SPDX-License-Identifier: MIT */
/*
 * Responder scatter-to-CQE, as a ConnectX does it by default: libmlx5
 * asks for it on every QP (rdma-core v44 providers/mlx5/verbs.c
 * create_qp, MLX5_QP_FLAG_SCATTER_CQE unless MLX5_SCATTER_TO_CQE=0) and
 * the kernel gives an RC QP with 64-byte CQEs cs_res =
 * MLX5_RES_SCAT_DATA32_CQE (drivers/infiniband/hw/mlx5/qp.c,
 * configure_responder_scat_cqe). On the emulated device, in loopback
 * between its ports and over its wire:
 *  - a SEND / SEND_IMM of 1..32 bytes: op_own carries
 *    MLX5_INLINE_SCATTER_32, the payload is in the CQE's first bytes
 *    (where libmlx5's handle_responder hands it to mlx5_copy_to_recv_wqe),
 *    and the receive buffer is untouched;
 *  - 33 bytes: into the buffer, no flag;
 *  - a QP made with disable_scatter_to_cqe (what
 *    MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE gives): always the buffer.
 */
#include <unistd.h>
#include "helpers.h"
#include "tb_flow.h"

#define BUF_OFF 0x1000
#define SLOT    256

/* The next raw CQE of @cq, running @n devices between looks; NULL: none. */
static struct mlx5_cqe64 *next_cqe(struct emu_dev **devs, int n, struct ssq_cq *cq)
{
	struct mlx5_cqe64 *cqe = NULL;
	int tries, i;

	for (tries = 0; tries < 2000 && !cqe; tries++) {
		cqe = ssq_cq_peek(cq);
		for (i = 0; !cqe && i < n; i++)
			emu_process(devs[i], 1024);
		if (!cqe && tries > 100)
			usleep(100);
	}
	return cqe;
}

/*
 * One SEND of @len bytes from side @a's memory to @b's receive buffer @k
 * (posted by the caller); checks where the payload went.
 */
static void one(struct emu_dev **devs, int n, struct emu_tb_side *a,
                struct emu_tb_side *b, unsigned k, uint32_t len, int imm, int scatter)
{
	uint8_t *src = a->mem, *dst = b->mem + BUF_OFF + (size_t)k * SLOT;
	struct mlx5_cqe64 *cqe;
	struct ssq_cqe c;
	uint32_t pi = a->sq.pi, i;
	int want_scat = scatter && len <= 32;

	for (i = 0; i < len; i++)
		src[i] = (uint8_t)(0x30 + k * 11 + i);
	memset(dst, 0xee, SLOT);
	a->sq.pi += ssq_prep_send(
	    &a->sq, pi, imm ? MLX5_OPCODE_SEND_IMM : MLX5_OPCODE_SEND, a->iova, a->key,
	    len, imm ? htobe32(0x5150 + k) : 0, SSQ_WQE_SIGNALED);
	ssq_sq_ring_db(&a->sq, a->sq.pi,
	               (const struct mlx5_wqe_ctrl_seg *)ssq_sq_wqebb(&a->sq, pi));
	cqe = next_cqe(devs, n, &b->rcq_v);
	CHECK(cqe != NULL, "%u-byte SEND%s: a receive CQE", len, imm ? "_IMM" : "");
	if (!cqe)
		return;
	ssq_cqe_decode(cqe, &c);
	CHECK(c.status == IBV_WC_SUCCESS && c.byte_len == len &&
	          c.opcode == (imm ? MLX5_CQE_RESP_SEND_IMM : MLX5_CQE_RESP_SEND),
	      "%u-byte SEND: status %d byte_len %u opcode 0x%x", len, c.status,
	      c.byte_len, c.opcode);
	CHECK(!!(cqe->op_own & MLX5_INLINE_SCATTER_32) == want_scat &&
	          !(cqe->op_own & MLX5_INLINE_SCATTER_64),
	      "%u-byte SEND%s (scatter %s): op_own 0x%02x", len, imm ? "_IMM" : "",
	      scatter ? "on" : "off", cqe->op_own);
	if (want_scat) {
		CHECK(!memcmp(cqe, src, len), "%u-byte SEND: the payload in the CQE",
		      len);
		CHECK(dst[0] == 0xee && dst[len - 1] == 0xee,
		      "%u-byte SEND: the receive buffer untouched", len);
	} else {
		CHECK(!memcmp(dst, src, len), "%u-byte SEND: the payload in the buffer",
		      len);
	}
	b->rcq_v.ci++;
	ssq_cq_update_ci(&b->rcq_v);
	for (i = 0; i < 2000 && ssq_cq_poll(&a->scq_v, &c, 1) == 0; i++) {
		emu_process(devs[0], 1024);
		if (n > 1)
			emu_process(devs[1], 1024);
	}
}

static void post_recvs(struct emu_tb_side *s, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		struct ibv_sge sge = { s->iova + BUF_OFF + (uint64_t)i * SLOT, SLOT,
			               s->key };

		CHECK(ssq_rq_post_recv(&s->rq, &sge, 1) == 0, "post recv %u", i);
	}
	ssq_rq_ring(&s->rq);
}

static const uint32_t lens[] = { 1, 7, 32, 33, 200 };
#define NLENS (sizeof(lens) / sizeof(lens[0]))

static void loopback(int scatter)
{
	struct emu_tb_opts o = { 0 };
	struct emu_tb tb;
	struct emu_dev *devs[1];
	unsigned k;
	int ret;

	o.no_scatter = !scatter;
	ret = emu_tb_init(&tb, &o);
	CHECK(ret == 0, "testbed: %d", ret);
	if (ret)
		return;
	devs[0] = tb.dev;
	post_recvs(&tb.s[1], NLENS + 1);
	for (k = 0; k < NLENS; k++)
		one(devs, 1, &tb.s[0], &tb.s[1], k, lens[k], 0, scatter);
	one(devs, 1, &tb.s[0], &tb.s[1], NLENS, 5, 1, scatter);
	printf("loopback, scatter-to-CQE %s: SENDs of 1..200 bytes where a ConnectX "
	       "puts them\n",
	       scatter ? "on (default)" : "off");
	emu_tb_fini(&tb);
}

static void wire(void)
{
	struct emu_tb h[2];
	struct emu_dev *devs[2];
	unsigned k;
	int ret = emu_tb_wire_init(h);

	CHECK(ret == 0, "wire testbed: %d", ret);
	if (ret)
		return;
	devs[0] = h[0].dev;
	devs[1] = h[1].dev;
	post_recvs(&h[1].s[0], NLENS + 1);
	for (k = 0; k < NLENS; k++)
		one(devs, 2, &h[0].s[0], &h[1].s[0], k, lens[k], 0, 1);
	one(devs, 2, &h[0].s[0], &h[1].s[0], NLENS, 32, 1, 1);
	printf("wire, scatter-to-CQE on (default): likewise\n");
	tb_wire_down(h);
}

int main(void)
{
	loopback(1);
	loopback(0);
	wire();
	return test_exit("emu_scatter_cqe");
}
