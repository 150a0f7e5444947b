/* SPDX-License-Identifier: MIT */
/* Which mlx5 devices this host has, for ssqd --list-devices and the tests. */
#ifndef SSQ_CTRL_MLX5_LIST_H
#define SSQ_CTRL_MLX5_LIST_H

#include <stdio.h>

/*
 * ssqd_mlx5_sysfs_count - mlx5 devices under /sys/class/infiniband (names
 * starting "mlx5"), without opening anything. 0 when the class is absent.
 */
int ssqd_mlx5_sysfs_count(void);

/*
 * ssqd_mlx5_list_devices - print each mlx5 device with its ports (state,
 * LID, active MTU), GIDs and mlx5dv capabilities to @out. Returns how many
 * were printed; 0 prints nothing.
 */
int ssqd_mlx5_list_devices(FILE *out);

#endif
