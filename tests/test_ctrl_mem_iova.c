/* SPDX-License-Identifier: MIT */
/*
 * ssq_mem_reg of malloc'd memory on test_device(): the registration's
 * iova and remote_addr are the registered address, and a WRITE from an
 * arena buffer into it at remote_addr + 64 and a READ back from it
 * through its lkey both complete and move the bytes.
 *
 * Hardware review 2026-11-28 N3: on a ConnectX ssqd takes the client's MR
 * over with ibv_import_mr, whose addr is NULL (libibverbs cmd_mr.c,
 * ibv_cmd_query_mr), and handed that back as the IOVA: iova and
 * remote_addr were 0, and every WQE built from them failed its key check
 * (a protection error, the shared QP in ERR). The emulated device takes
 * the address from the request itself and never showed it.
 */
#include "ctrl_flow.h"

#define LEN 4096

/* Post @op of @len bytes and poll it: its status, or -1 (none in 10 s). */
static int one(struct ssq_producer *p, enum ibv_wr_opcode op, uint64_t laddr,
               uint32_t lkey, uint32_t len, uint64_t raddr, uint32_t rkey, uint64_t wr_id)
{
	struct ssq_completion comp = { 0 };
	struct ibv_sge sge = { laddr, len, lkey };
	struct ibv_send_wr wr, *bad = NULL;
	double t0 = now_s();

	t_wr_one(&wr, &sge, op, wr_id, raddr, rkey);
	if (ssq_post_wr(p, &wr, &bad))
		return -1;
	while (now_s() - t0 < 10) {
		if (ssq_poll(p, &comp, 1) == 1)
			return comp.wr_id == wr_id ? (int)comp.status : -1;
		usleep(100);
	}
	return -1;
}

int main(void)
{
	struct ssq_buf a = { 0 }, b = { 0 }, arena = { 0 };
	struct ssq_client *c = NULL;
	struct ssq_queue *q = NULL;
	struct ssq_producer *p;
	struct ssq_mr mr;
	uint8_t *mem = NULL;
	int rc, st, i;
	pid_t d;

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	d = flow_start_q0("mem-iova", &c, &q, &a, &b);
	CHECK(d >= 0, "ssqd on %s serves a client", test_device());
	if (d < 0)
		return test_exit("ctrl_mem_iova");
	CHECK(ssq_buf_alloc(c, LEN, &arena) == 0, "an arena buffer: %s",
	      ssq_client_error(c));
	CHECK(posix_memalign((void **)&mem, 4096, LEN) == 0, "malloc'd memory");
	if (!arena.addr || !mem)
		goto out;
	memset(mem, 0, LEN);
	rc = ssq_mem_reg(c, mem, LEN,
	                 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
	                     IBV_ACCESS_REMOTE_READ,
	                 &mr);
	CHECK(rc == 0, "ssq_mem_reg of %u malloc'd bytes on %s: %d %s", LEN,
	      test_device(), rc, ssq_client_error(c));
	if (rc)
		goto out;
	printf("ssq_mem_reg on %s: address %p, iova 0x%llx, remote_addr 0x%llx\n",
	       test_device(), (void *)mem, (unsigned long long)mr.iova,
	       (unsigned long long)mr.remote_addr);
	CHECK(mr.iova == (uint64_t)(uintptr_t)mem, "iova 0x%llx is the address %p",
	      (unsigned long long)mr.iova, (void *)mem);
	CHECK(mr.remote_addr == (uint64_t)(uintptr_t)mem,
	      "remote_addr 0x%llx is the address %p", (unsigned long long)mr.remote_addr,
	      (void *)mem);
	p = ssq_queue_producer(q);
	for (i = 0; i < 256; i++)
		((uint8_t *)arena.addr)[i] = (uint8_t)(0x80 ^ i);
	st = one(p, IBV_WR_RDMA_WRITE, arena.iova, arena.lkey, 256, mr.remote_addr + 64,
	         mr.rkey, 1);
	CHECK(st == IBV_WC_SUCCESS, "WRITE into it at remote_addr + 64: status %d", st);
	CHECK(mem[64] == 0x80 && mem[64 + 255] == (uint8_t)(0x80 ^ 255) && mem[63] == 0,
	      "the WRITE's bytes at address + 64");
	memset(arena.addr, 0, 256);
	st = one(p, IBV_WR_RDMA_READ, mr.iova + 64, mr.lkey, 256, arena.remote_addr,
	         arena.rkey, 2);
	CHECK(st == IBV_WC_SUCCESS, "READ from the arena into it at iova + 64: status %d",
	      st);
	CHECK(mem[64] == 0 && mem[64 + 255] == 0, "the READ's bytes at address + 64");
	CHECK(ssq_mem_dereg(c, &mr) == 0, "given back: %s", ssq_client_error(c));
out:
	free(mem);
	ssq_client_close(c);
	t_ssqd_stop(d, NULL, sock_path);
	return test_exit("ctrl_mem_iova");
}
