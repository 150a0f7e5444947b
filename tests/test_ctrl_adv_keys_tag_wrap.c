/* SPDX-License-Identifier: MIT */
/*
 * Adversary, per-buffer keys (ssqd's default): "a freed buffer's key reaches
 * nothing".
 * Client B exposes a buffer (its remote descriptor goes to a peer) and frees
 * it.  Client C, any other client of the same ssqd, then allocates and
 * frees buffers of the same size.  ssqd's first-fit arena gives the same
 * offset again, the emulated device the same (lowest free) MR slot, and its
 * 8-bit key tag wraps after 255 registrations: the freed descriptor
 * (remote_addr, rkey) is byte for byte C's new buffer's, and a WRITE a peer
 * still sends there lands in C's memory.
 * Fails while a buffer's key can come back at the same address.
 */
#include "stall_flow.h"

int main(void)
{
	struct ssq_client *b, *c;
	struct ssq_buf x, y;
	struct conn a;
	uint64_t stale_addr;
	uint32_t stale_key;
	int i, st, hit = -1;
	pid_t d;

	d = stall_ssqd_up("adv-keys-tag");
	if (d < 0)
		return 1;
	if (conn_open(&a) || ssq_client_connect(sock_path, &b) ||
	    ssq_client_connect(sock_path, &c)) {
		kill(d, SIGKILL);
		return 1;
	}
	CHECK(ssq_buf_alloc(b, 4096, &x) == 0, "B's buffer");
	stale_addr = x.remote_addr;
	stale_key = x.rkey;
	CHECK(ssq_buf_free(b, &x) == 0, "B frees it (its descriptor stays with a peer)");
	for (i = 0; i < 600 && hit < 0; i++) {
		if (ssq_buf_alloc(c, 4096, &y)) {
			fprintf(stderr, "alloc %d: %s\n", i, ssq_client_error(c));
			break;
		}
		if (y.remote_addr == stale_addr && y.rkey == stale_key) {
			hit = i;
			break;
		}
		CHECK(ssq_buf_free(c, &y) == 0, "C frees %d", i);
	}
	if (hit >= 0) {
		memset(a.src.addr, 0x5a, 64);
		memset(y.addr, 0, 64);
		st = write_status(&a, a.src.iova, a.src.lkey, stale_addr, stale_key, 1);
		fprintf(
		    stderr,
		    "C's allocation %d has B's freed descriptor (0x%llx, 0x%x); a WRITE "
		    "there: status %d, C's byte 0x%02x\n",
		    hit, (unsigned long long)stale_addr, stale_key, st,
		    ((uint8_t *)y.addr)[0]);
		ssq_buf_free(c, &y);
	}
	CHECK(hit < 0,
	      "a freed buffer's descriptor came back as another client's "
	      "buffer after %d alloc/free cycles",
	      hit);
	ssq_client_close(c);
	ssq_client_close(b);
	ssq_client_close(a.c);
	stall_ssqd_down(d);
	return test_exit("ctrl_adv_keys_tag_wrap");
}
