/* SPDX-License-Identifier: MIT */
/*
 * The multi-process ssqd scenario of ctrl_flow.h on a real ConnectX: ssqd's
 * mlx5 backend, loopback QPs on one port, several clients, data checked.
 * The device: $SSQ_MLX5_DEVICE (scripts/hw-check.sh sets it), else the
 * first RDMA device libmlx5 drives (mlx5dv_is_supported: by provider, not
 * by the "mlx5" name prefix, which rdma-core's udev naming rule replaces
 * with rocep.../ibp... on Debian and Ubuntu). A named device that is
 * absent or not an mlx5 device fails; only with none named and none
 * present does it skip, and say so.
 */
#include "ctrl_flow.h"
#include "ctrl/backend/mlx5_list.h"

int main(void)
{
	const char *dev = getenv("SSQ_MLX5_DEVICE");
	static char name[64];
	int rc;

	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	rc = ssqd_mlx5_find(dev && *dev ? dev : NULL, name, sizeof(name));
	if (rc && !(dev && *dev))
		SKIP("no mlx5 device on this host (none that mlx5dv_is_supported "
		     "accepts; set SSQ_MLX5_DEVICE to name one)");
	if (rc) {
		fprintf(stderr, "SSQ_MLX5_DEVICE=%s: %s\n", dev,
		        rc == -EOPNOTSUPP ? "not an mlx5 device (mlx5dv_is_supported)"
		                          : "no such RDMA device");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	flow_device = name;
	printf("mlx5 backend on %s\n", name);
	run_config("auto");
	return test_exit("ctrl_mlx5");
}
