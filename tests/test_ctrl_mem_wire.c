/* SPDX-License-Identifier: MIT */
/*
 * Clients' own memory host to host: two ssqd on the emulated device over
 * the emulated wire (clean, then 5 % drop, duplicate and reorder). On the
 * receiving host a client process O registers 8 KiB of its malloc'd memory
 * for remote access and 4 KiB for local use only; on the sending host
 * this process registers its own malloc'd buffers and, through the wire:
 *  - WRITEs 256 bytes into O's memory, READs them back, FETCH_ADDs there
 *    (O sees the bytes and the sum: zero-copy at both ends);
 *  - WRITEs with the key of O's local-only registration: REM_ACCESS_ERR,
 *    and those bytes stay untouched (a key nobody exposed reaches nothing);
 *  - the receiving ssqd runs with its default, per-buffer keys: a WRITE
 *    into O's arena buffer at the descriptor O gave lands; one at the same
 *    address with the arena-wide rkey (ssq_queue_peer_rkey) fails with
 *    REM_ACCESS_ERR; with ssqd --arena-rkey (one more clean run) the same
 *    WRITE lands and a READ through the arena key brings it back, as before
 *    per-buffer keys were the default;
 *  - once O is killed, WRITEs with its key: REM_ACCESS_ERR.
 */
#define _GNU_SOURCE
#include "recv_flow.h"

struct desc {
	uint64_t open_addr, shut_addr, buf_addr;
	uint32_t open_rkey, shut_rkey, buf_rkey;
};

static int run_one(struct ssq_producer *p, enum ibv_wr_opcode op, void *laddr,
                   uint32_t lkey, uint32_t len, uint64_t raddr, uint32_t rkey,
                   uint64_t wr_id)
{
	struct ibv_sge sge = { (uint64_t)(uintptr_t)laddr, len, lkey };
	struct ibv_send_wr wr, *bad = NULL;
	struct ssq_completion comp;
	double t0 = now_s();

	t_wr_one(&wr, &sge, op, wr_id, raddr, rkey);
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD)
		wr.wr.atomic.compare_add = 7;
	if (ssq_post_wr(p, &wr, &bad))
		return -1;
	while (now_s() - t0 < 20.0) {
		if (ssq_poll(p, &comp, 1) == 1)
			return comp.wr_id == wr_id ? (int)comp.status : -2;
		usleep(100);
	}
	return -1;
}

/* O, on the receiving host: register, say where, check on request. */
static void owner(const char *sock, int to_p, int from_p)
{
	uint8_t *open_mem = malloc(8192), *shut_mem = malloc(4096);
	struct ssq_client *c = ssqd_connect(sock);
	struct ssq_mr open_mr, shut_mr;
	struct ssq_buf ob;
	struct desc dsc;
	uint64_t sum;
	uint8_t ok = 1;
	char b;
	int i;

	if (!c || !open_mem || !shut_mem)
		_exit(3);
	memset(open_mem, 0, 8192);
	memset(shut_mem, 0x33, 4096);
	if (ssq_mem_reg(c, open_mem, 8192,
	                IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
	                    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
	                &open_mr) ||
	    ssq_mem_reg(c, shut_mem, 4096, IBV_ACCESS_LOCAL_WRITE, &shut_mr) ||
	    ssq_buf_alloc(c, 4096, &ob))
		_exit(4);
	memset(ob.addr, 0, 4096);
	dsc.buf_addr = ob.remote_addr;
	dsc.buf_rkey = ob.rkey;
	dsc.open_addr = open_mr.remote_addr;
	dsc.open_rkey = open_mr.rkey;
	dsc.shut_addr = shut_mr.remote_addr;
	dsc.shut_rkey = shut_mr.rkey;
	if (write(to_p, &dsc, sizeof(dsc)) != sizeof(dsc) || read(from_p, &b, 1) != 1)
		_exit(5);
	for (i = 0; i < 256; i++)
		ok &= open_mem[i] == (uint8_t)(i * 7);
	memcpy(&sum, open_mem + 4096, 8);
	ok &= sum == 7;
	for (i = 0; i < 4096; i++)
		ok &= shut_mem[i] == 0x33;
	for (i = 0; i < 64; i++)
		ok &= ((uint8_t *)ob.addr)[i] == (uint8_t)(i * 7);
	for (i = 64; i < 4096; i++)
		ok &= ((uint8_t *)ob.addr)[i] == 0;
	(void)!write(to_p, &ok, 1);
	pause();
	_exit(0);
}

