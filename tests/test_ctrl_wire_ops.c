/* SPDX-License-Identifier: MIT */
/*
 * Every opcode host to host: two ssqd on the emulated device, one
 * --listen (the receiving host), one --connect (the sending host), over
 * the emulated wire, clean and then under 5 % drop, duplicate and reorder.
 * Three producer processes attached to the sending ssqd share its queue;
 * each posts batches of seven WQEs (batch i of producer p):
 *   RDMA_WRITE   64 tagged bytes to write cell (p, i) of the receiver
 *   ATOMIC_FA    +1 on counter (p, i); the old value must come back 0
 *   SEND, SEND_IMM, RDMA_WRITE_IMM: messages 3i .. 3i + 2 (recv_flow.h)
 *   RDMA_READ    write cell (p, i) back into the batch's source slot: the
 *                tagged bytes (the responder runs requests in order)
 *   ATOMIC_CS    compare 0, swap the tag on cas cell (p, i), signaled: the
 *                old value must come back 0
 * The receiving host's log (read by the parent as it fills, the producers
 * paced to its window) holds every SEND / SEND_IMM / WRITE_IMM exactly
 * once, in each producer's order, bytes exact; afterwards every write cell
 * holds its tag, every counter is exactly 1 and every cas cell its tag
 * (nothing lost, nothing executed twice despite duplicates and
 * retransmissions), and each producer got every batch's completion, in
 * order, with its READ and atomic results right.
 */
#include "recv_flow.h"

#define P     3u   /* producer processes */
#define M     120u /* batches each */
#define SLOTS 16u  /* source slots (batches in flight) per producer */
#define SLOT  1024u
#define NWQE  7u
/* In a source slot: messages 3i .. 3i + 2, then these. */
#define OFF_WRITE (3 * RMAX)
#define OFF_READ  (OFF_WRITE + CELL)
#define OFF_FA    (OFF_READ + CELL)
#define OFF_CS    (OFF_FA + 8)

/* The receiving host's areas, buffers there, each at its remote descriptor. */
struct areas {
	uint64_t write, cnt, cas, imm;
	uint32_t write_rkey, cnt_rkey, cas_rkey, imm_rkey;
};

static struct rpace *pace;

/* Batch @i's completion came: its READ and atomic results must be right. */
static int check_batch(const void *src, uint32_t p, uint32_t i)
{
	const uint8_t *slot = (const uint8_t *)src + (size_t)(i % SLOTS) * SLOT;
	const uint64_t *rd = (const uint64_t *)(slot + OFF_READ);
	uint64_t fa, cs;
	unsigned k;

	memcpy(&fa, slot + OFF_FA, 8);
	memcpy(&cs, slot + OFF_CS, 8);
	for (k = 0; k < CELL / 8; k++)
		if (rd[k] != msg_tag(p, i)) {
			fprintf(stderr, "producer %u batch %u: READ word %u is 0x%llx\n",
			        p, i, k, (unsigned long long)rd[k]);
			return -1;
		}
	if (fa || cs) {
		fprintf(stderr,
		        "producer %u batch %u: FETCH_ADD old 0x%llx, CMP_SWAP old "
		        "0x%llx; want 0, 0\n",
		        p, i, (unsigned long long)fa, (unsigned long long)cs);
		return -1;
	}
	return 0;
}

static void prep_batch(struct ssq_producer *prod, uint64_t pos, uint32_t p, uint32_t i,
                       uint64_t iova, uint32_t lkey, const struct areas *a)
{
	struct ssq_sq *sq = ssq_producer_sq(prod);
	uint64_t cell = (uint64_t)p * M + i, tag = msg_tag(p, i);
	uint32_t j, s;

#define F(n, user) ssq_wqe_flags(prod, pos + (n), 1, (user))
	ssq_prep_rdma_write(sq, (uint32_t)pos, iova + OFF_WRITE, lkey, CELL,
	                    a->write + cell * CELL, a->write_rkey, F(0, 0));
	ssq_prep_atomic(sq, (uint32_t)pos + 1, MLX5_OPCODE_ATOMIC_FA, iova + OFF_FA, lkey,
	                a->cnt + cell * 8, a->cnt_rkey, 1, 0, F(1, 0));
	for (j = 0; j < 3; j++) {
		s = 3 * i + j;
		if (j == 2)
			ssq_prep_rdma_write_imm(sq, (uint32_t)(pos + 2 + j),
			                        iova + j * RMAX, lkey, rmsg_len(p, s),
			                        a->imm + ((uint64_t)p * 3 * M + s) * RMAX,
			                        a->imm_rkey, rmsg_imm(p, s), F(2 + j, 0));
		else
			ssq_prep_send(sq, (uint32_t)(pos + 2 + j), rmsg_send_opcode(s),
			              iova + j * RMAX, lkey, rmsg_len(p, s),
			              rmsg_imm(p, s), F(2 + j, 0));
	}
	ssq_prep_rdma_read(sq, (uint32_t)pos + 5, iova + OFF_READ, lkey, CELL,
	                   a->write + cell * CELL, a->write_rkey, F(5, 0));
	ssq_prep_atomic(sq, (uint32_t)pos + 6, MLX5_OPCODE_ATOMIC_CS, iova + OFF_CS, lkey,
	                a->cas + cell * 8, a->cas_rkey, 0, tag, F(6, SSQ_WQE_SIGNALED));
#undef F
}

