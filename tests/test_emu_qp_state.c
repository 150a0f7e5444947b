/* SPDX-License-Identifier: MIT */
/*
 * The emulated RC QP state machine against the kernel's rules
 * (drivers/infiniband/core/verbs.c, qp_state_table, RC column), written out
 * again here independently: every (current, next) pair, with the required
 * mask, each required bit missing, and each other single bit added.
 * RESET -> ERR is not in the table (the kernel refuses it: issue 15), so a
 * QP reaches ERR from INIT here. Then what mlx5 checks in the values
 * (issue 15): a GRH on Ethernet ports and its GID index, the path MTU
 * against the port's, READ/atomic depths against the device's.
 */
#include "helpers.h"
#include "emu/testbed_pvt.h"

struct rule {
	int valid, req, opt;
};

#define NST (IBV_QPS_ERR + 1)

static struct rule rules[NST][NST];

static void init_rules(void)
{
	rules[IBV_QPS_RESET][IBV_QPS_RESET] = (struct rule){ 1, 0, 0 };
	rules[IBV_QPS_RESET][IBV_QPS_INIT] =
	    (struct rule){ 1, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0 };
	rules[IBV_QPS_INIT][IBV_QPS_RESET] = (struct rule){ 1, 0, 0 };
	rules[IBV_QPS_INIT][IBV_QPS_ERR] = (struct rule){ 1, 0, 0 };
	rules[IBV_QPS_INIT][IBV_QPS_INIT] =
	    (struct rule){ 1, 0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS };
	rules[IBV_QPS_INIT][IBV_QPS_RTR] =
	    (struct rule){ 1,
		           IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		               IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
		           IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX };
	rules[IBV_QPS_RTR][IBV_QPS_RESET] = (struct rule){ 1, 0, 0 };
	rules[IBV_QPS_RTR][IBV_QPS_ERR] = (struct rule){ 1, 0, 0 };
	rules[IBV_QPS_RTR][IBV_QPS_RTS] =
	    (struct rule){ 1,
		           IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		               IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
		           IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
		               IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE };
	rules[IBV_QPS_RTS][IBV_QPS_RESET] = (struct rule){ 1, 0, 0 };
	rules[IBV_QPS_RTS][IBV_QPS_ERR] = (struct rule){ 1, 0, 0 };
	rules[IBV_QPS_RTS][IBV_QPS_RTS] =
	    (struct rule){ 1, 0,
		           IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH |
		               IBV_QP_PATH_MIG_STATE | IBV_QP_MIN_RNR_TIMER };
	rules[IBV_QPS_ERR][IBV_QPS_RESET] = (struct rule){ 1, 0, 0 };
	rules[IBV_QPS_ERR][IBV_QPS_ERR] = (struct rule){ 1, 0, 0 };
}

/* Values every check accepts. */
static void good_attr(struct ibv_qp_attr *a, enum ibv_qp_state next,
                      enum ibv_qp_state cur)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = next;
	a->cur_qp_state = cur;
	a->port_num = 1;
	a->pkey_index = 0;
	a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	a->ah_attr.port_num = 2;
	a->path_mtu = IBV_MTU_1024;
	a->dest_qp_num = 0x123;
	a->max_dest_rd_atomic = 1;
	a->min_rnr_timer = 12;
	a->timeout = 14;
	a->retry_cnt = 7;
	a->rnr_retry = 7;
	a->max_rd_atomic = 1;
	a->alt_ah_attr.port_num = 1;
	a->alt_port_num = 1;
}

/* Drive @qp to @s through legal transitions. */
static int walk(struct emu_qp *qp, enum ibv_qp_state s)
{
	static const enum ibv_qp_state path[] = { IBV_QPS_INIT, IBV_QPS_RTR,
		                                  IBV_QPS_RTS };
	struct ibv_qp_attr a;
	enum ibv_qp_state cur = IBV_QPS_RESET;
	unsigned i;

	good_attr(&a, IBV_QPS_RESET, cur);
	if (emu_modify_qp(qp, &a, IBV_QP_STATE))
		return -1;
	for (i = 0; i < 3 && cur != s; i++) {
		if (s == IBV_QPS_ERR && cur == IBV_QPS_INIT)
			break;
		good_attr(&a, path[i], cur);
		if (emu_modify_qp(qp, &a, IBV_QP_STATE | rules[cur][path[i]].req))
			return -1;
		cur = path[i];
	}
	if (s == IBV_QPS_ERR) {
		good_attr(&a, IBV_QPS_ERR, cur);
		if (emu_modify_qp(qp, &a, IBV_QP_STATE))
			return -1;
	}
	return emu_qp_state(qp) == s ? 0 : -1;
}

