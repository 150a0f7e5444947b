/* SPDX-License-Identifier: MIT */
/*
 * ssqd_memlock_check (src/ctrl/daemon/memlock.c), the pre-flight ssqd runs
 * before a ConnectX pins its arena (hardware review 2026-11-28 R2), in a
 * child whose RLIMIT_MEMLOCK is 64 KiB:
 *  - without CAP_IPC_LOCK, 1 MiB is refused with -ENOMEM and a sentence
 *    naming RLIMIT_MEMLOCK, the MiB asked and the limit; 64 KiB passes;
 *  - with CAP_IPC_LOCK (where this test runs with it) 1 GiB passes, as
 *    ib_umem_get lets a capable process pin past the limit.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/capability.h>
#include "helpers.h"
#include "ctrl/daemon/memlock.h"

static int drop_ipc_lock(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -1;
	d[0].effective &= ~(1u << CAP_IPC_LOCK);
	return (int)syscall(SYS_capset, &h, d);
}

static int has_ipc_lock(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	return !syscall(SYS_capget, &h, d) && (d[0].effective >> CAP_IPC_LOCK) & 1;
}

int main(void)
{
	struct rlimit rl = { 64 << 10, 64 << 10 };
	char why[512] = "";
	int rc, capable;

	if (setrlimit(RLIMIT_MEMLOCK, &rl)) {
		perror("setrlimit");
		return 1;
	}
	capable = has_ipc_lock();
	if (capable) {
		rc = ssqd_memlock_check(1ull << 30, why, sizeof(why));
		CHECK(rc == 0, "with CAP_IPC_LOCK 1 GiB passes a 64 KiB limit: %d %s", rc,
		      why);
		CHECK(drop_ipc_lock() == 0 && !has_ipc_lock(), "CAP_IPC_LOCK dropped");
	}
	rc = ssqd_memlock_check(64 << 10, why, sizeof(why));
	CHECK(rc == 0, "64 KiB under a 64 KiB limit: %d %s", rc, why);
	why[0] = 0;
	rc = ssqd_memlock_check(1 << 20, why, sizeof(why));
	CHECK(rc == -ENOMEM && strstr(why, "RLIMIT_MEMLOCK") &&
	          strstr(why, "pins up to 1 MiB") && strstr(why, "only 64 KiB"),
	      "1 MiB refused, naming the limit and the size: %d '%s'", rc, why);
	printf("refused: %s\n", why);
	return test_exit("ctrl_memlock_check");
}
