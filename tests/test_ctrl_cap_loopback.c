/* SPDX-License-Identifier: MIT */
/*
 * Grants without peers (issue 28 item 1): on a loopback ssqd the window is
 * bound to the queue's other end, inside ssqd, where this host's WQEs
 * arrive. A buffer granted on "q0" is written and read with the
 * descriptor's key; past the range, with the wrong access, and after
 * ssq_desc_revoke that key reaches nothing (IBV_WC_REM_ACCESS_ERR, no byte
 * moved); a registration's grant (ssq_mem_grant) may not exceed the access
 * it was registered with; a freed buffer's grants go with it.
 * Before: no ssq_buf_grant.
 */
#include "cap_flow.h"

int main(void)
{
	char sock[108], *mem = NULL;
	struct ssq_client *c = NULL;
	struct ssq_queue *q = NULL;
	struct ssq_buf src, dst;
	struct ssq_desc dsc;
	struct ssq_mr mr;
	pid_t pid;
	int st, rc;

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	signal(SIGPIPE, SIG_IGN);
	t_rssqd_grants = 1;
	snprintf(sock, sizeof(sock), "/tmp/ssq-cap-loop-%d.sock", (int)getpid());
	pid = t_rssqd_start(sock, RDEPTH, RMAX, NULL, NULL, NULL, 0);
	c = t_ssqd_connect(sock, pid);
	if (!c || ssq_queue_open(c, "q0", &q) || ssq_buf_alloc(c, 4096, &src) ||
	    ssq_buf_alloc(c, 4096, &dst)) {
		CHECK(0, "set-up: %s", c ? ssq_client_error(c) : "no client");
		goto out;
	}
	memset(src.addr, 's', 4096);
	memset(dst.addr, 'd', 4096);
	rc = ssq_buf_grant(c, "q0", &dst, 512, 512, IBV_ACCESS_REMOTE_WRITE, &dsc);
	CHECK(rc == 0, "grant: %d %s", rc, ssq_client_error(c));
	CHECK(dsc.remote_addr == dst.remote_addr + 512 && dsc.length == 512,
	      "descriptor 0x%llx +%llu", (unsigned long long)dsc.remote_addr,
	      (unsigned long long)dsc.length);
	st = cap_one(q, IBV_WR_RDMA_WRITE, &src, dsc.remote_addr, dsc.rkey, 1);
	CHECK(st == IBV_WC_SUCCESS, "WRITE through the window: %d", st);
	CHECK(((char *)dst.addr)[512] == 's' && ((char *)dst.addr)[511] == 'd',
	      "WRITE landed wrong");
	st = cap_one(q, IBV_WR_RDMA_READ, &src, dsc.remote_addr, dsc.rkey, 2);
	CHECK(st == IBV_WC_REM_ACCESS_ERR, "READ through a write-only window: %d", st);
	CHECK(ssq_queue_recover(q) == 0, "recover: %s", ssq_client_error(c));
	CHECK(ssq_desc_revoke(c, &dsc) == 0, "revoke: %s", ssq_client_error(c));
	memset(src.addr, 'x', 64);
	st = cap_one(q, IBV_WR_RDMA_WRITE, &src, dsc.remote_addr, dsc.rkey, 3);
	CHECK(st == IBV_WC_REM_ACCESS_ERR, "WRITE after revoke: %d", st);
	CHECK(((char *)dst.addr)[512] == 's', "WRITE after revoke landed");
	CHECK(ssq_queue_recover(q) == 0, "recover: %s", ssq_client_error(c));
	CHECK(ssq_buf_grant(c, "q0", &dst, 4000, 200, IBV_ACCESS_REMOTE_WRITE, &dsc) ==
	          -ERANGE,
	      "grant past the buffer");
	CHECK(ssq_buf_grant(c, "nope", &dst, 0, 64, IBV_ACCESS_REMOTE_WRITE, &dsc) ==
	          -ENOENT,
	      "grant on no queue");

	/* A registration: grants within what it was registered for. */
	mem = calloc(1, 4096);
	rc = mem ? ssq_mem_reg(c, mem, 4096,
	                       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ, &mr)
	         : -ENOMEM;
	CHECK(rc == 0, "mem_reg: %d %s", rc, ssq_client_error(c));
	if (rc)
		goto out;
	CHECK(ssq_mem_grant(c, "q0", &mr, 0, 64, IBV_ACCESS_REMOTE_WRITE, &dsc) ==
	          -EACCES,
	      "a write grant of a read-only registration");
	rc = ssq_mem_grant(c, "q0", &mr, 0, 4096, IBV_ACCESS_REMOTE_READ, &dsc);
	CHECK(rc == 0, "mem grant: %d %s", rc, ssq_client_error(c));
	strcpy(mem, "registered bytes");
	memset(src.addr, 0, 64);
	st = cap_one(q, IBV_WR_RDMA_READ, &src, dsc.remote_addr, dsc.rkey, 4);
	CHECK(st == IBV_WC_SUCCESS && !strcmp(src.addr, "registered bytes"),
	      "READ of the registration's grant: %d", st);
	/* Its grants go with it: deregistered, the key reaches nothing. */
	CHECK(ssq_mem_dereg(c, &mr) == 0, "dereg: %s", ssq_client_error(c));
	st = cap_one(q, IBV_WR_RDMA_READ, &src, dsc.remote_addr, dsc.rkey, 5);
	CHECK(st == IBV_WC_REM_ACCESS_ERR, "READ after dereg: %d", st);
	CHECK(ssq_queue_recover(q) == 0, "recover: %s", ssq_client_error(c));
	/* A buffer's too. */
	rc = ssq_buf_grant(c, "q0", &dst, 0, 64, IBV_ACCESS_REMOTE_READ, &dsc);
	CHECK(rc == 0 && ssq_buf_free(c, &dst) == 0, "grant, then free: %d %s", rc,
	      ssq_client_error(c));
	st = cap_one(q, IBV_WR_RDMA_READ, &src, dsc.remote_addr, dsc.rkey, 6);
	CHECK(st == IBV_WC_REM_ACCESS_ERR, "READ after free: %d", st);
out:
	if (q)
		ssq_queue_close(q);
	ssq_client_close(c);
	free(mem);
	CHECK(t_ssqd_stop_ok(pid, &st, sock), "ssqd exit status 0x%x", st);
	return test_exit("ctrl_cap_loopback");
}
