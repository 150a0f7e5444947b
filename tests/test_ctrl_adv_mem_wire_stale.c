/* SPDX-License-Identifier: MIT */
/*
 * Adversary: a multi-packet RDMA WRITE from the wire resolves its R_Key
 * once, at the first packet, and keeps the piece - with the memory
 * file's descriptor NUMBER - in the responder's state (wire_resp.c,
 * wq->wdst) for the middle and last packets. ssq_mem_dereg on the
 * responder's host checks only that host's own send queues
 * (clients/mr.c key_in_flight): a WRITE that a peer is in the middle of is
 * not seen, the registration goes, ssqd closes the client's
 * /proc/PID/mem, and the next descriptor ssqd receives gets that number.
 *
 * Two ssqd over the emulated wire; the sender's drops half its packets
 * (drop=0.5), so a 64 KiB WRITE takes retransmissions. On the receiving
 * host, O registers 64 KiB; V, a fork of O made before (same addresses,
 * its own copy), is another client of that ssqd. Once the WRITE's first
 * packet has landed in O's memory, the sending ssqd is held (SIGSTOP,
 * standing in for a slow network; loss alone gives the same window, only
 * not every run), O deregisters (accepted), V registers 4 KiB of
 * something else (ssqd gets V's /proc/V/mem under the number O's had),
 * and the sender goes on.
 * Second run: O does not deregister, it just exits there (a crash); ssqd
 * drops its registration once its own queues are idle (reap_graves),
 * and V's registrations take the freed numbers.
 * Wanted: nothing lands in V's memory (V never registered those
 * addresses), nothing more lands in O's after its dereg returned 0.
 * Before a fix: in both runs the rest of the WRITE (57344 bytes) lands in
 * V's copy of the buffer and the WRITE completes successfully.
 */
#define _GNU_SOURCE
#include "recv_flow.h"

#define LEN (64u * 1024u)

struct desc {
	uint64_t addr;
	uint32_t rkey;
};

struct o_report {
	int dereg_rc;
	int first_seen;
	uint32_t before; /* bytes landed in O when its dereg was answered */
	uint32_t after;  /* ... and 2 s later */
	pid_t v;
};

/* 0: O deregisters mid-WRITE; 1: O just dies (SIGKILL-like _exit). */
static int die_mode;
static pid_t sender_pid;

static uint32_t landed(const volatile uint8_t *m)
{
	uint32_t i, n = 0;

	for (i = 0; i < LEN; i++)
		n += m[i] != 0;
	return n;
}

/* V: a client of the receiving ssqd with O's address layout. */
static void victim(const char *sock, volatile uint8_t *mem, int go_fd, int done_fd,
                   int check_fd, int res_fd)
{
	struct ssq_client *c = ssqd_connect(sock);
	uint8_t *other = malloc(4096);
	struct ssq_mr mr;
	uint32_t n;
	char b;

	if (!c || !other || read(go_fd, &b, 1) != 1)
		_exit(3);
	if (b == 'd')
		sleep(3); /* ssqd reaps the dead O (reap_graves) */
	memset(other, 0, 4096);
	/* A dead O also freed its socket's and pidfd's numbers, lower than
	 * its registration's: take those too. */
	for (n = 0; n < (b == 'd' ? 4u : 1u); n++)
		if (ssq_mem_reg(c, other, 4096, IBV_ACCESS_LOCAL_WRITE, &mr))
			_exit(4);
	(void)!write(done_fd, "r", 1);
	kill(sender_pid, SIGCONT);
	if (read(check_fd, &b, 1) != 1)
		_exit(5);
	n = landed(mem);
	(void)!write(res_fd, &n, sizeof(n));
	pause();
	_exit(0);
}

static void owner(const char *sock, pid_t sender_ssqd, int to_main, int go_v[2],
                  int v_done[2], int check_v[2], int v_res[2])
{
	volatile uint8_t *mem =
	    mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct o_report rep;
	struct ssq_client *c;
	struct ssq_mr mr;
	struct desc dsc;
	double t0;
	char b;

	memset(&rep, 0, sizeof(rep));
	if (mem == MAP_FAILED)
		_exit(3);
	memset((void *)mem, 0, LEN);
	rep.v = fork();
	if (rep.v == 0)
		victim(sock, mem, go_v[0], v_done[1], check_v[0], v_res[1]);
	c = ssqd_connect(sock);
	if (!c || ssq_mem_reg(c, (void *)mem, LEN,
	                      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &mr))
		_exit(4);
	dsc.addr = mr.remote_addr;
	dsc.rkey = mr.rkey;
	if (write(to_main, &dsc, sizeof(dsc)) != sizeof(dsc))
		_exit(5);
	t0 = now_s();
	while (!mem[0] && now_s() - t0 < 20.0)
		;
	rep.first_seen = mem[0] != 0;
	kill(sender_ssqd, SIGSTOP);
	usleep(200000); /* what was already on the wire lands */
	if (die_mode) {
		rep.dereg_rc = 1;
		rep.before = rep.after = landed(mem);
		(void)!write(to_main, &rep, sizeof(rep));
		(void)!write(go_v[1], "d", 1);
		_exit(0);
	}
	rep.dereg_rc = ssq_mem_dereg(c, &mr);
	rep.before = landed(mem);
	(void)!write(go_v[1], "g", 1);
	(void)!read(v_done[0], &b, 1);
	kill(sender_ssqd, SIGCONT);
	sleep(2);
	rep.after = landed(mem);
	(void)!write(to_main, &rep, sizeof(rep));
	pause();
	_exit(0);
}

