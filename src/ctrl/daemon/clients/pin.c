/* SPDX-License-Identifier: MIT */
/*
 * What a client's registrations pin, charged to the client's own
 * RLIMIT_MEMLOCK, as the kernel charges a process that pins its memory
 * for the NIC: ib_umem_get (drivers/infiniband/core/umem.c) adds the
 * range's pages to the registering mm's pinned_vm and refuses with ENOMEM
 * past rlimit(RLIMIT_MEMLOCK) unless the process has CAP_IPC_LOCK.
 *  - A client's private memory is registered by the client itself on a
 *    ConnectX (SSQ_MEM_VERBS: the kernel charges it directly), and through
 *    its memory file on the emulated device (SSQ_MEM_PROCESS), which must
 *    refuse what a ConnectX refuses: charged here.
 *  - A memfd, tmpfs or hugetlbfs file (SSQ_MEM_FILE) is pinned by ssqd on
 *    a ConnectX (ibv_reg_mr_iova2 of its own mapping: backend_mlx5.c), so
 *    the kernel would charge ssqd, which has CAP_IPC_LOCK and is never
 *    refused: any client could pin the host's memory through it. Charged
 *    to the client instead, on either device.
 *  - A dma-buf is not a regular file and is not charged: its exporter
 *    holds its pages (ib_umem_dmabuf_get does no pinned_vm accounting).
 * Only what ssqd registered for the client counts, not what else the
 * client pinned itself; it counts over all the connections of the client's
 * process (charged()).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include "ctrl/daemon/clients/clients.h"

#define CAP_IPC_LOCK_BIT 14 /* linux/capability.h: CAP_IPC_LOCK */

/* Has process @pid CAP_IPC_LOCK in its effective set? 0 when unsure. */
static int has_ipc_lock(pid_t pid)
{
	char path[64], line[256];
	unsigned long long eff = 0;
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	while (f && !found && fgets(line, sizeof(line), f))
		found = sscanf(line, "CapEff: %llx", &eff) == 1;
	if (f)
		fclose(f);
	return found && (eff >> CAP_IPC_LOCK_BIT & 1);
}

/*
 * Bytes charged so far to client @c's process: every live connection of
 * its pid, as the kernel charges one mm's pinned_vm whatever file the
 * process registers through (before, each connection had a limit of its
 * own). A fork()ed child is another process with an mm of its own
 * (mm_init in kernel/fork.c starts its pinned_vm at 0): its connections
 * are charged apart, and the parent's registrations stay the parent's.
 */
static uint64_t charged(const struct ssqd *d, const struct ssqd_client *c)
{
	uint32_t ids[SSQD_MAX_CLIENTS];
	unsigned i, k, n = 0;
	uint64_t sum = 0;

	for (i = 0; i < SSQD_MAX_CLIENTS; i++)
		if (d->clients[i].fd >= 0 && d->clients[i].pid == c->pid)
			ids[n++] = d->clients[i].id;
	/* A held registration (held.c) stays charged to the client it was. */
	for (i = 0; i < SSQD_MAX_MRS; i++)
		for (k = 0; d->mrs[i].owner && k < n; k++)
			if (d->mrs[i].owner == ids[k] ||
			    (d->mrs[i].owner == SSQD_OWNER_HELD &&
			     d->mrs[i].held_by == ids[k])) {
				sum += d->mrs[i].pinned;
				break;
			}
	/*
	 * And one held for a connection of this pid that is gone: hanging up
	 * after freeing behind a hole is no way past the limit (held.c). A
	 * pid reused meanwhile is charged too: stricter, for as long as the
	 * bind may run.
	 */
	for (i = 0; d->nheld && i < SSQD_MAX_MRS; i++)
		if (d->mrs[i].owner == SSQD_OWNER_HELD && d->mrs[i].pid == c->pid &&
		    ssqd_held_orphan(d, d->mrs[i].held_by))
			sum += d->mrs[i].pinned;
	return sum;
}

/*
 * The RLIMIT_MEMLOCK soft limit of client @c's process, into *@lim.
 * prlimit(2) reads another process's limits only for a caller of the same
 * uids and gids or with CAP_SYS_RESOURCE (check_prlimit_permission,
 * kernel/sys.c): a per-user ssqd serving another uid (--allow-uid) has
 * neither, and every registration of that uid failed -EPERM. The same
 * limit is in /proc/PID/limits, which every uid may read (fs/proc/base.c:
 * ONE("limits", S_IRUGO, proc_pid_limits)) unless /proc is mounted with
 * hidepid: read there then, and the client's pidfd looked at after, so
 * that a pid its process left and another took meanwhile is not read as
 * the client's. 0, or -EPERM with @why when neither could be read.
 */
static int memlock_of(const struct ssqd_client *c, rlim_t *lim, char *why, size_t whylen)
{
	char path[64], line[256], soft[32], *end;
	int err, found = 0;
	struct rlimit rl;
	FILE *f;

	if (!prlimit(c->pid, RLIMIT_MEMLOCK, NULL, &rl)) {
		*lim = rl.rlim_cur;
		return 0;
	}
	err = errno;
	snprintf(path, sizeof(path), "/proc/%d/limits", (int)c->pid);
	f = fopen(path, "r");
	while (f && !found && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Max locked memory %31s", soft) != 1)
			continue;
		found = 1;
		if (!strcmp(soft, "unlimited")) {
			*lim = RLIM_INFINITY;
		} else {
			errno = 0;
			*lim = (rlim_t)strtoull(soft, &end, 10);
			found = !*end && !errno;
		}
	}
	if (f)
		fclose(f);
	if (found && (c->pidfd < 0 || ssqd_pidfd_alive(c->pidfd)))
		return 0;
	snprintf(why, whylen,
	         "cannot read the RLIMIT_MEMLOCK of the client's process %d: prlimit: "
	         "%s (another uid: ssqd lacks CAP_SYS_RESOURCE), and %s is %s (/proc "
	         "mounted hidepid?)",
	         (int)c->pid, strerror(err), path, found ? "stale" : "unreadable");
	return -EPERM;
}

int ssqd_pin_charge(const struct ssqd *d, const struct ssqd_client *c, int kind, int fd,
                    uint64_t addr, uint64_t len, uint64_t *charge, char *why,
                    size_t whylen)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), held, first, end;
	rlim_t lim = 0;
	struct stat st;
	int rc;

	*charge = 0;
	if (kind == SSQ_MEM_VERBS)
		return 0; /* the client pinned it: the kernel charged it */
	if (kind == SSQ_MEM_FILE && (fstat(fd, &st) || !S_ISREG(st.st_mode)))
		return 0; /* a dma-buf (or not a file: the backend refuses it) */
	if (len == 0 || addr + len < addr)
		return 0; /* the backend refuses it, saying why */
	first = addr & ~(page - 1);
	end = (addr + len + page - 1) & ~(page - 1);
	rc = memlock_of(c, &lim, why, whylen);
	if (rc)
		return rc;
	*charge = end - first;
	if (lim == RLIM_INFINITY || has_ipc_lock(c->pid))
		return 0;
	held = charged(d, c);
	if (held + *charge > lim) {
		snprintf(why, whylen,
		         "past the RLIMIT_MEMLOCK of %llu of this client's process: %llu "
		         "more bytes take it to %llu over all its connections (ulimit "
		         "-l; CAP_IPC_LOCK lifts it)",
		         (unsigned long long)lim, (unsigned long long)*charge,
		         (unsigned long long)(held + *charge));
		*charge = 0;
		return -ENOMEM;
	}
	return 0;
}
