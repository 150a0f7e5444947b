/* SPDX-License-Identifier: MIT */
/*
 * Arena on 2 MiB hugepages, through DPDK's EAL used for nothing else: no
 * PCI, no telemetry, in-memory (no files under /var/run/dpdk, no secondary
 * processes), single-file segments (one memfd per segment list, so a
 * memzone of consecutive pages is one (fd, offset, length)). Works without
 * a hugetlbfs mount once pages are reserved in /proc/sys/vm/nr_hugepages.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_memory.h>
#include <rte_memzone.h>
#include "shm/create/arena.h"

#define HUGEPAGE (2u << 20)

static int eal_up;

/*
 * Give every thread of this process the CPU set @set. rte_eal_init() pins
 * the calling thread to its main lcore and EAL's own threads (interrupt,
 * multi-process) to its control-thread set; ssqd uses EAL for memory only,
 * so it puts back the affinity it was started with (taskset, systemd's
 * CPUAffinity=, bench.sh --cpus), for the threads that exist now and, since
 * threads inherit their creator's set, for those it starts later.
 */
static int restore_affinity(const cpu_set_t *set, char *why, size_t whylen)
{
	DIR *dir = opendir("/proc/self/task");
	struct dirent *e;
	int err = 0;

	if (!dir) {
		err = errno;
		snprintf(why, whylen, "after DPDK EAL init: /proc/self/task: %s",
		         strerror(err));
		return -err;
	}
	while ((e = readdir(dir))) {
		pid_t tid = (pid_t)atoi(e->d_name);

		/* A thread that exited since readdir saw it is not an error. */
		if (tid > 0 && sched_setaffinity(tid, sizeof(*set), set) &&
		    errno != ESRCH) {
			err = errno;
			snprintf(
			    why, whylen,
			    "after DPDK EAL init: restoring thread %d's CPU affinity: %s",
			    (int)tid, strerror(err));
			break;
		}
	}
	closedir(dir);
	return -err;
}

static int eal_init(const char *tag, char *why, size_t whylen)
{
	char prefix[64], lcore[32];
	char *argv[] = { "ssqd",
		         "--no-pci",
		         "--no-telemetry",
		         "--in-memory",
		         "--single-file-segments",
		         "-l",
		         lcore,
		         "--log-level=lib.eal:error",
		         prefix,
		         NULL };
	int argc = (int)(sizeof(argv) / sizeof(argv[0])) - 1, cpu, err;
	cpu_set_t started;

	if (eal_up)
		return 0;
	if (sched_getaffinity(0, sizeof(started), &started)) {
		err = errno;
		snprintf(why, whylen, "sched_getaffinity: %s", strerror(err));
		return -err;
	}
	/*
	 * EAL needs one lcore; name a CPU this process may run on (under a
	 * cgroup cpuset, CPU 0 may not be one), and restore the whole set after.
	 */
	for (cpu = 0; cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &started); cpu++)
		;
	snprintf(lcore, sizeof(lcore), "%d", cpu < CPU_SETSIZE ? cpu : 0);
	/* Its own prefix, so two daemons (or a daemon and a DPDK app) never meet. */
	snprintf(prefix, sizeof(prefix), "--file-prefix=ssq-%s-%d", tag ? tag : "d",
	         getpid());
	if (rte_eal_init(argc, argv) < 0) {
		snprintf(why, whylen, "DPDK EAL init failed: %s",
		         rte_strerror(rte_errno));
		return -ENOMEM;
	}
	eal_up = 1;
	return restore_affinity(&started, why, whylen);
}

int shm_arena_create_eal(struct shm_arena *a, size_t len, const char *tag, char *why,
                         size_t whylen)
{
	const struct rte_memzone *mz;
	struct rte_memseg *ms;
	char name[RTE_MEMZONE_NAMESIZE];
	size_t off, first_off = 0, o;
	int fd = -1, rc;

	memset(a, 0, sizeof(*a));
	len = (len + HUGEPAGE - 1) & ~(size_t)(HUGEPAGE - 1);
	rc = eal_init(tag, why, whylen);
	if (rc)
		return rc;
	snprintf(name, sizeof(name), "ssq-arena-%s", tag ? tag : "anon");
	mz = rte_memzone_reserve_aligned(name, len, SOCKET_ID_ANY,
	                                 RTE_MEMZONE_2MB | RTE_MEMZONE_SIZE_HINT_ONLY,
	                                 HUGEPAGE);
	if (!mz) {
		snprintf(why, whylen, "no room for a %zu-byte arena in hugepages: %s",
		         len, rte_strerror(rte_errno));
		return -ENOMEM;
	}
	/*
	 * One mmap must cover the arena: every page must come from the same
	 * segment fd at consecutive offsets. Single-file segments make that so
	 * for a VA-contiguous memzone; check rather than trust.
	 */
	for (off = 0; off < mz->len; off += HUGEPAGE) {
		ms = rte_mem_virt2memseg((const uint8_t *)mz->addr + off, NULL);
		if (!ms || ms->len != HUGEPAGE) {
			snprintf(why, whylen,
			         "arena page at +%zu is not a 2 MiB hugepage", off);
			goto fail;
		}
		rc = rte_memseg_get_fd(ms);
		if (rc < 0 || rte_memseg_get_fd_offset(ms, &o) < 0) {
			snprintf(why, whylen, "no fd for the arena page at +%zu: %s", off,
			         rte_strerror(rte_errno));
			goto fail;
		}
		if (off == 0) {
			fd = rc;
			first_off = o;
		} else if (rc != fd || o != first_off + off) {
			snprintf(why, whylen,
			         "arena pages are not one contiguous file range");
			goto fail;
		}
	}
	memset(mz->addr, 0, mz->len);
	a->base = mz->addr;
	a->len = mz->len;
	a->fd = fd;
	a->fd_offset = (off_t)first_off;
	a->page_size = HUGEPAGE;
	a->hugepages = 1;
	a->eal_memzone = (void *)mz;
	return 0;
fail:
	rte_memzone_free(mz);
	return -ENOMEM;
}
