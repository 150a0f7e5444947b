/* SPDX-License-Identifier: MIT */
/* List mlx5 devices, their ports, GIDs and mlx5dv capabilities. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <infiniband/mlx5dv.h>
#include "ctrl/backend/mlx5_list.h"

int ssqd_mlx5_find(const char *want, char *name, size_t len)
{
	struct ibv_device **list;
	int n = 0, i, rc = -ENODEV;

	/* NULL (ENOSYS and the like): no RDMA subsystem, so no device. */
	list = ibv_get_device_list(&n);
	if (!list)
		return -ENODEV;
	for (i = 0; i < n && rc == -ENODEV; i++) {
		const char *dn = ibv_get_device_name(list[i]);

		if (want && strcmp(dn, want))
			continue;
		/*
		 * By provider, never by name: rdma-core's udev rule renames
		 * ConnectX devices rocep<bus>s<slot>f<fn> / ibp... on Debian
		 * and Ubuntu (kernel-boot/rdma-persistent-naming.rules); only
		 * MLNX_OFED keeps mlx5_N. mlx5dv_is_supported asks whether
		 * libmlx5 drives it (providers/mlx5/mlx5.c).
		 */
		rc = mlx5dv_is_supported(list[i]) ? 0 : -EOPNOTSUPP;
		if (!want && rc) {
			rc = -ENODEV; /* not this one: the next, maybe */
			continue;
		}
		if (name && len)
			snprintf(name, len, "%s", dn);
	}
	ibv_free_device_list(list);
	return rc;
}

static void print_device(FILE *out, struct ibv_device *dev)
{
	struct ibv_context *ctx = ibv_open_device(dev);
	struct mlx5dv_context dv = { 0 };
	struct ibv_device_attr attr;
	uint8_t p;
	int g;

	fprintf(out, "%s (node GUID 0x%016llx)\n", ibv_get_device_name(dev),
	        (unsigned long long)be64toh(ibv_get_device_guid(dev)));
	if (!ctx) {
		fprintf(out, "  cannot open: %s\n", strerror(errno));
		return;
	}
	dv.comp_mask =
	    MLX5DV_CONTEXT_MASK_CQE_COMPRESION | MLX5DV_CONTEXT_MASK_STRIDING_RQ;
	if (!mlx5dv_query_device(ctx, &dv))
		fprintf(out, "  mlx5dv: version %u flags 0x%llx%s%s%s\n", dv.version,
		        (unsigned long long)dv.flags,
		        dv.flags & MLX5DV_CONTEXT_FLAGS_MPW_ALLOWED ? " mpw" : "",
		        dv.flags & MLX5DV_CONTEXT_FLAGS_ENHANCED_MPW ? " enhanced-mpw"
		                                                     : "",
		        dv.flags & MLX5DV_CONTEXT_FLAGS_CQE_V1 ? " cqe-v1" : "");
	if (ibv_query_device(ctx, &attr)) {
		ibv_close_device(ctx);
		return;
	}
	fprintf(out,
	        "  fw %s, max_qp %d, max_qp_wr %d, max_sge %d, READ/atomic depth %d "
	        "(responder %d)\n",
	        attr.fw_ver, attr.max_qp, attr.max_qp_wr, attr.max_sge,
	        attr.max_qp_init_rd_atom, attr.max_qp_rd_atom);
	for (p = 1; p <= attr.phys_port_cnt; p++) {
		struct ibv_port_attr pa;

		if (ibv_query_port(ctx, p, &pa))
			continue;
		fprintf(out, "  port %u: %s, LID 0x%04x, active MTU %d, %s\n", p,
		        ibv_port_state_str(pa.state), pa.lid, 128 << pa.active_mtu,
		        pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet (RoCE)"
		                                                 : "InfiniBand");
		for (g = 0; g < pa.gid_tbl_len && g < 16; g++) {
			static const char *const type[] = { "IB", "RoCE v1", "RoCE v2" };
			struct ibv_gid_entry e;
			int k, rc = ibv_query_gid_ex(ctx, p, (uint32_t)g, &e, 0);

			/* ENODATA: an empty entry (ibv_query_gid would say zeroes). */
			if (rc == ENODATA)
				continue;
			if (rc) {
				fprintf(out, "    GID[%d] cannot be read: %s\n", g,
				        strerror(rc));
				break;
			}
			fprintf(out, "    GID[%d] ", g);
			for (k = 0; k < 16; k += 2)
				fprintf(out, "%02x%02x%s", e.gid.raw[k], e.gid.raw[k + 1],
				        k < 14 ? ":" : "");
			fprintf(out, " %s\n", e.gid_type < 3 ? type[e.gid_type] : "?");
		}
	}
	ibv_close_device(ctx);
}

int ssqd_mlx5_list_devices(FILE *out)
{
	struct ibv_device **list;
	int n = 0, i, shown = 0;

	list = ibv_get_device_list(&n);
	if (!list)
		return 0;
	for (i = 0; i < n; i++) {
		if (!mlx5dv_is_supported(list[i]))
			continue;
		print_device(out, list[i]);
		shown++;
	}
	ibv_free_device_list(list);
	return shown;
}