static const char *sname(int s)
{
	static const char *const n[] = { "RESET", "INIT", "RTR", "RTS",
		                         "SQD",   "SQE",  "ERR" };

	return s >= 0 && s < NST ? n[s] : "?";
}

static void test_table(struct emu_qp *qp)
{
	static const int reachable[] = { IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR,
		                         IBV_QPS_RTS, IBV_QPS_ERR };
	unsigned c, bit;
	int next, ret, legal = 0;

	for (c = 0; c < 5; c++) {
		int cur = reachable[c];

		for (next = 0; next < NST; next++) {
			const struct rule *r = &rules[cur][next];
			struct ibv_qp_attr a;

			/* The required mask exactly. */
			CHECK(walk(qp, cur) == 0, "walk to %s", sname(cur));
			good_attr(&a, next, cur);
			ret = emu_modify_qp(qp, &a, IBV_QP_STATE | r->req);
			CHECK(ret == (r->valid ? 0 : -EINVAL),
			      "%s -> %s with req mask: %d", sname(cur), sname(next), ret);
			if (r->valid) {
				legal++;
				CHECK((int)emu_qp_state(qp) == next, "%s -> %s: now %s",
				      sname(cur), sname(next), sname(emu_qp_state(qp)));
			} else {
				CHECK((int)emu_qp_state(qp) == cur,
				      "%s -> %s refused: state kept", sname(cur),
				      sname(next));
				continue;
			}
			/* Each required bit missing; each other bit added. */
			for (bit = 1; bit <= 25; bit++) {
				int b = 1 << bit, mask, want;

				if (r->req & b)
					mask = (IBV_QP_STATE | r->req) & ~b,
					want = -EINVAL;
				else if (r->opt & b)
					mask = IBV_QP_STATE | r->req | b, want = 0;
				else
					mask = IBV_QP_STATE | r->req | b, want = -EINVAL;
				CHECK(walk(qp, cur) == 0, "walk to %s", sname(cur));
				good_attr(&a, next, cur);
				ret = emu_modify_qp(qp, &a, mask);
				CHECK(ret == want,
				      "%s -> %s mask 0x%x (bit %u): %d, want %d",
				      sname(cur), sname(next), mask, bit, ret, want);
				CHECK((int)emu_qp_state(qp) == (ret ? cur : next),
				      "%s -> %s bit %u: state %s", sname(cur),
				      sname(next), bit, sname(emu_qp_state(qp)));
			}
		}
	}
	CHECK(legal == 14, "14 legal RC transitions among the emulated states, saw %d",
	      legal);
}

/*
 * RESET -> ERR: the kernel's qp_state_table (drivers/infiniband/core/verbs.c,
 * ib_modify_qp_is_ok) has no RESET row entry for ERR, so ibv_modify_qp fails
 * with EINVAL and the QP stays in RESET. The only ways out of RESET are
 * RESET and INIT.
 */
static void test_reset_to_err(struct emu_qp *qp)
{
	struct ibv_qp_attr a;
	int ret;

	CHECK(walk(qp, IBV_QPS_RESET) == 0, "to RESET");
	good_attr(&a, IBV_QPS_ERR, IBV_QPS_RESET);
	ret = emu_modify_qp(qp, &a, IBV_QP_STATE);
	CHECK(ret == -EINVAL, "RESET -> ERR: %d, want -EINVAL", ret);
	CHECK(emu_qp_state(qp) == IBV_QPS_RESET, "RESET -> ERR refused: now %s",
	      sname(emu_qp_state(qp)));
}

