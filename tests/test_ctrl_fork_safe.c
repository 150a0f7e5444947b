/* SPDX-License-Identifier: MIT */
/*
 * libibverbs' fork support and a hugepage arena (ctrl/backend/fork_safe.h).
 * With RDMAV_FORK_SAFE set, ibv_reg_mr marks the range MADV_DONTFORK in
 * 4 KiB pages unless RDMAV_HUGEPAGES_SAFE is set, and madvise over part of
 * a 2 MiB page fails: the emulated device's MR registration must fail the
 * same way (before, it registered anything), and ssqd's preparation (which
 * sets RDMAV_HUGEPAGES_SAFE for a hugepage arena, saying so) must make the
 * same registration work.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "helpers.h"
#include "ctrl/backend/backend.h"
#include "ctrl/backend/fork_safe.h"

#define HUGE (2u << 20)

/* Reserve @want 2 MiB pages if we can; how many are free. */
static long free_hugepages(long want)
{
	FILE *f = fopen("/proc/sys/vm/nr_hugepages", "r+");
	long have = 0;

	if (f) {
		if (fscanf(f, "%ld", &have) == 1 && have < want) {
			rewind(f);
			fprintf(f, "%ld\n", want);
		}
		fclose(f);
	}
	f = fopen("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages", "r");
	have = 0;
	if (f) {
		if (fscanf(f, "%ld", &have) != 1)
			have = 0;
		fclose(f);
	}
	return have;
}

int main(void)
{
	struct shm_arena a;
	struct ssqd_backend *b = NULL;
	char why[512];
	uint32_t key;
	int rc;

	if (free_hugepages(64) < 2)
		SKIP("no free 2 MiB hugepages (and not root to reserve them)");
	memset(&a, 0, sizeof(a));
	a.len = 2 * HUGE;
	a.base = mmap(NULL, a.len, PROT_READ | PROT_WRITE,
	              MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	if (a.base == MAP_FAILED)
		SKIP("mmap of 2 MiB hugepages failed: %s", strerror(errno));
	a.fd = -1;
	a.page_size = HUGE;
	a.hugepages = 1;
	setenv("RDMAV_FORK_SAFE", "1", 1);
	unsetenv("RDMAV_HUGEPAGES_SAFE");

	rc = ssqd_backend_emu.open(&b, "emu", &a, NULL, why, sizeof(why));
	CHECK(rc == 0, "open: %s", why);
	if (rc)
		return test_exit("ctrl_fork_safe");
	/* 64 KiB inside the first huge page: libibverbs would madvise 4 KiB pages. */
	rc = ssqd_backend_emu.reg_data(b, a.base + 4096, 64 << 10, 0x1000, 1, &key, why,
	                               sizeof(why));
	CHECK(rc == -EINVAL,
	      "RDMAV_FORK_SAFE, 4 KiB rounding on huge pages: %d, want -EINVAL", rc);
	CHECK(rc == 0 || strstr(why, "RDMAV_HUGEPAGES_SAFE"), "the error says: %s", why);
	printf("without RDMAV_HUGEPAGES_SAFE: %s\n", rc ? why : "registered");
	ssqd_backend_emu.close(b);

	CHECK(ssqd_fork_safe_prepare(&a) == 1 && getenv("RDMAV_HUGEPAGES_SAFE"),
	      "ssqd did not set RDMAV_HUGEPAGES_SAFE for a hugepage arena");
	rc = ssqd_backend_emu.open(&b, "emu", &a, NULL, why, sizeof(why));
	CHECK(rc == 0, "open: %s", why);
	if (!rc) {
		rc = ssqd_backend_emu.reg_data(b, a.base + 4096, 64 << 10, 0x1000, 1,
		                               &key, why, sizeof(why));
		CHECK(rc == 0, "with RDMAV_HUGEPAGES_SAFE: %d (%s)", rc, why);
		ssqd_backend_emu.close(b);
	}
	munmap(a.base, a.len);
	return test_exit("ctrl_fork_safe");
}
