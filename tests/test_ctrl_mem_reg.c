/* SPDX-License-Identifier: MIT */
/*
 * ssq_mem_reg / ssq_mem_reg_fd / ssq_mem_dereg against ssqd on the
 * emulated device (ssqd --recv-depth 0, so a SEND waits for a receive WQE
 * for ever and stays in flight):
 *  1. bad arguments, unmapped, read-only and file-backed memory refused
 *     with the errno ibv_reg_mr gives (or -EOPNOTSUPP, named);
 *  2. zero-copy between two processes' malloc'd memory: A WRITEs from its
 *     buffer into B's, READs it back, FETCH_ADDs in B's memory;
 *  3. a memfd registered by its fd: a WRITE lands at the file offset;
 *  4. B killed: a WRITE to its rkey fails with REM_ACCESS_ERR, nothing lands;
 *  5. A's own registration given back: a READ into it through the old key
 *     fails with LOC_PROT_ERR and leaves the memory as it was;
 *  6. a registration a WQE in flight uses cannot be given back (-EBUSY).
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include "stall_flow.h"

struct remote {
	uint64_t addr;
	uint32_t rkey;
};

/* Post @wr and wait for its completion's status (-1: none within 5 s). */
static int run_wr(struct conn *k, struct ibv_send_wr *wr)
{
	struct ssq_completion comp;
	struct ibv_send_wr *bad = NULL;
	double t0 = now_s();
	int rc;

	wr->send_flags |= IBV_SEND_SIGNALED;
	rc = ssq_post_wr(k->p, wr, &bad);
	if (rc) {
		fprintf(stderr, "ssq_post_wr: %d\n", rc);
		return -1;
	}
	while (now_s() - t0 < 5.0) {
		if (ssq_poll(k->p, &comp, 1) == 1)
			return comp.wr_id == wr->wr_id ? (int)comp.status : -2;
		usleep(100);
	}
	return -1;
}

static int one_wr(struct conn *k, enum ibv_wr_opcode op, void *laddr, uint32_t lkey,
                  uint32_t len, uint64_t raddr, uint32_t rkey, uint64_t wr_id)
{
	struct ibv_sge sge = { (uint64_t)(uintptr_t)laddr, len, lkey };
	struct ibv_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = 5;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	return run_wr(k, &wr);
}

/* B: register 8 KiB of malloc'd memory, tell A where, check what landed. */
static void process_b(int to_a, int from_a)
{
	struct ssq_client *c;
	struct ssq_mr mr;
	struct remote r;
	uint8_t *mem = malloc(8192);
	uint64_t counter;
	char b;
	int i;

	if (!mem || ssq_client_connect(sock_path, &c))
		_exit(3);
	memset(mem, 0, 8192);
	counter = 1000;
	memcpy(mem + 4096, &counter, 8);
	if (ssq_mem_reg(c, mem, 8192,
	                IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
	                    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
	                &mr))
		_exit(4);
	r.addr = mr.remote_addr;
	r.rkey = mr.rkey;
	if (write(to_a, &r, sizeof(r)) != sizeof(r) || read(from_a, &b, 1) != 1)
		_exit(5);
	for (i = 0; i < 256; i++)
		if (mem[i] != (uint8_t)(i ^ 0x5a))
			_exit(6);
	memcpy(&counter, mem + 4096, 8);
	if (counter != 1005)
		_exit(7);
	(void)!write(to_a, "k", 1);
	pause(); /* killed by A */
	_exit(0);
}