/* Without IBV_QP_STATE the target is the current state. */
static void test_no_state(struct emu_qp *qp)
{
	struct ibv_qp_attr a;

	CHECK(walk(qp, IBV_QPS_INIT) == 0, "to INIT");
	good_attr(&a, IBV_QPS_RTS, IBV_QPS_INIT);
	CHECK(emu_modify_qp(qp, &a, IBV_QP_ACCESS_FLAGS) == 0,
	      "INIT: access flags alone");
	CHECK(emu_qp_state(qp) == IBV_QPS_INIT, "still INIT");
	CHECK(walk(qp, IBV_QPS_RTR) == 0, "to RTR");
	CHECK(emu_modify_qp(qp, &a, IBV_QP_ACCESS_FLAGS) == -EINVAL,
	      "RTR -> RTR refused");
	CHECK(walk(qp, IBV_QPS_RTS) == 0, "to RTS");
	CHECK(emu_modify_qp(qp, &a, IBV_QP_MIN_RNR_TIMER) == 0,
	      "RTS: min_rnr_timer alone");
	CHECK(emu_modify_qp(qp, &a, IBV_QP_TIMEOUT) == -EINVAL, "RTS: timeout refused");
	/* CUR_STATE must be the truth. */
	a.cur_qp_state = IBV_QPS_RTR;
	CHECK(emu_modify_qp(qp, &a, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS) == -EINVAL,
	      "wrong cur_qp_state refused");
	a.cur_qp_state = IBV_QPS_RTS;
	CHECK(emu_modify_qp(qp, &a, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS) == 0,
	      "right cur_qp_state accepted");
}

/* Values out of range are refused even with the right mask. */
static void test_values(struct emu_qp *qp)
{
	const int to_init =
	    IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
	const int to_rtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
	                   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
	                   IBV_QP_MIN_RNR_TIMER;
	const int to_rts = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
	                   IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
	struct ibv_qp_attr a;
	int k;

	for (k = 0; k < 4; k++) {
		CHECK(walk(qp, IBV_QPS_RESET) == 0, "reset");
		good_attr(&a, IBV_QPS_INIT, IBV_QPS_RESET);
		if (k == 0)
			a.port_num = 3;
		else if (k == 1)
			a.port_num = 0;
		else if (k == 2)
			a.pkey_index = 1;
		else
			a.qp_access_flags = IBV_ACCESS_MW_BIND << 4;
		CHECK(emu_modify_qp(qp, &a, to_init) == -EINVAL, "bad INIT value %d", k);
		CHECK(emu_qp_state(qp) == IBV_QPS_RESET, "stays RESET");
	}
	for (k = 0; k < 4; k++) {
		CHECK(walk(qp, IBV_QPS_INIT) == 0, "init");
		good_attr(&a, IBV_QPS_RTR, IBV_QPS_INIT);
		if (k == 0)
			a.path_mtu = 0;
		else if (k == 1)
			a.dest_qp_num = 1u << 24;
		else if (k == 2)
			a.min_rnr_timer = 32;
		else
			a.ah_attr.port_num = 3;
		CHECK(emu_modify_qp(qp, &a, to_rtr) == -EINVAL, "bad RTR value %d", k);
	}
	for (k = 0; k < 3; k++) {
		CHECK(walk(qp, IBV_QPS_RTR) == 0, "rtr");
		good_attr(&a, IBV_QPS_RTS, IBV_QPS_RTR);
		if (k == 0)
			a.rnr_retry = 8;
		else if (k == 1)
			a.retry_cnt = 8;
		else
			a.timeout = 32;
		CHECK(emu_modify_qp(qp, &a, to_rts) == -EINVAL, "bad RTS value %d", k);
	}
	CHECK(emu_modify_qp(NULL, &a, IBV_QP_STATE) == -EINVAL, "NULL qp");
	CHECK(emu_modify_qp(qp, NULL, IBV_QP_STATE) == -EINVAL, "NULL attr");
}

/* INIT -> RTR with good_attr's values changed by @tweak; the return. */
static int to_rtr(struct emu_qp *qp, void (*tweak)(struct ibv_qp_attr *, int), int k)
{
	const int to_rtr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
	                        IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
	                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	struct ibv_qp_attr a;

	if (walk(qp, IBV_QPS_INIT))
		return -999;
	good_attr(&a, IBV_QPS_RTR, IBV_QPS_INIT);
	tweak(&a, k);
	return emu_modify_qp(qp, &a, to_rtr_mask);
}

static void grh(struct ibv_qp_attr *a, int sgid)
{
	if (sgid < 0)
		return;
	a->ah_attr.is_global = 1;
	a->ah_attr.grh.hop_limit = 64;
	a->ah_attr.grh.sgid_index = (uint8_t)sgid;
}

static void dest_depth(struct ibv_qp_attr *a, int depth)
{
	a->max_dest_rd_atomic = (uint8_t)depth;
}

