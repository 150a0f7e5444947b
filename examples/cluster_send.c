/* SPDX-License-Identifier: MIT */
/*
 * One client, several peers: this host's ssqd serves a cluster (--name,
 * --peers), one queue per peer named "PEER/q0", all in one arena, so one
 * buffer goes out on every queue. For each peer named on the command line
 * (default: bob carol): WRITE 64 KiB into that peer's arena in 4 KiB
 * messages, then READ the first message back and compare. Exit 0 when
 * every peer took every WRITE and the bytes came back.
 *   cluster_send [PEER...]     ($SSQ_SOCKET: this host's ssqd)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <ssq/ssq.h>
#include <ssq/client.h>

#define MSG   4096u
#define COUNT 16u

/* Post one signaled @op of @len bytes and wait for its completion. */
static int one(struct ssq_producer *p, enum ibv_wr_opcode op, const struct ssq_buf *b,
               uint64_t off, uint64_t raddr, uint32_t rkey, uint32_t len, uint64_t id)
{
	struct ibv_sge sge = { b->iova + off, len, b->lkey };
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ssq_completion c;
	int rc;

	wr.wr_id = id;
	wr.opcode = op;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	while ((rc = ssq_post_wr(p, &wr, &bad)) == -EAGAIN)
		ssq_progress(p); /* a restart, or a full ring: wait */
	if (rc)
		return rc;
	rc = ssq_wait(p, 1, 10000000000ull); /* 10 s */
	if (rc < 0)
		return rc;
	if (ssq_poll(p, &c, 1) != 1 || c.wr_id != id)
		return -EPROTO;
	return c.status == IBV_WC_SUCCESS ? 0 : -EIO;
}

int main(int argc, char **argv)
{
	static const char *const fallback[] = { "bob", "carol" };
	const char *const *peers = argc > 1 ? (const char *const *)argv + 1 : fallback;
	int npeers = argc > 1 ? argc - 1 : 2, i, failed = 0;
	struct ssq_client *c;
	struct ssq_buf b;
	uint32_t k;

	if (ssq_client_connect(NULL, &c)) {
		fprintf(stderr, "connect: %s\n", ssq_client_strerror_last());
		return 1;
	}
	/* One buffer for every peer: the arena is registered once, for all. */
	if (ssq_buf_alloc(c, 2 * MSG, &b)) {
		fprintf(stderr, "alloc: %s\n", ssq_client_error(c));
		return 1;
	}
	for (i = 0; i < npeers; i++) {
		char name[64];
		struct ssq_queue *q;
		struct ssq_producer *p;
		int rc = 0;

		snprintf(name, sizeof(name), "%s/q0", peers[i]);
		/* -EAGAIN: that peer's link is not up yet (daemons just started). */
		for (k = 0; (rc = ssq_queue_open(c, name, &q)) == -EAGAIN && k < 100; k++)
			usleep(100000);
		if (rc) {
			fprintf(stderr, "%s: %s\n", name, ssq_client_error(c));
			failed++;
			continue;
		}
		p = ssq_queue_producer(q);
		memset(b.addr, 'a' + i, MSG);
		for (k = 0; k < COUNT && !rc; k++)
			rc = one(p, IBV_WR_RDMA_WRITE, &b, 0,
			         ssq_queue_peer_iova(q) + (uint64_t)k * MSG,
			         ssq_queue_peer_rkey(q), MSG, k);
		/* Read the first message back into the buffer's second half. */
		if (!rc)
			rc = one(p, IBV_WR_RDMA_READ, &b, MSG, ssq_queue_peer_iova(q),
			         ssq_queue_peer_rkey(q), MSG, COUNT);
		if (!rc && memcmp(b.addr, (char *)b.addr + MSG, MSG))
			rc = -EBADMSG;
		printf("%s: %u WRITEs of %u bytes into %s's arena, read back: %s\n", name,
		       COUNT, MSG, peers[i], rc ? "FAILED" : "ok");
		failed += rc != 0;
		ssq_queue_close(q);
	}
	ssq_buf_free(c, &b);
	ssq_client_close(c);
	return failed ? 1 : 0;
}
