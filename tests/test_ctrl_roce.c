/* SPDX-License-Identifier: MIT */
/*
 * ssqd on both link layers of the emulated device, which refuses what
 * mlx5 refuses (a RoCE address without a GRH: mlx5_set_path; a path MTU
 * above the port's) - issue 15, items 3 and 4:
 *  - Ethernet, default options: ssqd picks the RoCE v2 GID with an IPv4
 *    address (index 3), says which and why, connects and a WRITE lands;
 *  - Ethernet with --gid-index none: INIT->RTR refused, ssqd exits saying
 *    the Ethernet port needs a GRH; --gid-index naming an empty entry:
 *    refused naming the index (never a zero GID sent instead);
 *  - InfiniBand: the LID path without a GRH works, and with --gid-index 0;
 *  - two ssqd whose ports have different active MTUs (1024 and 4096)
 *    agree on the smaller: 8 KiB WRITEs both ways complete (with each
 *    side's own MTU, the 4096-byte packets are NAKed by the 1024 side);
 *  - a peer whose responder takes 4 READs/atomics gets an initiator depth
 *    of 4 from ssqd, not 16;
 *  - the GID policy on tables a ConnectX may have (IPv4, IPv6 only, RoCE
 *    v1 only, none), and the RTR attributes: a GRH with hop limit 64.
 */
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "ctrl/backend/backend.h"
#include "ctrl/proto/peer_msg.h"
#include "ssq_flow.h"

static char logs[4][64];

/* ssqd on the emulated device at @sock, its stderr to @log, with @extra options. */
static pid_t run_ssqd(const char *sock, const char *log, const char *const *extra)
{
	const char *argv[32] = { getenv("SSQD"), "--device",   "emu",
		                 "--socket",     sock,         "--hugepages=off",
		                 "--data-mib",   "4",          "--sq-size",
		                 "256",          "--no-grants" };
	unsigned n = 11;
	pid_t pid;

	while (*extra && n < 31)
		argv[n++] = *extra++;
	argv[n] = NULL;
	pid = fork();
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (fd >= 0)
			dup2(fd, 2);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

static int log_has(const char *log, const char *needle)
{
	char buf[16384];
	ssize_t n;
	int fd = open(log, O_RDONLY);

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return strstr(buf, needle) != NULL;
}

static void show_log(const char *log)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "sed 's/^/    | /' %s >&2", log);
	(void)!system(cmd);
}