static void path_mtu(struct ibv_qp_attr *a, int mtu)
{
	a->path_mtu = (enum ibv_mtu)mtu;
}

/*
 * An Ethernet (RoCE) device: query_port / query_gid say so, and INIT ->
 * RTR wants a GRH (mlx5_set_path: -EINVAL without one) naming a filled
 * GID entry below gid_tbl_len (-EINVAL past it, -ENODATA on an empty one).
 */
static void test_ethernet(void)
{
	struct emu_dev_attr da = { .ignore_env = 1,
		                   .link_layer = IBV_LINK_LAYER_ETHERNET };
	struct emu_tb_opts o = { .dev_attr = &da };
	struct ibv_port_attr pa;
	struct ibv_gid_entry e;
	struct emu_tb tb;
	int ret = emu_tb_init(&tb, &o);

	CHECK(ret == 0, "Ethernet testbed (its QPs connect with a GRH): %d", ret);
	if (ret)
		return;
	CHECK(emu_query_port(tb.dev, 1, &pa) == 0 &&
	          pa.link_layer == IBV_LINK_LAYER_ETHERNET && pa.lid == 0 &&
	          pa.active_mtu == IBV_MTU_1024 && pa.gid_tbl_len == 8,
	      "eth port: link %u lid %u mtu %u gids %d", pa.link_layer, pa.lid,
	      pa.active_mtu, pa.gid_tbl_len);
	CHECK(emu_query_gid(tb.dev, 1, 3, &e) == 0 &&
	          e.gid_type == IBV_GID_TYPE_ROCE_V2 && e.gid.raw[10] == 0xff &&
	          e.gid.raw[12] == 10 && e.gid.raw[15] == 1,
	      "GID 3: RoCE v2 ::ffff:10.0.0.1");
	CHECK(emu_query_gid(tb.dev, 1, 2, &e) == 0 && e.gid_type == IBV_GID_TYPE_ROCE_V1,
	      "GID 2: RoCE v1");
	CHECK(emu_query_gid(tb.dev, 1, 4, &e) == -ENODATA, "GID 4 empty");
	CHECK(emu_query_gid(tb.dev, 1, 8, &e) == -EINVAL, "GID 8 past the table");

	ret = to_rtr(tb.s[0].qp, grh, -1);
	CHECK(ret == -EINVAL, "eth RTR without a GRH: %d, want -EINVAL", ret);
	CHECK(emu_qp_state(tb.s[0].qp) == IBV_QPS_INIT, "stays INIT");
	ret = to_rtr(tb.s[0].qp, grh, 8);
	CHECK(ret == -EINVAL, "eth RTR, sgid_index 8 (past gid_tbl_len): %d", ret);
	ret = to_rtr(tb.s[0].qp, grh, 5);
	CHECK(ret == -ENODATA, "eth RTR, sgid_index 5 (empty): %d, want -ENODATA", ret);
	ret = to_rtr(tb.s[0].qp, grh, 3);
	CHECK(ret == 0 && emu_qp_state(tb.s[0].qp) == IBV_QPS_RTR,
	      "eth RTR with a GRH from GID 3: %d", ret);
	/* Its active MTU is 1024: 2048 is refused, 1024 taken. */
	ret = to_rtr(tb.s[0].qp, path_mtu, IBV_MTU_2048);
	CHECK(ret == -EINVAL, "path MTU 2048 on a 1024 port: %d", ret);
	emu_tb_fini(&tb);
}