static int producer(const char *sock, uint32_t p, const struct areas *a)
{
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_producer *prod;
	struct ssq_buf src;
	uint32_t i, j, got = 0;
	uint64_t pos;
	double t0 = now_s();
	int rc;

	if (ssq_client_connect(sock, &c) || ssq_queue_open(c, "q0", &q) ||
	    ssq_buf_alloc(c, SLOTS * SLOT, &src)) {
		fprintf(stderr, "producer %u: %s\n", p, ssq_client_strerror_last());
		return 1;
	}
	prod = ssq_queue_producer(q);
	for (i = 0; i < M; i++) {
		uint8_t *slot = (uint8_t *)src.addr + (size_t)(i % SLOTS) * SLOT;
		uint64_t iova = src.iova + (uint64_t)(i % SLOTS) * SLOT, *w;

		while (i >= SLOTS && got <= i - SLOTS)
			if (rreap(prod, p, &got, check_batch, src.addr) < 0 ||
			    now_s() - t0 > 60)
				return 1;
		for (j = 0; j < 3; j++)
			rmsg_fill(slot + j * RMAX, p, 3 * i + j);
		w = (uint64_t *)(slot + OFF_WRITE);
		for (j = 0; j < CELL / 8; j++)
			w[j] = msg_tag(p, i);
		/* Results of the slot's last batch must not pass for this one's. */
		memset(slot + OFF_READ, 0xee, CELL + 16);
		if (rpace_wait(pace, 3, RDEPTH / 2)) {
			fprintf(stderr, "producer %u: the reader stopped\n", p);
			return 1;
		}
		while ((rc = ssq_reserve(prod, NWQE, &pos)) == -EAGAIN)
			if (rreap(prod, p, &got, check_batch, src.addr) < 0)
				return 1;
		if (rc) {
			fprintf(stderr, "producer %u: reserve: %d\n", p, rc);
			return 1;
		}
		prep_batch(prod, pos, p, i, iova, src.lkey, a);
		for (j = 0; j < NWQE; j++)
			ssq_publish(prod, pos + j, 1, j + 1 == NWQE ? i : ~0ull,
			            j + 1 == NWQE ? SSQ_WQE_SIGNALED : 0);
		ssq_submit(prod);
	}
	if (rdrain(prod, p, &got, M, check_batch, src.addr, t0))
		return 1;
	ssq_client_close(c);
	return 0;
}