static void bad_input(struct ssq_client *c)
{
	struct ssq_mr mr;
	char path[] = "/tmp/ssq-mem-reg-XXXXXX";
	void *ro, *gone, *file;
	int fd, mfd;

	CHECK(ssq_mem_reg(c, NULL, 64, 0, &mr) == -EINVAL, "NULL address: -EINVAL");
	CHECK(ssq_mem_reg(c, &mr, 0, 0, &mr) == -EINVAL, "0 bytes: -EINVAL");
	CHECK(ssq_mem_reg(c, &mr, 8, 0x100, &mr) == -EINVAL, "access 0x100: -EINVAL");
	CHECK(ssq_mem_reg(c, &mr, 8, IBV_ACCESS_REMOTE_WRITE, &mr) == -EINVAL,
	      "remote write without local write: -EINVAL");
	CHECK(strstr(ssq_client_error(c), "LOCAL_WRITE") != NULL, "says why: %s",
	      ssq_client_error(c));
	gone =
	    mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(gone, 8192);
	CHECK(ssq_mem_reg(c, gone, 8192, 0, &mr) == -EFAULT, "unmapped: -EFAULT (%s)",
	      ssq_client_error(c));
	ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(ssq_mem_reg(c, ro, 4096, IBV_ACCESS_LOCAL_WRITE, &mr) == -EFAULT,
	      "read-only memory for writing: -EFAULT (%s)", ssq_client_error(c));
	CHECK(ssq_mem_reg(c, ro, 4096, IBV_ACCESS_REMOTE_READ, &mr) == 0,
	      "read-only memory for reading: %s", ssq_client_error(c));
	CHECK(ssq_mem_dereg(c, &mr) == 0, "dereg: %s", ssq_client_error(c));
	CHECK(ssq_mem_dereg(c, &mr) == -ENOENT, "dereg twice: -ENOENT");
	munmap(ro, 4096);

	fd = mkstemp(path);
	CHECK(fd >= 0 && ftruncate(fd, 4096) == 0, "a file on disk");
	file = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(file != MAP_FAILED, "mapped");
	CHECK(ssq_mem_reg(c, file, 4096, IBV_ACCESS_LOCAL_WRITE, &mr) == -EOPNOTSUPP,
	      "a file mapping: -EOPNOTSUPP (%s)", ssq_client_error(c));
	CHECK(ssq_mem_reg_fd(c, fd, 0, 4096, 0, &mr) == -EOPNOTSUPP,
	      "a disk file by fd: -EOPNOTSUPP (%s)", ssq_client_error(c));
	munmap(file, 4096);
	close(fd);
	unlink(path);
	CHECK(ssq_mem_reg_fd(c, -1, 0, 4096, 0, &mr) == -EBADF, "fd -1: -EBADF");
	mfd = memfd_create("ssq-test", MFD_CLOEXEC);
	CHECK(mfd >= 0 && ftruncate(mfd, 4096) == 0, "memfd");
	CHECK(ssq_mem_reg_fd(c, mfd, 0, 8192, 0, &mr) == -EINVAL,
	      "past the memfd's end: -EINVAL (%s)", ssq_client_error(c));
	close(mfd);
}

