/* SPDX-License-Identifier: MIT */
/*
 * Adversary: ssqd reads the client's /proc/PID/maps with fgets into 512
 * bytes (proc_maps.c); a longer line - a mapped file with a long path -
 * comes back in two pieces, and the second is parsed as a line of its
 * own. The client names the file so that the part past byte 511 reads
 * "LO-HI rw-p 0 0 0": a forged anonymous, writable mapping over the next
 * page, which really is a read-only mapping of a file on disk.
 * Wanted: registering that page for local write refused (-EFAULT: read
 * only; -EOPNOTSUPP: a file mapping). Before a fix: accepted.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "stall_flow.h"

/* Column where paths start in this process's maps lines for @at. */
static int path_col(uint64_t at)
{
	char line[4096];
	FILE *f = fopen("/proc/self/maps", "re");
	int col = -1;

	while (f && fgets(line, sizeof(line), f)) {
		uint64_t lo;

		if (sscanf(line, "%" SCNx64, &lo) == 1 && lo == at) {
			col = (int)(strchr(line, '/') - line);
			break;
		}
	}
	if (f)
		fclose(f);
	return col;
}

int main(void)
{
	char dir[128], sub[512], name[1024], forged[128], pad[300];
	struct ssq_client *c;
	struct ssq_mr mr;
	uint8_t *area;
	int fd, col, rc, need, n;
	pid_t d;

	t_need_ssqd();
	setvbuf(stdout, NULL, _IONBF, 0);
	d = stall_ssqd_up("adv-forge");
	if (d < 0 || ssq_client_connect(sock_path, &c))
		return 1;
	snprintf(dir, sizeof(dir), "/tmp/ssq-adv-forge-%d", getpid());
	memset(pad, 'p', 200);
	pad[200] = 0;
	snprintf(sub, sizeof(sub), "%s/%s", dir, pad);
	snprintf(name, sizeof(name), "%s/f", sub);
	if (mkdir(dir, 0700) || mkdir(sub, 0700))
		return 1;
	fd = open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, 4096))
		return 1;
	/* Two pages of the file, read-only; offsets 0 and 0: not merged. */
	area = mmap(NULL, 8192, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (area == MAP_FAILED ||
	    mmap(area, 4096, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0) != area ||
	    mmap(area + 4096, 4096, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0) !=
	        area + 4096)
		return 1;
	col = path_col((uint64_t)(uintptr_t)area);
	rc = ssq_mem_reg(c, area + 4096, 4096, IBV_ACCESS_LOCAL_WRITE, &mr);
	CHECK(rc == -EFAULT || rc == -EOPNOTSUPP,
	      "with a short file name, refused: %d (%s)", rc, ssq_client_error(c));
	/* The file's new name: its path reaches byte 511 of the line exactly
	 * where the forged line starts. */
	snprintf(forged, sizeof(forged), "%" PRIx64 "-%" PRIx64 " rw-p 0 0 0 x",
	         (uint64_t)(uintptr_t)area + 4096, (uint64_t)(uintptr_t)area + 8192);
	need = 511 - col - (int)strlen(sub) - 1;
	if (col < 0 || need < 1 || need > 250)
		SKIP("path column %d: cannot place the forged line", col);
	n = snprintf(
	    name, sizeof(name), "%s/%.*s%s", sub, need,
	    "qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq"
	    "qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq"
	    "qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq"
	    "qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq",
	    forged);
	{
		char old[1024];

		snprintf(old, sizeof(old), "%s/f", sub);
		CHECK(n > 0 && rename(old, name) == 0, "renamed: %s", strerror(errno));
	}
	printf("page 0x%" PRIx64 " is a read-only mapping of a file on disk; its "
	       "neighbour's maps line is %d bytes, its tail \"%s\"\n",
	       (uint64_t)(uintptr_t)area + 4096, col + n, forged);
	rc = ssq_mem_reg(c, area + 4096, 4096, IBV_ACCESS_LOCAL_WRITE, &mr);
	printf("registering it for local write: %d (%s)\n", rc,
	       rc ? ssq_client_error(c) : "accepted");
	CHECK(rc == -EFAULT || rc == -EOPNOTSUPP,
	      "a read-only file page refused for writing: %d", rc);
	if (!rc)
		ssq_mem_dereg(c, &mr);
	munmap(area, 8192);
	close(fd);
	unlink(name);
	rmdir(sub);
	rmdir(dir);
	ssq_client_close(c);
	stall_ssqd_down(d);
	return test_exit("ctrl_adv_mem_maps_forge");
}
