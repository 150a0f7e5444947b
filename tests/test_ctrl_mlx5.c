/* SPDX-License-Identifier: MIT */
/*
 * The multi-process ssqd scenario of ctrl_flow.h on a real ConnectX: ssqd's
 * mlx5 backend, loopback QPs on one port, several clients, data checked.
 * Runs where /sys/class/infiniband has an mlx5 device; elsewhere it skips
 * and says so. scripts/hw-check.sh runs it in a lab.
 */
#include <dirent.h>
#include "ctrl_flow.h"

/* The first mlx5 device's name, or NULL. */
static const char *first_mlx5(void)
{
	static char name[256];
	DIR *d = opendir("/sys/class/infiniband");
	struct dirent *e;

	if (!d)
		return NULL;
	while ((e = readdir(d))) {
		if (!strncmp(e->d_name, "mlx5", 4)) {
			snprintf(name, sizeof(name), "%s", e->d_name);
			closedir(d);
			return name;
		}
	}
	closedir(d);
	return NULL;
}

int main(void)
{
	const char *dev = getenv("SSQ_MLX5_DEVICE");

	if (!dev)
		dev = first_mlx5();
	if (!dev)
		SKIP("no mlx5 device in /sys/class/infiniband (set SSQ_MLX5_DEVICE to "
		     "pick one)");
	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	signal(SIGPIPE, SIG_IGN);
	flow_device = dev;
	printf("mlx5 backend on %s\n", dev);
	run_config("auto");
	return test_exit("ctrl_mlx5");
}