int main(void)
{
	struct conn a;
	struct ssq_mr src_mr, back_mr, res_mr, file_mr;
	uint8_t *src = malloc(4096), *back = malloc(4096), *fmap;
	uint64_t *result = malloc(8);
	int to_a[2], from_a[2], status, mfd, i, st;
	struct remote r;
	pid_t d, b;
	char k;

	t_need_ssqd();
	setenv("SSQ_TEST_STALL_OPT", "--recv-depth=0", 1);
	d = stall_ssqd_up("mem-reg");
	if (d < 0)
		return 1;
	if (conn_open(&a) || pipe(to_a) || pipe(from_a)) {
		fprintf(stderr, "setup failed; ssqd's log: %s\n", log_path);
		kill(d, SIGKILL);
		return 1;
	}
	bad_input(a.c);
	CHECK(a.dst.remote_addr == a.dst.iova && a.dst.rkey == a.dst.lkey &&
	          a.dst.rkey != ssq_queue_peer_rkey(a.q),
	      "an arena buffer's remote descriptor is its IOVA and a key of its own");

	/* 2. zero-copy between two processes' own memory */
	b = fork();
	if (b == 0)
		process_b(to_a[1], from_a[0]);
	CHECK(read(to_a[0], &r, sizeof(r)) == sizeof(r), "B's descriptor");
	for (i = 0; i < 4096; i++)
		src[i] = (uint8_t)(i ^ 0x5a);
	memset(back, 0, 4096);
	CHECK(ssq_mem_reg(a.c, src, 4096, 0, &src_mr) == 0, "A registers src: %s",
	      ssq_client_error(a.c));
	CHECK(src_mr.iova == (uint64_t)(uintptr_t)src &&
	          src_mr.remote_addr == src_mr.iova,
	      "IOVA is the address");
	CHECK(ssq_mem_reg(a.c, back, 4096, IBV_ACCESS_LOCAL_WRITE, &back_mr) == 0 &&
	          ssq_mem_reg(a.c, result, 8, IBV_ACCESS_LOCAL_WRITE, &res_mr) == 0,
	      "A registers back, result: %s", ssq_client_error(a.c));
	CHECK(src_mr.lkey != back_mr.lkey && src_mr.lkey != r.rkey,
	      "each registration its own key");
	st = one_wr(&a, IBV_WR_RDMA_WRITE, src, src_mr.lkey, 256, r.addr, r.rkey, 1);
	CHECK(st == IBV_WC_SUCCESS, "WRITE A->B: status %d", st);
	st = one_wr(&a, IBV_WR_RDMA_READ, back, back_mr.lkey, 256, r.addr, r.rkey, 2);
	CHECK(st == IBV_WC_SUCCESS && !memcmp(back, src, 256), "READ B->A: status %d",
	      st);
	*result = 0;
	st = one_wr(&a, IBV_WR_ATOMIC_FETCH_AND_ADD, result, res_mr.lkey, 8,
	            r.addr + 4096, r.rkey, 3);
	CHECK(st == IBV_WC_SUCCESS && *result == 1000,
	      "FETCH_ADD in B's memory: status %d, old %llu", st,
	      (unsigned long long)*result);
	(void)!write(from_a[1], "g", 1);
	CHECK(read(to_a[0], &k, 1) == 1, "B saw the WRITE and the add");

	/* 3. a memfd by its descriptor */
	mfd = memfd_create("ssq-test", MFD_CLOEXEC);
	CHECK(mfd >= 0 && ftruncate(mfd, 8192) == 0, "memfd");
	fmap = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	CHECK(ssq_mem_reg_fd(a.c, mfd, 4096, 4096,
	                     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
	                     &file_mr) == 0,
	      "memfd registered: %s", ssq_client_error(a.c));
	CHECK(file_mr.iova == 4096 && file_mr.addr == NULL, "IOVA is the offset");
	st = one_wr(&a, IBV_WR_RDMA_WRITE, src, src_mr.lkey, 128,
	            file_mr.remote_addr + 16, file_mr.rkey, 4);
	CHECK(st == IBV_WC_SUCCESS && !memcmp(fmap + 4096 + 16, src, 128),
	      "WRITE into the memfd at offset 4112: status %d", st);
	CHECK(ssq_mem_dereg(a.c, &file_mr) == 0, "memfd dereg: %s",
	      ssq_client_error(a.c));

	/* 4. B dies: its key reaches nothing */
	kill(b, SIGKILL);
	waitpid(b, &status, 0);
	CHECK(WIFSIGNALED(status), "B killed (exit 0x%x)", status);
	/*
	 * A ConnectX keeps B's pages pinned until ssqd deregisters them, once
	 * it has seen B go: WRITEs may land there (in nobody else's memory)
	 * until then. The emulated device does the same, dropping the bytes
	 * (src/emu/mem_io.c). So retry while they succeed, for as long as a
	 * busy machine may take ssqd to see B's socket close.
	 */
	for (i = 0; i < 200; i++) {
		st = one_wr(&a, IBV_WR_RDMA_WRITE, src, src_mr.lkey, 64, r.addr, r.rkey,
		            5000 + (uint64_t)i);
		if (st != IBV_WC_SUCCESS)
			break;
		usleep(50000);
	}
	CHECK(st == IBV_WC_REM_ACCESS_ERR,
	      "WRITE to the dead B (once ssqd saw it go, %d tries): status %d, want %d",
	      i + 1, st, IBV_WC_REM_ACCESS_ERR);
	CHECK(ssq_queue_recover(a.q) == 0, "recover: %s", ssq_client_error(a.c));

	/* 5. A's own registration given back: the old key writes nothing */
	CHECK(ssq_mem_dereg(a.c, &back_mr) == 0, "dereg back: %s", ssq_client_error(a.c));
	memset(back, 0xee, 4096);
	st = one_wr(&a, IBV_WR_RDMA_READ, back, back_mr.lkey, 64, src_mr.remote_addr,
	            src_mr.rkey, 6);
	CHECK(st == IBV_WC_LOC_PROT_ERR, "READ through the old key: status %d, want %d",
	      st, IBV_WC_LOC_PROT_ERR);
	for (i = 0; i < 4096 && back[i] == 0xee; i++)
		;
	CHECK(i == 4096, "nothing written into the deregistered memory (byte %d)", i);
	CHECK(ssq_queue_recover(a.q) == 0, "recover: %s", ssq_client_error(a.c));

	/* 6. in flight: a SEND with no receive WQE waits (RNR) for ever */
	CHECK(ssq_post_send(a.p, MLX5_OPCODE_SEND, (uint64_t)(uintptr_t)src, src_mr.lkey,
	                    64, 0, 7, SSQ_WQE_SIGNALED) == 0,
	      "SEND posted");
	usleep(20000);
	CHECK(ssq_mem_dereg(a.c, &src_mr) == -EBUSY,
	      "dereg while a SEND uses it: -EBUSY (%s)", ssq_client_error(a.c));
	CHECK(ssq_mem_dereg(a.c, &res_mr) == 0, "an idle one goes: %s",
	      ssq_client_error(a.c));
	ssq_client_close(a.c);
	munmap(fmap, 8192);
	close(mfd);
	free(src);
	free(back);
	free(result);
	stall_ssqd_down(d);
	return test_exit("ctrl_mem_reg");
}
