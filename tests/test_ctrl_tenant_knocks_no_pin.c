/* SPDX-License-Identifier: MIT */
/*
 * Adversarial review h-adv5t (branch h-tenslot): a stranger at the peer
 * port cannot start a tenant any more, but it can keep every running one
 * from exiting idle. Its TENANT {uid U} (read before any proof, with or
 * without --peer-key) is handed to U's running ssqd as a link (peers/
 * accept.c knock_route, serve.c hand_knocks_over), where it is a knock
 * until SSQD_PEER_EXCHANGE_MS - and a knock is "something to serve"
 * (tenant_idle.c tenant_busy). One silent connection per tenant every
 * second keeps all 16 slots held for ever: this host's next uid is
 * refused -EUSERS, as adv4's finding 1 was, only with one local
 * connection per slot first. The promise (issue 28): no stranger at the
 * peer port may fill slots.
 *
 * bob: --tenants uid --allow-gid 65534 --tenant-idle-ms 1000. uids
 * 60000..60015 (group 65534) each connect once and leave (16 tenants,
 * each to exit after 1 s idle); a stranger sends TENANT for each of them
 * every 2 s for 8 s, nothing else; then uid 60016 connects: it must be
 * served (the 16 idle tenants gone or going). Then again with --peer-key
 * (the stranger on a peer's host: --peer-key takes no other's connection;
 * the TENANT is read, and handed over, before any proof).
 * Needs root (the clients run as other uids).
 */
#define _GNU_SOURCE
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "cluster_flow.h"
#include "ctrl/proto/peer_msg.h"

#define N     2
#define UID0  60000u
#define SLOTS 16u
static const char *const names[N] = { "alice", "bob" };
static struct t_cluster cl;

static unsigned count(const char *needle)
{
	return t_log_count(cl.log[1], needle);
}

/* uid @uid connects to bob, lists, closes, in a child: 0 if served. */
static int client(uid_t uid)
{
	struct t_uid_clients u = { .sock = cl.sock[1], .uid = uid, .gid = 65534 };

	return t_uid_clients(&u);
}

/* A stranger's connection to bob's peer port saying TENANT {uid}, nothing more. */
static int knock(uint32_t uid)
{
	struct proto_peer_tenant t = { PROTO_TENANT_UID, 1, uid };
	uint8_t buf[SSQ_PEER_TENANT_LEN];
	int s = t_tcp_connect(-1, cl.port[1]);

	proto_peer_encode_tenant(&t, buf);
	if (s >= 0 && write(s, buf, sizeof(buf)) != (ssize_t)sizeof(buf)) {
		close(s);
		s = -1;
	}
	return s;
}

/* One run, with --peer-key (@key: SSQ_TEST_PEER_KEY) or without. */
static void pins(int key)
{
	const char *const extra[] = { "--tenants",  "uid", "--allow-gid",      "65534",
		                      "--data-mib", "2",   "--tenant-idle-ms", "1000",
		                      NULL };
	int s[SLOTS], rc, ok = 0;
	unsigned i, round;
	double t0;

	cf_cluster_files(&cl, key ? "adv5pin-key" : "adv5pin", N, names, 0);
	CHECK(t_cluster_start(&cl, 1, extra) > 0, "start bob");
	ssq_client_close(t_cluster_connect(&cl, 1));
	chmod(cl.sock[1], 0666);
	for (i = 0; i < SLOTS; i++)
		ok += client(UID0 + i) == 0;
	CHECK(ok == (int)SLOTS, "%d of %u uids served", ok, SLOTS);
	for (i = 0; i < SLOTS; i++)
		s[i] = -1;
	/*
	 * 8 s of a stranger's TENANTs: each uid's every 2 s (a knock lasts
	 * SSQD_PEER_EXCHANGE_MS, 5 s, in the tenant), 50 ms apart - under
	 * the parent's SSQD_KNOCKS_PER_SOURCE, which limits only the knocks
	 * it holds at once, not the ones it hands over.
	 */
	for (round = 0, t0 = now_s(); now_s() - t0 < 8; round++) {
		for (i = 0; i < SLOTS; i++) {
			if (s[i] >= 0)
				close(s[i]);
			s[i] = knock(UID0 + i);
			usleep(50000);
		}
		usleep(1200000);
	}
	rc = client(UID0 + SLOTS);
	printf("--peer-key: %s; after %u rounds of a stranger's 16 TENANTs over 8 s "
	       "(--tenant-idle-ms "
	       "1000): %u idle exits, %u links handed to tenants; uid %u's client: "
	       "%d %s\n",
	       key ? "yes" : "no", round, count("exited, idle"),
	       count("handed to its ssqd"), UID0 + SLOTS, rc,
	       rc ? strerror(-rc) : "served");
	CHECK(rc == 0,
	      "--peer-key %s: a stranger's TENANT messages kept 16 idle tenants' slots "
	      "held: uid %u refused (%d %s)",
	      key ? "yes" : "no", UID0 + SLOTS, rc, strerror(-rc));
	for (i = 0; i < SLOTS; i++)
		if (s[i] >= 0)
			close(s[i]);
	t_cluster_stop(&cl);
}

int main(void)
{
	t_need_ssqd();
	if (getuid() != 0)
		SKIP("not root: the clients run as other uids");
	signal(SIGPIPE, SIG_IGN);
	pins(0);
	/* The stranger on a peer's host (--peer-key takes no other's connection). */
	setenv("SSQ_TEST_PEER_KEY", "1", 1);
	pins(1);
	return test_exit("ctrl_tenant_knocks_no_pin");
}