static void run(const char *fault, const char *what, int arena_rkey)
{
	uint16_t port = free_tcp_port();
	char sa[108], sb[108], arg[32], carg[32];
	const char *la_args[] = { "--listen", arg, arena_rkey ? "--arena-rkey" : NULL,
		                  NULL };
	const char *cb_args[] = { "--connect", carg, NULL };
	uint8_t *src = malloc(4096), *back = malloc(4096), ok = 0;
	uint64_t *old = malloc(8);
	struct ssq_client *ca = NULL, *cb = NULL;
	struct ssq_queue *qb = NULL;
	struct ssq_mr src_mr, back_mr, old_mr;
	struct ssq_producer *p;
	int to_p[2], from_p[2], status, st, i;
	struct desc dsc;
	pid_t la, lb, o;

	CHECK(port != 0 && pipe(to_p) == 0 && pipe(from_p) == 0, "%s: setup", what);
	snprintf(sa, sizeof(sa), "/tmp/ssq-mwire-l-%d.sock", getpid());
	snprintf(sb, sizeof(sb), "/tmp/ssq-mwire-c-%d.sock", getpid());
	snprintf(arg, sizeof(arg), "%u", port);
	snprintf(carg, sizeof(carg), "127.0.0.1:%u", port);
	la = rssqd_start(sa, fault, la_args);
	lb = rssqd_start(sb, fault, cb_args);
	ca = ssqd_connect_pid(sa, la);
	cb = ca ? ssqd_connect_pid(sb, lb) : NULL;
	CHECK(ca && cb && wait_q0_ready(cb, 1, 10) >= 0, "%s: both daemons up and linked",
	      what);
	if (!ca || !cb || ssq_queue_open(cb, "q0", &qb))
		goto out;
	p = ssq_queue_producer(qb);
	o = fork();
	if (o == 0)
		owner(sa, to_p[1], from_p[0]);
	CHECK(read(to_p[0], &dsc, sizeof(dsc)) == sizeof(dsc), "%s: O's descriptors",
	      what);
	for (i = 0; i < 4096; i++)
		src[i] = (uint8_t)(i * 7);
	memset(back, 0, 4096);
	CHECK(ssq_mem_reg(cb, src, 4096, 0, &src_mr) == 0 &&
	          ssq_mem_reg(cb, back, 4096, IBV_ACCESS_LOCAL_WRITE, &back_mr) == 0 &&
	          ssq_mem_reg(cb, old, 8, IBV_ACCESS_LOCAL_WRITE, &old_mr) == 0,
	      "%s: the sender registers its own memory: %s", what, ssq_client_error(cb));
	st = run_one(p, IBV_WR_RDMA_WRITE, src, src_mr.lkey, 256, dsc.open_addr,
	             dsc.open_rkey, 1);
	CHECK(st == IBV_WC_SUCCESS, "%s: WRITE into O's memory: %d", what, st);
	st = run_one(p, IBV_WR_RDMA_READ, back, back_mr.lkey, 256, dsc.open_addr,
	             dsc.open_rkey, 2);
	CHECK(st == IBV_WC_SUCCESS && !memcmp(back, src, 256), "%s: READ back: %d", what,
	      st);
	*old = 99;
	st = run_one(p, IBV_WR_ATOMIC_FETCH_AND_ADD, old, old_mr.lkey, 8,
	             dsc.open_addr + 4096, dsc.open_rkey, 3);
	CHECK(st == IBV_WC_SUCCESS && *old == 0, "%s: FETCH_ADD: %d, old %llu", what, st,
	      (unsigned long long)*old);
	st = run_one(p, IBV_WR_RDMA_WRITE, src, src_mr.lkey, 64, dsc.buf_addr,
	             dsc.buf_rkey, 40);
	CHECK(st == IBV_WC_SUCCESS,
	      "%s: WRITE into O's arena buffer at its descriptor: %d", what, st);
	st = run_one(p, IBV_WR_RDMA_WRITE, src, src_mr.lkey, 64, dsc.shut_addr,
	             dsc.shut_rkey, 4);
	CHECK(st == IBV_WC_REM_ACCESS_ERR,
	      "%s: WRITE with a key O did not expose: %d, want %d", what, st,
	      IBV_WC_REM_ACCESS_ERR);
	(void)!write(from_p[1], "c", 1);
	CHECK(read(to_p[0], &ok, 1) == 1 && ok == 1,
	      "%s: O saw the WRITE and the add, and nothing where it gave no key", what);
	CHECK(ssq_queue_recover(qb) == 0 && wait_q0_ready(cb, 1, 10) >= 0,
	      "%s: recovered: %s", what, ssq_client_error(cb));
	st = run_one(p, IBV_WR_RDMA_WRITE, src, src_mr.lkey, 64, dsc.buf_addr + 64,
	             ssq_queue_peer_rkey(qb), 41);
	if (arena_rkey) {
		/* O has checked its buffer already: READ the bytes back instead. */
		memset(back, 0, 64);
		CHECK(st == IBV_WC_SUCCESS,
		      "%s: WRITE into O's buffer with the arena-wide rkey: %d", what, st);
		st = run_one(p, IBV_WR_RDMA_READ, back, back_mr.lkey, 64,
		             dsc.buf_addr + 64, ssq_queue_peer_rkey(qb), 42);
		CHECK(st == IBV_WC_SUCCESS && !memcmp(back, src, 64) &&
		          dsc.buf_rkey == ssq_queue_peer_rkey(qb),
		      "%s: READ back through the arena-wide rkey: %d; O's buffer "
		      "carries the arena's key (0x%x, arena 0x%x)",
		      what, st, dsc.buf_rkey, ssq_queue_peer_rkey(qb));
	} else {
		CHECK(st == IBV_WC_REM_ACCESS_ERR,
		      "%s: WRITE into O's buffer with the arena-wide rkey: %d, want %d",
		      what, st, IBV_WC_REM_ACCESS_ERR);
		CHECK(ssq_queue_recover(qb) == 0 && wait_q0_ready(cb, 1, 10) >= 0,
		      "%s: recovered again: %s", what, ssq_client_error(cb));
	}
	kill(o, SIGKILL);
	waitpid(o, &status, 0);
	/*
	 * A ConnectX keeps O's pages pinned until ssqd deregisters them, once
	 * it has seen O go: WRITEs may land there (in nobody else's memory)
	 * until then, and within a second no more. The emulated device does
	 * the same, dropping the bytes (src/emu/mem_io.c: O's memory file
	 * answers nothing once O has exited).
	 */
	for (i = 0; i < 20; i++) {
		st = run_one(p, IBV_WR_RDMA_WRITE, src, src_mr.lkey, 64, dsc.open_addr,
		             dsc.open_rkey, 5 + (uint64_t)i);
		if (st != IBV_WC_SUCCESS)
			break;
		usleep(50000);
	}
	CHECK(st == IBV_WC_REM_ACCESS_ERR, "%s: WRITE to the dead O: %d, want %d", what,
	      st, IBV_WC_REM_ACCESS_ERR);
	printf("%s: WRITE, READ, FETCH_ADD between two processes' own memory host to "
	       "host; unexposed and dead keys refused\n",
	       what);
out:
	ssq_client_close(ca);
	ssq_client_close(cb);
	CHECK(t_ssqd_stop_ok(la, &status, sa), "%s: listening ssqd exit 0x%x", what,
	      status);
	CHECK(t_ssqd_stop_ok(lb, &status, sb), "%s: connecting ssqd exit 0x%x", what,
	      status);
	free(src);
	free(back);
	free(old);
	close(to_p[0]);
	close(to_p[1]);
	close(from_p[0]);
	close(from_p[1]);
}

int main(void)
{
	t_need_ssqd();
	run(NULL, "clean wire", 0);
	if (test_failures) /* e.g. no such device: once is enough to say so */
		return test_exit("ctrl_mem_wire");
	run("drop=0.05,dup=0.05,reorder=0.05,seed=5", "lossy wire", 0);
	run(NULL, "clean wire, receiver --arena-rkey", 1);
	return test_exit("ctrl_mem_wire");
}
