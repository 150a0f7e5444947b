/* SPDX-License-Identifier: MIT */
/*
 * Adversary: MEM_REG of kind SSQ_MEM_PROCESS carries a /proc/PID/mem that
 * is not the client's own. ssqd checks the range against the client's
 * /proc/PID/maps (c->pid) but reads and writes through whatever procfs
 * file came with the message (backend_emu.c file_ok only asks "procfs,
 * regular file"). A client that may open another process's memory file -
 * here ssqd's own: same uid, no Yama restriction - maps anonymous memory
 * at the addresses of ssqd's [stack], registers them with ssqd's
 * /proc/SSQD/mem, READs ssqd's stack through the key, then WRITEs zeros
 * over it.
 * Wanted: the registration refused (the descriptor is not the client's
 * own memory). Before a fix: accepted; the READ returns ssqd's stack and
 * the WRITE kills ssqd.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <sys/mman.h>
#include "stall_flow.h"
#include "ctrl/client/client_pvt.h"
#include "ctrl/proto/msg.h"

static int run_wr(struct conn *k, enum ibv_wr_opcode op, void *laddr, uint32_t lkey,
                  uint32_t len, uint64_t raddr, uint32_t rkey, uint64_t wr_id)
{
	struct ibv_sge sge = { (uint64_t)(uintptr_t)laddr, len, lkey };
	struct ibv_send_wr wr, *bad = NULL;
	struct ssq_completion comp;
	double t0 = now_s();

	t_wr_one(&wr, &sge, op, wr_id, raddr, rkey);
	if (ssq_post_wr(k->p, &wr, &bad))
		return -1;
	while (now_s() - t0 < 5.0) {
		if (ssq_poll(k->p, &comp, 1) == 1)
			return comp.wr_id == wr_id ? (int)comp.status : -2;
		usleep(100);
	}
	return -1;
}

/* ssqd's [stack], mapped at the same addresses here: 0 and the range. */
static int mirror_stack(pid_t d, uint64_t *lo, uint64_t *hi)
{
	char path[64], line[512];
	FILE *f;
	int rc = -1;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)d);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "[stack]") &&
		    sscanf(line, "%" SCNx64 "-%" SCNx64, lo, hi) == 2) {
			void *p = mmap(
			    (void *)(uintptr_t)*lo, *hi - *lo, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

			rc = p == (void *)(uintptr_t)*lo ? 0 : -1;
			break;
		}
	fclose(f);
	return rc;
}

int main(void)
{
	struct proto_msg_mem_reg req;
	struct proto_msg reply;
	struct ssq_mr loc;
	struct conn a;
	uint64_t lo = 0, hi = 0, len;
	uint8_t *buf = MAP_FAILED, *direct = NULL;
	char path[64];
	int mfd, rc, st, status = 0, dead = 0;
	pid_t d;

	t_need_ssqd();
	setvbuf(stdout, NULL, _IONBF, 0);
	d = stall_ssqd_up("adv-foreign");
	if (d < 0)
		return 1;
	if (conn_open(&a)) {
		kill(d, SIGKILL);
		return 1;
	}
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)d);
	mfd = open(path, O_RDWR | O_CLOEXEC);
	if (mfd < 0 || mirror_stack(d, &lo, &hi)) {
		kill(d, SIGKILL);
		SKIP("cannot open %s or map ssqd's stack addresses here", path);
	}
	len = hi - lo;
	printf("ssqd pid %d, its [stack] 0x%" PRIx64 "-0x%" PRIx64
	       " mapped here too (anonymous)\n",
	       (int)d, lo, hi);

	memset(&req, 0, sizeof(req));
	req.kind = SSQ_MEM_PROCESS;
	req.access =
	    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	req.addr = lo;
	req.len = len;
	rc = client_call_fd(a.c, SSQ_MSG_MEM_REG, &req, sizeof(req), mfd, &reply);
	CHECK(rc != 0, "MEM_REG with ssqd's own /proc/%d/mem refused: rc %d (%s)", (int)d,
	      rc, rc ? ssq_client_error(a.c) : "accepted");
	if (rc)
		goto out;

	buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	direct = malloc(4096);
	CHECK(buf != MAP_FAILED && direct &&
	          ssq_mem_reg(a.c, buf, len, IBV_ACCESS_LOCAL_WRITE, &loc) == 0,
	      "a local buffer: %s", ssq_client_error(a.c));
	/* The top 4 KiB of ssqd's stack (argv/environment), through the key. */
	st = run_wr(&a, IBV_WR_RDMA_READ, buf, loc.lkey, 4096, hi - 4096,
	            reply.u.mem_reg_reply.rkey, 1);
	CHECK(pread(mfd, direct, 4096, (off_t)(hi - 4096)) == 4096, "pread ssqd's stack");
	printf("READ through the key: status %d; bytes %s ssqd's own stack "
	       "(\"%.40s\"...)\n",
	       st, st == 0 && !memcmp(buf, direct, 4096) ? "==" : "!=",
	       (char *)buf + 4096 - 256);
	CHECK(!(st == 0 && !memcmp(buf, direct, 4096)),
	      "a client's key does not read ssqd's memory");

	/* Zeros over ssqd's whole stack. */
	memset(buf, 0, len);
	st = run_wr(&a, IBV_WR_RDMA_WRITE, buf, loc.lkey, (uint32_t)len, lo,
	            reply.u.mem_reg_reply.rkey, 2);
	printf("WRITE of %" PRIu64 " zero bytes over ssqd's stack: status %d\n", len, st);
	for (rc = 0; rc < 200 && !dead; rc++) {
		dead = waitpid(d, &status, WNOHANG) == d;
		usleep(10000);
	}
	CHECK(!dead, "ssqd still alive after the WRITE (it ended: status 0x%x)", status);
	ssq_mem_dereg(a.c, &loc);
	munmap(buf, len);
	free(direct);
out:
	close(mfd);
	if (dead) {
		ssq_client_close(a.c);
		unlink(sock_path);
		print_log();
		fprintf(stderr, "ssqd's log: %s\n", log_path);
	} else {
		ssq_client_close(a.c);
		stall_ssqd_down(d);
	}
	return test_exit("ctrl_adv_mem_foreign_proc");
}
