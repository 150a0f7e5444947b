/* SPDX-License-Identifier: MIT */
/*
 * Adversary: a registered memfd is written with pwrite by ssqd's device
 * thread, so every page a WRITE first touches in a sparse memfd is
 * allocated by ssqd and charged to ssqd's memory cgroup - not the
 * client's, as a page reached through the client's /proc/PID/mem is. A
 * client registers a 512 MiB sparse memfd (ftruncate: nothing allocated)
 * and WRITEs 256 MiB of its own memory into it. ssqd runs in a memory
 * cgroup that leaves it 64 MiB over what it uses (as MemoryMax= would in
 * a unit; without one, the client escapes its own limit instead).
 * Wanted: ssqd alive and its cgroup not charged for the client's file.
 * Before a fix: ssqd's cgroup fills, its OOM killer ends ssqd.
 * Needs root and a writable memory cgroup (v1 or v2): skipped otherwise.
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <sys/stat.h>
#include "stall_flow.h"

#define FILE_LEN (512ull << 20)
#define CHUNK    (1u << 20)
#define NWRITES  256

static char cg[1024];
static int v2;

static int put(const char *file, const char *val)
{
	char path[1100];
	int fd, ok;

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ok = write(fd, val, strlen(val)) == (ssize_t)strlen(val);
	close(fd);
	return ok ? 0 : -1;
}

static long long get(const char *file)
{
	char path[1100];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* A child of this process's memory cgroup: 0, or -1. */
static int make_cg(void)
{
	char line[512], *p;
	FILE *f = fopen("/proc/self/cgroup", "re");

	if (!f)
		return -1;
	cg[0] = 0;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if ((p = strstr(line, ":memory:"))) {
			snprintf(cg, sizeof(cg), "/sys/fs/cgroup/memory%s/ssq-adv-%d",
			         p + 8, getpid());
			break;
		}
		if (!strncmp(line, "0::", 3)) {
			snprintf(cg, sizeof(cg), "/sys/fs/cgroup%s/ssq-adv-%d", line + 3,
			         getpid());
			v2 = 1;
		}
	}
	fclose(f);
	if (!cg[0] || mkdir(cg, 0755))
		return -1;
	return 0;
}

int main(void)
{
	struct ssq_mr src_mr, file_mr;
	struct conn a;
	uint8_t *src = malloc(CHUNK);
	long long base, used;
	char val[64];
	int mfd, i, st = 0, status = 0, dead = 0;
	pid_t d;

	t_need_ssqd();
	setvbuf(stdout, NULL, _IONBF, 0);
	if (make_cg())
		SKIP("no memory cgroup to make here (needs root)");
	d = stall_ssqd_up("adv-charge");
	if (d < 0 || conn_open(&a) || !src) {
		rmdir(cg);
		return 1;
	}
	snprintf(val, sizeof(val), "%d", (int)d);
	if (put("cgroup.procs", val)) {
		rmdir(cg);
		kill(d, SIGKILL);
		SKIP("cannot move ssqd into %s", cg);
	}
	usleep(200000);
	base = get(v2 ? "memory.current" : "memory.usage_in_bytes");
	snprintf(val, sizeof(val), "%lld", base + (64ll << 20));
	put(v2 ? "memory.max" : "memory.limit_in_bytes", val);
	printf("ssqd in %s: %lld bytes charged, limit %s\n", cg, base, val);

	memset(src, 0x5c, CHUNK);
	mfd = memfd_create("ssq-adv-sparse", MFD_CLOEXEC);
	CHECK(mfd >= 0 && ftruncate(mfd, (off_t)FILE_LEN) == 0, "512 MiB sparse memfd");
	CHECK(ssq_mem_reg(a.c, src, CHUNK, 0, &src_mr) == 0 &&
	          ssq_mem_reg_fd(a.c, mfd, 0, FILE_LEN,
	                         IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
	                         &file_mr) == 0,
	      "registered: %s", ssq_client_error(a.c));
	for (i = 0; i < NWRITES && !dead; i++) {
		struct ibv_sge sge = { (uint64_t)(uintptr_t)src, CHUNK, src_mr.lkey };
		struct ibv_send_wr wr, *bad = NULL;
		struct ssq_completion comp;
		double t0 = now_s();

		t_wr_one(&wr, &sge, IBV_WR_RDMA_WRITE, (uint64_t)i + 1,
		         file_mr.remote_addr + (uint64_t)i * CHUNK, file_mr.rkey);
		if (ssq_post_wr(a.p, &wr, &bad))
			break;
		st = -1;
		while (now_s() - t0 < 5.0 && st < 0) {
			if (ssq_poll(a.p, &comp, 1) == 1)
				st = (int)comp.status;
			else
				usleep(100);
		}
		dead = waitpid(d, &status, WNOHANG) == d;
		if (st)
			break;
	}
	used = get(v2 ? "memory.current" : "memory.usage_in_bytes");
	printf("%d WRITEs of 1 MiB into the memfd (last status %d); ssqd's cgroup now "
	       "holds %lld bytes (+%lld MiB); ssqd %s\n",
	       i, st, used, (used - base) >> 20, dead ? "is gone" : "alive");
	for (i = 0; i < 100 && !dead; i++) {
		dead = waitpid(d, &status, WNOHANG) == d;
		usleep(10000);
	}
	CHECK(!dead, "ssqd alive (ended: status 0x%x)", status);
	CHECK(used >= 0 && used - base < (32ll << 20),
	      "the client's file is not charged to ssqd: +%lld MiB", (used - base) >> 20);
	close(mfd);
	ssq_client_close(a.c);
	if (!dead) {
		stall_ssqd_down(d);
	} else {
		unlink(sock_path);
		print_log();
	}
	free(src);
	if (rmdir(cg))
		fprintf(stderr, "could not remove %s: %s\n", cg, strerror(errno));
	return test_exit("ctrl_adv_mem_memfd_charge");
}
