/* SPDX-License-Identifier: MIT */
/*
 * ssqd resets a queue whose control block a client scribbled, and survives
 * it (issue 16, item 3). Against an ssqd on the emulated device, client A
 * posts signaled WRITEs and takes their completions while client B, with
 * the same shared memory mapped, writes into the control block:
 *  1. a doorbell lease naming no record (0xdeadbeef): no producer could
 *     ring again, and A's posts would never complete;
 *  2. max_producers = 0xffffffff and a slot owner out of range, then B
 *     leaves (ssqd heals after the death, reading those fields);
 *  3. random bytes over the whole block, several seeds, B leaving each
 *     time.
 * What A had in flight at a reset completes to it as flushed (1b).
 * Each time ssqd must log the inconsistency and reset the queue within a
 * few seconds, A must post and complete again, and ssqd must still be
 * running at the end (and exit 0 on SIGTERM).
 */
#include <fcntl.h>
#include "dv/ctl.h"
#include "ssq_flow.h"

#define LIMIT_S 5.0

static char sock[108], logpath[128];
static struct ssq_buf src, dst;
static struct ssq_queue *qa;

/* ssqd on the emulated device, its stderr in logpath. */
static struct ssq_client *start(pid_t *pid)
{
	const char *ssqd = getenv("SSQD");

	*pid = fork();
	if (*pid == 0) {
		int fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (fd < 0 || dup2(fd, 2) < 0)
			_exit(126);
		execl(ssqd, ssqd, "--device", "emu", "--socket", sock, "--hugepages=off",
		      "--data-mib", "8", "--sq-size", "256", (char *)NULL);
		_exit(127);
	}
	return ssqd_connect_pid(sock, *pid);
}

/* How many lines of ssqd's log contain @what. */
static int log_count(const char *what)
{
	char line[512];
	FILE *f = fopen(logpath, "r");
	int n = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, what) != NULL;
	fclose(f);
	return n;
}

/*
 * A posts signaled WRITEs (retrying what the queue refuses while it is
 * reset) until one of them completes successfully, within LIMIT_S.
 * Completions of WQEs the reset swallowed never come: only new ones count.
 * Returns 0 or -1.
 */
static int a_completes(uint64_t *wr)
{
	struct ssq_producer *p = ssq_queue_producer(qa);
	uint64_t first = *wr;
	double t0 = now_s(), last = 0;

	while (now_s() - t0 < LIMIT_S) {
		struct ssq_completion comp[16];
		int n, k;

		if (now_s() - last > 0.05) { /* one post in flight at a time, roughly */
			int rc =
			    ssq_post_write(p, src.iova, src.lkey, 64, dst.remote_addr,
			                   dst.rkey, *wr, SSQ_WQE_SIGNALED);

			if (rc == 0) {
				(*wr)++;
				last = now_s();
			}
		}
		n = ssq_poll(p, comp, 16);
		for (k = 0; k < n; k++)
			if (comp[k].status == IBV_WC_SUCCESS && comp[k].wr_id >= first)
				return 0;
		usleep(100);
	}
	return -1;
}

/* Client B: attached to q0, its view of the control block. */
static struct ssq_client *b_attach(struct ssq_ctl **ctl, size_t *len)
{
	struct ssq_client *b = ssqd_connect(sock);
	struct ssq_queue *qb;
	struct ssq_producer *p;

	if (!b || ssq_queue_open(b, "q0", &qb)) {
		fprintf(stderr, "client B: %s\n",
		        b ? ssq_client_error(b) : "no connection");
		return NULL;
	}
	p = ssq_queue_producer(qb);
	*ctl = p->ctl;
	*len = ssq_ctl_size(p->slot_mask + 1);
	return b;
}

/* Wait (up to LIMIT_S) until ssqd has logged @n resets. Returns 0 or -1. */
static int wait_resets(int n)
{
	double t0 = now_s();

	while (log_count("control block rebuilt") < n)
		if (now_s() - t0 > LIMIT_S)
			return -1;
		else
			usleep(1000);
	return 0;
}

/* Scenario 1b (see main). Returns 0 or -1, having said why. */
static int flushed_at_reset(pid_t d, struct ssq_ctl *ctl, uint64_t *wr)
{
	struct ssq_producer *p = ssq_queue_producer(qa);
	struct ssq_completion comp[16];
	int resets = log_count("control block rebuilt"), got = 0, n, k, rc = 0;
	uint64_t first = *wr;
	unsigned i;
	double t0;

	kill(d, SIGSTOP);
	__atomic_store_n(&ctl->db_lease, 0xdeadbeefu, __ATOMIC_SEQ_CST);
	for (i = 0; i < 3 && !rc; i++)
		rc = ssq_post_write(p, src.iova, src.lkey, 64, dst.remote_addr, dst.rkey,
		                    (*wr)++, i == 1 ? 0 : SSQ_WQE_SIGNALED);
	kill(d, SIGCONT);
	if (rc) {
		fprintf(stderr, "post with ssqd stopped: %d\n", rc);
		return -1;
	}
	if (wait_resets(resets + 1))
		return -1;
	for (t0 = now_s(); got < 3 && now_s() - t0 < LIMIT_S;) {
		n = ssq_poll(p, comp, 16);
		for (k = 0; k < n; k++, got++)
			if (comp[k].wr_id != first + (uint64_t)got ||
			    comp[k].status != IBV_WC_WR_FLUSH_ERR) {
				fprintf(
				    stderr,
				    "completion %d: wr_id %llu status %s, wanted %llu "
				    "flushed\n",
				    got, (unsigned long long)comp[k].wr_id,
				    ibv_wc_status_str((enum ibv_wc_status)comp[k].status),
				    (unsigned long long)(first + (uint64_t)got));
				return -1;
			}
		usleep(100);
	}
	if (got != 3)
		fprintf(stderr, "%d of the 3 WQEs in flight at the reset completed\n",
		        got);
	return got == 3 ? 0 : -1;
}