static void run(int die)
{
	const char *what = die ? "O dies mid-WRITE" : "O deregisters mid-WRITE";
	uint16_t port = free_tcp_port();
	char sa[108], sb[108], arg[32], carg[32];
	const char *la_args[] = { "--listen", arg, NULL };
	const char *cb_args[] = { "--connect", carg, NULL };
	int to_main[2], go_v[2], v_done[2], check_v[2], v_res[2], status, st = -1;
	uint8_t *src = malloc(LEN);
	struct ssq_client *cb = NULL;
	struct ssq_queue *qb = NULL;
	struct ssq_producer *p;
	struct ssq_completion comp;
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge sge;
	struct ssq_mr src_mr;
	struct o_report rep;
	struct desc dsc;
	uint32_t in_v = 0;
	pid_t la, lb, o;
	double t0;

	die_mode = die;
	if (!port || pipe(to_main) || pipe(go_v) || pipe(v_done) || pipe(check_v) ||
	    pipe(v_res) || !src) {
		CHECK(0, "%s: setup", what);
		return;
	}
	snprintf(sa, sizeof(sa), "/tmp/ssq-advstale-l-%d.sock", getpid());
	snprintf(sb, sizeof(sb), "/tmp/ssq-advstale-c-%d.sock", getpid());
	snprintf(arg, sizeof(arg), "%u", port);
	snprintf(carg, sizeof(carg), "127.0.0.1:%u", port);
	la = rssqd_start(sa, NULL, la_args);
	lb = rssqd_start(sb, "drop=0.5,seed=11", cb_args);
	sender_pid = lb;
	cb = ssqd_connect_pid(sb, lb);
	CHECK(cb && wait_q0_ready(cb, 1, 10) >= 0, "both daemons up and linked");
	if (!cb || ssq_queue_open(cb, "q0", &qb))
		goto out_daemons;
	p = ssq_queue_producer(qb);
	o = fork();
	if (o == 0)
		owner(sa, lb, to_main[1], go_v, v_done, check_v, v_res);
	CHECK(read(to_main[0], &dsc, sizeof(dsc)) == sizeof(dsc), "O's descriptor");
	memset(src, 0xa5, LEN);
	CHECK(ssq_mem_reg(cb, src, LEN, 0, &src_mr) == 0, "sender's source: %s",
	      ssq_client_error(cb));
	sge.addr = (uint64_t)(uintptr_t)src;
	sge.length = LEN;
	sge.lkey = src_mr.lkey;
	t_wr_one(&wr, &sge, IBV_WR_RDMA_WRITE, 1, dsc.addr, dsc.rkey);
	CHECK(ssq_post_wr(p, &wr, &bad) == 0, "64 KiB WRITE posted");
	CHECK(read(to_main[0], &rep, sizeof(rep)) == sizeof(rep), "O's report");
	t0 = now_s();
	while (now_s() - t0 < 20.0) {
		if (ssq_poll(p, &comp, 1) == 1) {
			st = (int)comp.status;
			break;
		}
		usleep(1000);
	}
	(void)!write(check_v[1], "c", 1);
	CHECK(read(v_res[0], &in_v, sizeof(in_v)) == sizeof(in_v), "V's report");
	printf("%s: first packet seen by O: %d; O's dereg: %d (1: died); bytes in O: "
	       "%u then, %u 2 s later; the WRITE completed with status %d; bytes "
	       "that landed in V's memory (never registered by V): %u\n",
	       what, rep.first_seen, rep.dereg_rc, rep.before, rep.after, st, in_v);
	CHECK(rep.first_seen, "%s: the WRITE's first packet reached O", what);
	CHECK(in_v == 0, "%s: nothing landed in V's memory: %u bytes did", what, in_v);
	CHECK(rep.dereg_rc != 0 || rep.after == rep.before,
	      "%s: nothing landed in O's memory after its dereg returned 0 (%u -> %u)",
	      what, rep.before, rep.after);
	kill(rep.v, SIGKILL);
	kill(o, SIGKILL);
	waitpid(o, &status, 0);
out_daemons:
	kill(lb, SIGCONT);
	ssq_client_close(cb);
	CHECK(t_ssqd_stop_ok(la, &status, sa), "listening ssqd exit 0x%x", status);
	CHECK(t_ssqd_stop_ok(lb, &status, sb), "connecting ssqd exit 0x%x", status);
	free(src);
	close(to_main[0]);
	close(to_main[1]);
	close(go_v[0]);
	close(go_v[1]);
	close(v_done[0]);
	close(v_done[1]);
	close(check_v[0]);
	close(check_v[1]);
	close(v_res[0]);
	close(v_res[1]);
}

int main(void)
{
	t_need_ssqd();
	setvbuf(stdout, NULL, _IONBF, 0);
	run(0);
	run(1);
	return test_exit("ctrl_adv_mem_wire_stale");
}