/* ssqd @pid's exit status within 20 s, or -1 (then killed). */
static int exit_status(pid_t pid)
{
	double t0 = now_s();
	int st;

	while (now_s() - t0 < 20) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		usleep(20 * 1000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

static int stop(pid_t pid)
{
	kill(pid, SIGTERM);
	return exit_status(pid);
}

/* One signaled WRITE of @len bytes through @q, and its completion (10 s). */
static int write_wait(struct ssq_queue *q, const struct ssq_buf *src,
                      const struct ssq_buf *dst, uint32_t len)
{
	struct ssq_producer *p = ssq_queue_producer(q);
	struct ssq_completion c;
	double t0 = now_s();
	int rc = ssq_post_write(p, src->iova, src->lkey, len, dst->remote_addr, dst->rkey,
	                        0xfeed, SSQ_WQE_SIGNALED);

	if (rc)
		return rc;
	while (now_s() - t0 < 10) {
		if (ssq_poll(p, &c, 1) == 1) {
			if (c.status != IBV_WC_SUCCESS)
				fprintf(stderr, "WRITE of %u bytes: %s\n", len,
				        ibv_wc_status_str(c.status));
			return c.status == IBV_WC_SUCCESS ? 0 : -EIO;
		}
		usleep(100);
	}
	return -ETIMEDOUT;
}

/* A loopback ssqd with @extra options comes up and a WRITE lands. */
static void loopback_works(const char *what, const char *const *extra,
                           const char *const *want_log)
{
	char sock[108];
	struct ssq_client *c;
	struct ssq_queue *q = NULL;
	struct ssq_buf src, dst;
	pid_t pid;
	int ok = 1;

	snprintf(sock, sizeof(sock), "/tmp/ssq-roce-%d.sock", getpid());
	pid = run_ssqd(sock, logs[0], extra);
	c = ssqd_connect_pid(sock, pid);
	CHECK(c != NULL, "%s: ssqd did not come up", what);
	if (!c) {
		show_log(logs[0]);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return;
	}
	CHECK(wait_q0_ready(c, 1, 10) >= 0, "%s: q0 never ready", what);
	CHECK(ssq_queue_open(c, "q0", &q) == 0, "%s: open: %s", what,
	      ssq_client_error(c));
	CHECK(ssq_buf_alloc(c, 4096, &src) == 0 && ssq_buf_alloc(c, 4096, &dst) == 0,
	      "%s: buffers", what);
	if (q) {
		memset(src.addr, 0x5a, 4096);
		CHECK(write_wait(q, &src, &dst, 4096) == 0 &&
		          !memcmp(src.addr, dst.addr, 4096),
		      "%s: a 4 KiB WRITE did not land", what);
		ssq_queue_close(q);
	}
	for (; *want_log; want_log++)
		if (!log_has(logs[0], *want_log)) {
			CHECK(0, "%s: the log lacks \"%s\"", what, *want_log);
			ok = 0;
		}
	ssq_client_close(c);
	CHECK(stop(pid) == 0, "%s: ssqd exit", what);
	if (!ok)
		show_log(logs[0]);
}

/* A loopback ssqd with @extra options exits 1 at setup, its log saying @want... */
static void setup_refused(const char *what, const char *const *extra,
                          const char *const *want_log)
{
	char sock[108];
	pid_t pid;
	int st, ok = 1;

	snprintf(sock, sizeof(sock), "/tmp/ssq-roce-%d.sock", getpid());
	pid = run_ssqd(sock, logs[0], extra);
	st = exit_status(pid);
	CHECK(st == 1, "%s: ssqd exit %d, want 1 (setup refused)", what, st);
	for (; *want_log; want_log++)
		if (!log_has(logs[0], *want_log)) {
			CHECK(0, "%s: the log lacks \"%s\"", what, *want_log);
			ok = 0;
		}
	if (!ok || st != 1)
		show_log(logs[0]);
}

static void link_layers(void)
{
	static const char *const eth[] = { "--emu-link-layer", "eth", NULL };
	static const char *const eth_log[] = {
		"port 1: Ethernet (RoCE), active MTU 1024, LID 0x0",
		"GID index 3 (RoCE v2 ::ffff:10.0.0.1): the first RoCE v2 entry with an "
		"IPv4-mapped address",
		NULL
	};
	static const char *const eth_v2ll[] = { "--emu-link-layer", "eth", "--gid-index",
		                                "1", NULL };
	static const char *const eth_v2ll_log[] = {
		"GID index 1 (RoCE v2 fe80::2c9:2ff:fe00:1): --gid-index", NULL
	};
	static const char *const eth_none[] = { "--emu-link-layer", "eth", "--gid-index",
		                                "none", NULL };
	static const char *const eth_none_log[] = { "INIT->RTR",
		                                    "no GRH (an Ethernet port needs one)",
		                                    "Invalid argument", NULL };
	static const char *const eth_empty[] = { "--emu-link-layer", "eth", "--gid-index",
		                                 "6", NULL };
	static const char *const eth_empty_log[] = {
		"--gid-index 6: that entry of the port's GID table is empty", NULL
	};
	static const char *const ib[] = { NULL };
	static const char *const ib_log[] = { "port 1: InfiniBand, active MTU 4096, LID "
		                              "0x1; no GRH: InfiniBand reaches "
		                              "the peer by LID",
		                              NULL };
	static const char *const ib_grh[] = { "--emu-link-layer", "ib", "--gid-index",
		                              "0", NULL };
	static const char *const ib_grh_log[] = { "GID index 0 (IB fe80::2c9:2ff:fe00:1)",
		                                  NULL };

	loopback_works("eth, default GID", eth, eth_log);
	loopback_works("eth, --gid-index 1", eth_v2ll, eth_v2ll_log);
	setup_refused("eth, --gid-index none", eth_none, eth_none_log);
	setup_refused("eth, --gid-index 6 (empty)", eth_empty, eth_empty_log);
	loopback_works("ib, LID path", ib, ib_log);
	loopback_works("ib, --gid-index 0", ib_grh, ib_grh_log);
}

/*
 * Two ssqd over the emulated wire, RoCE, A's port at MTU 1024, B's at
 * 4096: both must use 1024. 8 KiB WRITEs each way complete and land.
 */
static void mtu_exchange(void)
{
	char sa[108], sb[108], lport[16], hp[32];
	uint16_t port = t_free_tcp_port();
	const char *const a_opt[] = { "--listen", lport,       "--emu-link-layer",
		                      "eth",      "--emu-mtu", "1024",
		                      NULL };
	const char *const b_opt[] = { "--connect", hp,          "--emu-link-layer",
		                      "eth",       "--emu-mtu", "4096",
		                      NULL };
	struct ssq_client *ca, *cb;
	struct ssq_queue *qa = NULL, *qb = NULL;
	struct ssq_buf srca, dsta, srcb, dstb;
	pid_t a, b;

	snprintf(sa, sizeof(sa), "/tmp/ssq-roce-a-%d.sock", getpid());
	snprintf(sb, sizeof(sb), "/tmp/ssq-roce-b-%d.sock", getpid());
	snprintf(lport, sizeof(lport), "%u", port);
	snprintf(hp, sizeof(hp), "127.0.0.1:%u", port);
	a = run_ssqd(sa, logs[1], a_opt);
	ca = ssqd_connect_pid(sa, a);
	b = run_ssqd(sb, logs[2], b_opt);
	cb = ssqd_connect_pid(sb, b);
	CHECK(ca && cb, "both ssqd up");
	if (!ca || !cb)
		goto out;
	CHECK(wait_q0_ready(ca, 1, 10) >= 0 && wait_q0_ready(cb, 1, 10) >= 0,
	      "queues ready on both");
	CHECK(ssq_queue_open(ca, "q0", &qa) == 0 && ssq_queue_open(cb, "q0", &qb) == 0,
	      "open q0 on both");
	CHECK(ssq_buf_alloc(ca, 8192, &srca) == 0 &&
	          ssq_buf_alloc(ca, 8192, &dsta) == 0 &&
	          ssq_buf_alloc(cb, 8192, &srcb) == 0 &&
	          ssq_buf_alloc(cb, 8192, &dstb) == 0,
	      "buffers");
	if (qa && qb) {
		memset(srcb.addr, 0xb7, 8192);
		memset(srca.addr, 0xa3, 8192);
		CHECK(write_wait(qb, &srcb, &dsta, 8192) == 0 &&
		          !memcmp(srcb.addr, dsta.addr, 8192),
		      "8 KiB WRITE from the 4096-MTU host to the 1024-MTU host");
		CHECK(write_wait(qa, &srca, &dstb, 8192) == 0 &&
		          !memcmp(srca.addr, dstb.addr, 8192),
		      "8 KiB WRITE from the 1024-MTU host to the 4096-MTU host");
	}
	if (qa)
		ssq_queue_close(qa);
	if (qb)
		ssq_queue_close(qb);
out:
	if (cb)
		ssq_client_close(cb);
	if (ca)
		ssq_client_close(ca);
	CHECK(log_has(logs[2], "path MTU 1024 (our port 4096, the peer's 1024)"),
	      "B says it settled for the peer's MTU");
	CHECK(stop(b) == 0, "ssqd B exit");
	CHECK(stop(a) == 0, "ssqd A exit");
	if (test_failures) {
		show_log(logs[1]);
		show_log(logs[2]);
	}
}

static void gid(struct ssqd_gid *g, unsigned index, unsigned type, const char *pfx,
                unsigned last)
{
	memset(g, 0, sizeof(*g));
	g->index = index;
	g->type = type;
	if (!strcmp(pfx, "fe80")) {
		g->raw[0] = 0xfe;
		g->raw[1] = 0x80;
	} else if (!strcmp(pfx, "v4")) {
		g->raw[10] = g->raw[11] = 0xff;
		g->raw[12] = 192;
	} else {
		g->raw[0] = 0x20; /* 2001:db8::/32 */
		g->raw[1] = 0x01;
		g->raw[2] = 0x0d;
		g->raw[3] = 0xb8;
	}
	g->raw[15] = (uint8_t)last;
}

/* ssqd_port_gid on tables @tab[0..n): the index it picks, or -errno. */
static int pick(uint8_t link, int want, const struct ssqd_gid *tab, unsigned n,
                char *gid_why, size_t len)
{
	struct ssqd_port_info pi;
	char why[200] = "";
	int rc;

	memset(&pi, 0, sizeof(pi));
	pi.link_layer = link;
	rc = ssqd_port_gid(&pi, want, tab, n, why, sizeof(why));
	snprintf(gid_why, len, "%s", rc ? why : pi.gid_why);
	if (rc)
		return rc;
	/* The GID handed to the peer is the picked entry's, byte for byte. */
	for (unsigned i = 0; i < n; i++)
		if ((int)tab[i].index == pi.gid_index && memcmp(pi.gid, tab[i].raw, 16))
			return -1000;
	return pi.gid_index;
}

static void gid_policy(void)
{
	const uint8_t E = IBV_LINK_LAYER_ETHERNET, I = IBV_LINK_LAYER_INFINIBAND;
	struct ssqd_gid t[6];
	char w[200];
	int r;

	/* mlx5's usual table with an IPv4 and a global IPv6 address. */
	gid(&t[0], 0, IBV_GID_TYPE_ROCE_V1, "fe80", 1);
	gid(&t[1], 1, IBV_GID_TYPE_ROCE_V2, "fe80", 1);
	gid(&t[2], 2, IBV_GID_TYPE_ROCE_V1, "v6", 1);
	gid(&t[3], 3, IBV_GID_TYPE_ROCE_V2, "v6", 1);
	gid(&t[4], 6, IBV_GID_TYPE_ROCE_V1, "v4", 1);
	gid(&t[5], 7, IBV_GID_TYPE_ROCE_V2, "v4", 1);
	r = pick(E, SSQD_GID_AUTO, t, 6, w, sizeof(w));
	CHECK(r == 7 && strstr(w, "RoCE v2 ::ffff:192.0.0.1") && strstr(w, "IPv4"),
	      "v4 + v6: picked %d (%s)", r, w);
	r = pick(E, SSQD_GID_AUTO, t, 4, w, sizeof(w));
	CHECK(r == 3 && strstr(w, "RoCE v2 2001:db8::1") && strstr(w, "global IPv6"),
	      "v6 only: picked %d (%s)", r, w);
	r = pick(E, SSQD_GID_AUTO, t, 2, w, sizeof(w));
	CHECK(r == 1 && strstr(w, "link-local"), "link-local only: picked %d (%s)", r, w);
	r = pick(E, SSQD_GID_AUTO, t, 1, w, sizeof(w));
	CHECK(r == 0 && strstr(w, "RoCE v1") && strstr(w, "not routable"),
	      "RoCE v1 only: picked %d (%s)", r, w);
	r = pick(E, SSQD_GID_AUTO, t, 0, w, sizeof(w));
	CHECK(r == -ENOENT && strstr(w, "no RoCE GID"), "empty table: %d (%s)", r, w);
	r = pick(E, 6, t, 6, w, sizeof(w));
	CHECK(r == 6 && strstr(w, "--gid-index"), "--gid-index 6: %d (%s)", r, w);
	r = pick(E, 4, t, 6, w, sizeof(w));
	CHECK(r == -ENODATA && strstr(w, "--gid-index 4"), "empty 4: %d (%s)", r, w);
	r = pick(E, SSQD_GID_NONE, t, 6, w, sizeof(w));
	CHECK(r == -1 && strstr(w, "no GRH"), "none on eth: %d (%s)", r, w);
	gid(&t[0], 0, IBV_GID_TYPE_IB, "fe80", 1);
	r = pick(I, SSQD_GID_AUTO, t, 1, w, sizeof(w));
	CHECK(r == -1 && strstr(w, "LID"), "ib auto: %d (%s)", r, w);
	r = pick(I, 0, t, 1, w, sizeof(w));
	CHECK(r == 0, "ib --gid-index 0: %d (%s)", r, w);
}

/* INIT -> RTR as ssqd builds it: with a GRH, hop limit 64 and the GID. */
static void rtr_attr(void)
{
	struct ssqd_qp_remote r;
	struct ibv_qp_attr a;
	int mask;

	memset(&r, 0, sizeof(r));
	r.qpn = 0x123;
	r.mtu = IBV_MTU_1024;
	r.sgid_index = 3;
	r.gid[15] = 9;
	r.max_dest_rd_atomic = 16;
	ssqd_qp_attr_rtr(&a, &mask, 1, &r);
	CHECK(a.ah_attr.is_global == 1 && a.ah_attr.grh.hop_limit == 64 &&
	          a.ah_attr.grh.sgid_index == 3 && a.ah_attr.grh.dgid.raw[15] == 9 &&
	          a.path_mtu == IBV_MTU_1024 && a.max_dest_rd_atomic == 16,
	      "RTR GRH: global %u hop limit %u sgid %u", a.ah_attr.is_global,
	      a.ah_attr.grh.hop_limit, a.ah_attr.grh.sgid_index);
	r.sgid_index = -1;
	ssqd_qp_attr_rtr(&a, &mask, 1, &r);
	CHECK(a.ah_attr.is_global == 0, "no GRH without a GID index");
	ssqd_qp_attr_rts(&a, &mask, 5, 4, 20);
	CHECK(a.max_rd_atomic == 4, "RTS initiator depth %u", a.max_rd_atomic);
	/* --qp-timeout (perftest's -u) reaches the QP. */
	CHECK(a.timeout == 20 && (mask & IBV_QP_TIMEOUT), "RTS timeout %u", a.timeout);
}

/*
 * A peer whose responder takes 4 READs/atomics: ssqd's initiator depth
 * toward it is 4, not 16 (past the responder's resources the IB responder
 * NAKs). The peer is this test, speaking version 2 for one queue.
 */
static void peer_depth(void)
{
	char sa[108], lport[16];
	uint16_t port = t_free_tcp_port();
	const char *const a_opt[] = { "--listen", lport, "--queues", "1", NULL };
	const char *want = "READ/atomic depth 4 out (our device 16, the peer's responder "
	                   "4), 16 in";
	struct proto_peer_addr me;
	struct sockaddr_in sin = { 0 };
	uint8_t msg[SSQ_PEER_MSG_LEN], got[SSQ_PEER_MSG_LEN];
	int s = socket(AF_INET, SOCK_STREAM, 0), i, ok = 0;
	pid_t a;

	snprintf(sa, sizeof(sa), "/tmp/ssq-roce-e-%d.sock", getpid());
	snprintf(lport, sizeof(lport), "%u", port);
	a = run_ssqd(sa, logs[3], a_opt);
	memset(&me, 0, sizeof(me));
	me.count = 1;
	me.qpn = 0x999;
	me.psn = 1;
	me.lid = 2;
	/* An emulated-wire address (::ffff:127.0.0.1, UDP port 9): nobody there. */
	me.gid[1] = 9;
	me.gid[10] = me.gid[11] = 0xff;
	me.gid[12] = 127;
	me.gid[15] = 1;
	me.link_layer = IBV_LINK_LAYER_INFINIBAND;
	me.mtu = IBV_MTU_4096;
	me.rd_atom = 4;
	strcpy(me.name, "q0");
	proto_peer_encode(&me, msg);
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (i = 0; i < 200 && connect(s, (struct sockaddr *)&sin, sizeof(sin)); i++)
		usleep(50 * 1000);
	CHECK(send(s, msg, sizeof(msg), MSG_NOSIGNAL) == (ssize_t)sizeof(msg) &&
	          recv(s, got, sizeof(got), MSG_WAITALL) == (ssize_t)sizeof(got),
	      "exchange with the listening ssqd");
	for (i = 0; i < 200 && !(ok = log_has(logs[3], want)); i++)
		usleep(50 * 1000);
	CHECK(ok, "initiator depth capped to the peer's responder: the log lacks \"%s\"",
	      want);
	if (!ok)
		show_log(logs[3]);
	close(s);
	CHECK(stop(a) == 0, "ssqd --listen exit");
}

/* An Ethernet and an InfiniBand port cannot be joined: the --connect side says so. */
static void link_mismatch(void)
{
	char sa[108], sb[108], lport[16], hp[32];
	uint16_t port = t_free_tcp_port();
	const char *const a_opt[] = { "--listen", lport, "--emu-link-layer", "eth",
		                      NULL };
	const char *const b_opt[] = { "--connect", hp, NULL };
	const char *want = "the peer's port is Ethernet (RoCE), ours InfiniBand";
	pid_t a, b;
	int st;

	snprintf(sa, sizeof(sa), "/tmp/ssq-roce-c-%d.sock", getpid());
	snprintf(sb, sizeof(sb), "/tmp/ssq-roce-d-%d.sock", getpid());
	snprintf(lport, sizeof(lport), "%u", port);
	snprintf(hp, sizeof(hp), "127.0.0.1:%u", port);
	a = run_ssqd(sa, logs[1], a_opt);
	b = run_ssqd(sb, logs[2], b_opt);
	st = exit_status(b);
	CHECK(st == 1 && log_has(logs[2], want), "eth vs ib: --connect exit %d", st);
	if (st != 1 || !log_has(logs[2], want))
		show_log(logs[2]);
	CHECK(stop(a) == 0, "ssqd --listen exit");
}

int main(void)
{
	unsigned i;

	signal(SIGPIPE, SIG_IGN);
	gid_policy();
	rtr_attr();
	if (!getenv("SSQD"))
		SKIP("SSQD (the ssqd binary) not set: run through ctest");
	for (i = 0; i < 4; i++)
		snprintf(logs[i], sizeof(logs[i]), "/tmp/ssq-roce-%d-%u.log", getpid(),
		         i);
	link_layers();
	mtu_exchange();
	link_mismatch();
	peer_depth();
	for (i = 0; i < 4; i++)
		unlink(logs[i]);
	return test_exit("ctrl_roce");
}