static int ssqd_alive(pid_t d)
{
	return waitpid(d, NULL, WNOHANG) == 0;
}

int main(void)
{
	struct ssq_client *a, *b;
	struct ssq_ctl *ctl = NULL;
	size_t len = 0, i;
	uint64_t wr = 1;
	unsigned seed;
	int status, resets;
	pid_t d;

	t_need_ssqd();
	snprintf(sock, sizeof(sock), "/tmp/ssq-guard-%d.sock", getpid());
	snprintf(logpath, sizeof(logpath), "/tmp/ssq-guard-%d.log", getpid());
	a = start(&d);
	if (!a || ssq_queue_open(a, "q0", &qa) || ssq_buf_alloc(a, 4096, &src) ||
	    ssq_buf_alloc(a, 4096, &dst)) {
		fprintf(stderr, "setup: %s\n", a ? ssq_client_error(a) : "no ssqd");
		if (d > 0)
			kill(d, SIGKILL);
		return 1;
	}
	CHECK(a_completes(&wr) == 0, "A's first post");

	/* 1: a lease no record holds. */
	b = b_attach(&ctl, &len);
	CHECK(b != NULL, "client B attached");
	if (!b)
		goto out;
	__atomic_store_n(&ctl->db_lease, 0xdeadbeefu, __ATOMIC_SEQ_CST);
	CHECK(a_completes(&wr) == 0,
	      "A's posts after B set db_lease 0xdeadbeef: no completion in %.0f s",
	      LIMIT_S);
	CHECK(wait_resets(1) == 0, "no reset after db_lease 0xdeadbeef");
	CHECK(log_count("control block inconsistent (db_lease") >= 1,
	      "ssqd did not log the lease");

	/*
	 * 1b: WQEs in flight at the reset complete as flushed, signaled or
	 * not. ssqd stopped, B takes the doorbell lease in nobody's name, A
	 * posts three (published, left to the "holder" to ring); ssqd goes
	 * on, finds the lease and resets: A gets all three back as
	 * IBV_WC_WR_FLUSH_ERR, none dropped.
	 */
	CHECK(flushed_at_reset(d, ctl, &wr) == 0, "WQEs in flight at a reset");

	/* 2: bounds ssqd indexes with, then B leaves: ssqd heals. */
	ctl->max_producers = 0xffffffffu;
	((struct ssq_ctl_slot *)(ctl + 1))[3].owner = 0x40000000u;
	ssq_client_close(b);
	CHECK(wait_resets(3) == 0, "no reset after max_producers 0xffffffff");
	CHECK(a_completes(&wr) == 0, "A's posts after max_producers 0xffffffff");
	CHECK(ssqd_alive(d), "ssqd died after max_producers 0xffffffff");
	CHECK(log_count("control block inconsistent (max_producers") >= 1,
	      "ssqd did not log max_producers");

	/* 3: random bytes, B leaving each time. */
	for (seed = 1; seed <= 4 && ssqd_alive(d); seed++) {
		b = b_attach(&ctl, &len);
		CHECK(b != NULL, "client B attached (seed %u)", seed);
		if (!b)
			break;
		srand(seed);
		for (i = 0; i < len; i++)
			((uint8_t *)ctl)[i] = (uint8_t)rand();
		ssq_client_close(b);
		CHECK(wait_resets(3 + (int)seed) == 0,
		      "no reset after random bytes, seed %u", seed);
		CHECK(a_completes(&wr) == 0, "A's posts after random bytes, seed %u",
		      seed);
		CHECK(ssqd_alive(d), "ssqd died after random bytes, seed %u", seed);
	}
	resets = log_count("control block rebuilt");
	printf("ssqd logged %d inconsistent control blocks and %d resets\n",
	       log_count("control block inconsistent"), resets);
	CHECK(resets >= 7, "ssqd logged %d resets, expected one per scribble (7)",
	      resets);
out:
	ssq_client_close(a);
	if (ssqd_alive(d)) {
		CHECK(t_ssqd_stop_ok(d, &status, NULL),
		      "ssqd's exit status 0x%x on SIGTERM", status);
	} else {
		CHECK(0, "ssqd is gone");
	}
	if (test_failures) {
		char cmd[200];

		snprintf(cmd, sizeof(cmd), "tail -n 20 %s >&2", logpath);
		if (system(cmd) != 0)
			fprintf(stderr, "(no ssqd log)\n");
	}
	unlink(logpath);
	return test_exit("ctrl_ctl_guard");
}
