/* SPDX-License-Identifier: MIT */
/*
 * Per-buffer keys, ssqd's default (no flag), on the emulated device: every
 * ssq_buf_alloc buffer has keys of its own, and the arena-wide key reaches
 * nothing remote (test_ctrl_mem_wire shows it from a peer host, and that
 * --arena-rkey gives the old arena-wide key back).
 *  - two buffers, two keys, neither the arena's; a WRITE to a buffer at its
 *    remote descriptor lands;
 *  - a WRITE to the same buffer with the arena's rkey (what
 *    ssq_queue_peer_rkey gives) fails with REM_ACCESS_ERR, nothing lands;
 *  - the arena's key still serves local access (a WRITE's source);
 *  - a buffer another client allocated and exposed is reachable at its
 *    descriptor until that client frees it, then its key reaches nothing.
 */
#include "stall_flow.h"

int main(void)
{
	struct ssq_client *b;
	struct ssq_buf x, any;
	struct conn a;
	uint32_t arena_key;
	pid_t d;
	int st;

	d = stall_ssqd_up("buffer-keys");
	if (d < 0)
		return 1;
	if (conn_open(&a) || ssq_client_connect(sock_path, &b)) {
		kill(d, SIGKILL);
		return 1;
	}
	arena_key = ssq_queue_peer_rkey(a.q); /* loopback: this ssqd's arena key */
	CHECK(ssq_buf_at(a.c, a.src.off, 64, &any) == 0 && any.lkey == arena_key,
	      "the arena's key, as ssq_buf_at gives it");
	CHECK(a.src.rkey != a.dst.rkey && a.src.rkey != arena_key &&
	          a.dst.rkey != arena_key,
	      "each buffer its own key (src 0x%x, dst 0x%x, arena 0x%x)", a.src.rkey,
	      a.dst.rkey, arena_key);

	memset(a.src.addr, 0x5a, 64);
	memset(a.dst.addr, 0, 64);
	st = write_status(&a, a.src.iova, a.src.lkey, a.dst.remote_addr, a.dst.rkey, 1);
	CHECK(st == IBV_WC_SUCCESS && ((uint8_t *)a.dst.addr)[63] == 0x5a,
	      "WRITE at dst's descriptor: status %d", st);
	memset(a.dst.addr, 0, 64);
	st = write_status(&a, a.src.iova, a.src.lkey, a.dst.iova, arena_key, 2);
	CHECK(st == IBV_WC_REM_ACCESS_ERR && ((uint8_t *)a.dst.addr)[0] == 0,
	      "WRITE with the arena's rkey: status %d, want %d, nothing landed", st,
	      IBV_WC_REM_ACCESS_ERR);
	CHECK(ssq_queue_recover(a.q) == 0, "recover: %s", ssq_client_error(a.c));
	st = write_status(&a, a.src.iova, arena_key, a.dst.remote_addr, a.dst.rkey, 3);
	CHECK(st == IBV_WC_SUCCESS, "the arena's key as a WRITE's source (local): %d",
	      st);

	CHECK(ssq_buf_alloc(b, 4096, &x) == 0, "client B's buffer");
	memset(x.addr, 0, 64);
	st = write_status(&a, a.src.iova, a.src.lkey, x.remote_addr, x.rkey, 4);
	CHECK(st == IBV_WC_SUCCESS && ((uint8_t *)x.addr)[0] == 0x5a,
	      "WRITE at B's exposed buffer: %d", st);
	CHECK(ssq_buf_free(b, &x) == 0, "B frees it");
	st = write_status(&a, a.src.iova, a.src.lkey, x.remote_addr, x.rkey, 5);
	CHECK(st == IBV_WC_REM_ACCESS_ERR, "WRITE with a freed buffer's key: %d, want %d",
	      st, IBV_WC_REM_ACCESS_ERR);
	CHECK(ssq_queue_recover(a.q) == 0, "recover: %s", ssq_client_error(a.c));

	ssq_client_close(b);
	ssq_client_close(a.c);
	stall_ssqd_down(d);
	return test_exit("ctrl_buffer_keys");
}
