/* SPDX-License-Identifier: MIT */
/*
 * Adversary: ssq_mem_dereg is refused while any WQEBB between a queue's
 * completed and reserved counters holds the registration's key as a
 * big-endian word (clients/mr.c key_in_flight) - including words of
 * another client's inline data. Keys are small and predictable (slot << 8
 * | an 8-bit tag). Client B posts one SEND whose inline data is A's lkey
 * repeated; with ssqd --recv-depth 0 it waits for a receive WQE for ever
 * (as a SEND to a peer that posts none does).
 * Wanted: A gives its memory back (B's WQE cannot use A's registration).
 * Before a fix: -EBUSY for as long as B likes; A cannot revoke remote
 * access to its memory.
 */
#define _GNU_SOURCE
#include "stall_flow.h"

int main(void)
{
	struct conn a, b;
	struct ssq_mr mr;
	uint8_t *mem = malloc(4096);
	uint32_t words[8];
	int i, rc = 0;
	double t0;
	pid_t d;

	t_need_ssqd();
	setvbuf(stdout, NULL, _IONBF, 0);
	setenv("SSQ_TEST_STALL_OPT", "--recv-depth=0", 1);
	d = stall_ssqd_up("adv-wedge");
	if (d < 0 || conn_open(&a) || conn_open(&b) || !mem)
		return 1;
	CHECK(ssq_mem_reg(a.c, mem, 4096,
	                  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &mr) == 0,
	      "A registers: %s", ssq_client_error(a.c));
	for (i = 0; i < 8; i++)
		words[i] = htobe32(mr.lkey);
	{
		struct ibv_sge sge = { (uint64_t)(uintptr_t)words, sizeof(words), 0 };
		struct ibv_send_wr wr, *bad = NULL;

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 1;
		wr.opcode = IBV_WR_SEND;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
		CHECK(ssq_post_wr(b.p, &wr, &bad) == 0,
		      "B's inline SEND of A's key, waiting for a receive WQE");
	}
	t0 = now_s();
	while (now_s() - t0 < 3.0) {
		rc = ssq_mem_dereg(a.c, &mr);
		if (rc != -EBUSY)
			break;
		usleep(100000);
	}
	printf("A's dereg after %.1f s of tries: %d (%s)\n", now_s() - t0, rc,
	       rc ? ssq_client_error(a.c) : "ok");
	CHECK(rc == 0, "A gives back its memory while B holds an unrelated WQE: %d", rc);
	ssq_client_close(a.c);
	ssq_client_close(b.c);
	free(mem);
	stall_ssqd_down(d);
	return test_exit("ctrl_adv_mem_dereg_wedge");
}
