/* SPDX-License-Identifier: MIT */
/*
 * /proc/PID/maps, read for one question: may the emulated device reach a
 * range of a client's memory? A ConnectX pins a registration's pages once,
 * in the registering process (ib_umem_get, FOLL_WRITE when the access is
 * writable: ib_access_writable in include/rdma/ib_verbs.h), and fails with
 * EFAULT what it cannot pin. The emulated device reaches the pages at each
 * access instead, from ssqd's device thread; so on top of the same EFAULT
 * rules it takes only memory whose pages need no I/O: a page of a file on
 * a filesystem (FUSE, NFS, a disk) could keep the thread waiting for as
 * long as whoever serves the file likes, and every queue with it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ctrl/backend/proc_maps.h"

/* Memory that is there without I/O: anonymous, shmem/tmpfs, hugetlbfs. */
static int resident_kind(unsigned long inode, const char *path)
{
	static const char *const ok[] = {
		"[heap]", "[stack",    "[anon:",          "/memfd:",       "/dev/shm/",
		"/SYSV",  "/dev/zero", "/dev/hugepages/", "/anon_hugepage"
	};
	unsigned i;

	if (!inode)
		return 1;
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (!strncmp(path, ok[i], strlen(ok[i])))
			return 1;
	return 0;
}

/*
 * Every page of [@lo, @hi) of @pid, in a private file mapping, already a
 * private copy? Such a page (a program's .data, a static buffer) is the
 * file's until first written; after, it is anonymous memory, there without
 * I/O. /proc/PID/pagemap says so per page: bit 63 present, bit 61 a file
 * page or shared anonymous (Documentation/admin-guide/mm/pagemap.rst); the
 * flags are readable without CAP_SYS_ADMIN, only the PFN is hidden. A
 * writable ssq_mem_reg makes them so first (MADV_POPULATE_WRITE, as
 * ib_umem_get's FOLL_WRITE pin does).
 */
static int private_copies(pid_t pid, uint64_t lo, uint64_t hi)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), a, e;
	char path[64];
	FILE *f;
	int ok = 1;

	snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	for (a = lo & ~(page - 1); ok && a < hi; a += page)
		ok = !fseeko(f, (off_t)(a / page * 8), SEEK_SET) &&
		     fread(&e, 8, 1, f) == 1 && (e >> 63 & 1) && !(e >> 61 & 1);
	fclose(f);
	return ok;
}

int ssqd_proc_range_check(pid_t pid, uint64_t addr, uint64_t len, int writable, char *why,
                          size_t whylen)
{
	uint64_t at = addr, end = addr + len;
	char path[64], *line = NULL;
	size_t cap = 0;
	int rc = -EFAULT;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f) {
		/*
		 * /proc/PID/maps needs ptrace read access (proc_maps_open ->
		 * proc_mem_open(PTRACE_MODE_READ), fs/proc/task_mmu.c): a
		 * client of another uid needs an ssqd with CAP_SYS_PTRACE.
		 */
		snprintf(why, whylen,
		         "cannot read %s: %s (a client of another uid: the emulated "
		         "device reaches its private memory only for an ssqd with "
		         "CAP_SYS_PTRACE; ssq_mem_reg_fd registers shareable memory)",
		         path, strerror(errno));
		return -EACCES;
	}
	/*
	 * Whole lines, however long (getline): a path longer than a buffer,
	 * read in pieces, would let its tail pass for a line of its own.
	 */
	while (at < end && getline(&line, &cap, f) > 0) {
		unsigned long inode;
		uint64_t lo, hi;
		char perms[8];
		const char *file;
		int n = 0;

		line[strcspn(line, "\n")] = 0;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %*s %*s %lu %n", &lo, &hi,
		           perms, &inode, &n) < 4 ||
		    !n)
			continue;
		file = line + n;
		if (hi <= at)
			continue;
		if (lo > at)
			break; /* a gap at @at */
		if (perms[0] != 'r' || (writable && perms[1] != 'w')) {
			snprintf(why, whylen,
			         "address 0x%" PRIx64
			         " is in a mapping without %s access (%s)",
			         at, perms[0] != 'r' ? "read" : "write", perms);
			rc = -EFAULT;
			goto out;
		}
		if (!resident_kind(inode, file) &&
		    !(perms[3] == 'p' && private_copies(pid, at, hi < end ? hi : end))) {
			snprintf(
			    why, whylen,
			    "address 0x%" PRIx64 " is in a file mapping (%.120s): the "
			    "emulated device reaches only anonymous, shared-memory and "
			    "hugetlbfs pages, and private copies of a file's (register "
			    "a file with ssq_mem_reg_fd)",
			    at, file);
			rc = -EOPNOTSUPP;
			goto out;
		}
		at = hi;
	}
	if (at >= end)
		rc = 0;
	else
		snprintf(why, whylen, "address 0x%" PRIx64 " is not mapped", at);
out:
	fclose(f);
	free(line);
	return rc;
}