/* InfiniBand: LID path without GRH; a GRH's sgid_index is checked too. */
static void test_infiniband(struct emu_tb *tb)
{
	struct ibv_port_attr pa;
	struct ibv_device_attr da;
	struct ibv_gid_entry e;
	int ret;

	CHECK(emu_query_port(tb->dev, 2, &pa) == 0 &&
	          pa.link_layer == IBV_LINK_LAYER_INFINIBAND && pa.lid == 2 &&
	          pa.active_mtu == IBV_MTU_4096,
	      "ib port 2: link %u lid %u mtu %u", pa.link_layer, pa.lid, pa.active_mtu);
	CHECK(emu_query_port(tb->dev, 3, &pa) == -EINVAL, "no port 3");
	CHECK(emu_query_gid(tb->dev, 1, 0, &e) == 0 && e.gid_type == IBV_GID_TYPE_IB &&
	          e.gid.raw[0] == 0xfe && e.gid.raw[1] == 0x80,
	      "ib GID 0: fe80::");
	CHECK(emu_query_gid(tb->dev, 1, 1, &e) == -ENODATA, "ib GID 1 empty");
	CHECK(emu_query_device(tb->dev, &da) == 0 && da.max_qp_rd_atom == 16 &&
	          da.max_qp_init_rd_atom == 16 && da.vendor_part_id == 4123,
	      "ConnectX-6 depths: %d %d", da.max_qp_rd_atom, da.max_qp_init_rd_atom);
	ret = to_rtr(tb->s[0].qp, grh, -1);
	CHECK(ret == 0, "ib RTR without a GRH (LID path): %d", ret);
	ret = to_rtr(tb->s[0].qp, grh, 0);
	CHECK(ret == 0, "ib RTR with a GRH from GID 0: %d", ret);
	ret = to_rtr(tb->s[0].qp, grh, 1);
	CHECK(ret == -ENODATA, "ib RTR with a GRH from empty GID 1: %d", ret);
	ret = to_rtr(tb->s[0].qp, path_mtu, IBV_MTU_4096);
	CHECK(ret == 0, "path MTU 4096 on a 4096 port: %d", ret);
}

/*
 * READ/atomic depths past the device's: mlx5_ib_modify_qp refuses
 * max_dest_rd_atomic above max_qp_rd_atom and max_rd_atomic above
 * max_qp_init_rd_atom (16 on a ConnectX-6) with -EINVAL.
 */
static void test_rd_atomic(struct emu_qp *qp)
{
	const int to_rts = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
	                   IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
	struct ibv_qp_attr a;
	int ret;

	ret = to_rtr(qp, dest_depth, 17);
	CHECK(ret == -EINVAL, "max_dest_rd_atomic 17: %d, want -EINVAL", ret);
	CHECK(emu_qp_state(qp) == IBV_QPS_INIT, "stays INIT");
	ret = to_rtr(qp, dest_depth, 16);
	CHECK(ret == 0, "max_dest_rd_atomic 16: %d", ret);
	good_attr(&a, IBV_QPS_RTS, IBV_QPS_RTR);
	a.max_rd_atomic = 17;
	ret = emu_modify_qp(qp, &a, to_rts);
	CHECK(ret == -EINVAL, "max_rd_atomic 17: %d, want -EINVAL", ret);
	CHECK(emu_qp_state(qp) == IBV_QPS_RTR, "stays RTR");
	a.max_rd_atomic = 16;
	ret = emu_modify_qp(qp, &a, to_rts);
	CHECK(ret == 0 && emu_qp_state(qp) == IBV_QPS_RTS, "max_rd_atomic 16: %d", ret);
}

/* A port opened at MTU 512 refuses a path MTU of 1024. */
static void test_small_mtu(void)
{
	struct emu_dev_attr da = { .ignore_env = 1, .active_mtu = IBV_MTU_512 };
	struct emu_tb_opts o = { .dev_attr = &da };
	struct emu_tb tb;
	int ret = emu_tb_init(&tb, &o);

	/* The testbed connects at 1024: more than this port takes. */
	CHECK(ret == -EINVAL, "testbed at path MTU 1024 on a 512 port: %d", ret);
	if (!ret)
		emu_tb_fini(&tb);
	da.active_mtu = (enum ibv_mtu)6;
	CHECK(emu_tb_init(&tb, &o) == -EINVAL, "an active MTU past 4096 refused");
	da.active_mtu = 0;
	da.link_layer = 7;
	CHECK(emu_tb_init(&tb, &o) == -EINVAL, "an unknown link layer refused");
}

int main(void)
{
	struct emu_tb tb;
	int ret;

	init_rules();
	ret = emu_tb_init(&tb, NULL);
	CHECK(ret == 0, "testbed: %d", ret);
	if (ret)
		return test_exit("emu_qp_state");
	test_table(tb.s[0].qp);
	test_reset_to_err(tb.s[0].qp);
	test_no_state(tb.s[0].qp);
	test_values(tb.s[0].qp);
	test_infiniband(&tb);
	test_rd_atomic(tb.s[0].qp);
	emu_tb_fini(&tb);
	test_ethernet();
	test_small_mtu();
	return test_exit("emu_qp_state");
}