/* One pair of daemons, @fault on both wires (NULL: clean). */
static void run(const char *fault, const char *what)
{
	uint16_t port = free_tcp_port();
	char sa[108], sb[108], arg[32];
	const char *la_args[] = { "--listen", arg, NULL };
	const char *cb_args[] = { "--connect", NULL, NULL };
	char carg[32];
	struct ssq_client *ca = NULL, *cb = NULL;
	struct ssq_queue *qa = NULL, *qb = NULL;
	struct ssq_buf wr = { 0 }, cnt = { 0 }, cas = { 0 }, imm = { 0 };
	struct areas a;
	struct rlog r;
	pid_t la, lb, kids[P];
	uint32_t i, k;
	unsigned bad = 0;
	int status, done = 0;
	double t0;

	CHECK(port != 0, "%s: a free TCP port", what);
	memset(pace, 0, sizeof(*pace));
	snprintf(sa, sizeof(sa), "/tmp/ssq-wops-l-%d.sock", getpid());
	snprintf(sb, sizeof(sb), "/tmp/ssq-wops-c-%d.sock", getpid());
	snprintf(arg, sizeof(arg), "%u", port);
	snprintf(carg, sizeof(carg), "127.0.0.1:%u", port);
	cb_args[1] = carg;
	la = rssqd_start(sa, fault, la_args);
	lb = rssqd_start(sb, fault, cb_args);
	ca = ssqd_connect_pid(sa, la); /* the receiving host */
	cb = ssqd_connect_pid(sb, lb); /* the sending host */
	CHECK(ca && cb, "%s: both daemons serve clients", what);
	if (!ca || !cb)
		goto out;
	CHECK(wait_q0_ready(ca, 1, 10) >= 0,
	      "%s: the daemons never connected their queue", what);
	CHECK(ssq_queue_open(ca, "q0", &qa) == 0 && ssq_queue_open(cb, "q0", &qb) == 0,
	      "%s: open: %s %s", what, ssq_client_error(ca), ssq_client_error(cb));
	CHECK(ssq_buf_alloc(ca, P * M * CELL, &wr) == 0 &&
	          ssq_buf_alloc(ca, P * M * 8, &cnt) == 0 &&
	          ssq_buf_alloc(ca, P * M * 8, &cas) == 0 &&
	          ssq_buf_alloc(ca, P * 3 * M * RMAX, &imm) == 0,
	      "%s: buffers at the receiving host", what);
	if (!qa || !qb || !imm.addr)
		goto out;
	memset(wr.addr, 0, wr.len);
	memset(cnt.addr, 0, cnt.len);
	memset(cas.addr, 0, cas.len);
	memset(imm.addr, 0, imm.len);
	a.write = wr.remote_addr;
	a.write_rkey = wr.rkey;
	a.cnt = cnt.remote_addr;
	a.cnt_rkey = cnt.rkey;
	a.cas = cas.remote_addr;
	a.cas_rkey = cas.rkey;
	a.imm = imm.remote_addr;
	a.imm_rkey = imm.rkey;
	memset(&r, 0, sizeof(r));
	r.q = qa;
	r.nprod = P;
	r.imm_area = imm.addr;
	r.per_prod = 3 * M;

	t0 = now_s();
	for (i = 0; i < P; i++) {
		kids[i] = fork();
		if (kids[i] == 0)
			_exit(producer(sb, i, &a));
	}
	while (r.k < (uint64_t)P * 3 * M && !r.bad && now_s() - t0 < 60) {
		if (rlog_take(&r, pace) == 0) {
			pid_t w = waitpid(-1, &status, WNOHANG);

			if (w > 0) {
				done++;
				CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
				      "%s: producer pid %d exit 0x%x", what, (int)w,
				      status);
				if (!WIFEXITED(status) || WEXITSTATUS(status))
					break;
			}
			usleep(20);
		}
	}
	if (r.k < (uint64_t)P * 3 * M || r.bad)
		for (i = 0; i < P; i++)
			kill(kids[i], SIGKILL); /* paced to a reader that gave up */
	CHECK(r.k == (uint64_t)P * 3 * M && !r.bad,
	      "%s: receiver's log: %llu of %u messages, %u wrong", what,
	      (unsigned long long)r.k, P * 3 * M, r.bad);
	while (done < (int)P && waitpid(-1, &status, 0) > 0) {
		done++;
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "%s: producer exit 0x%x", what, status);
	}
	for (i = 0; i < P; i++) {
		for (k = 0; k < M; k++) {
			uint64_t cell = (uint64_t)i * M + k, c1, c2;
			const uint64_t *w =
			    (const uint64_t *)((uint8_t *)wr.addr + cell * CELL);

			c1 = __atomic_load_n((uint64_t *)cnt.addr + cell,
			                     __ATOMIC_ACQUIRE);
			c2 = __atomic_load_n((uint64_t *)cas.addr + cell,
			                     __ATOMIC_ACQUIRE);
			if ((c1 != 1 || c2 != msg_tag(i, k) || w[0] != msg_tag(i, k) ||
			     w[CELL / 8 - 1] != msg_tag(i, k)) &&
			    bad++ < 5)
				fprintf(
				    stderr,
				    "%s: producer %u batch %u: counter %llu, cas 0x%llx, "
				    "write 0x%llx\n",
				    what, i, k, (unsigned long long)c1,
				    (unsigned long long)c2, (unsigned long long)w[0]);
		}
	}
	CHECK(bad == 0, "%s: %u batches wrong at the receiving host", what, bad);
	CHECK(ssq_recv_arrived(qa) == (uint64_t)P * 3 * M, "%s: %llu records, want %u",
	      what, (unsigned long long)ssq_recv_arrived(qa), P * 3 * M);
	CHECK(ssq_recv_arrived(qb) == 0, "%s: nothing received at the sending host",
	      what);
	printf("%s: %u processes x %u batches (%u WQEs: WRITE, FETCH_ADD, SEND, "
	       "SEND_IMM, WRITE_IMM, READ, CMP_SWAP) host to host in %.2f s\n",
	       what, P, M, P * M * NWQE, now_s() - t0);
out:
	ssq_client_close(ca);
	ssq_client_close(cb);
	CHECK(t_ssqd_stop_ok(la, &status, sa), "%s: listening ssqd exit 0x%x", what,
	      status);
	CHECK(t_ssqd_stop_ok(lb, &status, sb), "%s: connecting ssqd exit 0x%x", what,
	      status);
}

int main(void)
{
	t_need_ssqd();
	pace = rpace_new();
	CHECK(pace != NULL, "shared pacing page");
	if (!pace)
		return test_exit("ctrl_wire_ops");
	run(NULL, "clean wire");
	run("drop=0.05,dup=0.05,reorder=0.05,seed=11", "lossy wire");
	return test_exit("ctrl_wire_ops");
}
