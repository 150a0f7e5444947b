/* SPDX-License-Identifier: MIT */
/*
 * Which source GID a QP's GRH names, for both backends: on an Ethernet
 * port every RC address needs a GRH (the kernel's mlx5_set_path refuses a
 * RoCE address without one), and a RoCE v2 GID is the one a router can
 * forward; on InfiniBand the LID reaches every port of the subnet.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include "ctrl/backend/backend.h"

const char *ssqd_link_layer_str(uint8_t link_layer)
{
	return link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet (RoCE)" : "InfiniBand";
}

static const char *type_str(unsigned type)
{
	switch (type) {
	case IBV_GID_TYPE_IB:
		return "IB";
	case IBV_GID_TYPE_ROCE_V1:
		return "RoCE v1";
	case IBV_GID_TYPE_ROCE_V2:
		return "RoCE v2";
	}
	return "unknown type";
}

static int v4_mapped(const uint8_t *g)
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return !memcmp(g, pfx, 12);
}

static int link_local(const uint8_t *g)
{
	return g[0] == 0xfe && (g[1] & 0xc0) == 0x80;
}

/* Lower is better: what a routed RoCE fabric can carry first. */
static int rank(const struct ssqd_gid *e)
{
	int r = e->type == IBV_GID_TYPE_ROCE_V2 ? 0 : 4;

	if (v4_mapped(e->raw))
		return r;
	return r + (link_local(e->raw) ? 2 : 1);
}

static const char *const rank_why[] = {
	"the first RoCE v2 entry with an IPv4-mapped address",
	/* One entry in two pieces: parentheses tell clang's
	 * -Wstring-concatenation so. */
	("no RoCE v2 entry with an IPv4 address; the first with a global IPv6 "
	 "address"),
	"no RoCE v2 entry with an IP address; a link-local one (not routable)",
	"?",
	"no RoCE v2 entry; RoCE v1 with an IPv4-mapped address (not routable)",
	"no RoCE v2 entry; RoCE v1 with an IPv6 address (not routable)",
	"no RoCE v2 entry; RoCE v1 link-local (not routable)",
};

static void describe(struct ssqd_port_info *pi, const struct ssqd_gid *e, const char *why)
{
	char addr[INET6_ADDRSTRLEN];

	if (!inet_ntop(AF_INET6, e->raw, addr, sizeof(addr)))
		snprintf(addr, sizeof(addr), "?");
	snprintf(pi->gid_why, sizeof(pi->gid_why), "GID index %u (%s %s): %s", e->index,
	         type_str(e->type), addr, why);
}

static void use(struct ssqd_port_info *pi, const struct ssqd_gid *e)
{
	pi->gid_index = (int)e->index;
	memcpy(pi->gid, e->raw, 16);
}

int ssqd_port_gid(struct ssqd_port_info *pi, int want, const struct ssqd_gid *tab,
                  unsigned n, char *why, size_t whylen)
{
	int eth = pi->link_layer == IBV_LINK_LAYER_ETHERNET, best = -1;
	unsigned i;

	pi->gid_index = -1;
	memset(pi->gid, 0, 16);
	if (want >= 0) {
		for (i = 0; i < n && tab[i].index != (unsigned)want; i++)
			;
		if (i == n) {
			snprintf(why, whylen,
			         "--gid-index %d: that entry of the port's GID table "
			         "is empty or past its end",
			         want);
			return -ENODATA;
		}
		use(pi, &tab[i]);
		describe(pi, &tab[i], "--gid-index");
		return 0;
	}
	if (want == SSQD_GID_NONE || !eth) {
		snprintf(pi->gid_why, sizeof(pi->gid_why), "no GRH: %s",
		         want == SSQD_GID_NONE
		             ? "--gid-index none"
		             : "InfiniBand reaches the peer by LID (--gid-index N adds a "
		               "GRH)");
		return 0;
	}
	for (i = 0; i < n; i++)
		if (tab[i].type != IBV_GID_TYPE_IB &&
		    (best < 0 || rank(&tab[i]) < rank(&tab[best])))
			best = (int)i;
	if (best < 0) {
		snprintf(why, whylen,
		         "the Ethernet port has no RoCE GID (is an IP address configured "
		         "on its netdev?); --gid-index names one");
		return -ENOENT;
	}
	use(pi, &tab[best]);
	describe(pi, &tab[best], rank_why[rank(&tab[best])]);
	return 0;
}
