/* SPDX-License-Identifier: MIT */
/* Which mlx5 devices this host has, for ssqd --list-devices and the tests. */
#ifndef SSQ_CTRL_MLX5_LIST_H
#define SSQ_CTRL_MLX5_LIST_H

#include <stddef.h>
#include <stdio.h>

/*
 * ssqd_mlx5_find - the RDMA device named @want (NULL: the first one)
 * that libmlx5 drives (mlx5dv_is_supported), its name in @name (@len
 * bytes; may be NULL). Returns 0, -ENODEV (no such device, or none at
 * all) or -EOPNOTSUPP (@want exists but is not an mlx5 device; its name
 * is still given). Calls ibv_get_device_list, so libibverbs initialises:
 * only after ssqd_fork_safe_prepare (fork_safe.h).
 */
int ssqd_mlx5_find(const char *want, char *name, size_t len);

/*
 * ssqd_mlx5_list_devices - print each mlx5 device with its ports (state,
 * LID, active MTU), GIDs and mlx5dv capabilities to @out. Returns how many
 * were printed; 0 prints nothing.
 */
int ssqd_mlx5_list_devices(FILE *out);

#endif
