/* SPDX-License-Identifier: MIT */
/*
 * A static buffer registered with ssq_mem_reg on the emulated device, as
 * ibv_reg_mr takes it (issue 28: refused as "a file mapping"). An
 * initialised static array lives in the program's .data, a private mapping
 * of the executable file whose pages stay the file's until written; the
 * pages past the first are never touched before the registration. A
 * writable registration makes them private copies first, as ib_umem_get's
 * FOLL_WRITE pin does, and ssqd takes them: a WRITE from an arena buffer
 * lands in the static buffer and a READ from it comes back whole.
 */
#include "ssq_flow.h"

#define SPAN (3 * 4096)

static char sock_path[108];

static char sbuf[SPAN] __attribute__((aligned(4096))) = { 1 };

/* The inode of the mapping holding @p (from /proc/self/maps), or 0. */
static unsigned long mapping_inode(const void *p)
{
	unsigned long long lo, hi;
	unsigned long inode = 0, ino;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx-%llx %*s %*s %*s %lu", &lo, &hi, &ino) == 3 &&
		    (uintptr_t)p >= lo && (uintptr_t)p < hi)
			inode = ino;
	if (f)
		fclose(f);
	return inode;
}

/* The next completion's status, waiting up to 10 s; -1 if none. */
static int wait_one(struct ssq_producer *p)
{
	struct ssq_completion comp;
	double t0 = now_s();

	while (now_s() - t0 < 10) {
		if (ssq_poll(p, &comp, 1) == 1)
			return (int)comp.status;
		usleep(100);
	}
	return -1;
}

int main(void)
{
	struct ssq_client *c;
	struct ssq_queue *q = NULL;
	struct ssq_buf src, back;
	struct ssq_producer *p;
	struct ssq_mr mr;
	int rc, st, status, i;
	pid_t d;

	t_need_ssqd();
	snprintf(sock_path, sizeof(sock_path), "/tmp/ssq-static-%d.sock", getpid());
	CHECK(mapping_inode(sbuf + 4096) != 0,
	      "the static buffer is not in a file mapping: the test shows nothing");
	c = ssqd_start(sock_path, "8", "256", NULL, &d);
	if (!c) {
		fprintf(stderr, "ssqd did not start\n");
		return 1;
	}
	CHECK(ssq_queue_open(c, "q0", &q) == 0 && ssq_buf_alloc(c, SPAN, &src) == 0 &&
	          ssq_buf_alloc(c, SPAN, &back) == 0,
	      "setup: %s", ssq_client_error(c));
	rc = ssq_mem_reg(c, sbuf, SPAN,
	                 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
	                     IBV_ACCESS_REMOTE_READ,
	                 &mr);
	CHECK(rc == 0, "ssq_mem_reg of a %d-byte static buffer: %d (%s)", SPAN, rc,
	      ssq_client_error(c));
	if (!rc && q) {
		p = ssq_queue_producer(q);
		for (i = 0; i < SPAN; i++)
			((uint8_t *)src.addr)[i] = (uint8_t)(i * 13 + 7);
		rc = ssq_post_write(p, src.iova, src.lkey, SPAN, mr.remote_addr, mr.rkey,
		                    1, SSQ_WQE_SIGNALED);
		st = rc ? -1 : wait_one(p);
		CHECK(st == IBV_WC_SUCCESS, "WRITE into the static buffer: %d, status %d",
		      rc, st);
		CHECK(memcmp(sbuf, src.addr, SPAN) == 0,
		      "the WRITE did not land in the static buffer");
		struct ibv_sge sge = { back.iova, SPAN, back.lkey };
		struct ibv_send_wr wr, *bad = NULL;

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 2;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_RDMA_READ;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.rdma.remote_addr = mr.remote_addr;
		wr.wr.rdma.rkey = mr.rkey;
		rc = ssq_post_wr(p, &wr, &bad);
		st = rc ? -1 : wait_one(p);
		CHECK(st == IBV_WC_SUCCESS && memcmp(back.addr, sbuf, SPAN) == 0,
		      "READ from the static buffer: %d, status %d", rc, st);
		CHECK(ssq_mem_dereg(c, &mr) == 0, "dereg: %s", ssq_client_error(c));
	}
	ssq_client_close(c);
	CHECK(t_ssqd_stop_ok(d, &status, NULL), "ssqd exit 0x%x", status);
	unlink(sock_path);
	return test_exit("ctrl_mem_static");
}
