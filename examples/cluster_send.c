/* SPDX-License-Identifier: MIT */
/*
 * One client, several peers: this host's ssqd serves a cluster (--name,
 * --peers), one queue per peer named "PEER/q0", all in one arena, so one
 * buffer goes out on every queue. For each peer named on the command line:
 * WRITE 64 KiB into a buffer of that peer's in 4 KiB messages, then READ
 * the first message back and compare. Exit 0 when every peer took every
 * WRITE and the bytes came back.
 *   cluster_send PEER[=SOCKET]...     ($SSQ_SOCKET: this host's ssqd)
 * A peer's ssqd lets a WRITE in only at a descriptor (remote_addr, rkey) a
 * client of its own granted to this host (ssq_buf_grant on its queue
 * "THIS/q0", THIS being this host's --name, $SSQ_NAME here). Between hosts
 * that client runs there and sends it (as examples/two_hosts.c does); with
 * PEER=SOCKET (a cluster on one machine) this process connects to the
 * peer's ssqd at SOCKET itself, allocates the destination there and
 * grants it. PEER alone
 * addresses that peer's arena by offset with its arena-wide key
 * (ssq_queue_peer_iova, ssq_queue_peer_rkey), which reaches it only if
 * that ssqd runs --arena-rkey.
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
	int i, failed = 0;
	struct ssq_client *c;
	struct ssq_buf b;
	uint32_t k;

	if (argc < 2) {
		fprintf(stderr, "usage: cluster_send PEER[=SOCKET]...\n");
		return 2;
	}

	if (ssq_client_connect(NULL, &c)) {
		fprintf(stderr, "connect: %s\n", ssq_client_strerror_last());
		return 1;
	}
	/* One buffer for every peer: the arena is registered once, for all. */
	if (ssq_buf_alloc(c, 2 * MSG, &b)) {
		fprintf(stderr, "alloc: %s\n", ssq_client_error(c));
		return 1;
	}
	for (i = 1; i < argc; i++) {
		const char *sock = strchr(argv[i], '=');
		int nlen = sock ? (int)(sock - argv[i]) : (int)strlen(argv[i]);
		struct ssq_client *there = NULL;
		struct ssq_buf dst = { 0 };
		char name[64];
		struct ssq_queue *q;
		struct ssq_producer *p;
		int rc = 0;

		if (!nlen) {
			fprintf(stderr, "'%s': want PEER or PEER=SOCKET\n", argv[i]);
			return 2;
		}
		snprintf(name, sizeof(name), "%.*s/q0", nlen, argv[i]);
		/* The destination: what the peer's own client would hand out. */
		if (sock && ssq_client_connect(sock + 1, &there)) {
			fprintf(stderr, "%s: connect: %s\n", sock + 1,
			        ssq_client_strerror_last());
			failed++;
			continue;
		}
		if (there && ssq_buf_alloc(there, COUNT * MSG, &dst)) {
			fprintf(stderr, "%s: alloc: %s\n", sock + 1,
			        ssq_client_error(there));
			ssq_client_close(there);
			failed++;
			continue;
		}
		/* Granted to this host alone: the peer's queue that names us. */
		if (there) {
			struct ssq_desc d;
			char mine[64];

			snprintf(mine, sizeof(mine), "%s/q0",
			         getenv("SSQ_NAME") ? getenv("SSQ_NAME") : "alice");
			if (ssq_buf_grant(
			        there, mine, &dst, 0, COUNT * MSG,
			        IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, &d)) {
				fprintf(stderr, "%s: grant to %s: %s\n", sock + 1, mine,
				        ssq_client_error(there));
				ssq_client_close(there);
				failed++;
				continue;
			}
			dst.remote_addr = d.remote_addr;
			dst.rkey = d.rkey;
		}
		/* -EAGAIN: that peer's link is not up yet (daemons just started). */
		for (k = 0; (rc = ssq_queue_open(c, name, &q)) == -EAGAIN && k < 100; k++)
			usleep(100000);
		if (rc) {
			fprintf(stderr, "%s: %s\n", name, ssq_client_error(c));
			if (there)
				ssq_client_close(there);
			failed++;
			continue;
		}
		if (!there) { /* by offset: the peer must run ssqd --arena-rkey */
			dst.remote_addr = ssq_queue_peer_iova(q);
			dst.rkey = ssq_queue_peer_rkey(q);
		}
		p = ssq_queue_producer(q);
		memset(b.addr, 'a' + i, MSG);
		for (k = 0; k < COUNT && !rc; k++)
			rc = one(p, IBV_WR_RDMA_WRITE, &b, 0,
			         dst.remote_addr + (uint64_t)k * MSG, dst.rkey, MSG, k);
		/* Read the first message back into the buffer's second half. */
		if (!rc)
			rc = one(p, IBV_WR_RDMA_READ, &b, MSG, dst.remote_addr, dst.rkey,
			         MSG, COUNT);
		if (!rc && (memcmp(b.addr, (char *)b.addr + MSG, MSG) ||
		            (there && memcmp(dst.addr, b.addr, MSG))))
			rc = -EBADMSG;
		printf("%s: %u WRITEs of %u bytes into %s of %.*s, read back: %s\n", name,
		       COUNT, MSG, there ? "a buffer" : "the arena", nlen, argv[i],
		       rc ? "FAILED" : "ok");
		failed += rc != 0;
		ssq_queue_close(q);
		if (there) {
			ssq_buf_free(there, &dst);
			ssq_client_close(there);
		}
	}
	ssq_buf_free(c, &b);
	ssq_client_close(c);
	return failed ? 1 : 0;
}
