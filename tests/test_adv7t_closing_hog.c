/* SPDX-License-Identifier: MIT */
/*
 * One uid must not keep every other uid out with tenants' ssqd that agreed
 * to exit idle (closing: they serve nothing and take nothing more;
 * tenants.c). A closing slot stays taken until its ssqd is reaped; its own
 * uid's connections wait for it (parked, tenant_park.c) and have it killed
 * after the closing wait, but while another slot is free the uid's next
 * connection starts a new ssqd there instead - so a uid whose closing ssqd
 * are slow to go (a tenant's ssqd its uid holds at its exit: stopped, or
 * ptraced with PTRACE_O_TRACEEXIT; here the test hook
 * $SSQD_TEST_TENANT_EXIT_DELAY_MS, tenant_idle.c) takes slot after slot.
 *
 * This test, as root, starts ssqd --tenants uid --allow-gid 65534
 * --tenant-idle-ms 300 on the emulated device, every tenant's ssqd held
 * at its idle exit. uid 60000 connects and closes 16 times
 * (SSQD_MAX_TENANTS), each time once its last ssqd exited idle: all 16
 * slots are then closing, all uid 60000's. uid 60001, a second uid, then
 * connects: it must be served (a closing ssqd has nothing to serve and
 * can be killed for it, as for its own uid).
 * Before: "uid 60001 refused: -87 ... ssqd serves 16 tenants besides its
 * own, the most it may" (EUSERS) - with one uid's closing ssqd in all 16.
 * Needs root (the clients run as other uids).
 */
#include <sys/wait.h>
#include "cluster_flow.h"

#define SLOTS 16u /* SSQD_MAX_TENANTS */
#define UID_A 60000u
#define UID_B 60001u

static char sock[108], logf[128];

int main(void)
{
	const char *const args[] = { "--data-mib",       "2",   "--sq-size",   "64",
		                     "--tenants",        "uid", "--allow-gid", "65534",
		                     "--tenant-idle-ms", "300", NULL };
	struct t_uid_clients u = { 0 };
	unsigned i, starts;
	int st, up, rc;
	pid_t d;

	t_need_ssqd();
	if (getuid() != 0)
		SKIP("not root: the clients run as other uids");
	signal(SIGPIPE, SIG_IGN);
	/* Every tenant's ssqd, let exit idle, is held there (600 s at most). */
	setenv("SSQD_TEST_TENANT_EXIT_DELAY_MS", "600000", 1);
	d = t_tenants_ssqd("a7hog", sock, logf, args, &up);
	CHECK(up, "ssqd --tenants uid answered root");

	u.sock = sock;
	u.gid = 65534;
	for (i = 0; i < SLOTS; i++) {
		u.uid = UID_A;
		rc = t_uid_clients(&u);
		CHECK(rc == 0, "uid %u's connection %u: %s", UID_A, i + 1, u.said);
		if (rc)
			break;
		CHECK(t_log_wait(logf, "(--tenant-idle-ms): exiting", i + 1, 30),
		      "uid %u's ssqd %u did not exit idle within 30 s", UID_A, i + 1);
	}
	starts = t_log_count(logf, "tenant uid 60000: its ssqd is pid ");
	printf("uid %u: %u ssqd started, %u exiting idle, held\n", UID_A, starts,
	       t_log_count(logf, "(--tenant-idle-ms): exiting"));

	u.uid = UID_B;
	rc = t_uid_clients(&u);
	printf("uid %u, a second uid, with uid %u's closing ssqd in every slot: %s\n",
	       UID_B, UID_A, rc ? u.said : "served");
	CHECK(rc == 0, "uid %u refused: %s", UID_B, u.said);
	/* How: it waited for one of uid 60000's, killed after the wait. */
	CHECK(t_log_count(logf, "connection(s) of uid 60001 waiting: killed") == 1,
	      "uid %u's connection did not wait for a closing ssqd of uid %u's, "
	      "killed for it",
	      UID_B, UID_A);

	CHECK(t_ssqd_stop_ok(d, &st, sock), "ssqd exit status 0x%x", st);
	if (!test_failures)
		unlink(logf);
	return test_exit("adv7t_closing_hog");
}
