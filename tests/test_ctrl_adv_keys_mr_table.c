/* SPDX-License-Identifier: MIT */
/*
 * Adversary, per-buffer keys (ssqd's default): every buffer takes a device
 * MR, and the MR table is shared with ssq_mem_reg.  Four clients of one uid
 * (a uid may hold half of ssqd's 256 connections) take --max-client-bufs
 * (1024) small buffers each: without a per-uid count of keyed buffers the
 * emulated device's MR slots are gone, and another client can register
 * none of its own memory (ssq_mem_reg).  With ssqd --arena-rkey the same
 * buffers cost no MR and ssq_mem_reg works.
 * Fails while one uid's buffers can take every MR of the device.
 * Also: a normal program meets its own --max-client-bufs first (1024 small
 * buffers), and the uid's limit, when it comes, names itself and the flag.
 */
#include "stall_flow.h"

#define HOGS 4

int main(void)
{
	static char mem[4096] __attribute__((aligned(4096)));
	struct ssq_client *hog[HOGS], *e;
	struct ssq_buf x;
	struct ssq_mr mr;
	unsigned n = 0;
	int h, rc;
	pid_t d;

	d = stall_ssqd_up("adv-keys-mr");
	if (d < 0)
		return 1;
	for (h = 0; h < HOGS; h++) {
		if (ssq_client_connect(sock_path, &hog[h])) {
			kill(d, SIGKILL);
			return 1;
		}
		while (!(rc = ssq_buf_alloc(hog[h], 64, &x)))
			n++;
		fprintf(stderr, "hog %d: stopped at %u buffers in all: %s\n", h, n,
		        ssq_client_error(hog[h]));
		if (h == 0)
			CHECK(rc == -EDQUOT && n == 1024 &&
			          strstr(ssq_client_error(hog[h]), "--max-client-bufs"),
			      "one client meets its own --max-client-bufs (1024) first: "
			      "%u buffers, %d: %s",
			      n, rc, ssq_client_error(hog[h]));
	}
	CHECK(rc == -EDQUOT && n == 2048 &&
	          strstr(ssq_client_error(hog[HOGS - 1]), "2048") &&
	          strstr(ssq_client_error(hog[HOGS - 1]), "--arena-rkey"),
	      "the uid's limit of keyed buffers names itself and --arena-rkey: %u "
	      "buffers, %d: %s",
	      n, rc, ssq_client_error(hog[HOGS - 1]));
	if (ssq_client_connect(sock_path, &e)) {
		kill(d, SIGKILL);
		return 1;
	}
	memset(mem, 1, sizeof(mem));
	rc = ssq_mem_reg(e, mem, sizeof(mem),
	                 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &mr);
	fprintf(stderr, "another client's ssq_mem_reg after %u buffers: %d (%s)\n", n, rc,
	        rc ? ssq_client_error(e) : "ok");
	CHECK(rc == 0, "one uid's %u small buffers took every MR: ssq_mem_reg %d", n, rc);
	if (!rc)
		ssq_mem_dereg(e, &mr);
	ssq_client_close(e);
	for (h = 0; h < HOGS; h++)
		ssq_client_close(hog[h]);
	stall_ssqd_down(d);
	return test_exit("ctrl_adv_keys_mr_table");
}
