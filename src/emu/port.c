/* SPDX-License-Identifier: MIT */
/*
 * What the emulated device says about itself: device limits, its two
 * ports (link layer, MTU, LID) and their GID tables, with the values a
 * ConnectX-6 reports (emu.h says where they come from), so that code
 * choosing a path, an MTU or a read/atomic depth from them is tested
 * against the same answers it gets from hardware.
 */
#include "emu/emu_pvt.h"

int emu_query_device(struct emu_dev *dev, struct ibv_device_attr *attr)
{
	if (!dev || !attr)
		return -EINVAL;
	memset(attr, 0, sizeof(*attr));
	snprintf(attr->fw_ver, sizeof(attr->fw_ver), "ssq-emu");
	attr->vendor_id = 0x02c9;    /* Mellanox */
	attr->vendor_part_id = 4123; /* ConnectX-6 */
	attr->max_mr_size = UINT64_MAX;
	attr->page_size_cap = 0xfffffffffffff000ull;
	attr->max_qp = SSQ_EMU_MAX_QP;
	attr->max_qp_wr = 32768;
	attr->max_sge = 30;
	attr->max_sge_rd = 30;
	attr->max_cq = SSQ_EMU_MAX_CQ;
	attr->max_cqe = (1 << 22) - 1; /* emu_create_cq takes up to 2^22 CQEs */
	attr->max_mr = SSQ_EMU_MAX_MR;
	attr->max_pd = 1 << 23;
	attr->max_qp_rd_atom = SSQ_EMU_MAX_QP_RD_ATOM;
	attr->max_qp_init_rd_atom = SSQ_EMU_MAX_QP_INIT_RD_ATOM;
	attr->max_res_rd_atom = SSQ_EMU_MAX_QP_RD_ATOM * SSQ_EMU_MAX_QP;
	attr->atomic_cap = IBV_ATOMIC_HCA;
	attr->max_srq = SSQ_EMU_MAX_SRQ;
	attr->max_srq_wr = 32767;
	attr->max_srq_sge = 31;
	attr->max_pkeys = 1; /* emu_modify_qp takes pkey_index 0 only */
	attr->local_ca_ack_delay = 16;
	attr->phys_port_cnt = SSQ_EMU_PORTS;
	return 0;
}

int emu_query_port(struct emu_dev *dev, uint8_t port, struct ibv_port_attr *attr)
{
	if (!dev || !attr || port < 1 || port > SSQ_EMU_PORTS)
		return -EINVAL;
	memset(attr, 0, sizeof(*attr));
	attr->state = IBV_PORT_ACTIVE;
	attr->phys_state = 5; /* LinkUp */
	attr->max_mtu = IBV_MTU_4096;
	attr->active_mtu = dev->active_mtu;
	attr->link_layer = dev->link_layer;
	attr->gid_tbl_len = SSQ_EMU_GID_TBL_LEN;
	attr->pkey_tbl_len = 1;
	attr->max_msg_sz = 1u << 30;
	/* No subnet manager on Ethernet: no LIDs there (mlx5 reports 0). */
	attr->lid = dev->link_layer == IBV_LINK_LAYER_INFINIBAND ? port : 0;
	attr->sm_lid = dev->link_layer == IBV_LINK_LAYER_INFINIBAND ? 1 : 0;
	return 0;
}

/* fe80::<interface id of port @port>, the default GID of each link layer. */
static void link_local(uint8_t port, uint8_t gid[16])
{
	static const uint8_t iid[8] = { 0x02, 0xc9, 0x02, 0xff, 0xfe, 0x00, 0x00, 0x00 };

	memset(gid, 0, 16);
	gid[0] = 0xfe;
	gid[1] = 0x80;
	memcpy(gid + 8, iid, 8);
	gid[15] = port;
}

int emu_query_gid(struct emu_dev *dev, uint8_t port, unsigned index,
                  struct ibv_gid_entry *entry)
{
	if (!dev || !entry || port < 1 || port > SSQ_EMU_PORTS ||
	    index >= SSQ_EMU_GID_TBL_LEN)
		return -EINVAL;
	memset(entry, 0, sizeof(*entry));
	entry->gid_index = index;
	entry->port_num = port;
	if (dev->link_layer == IBV_LINK_LAYER_INFINIBAND) {
		if (index)
			return -ENODATA;
		entry->gid_type = IBV_GID_TYPE_IB;
		link_local(port, entry->gid.raw);
		return 0;
	}
	if (index > 3)
		return -ENODATA;
	/* Even entries RoCE v1, odd ones RoCE v2 of the same address. */
	entry->gid_type = index & 1 ? IBV_GID_TYPE_ROCE_V2 : IBV_GID_TYPE_ROCE_V1;
	if (index < 2) {
		link_local(port, entry->gid.raw);
	} else {
		entry->gid.raw[10] = entry->gid.raw[11] = 0xff;
		entry->gid.raw[12] = 10;
		entry->gid.raw[15] = port;
	}
	return 0;
}
