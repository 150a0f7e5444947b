/* SPDX-License-Identifier: MIT */
/*
 * ssqd with several client processes on the emulated device, over a memfd
 * arena and over a hugepage (DPDK EAL) arena: see ctrl_flow.h for what is
 * checked. The hugepage run reserves 2 MiB pages when it can (root); where
 * it cannot, it says so and the memfd run still counts.
 */
#include "ctrl_flow.h"

int main(void)
{
	t_need_ssqd();
	run_config("off");
	if (ensure_hugepages(32) >= 8)
		run_config("required");
	else
		printf("hugepage arena not tested: no 2 MiB pages and not root to "
		       "reserve them\n");
	return test_exit("ctrl_multiproc");
}
