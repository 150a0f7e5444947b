/* SPDX-License-Identifier: MIT */
/*
 * Two hosts exchanging a remote descriptor. Host B's process registers
 * malloc'd memory, grants remote writes into it to the peer of its queue
 * q0 (ssq_mem_grant: with peers, nothing else reaches it) and sends A the
 * descriptor, packed (ssq_desc_pack) - here over a socketpair, between
 * hosts over TCP or whatever the application uses; host A's process
 * unpacks it and WRITEs into it through
 * its own ssqd's queue q0, which is connected to B's. Each process talks
 * to its own host's ssqd: $SSQ_SOCKET (A) and $SSQ_PEER_SOCKET (B), the
 * two ssqd linked with --listen / --connect (run_example.sh starts both).
 * Exit 0 when B finds A's bytes in its memory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <ssq/ssq.h>
#include <ssq/client.h>

static const char greeting[] = "hello from host A, straight into B's malloc'd memory";

/* Host B: expose 4 KiB, hand out its descriptor, check what landed. */
static int host_b(int chan)
{
	struct ssq_client *c;
	struct ssq_mr mr;
	struct ssq_desc d;
	uint8_t wire[SSQ_DESC_PACKED_SIZE];
	char *mem = calloc(1, 4096), done;

	if (!mem || ssq_client_connect(getenv("SSQ_PEER_SOCKET"), &c)) {
		fprintf(stderr, "B: connect: %s\n", ssq_client_strerror_last());
		return 1;
	}
	if (ssq_mem_reg(c, mem, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
	                &mr)) {
		fprintf(stderr, "B: register: %s\n", ssq_client_error(c));
		return 1;
	}
	/* For q0's peer, host A, alone; until revoked, deregistered or B's end. */
	if (ssq_mem_grant(c, "q0", &mr, 0, 4096, IBV_ACCESS_REMOTE_WRITE, &d)) {
		fprintf(stderr, "B: grant: %s\n", ssq_client_error(c));
		return 1;
	}
	strcpy(d.owner, "B");
	if (ssq_desc_pack(&d, wire, sizeof(wire)) != (int)sizeof(wire) ||
	    write(chan, wire, sizeof(wire)) != sizeof(wire) || read(chan, &done, 1) != 1)
		return 1;
	printf("B: %s\n", mem);
	fflush(stdout); /* a forked child leaves with _exit */
	if (strcmp(mem, greeting))
		return 1;
	ssq_mem_dereg(c, &mr);
	ssq_client_close(c);
	free(mem);
	return 0;
}

/* Host A: WRITE the greeting at B's descriptor through its own ssqd. */
static int host_a(int chan)
{
	struct ssq_client *c;
	struct ssq_queue *q = NULL;
	struct ssq_producer *p;
	struct ssq_completion comp;
	struct ssq_buf src;
	struct ssq_desc d;
	uint8_t wire[SSQ_DESC_PACKED_SIZE];
	int rc, tries;

	if (ssq_client_connect(NULL, &c)) {
		fprintf(stderr, "A: connect: %s\n", ssq_client_strerror_last());
		return 1;
	}
	/* The two ssqd may still be linking their queues: -EAGAIN until then. */
	for (tries = 0; (rc = ssq_queue_open(c, "q0", &q)) == -EAGAIN && tries < 200;
	     tries++)
		usleep(50000);
	if (rc || ssq_buf_alloc(c, 4096, &src) ||
	    read(chan, wire, sizeof(wire)) != sizeof(wire) ||
	    ssq_desc_unpack(wire, sizeof(wire), "B", &d)) {
		fprintf(stderr, "A: setup: %s\n", ssq_client_error(c));
		return 1;
	}
	memcpy(src.addr, greeting, sizeof(greeting));
	p = ssq_queue_producer(q);
	rc = ssq_post_write(p, src.iova, src.lkey, sizeof(greeting), d.remote_addr,
	                    d.rkey, 1, SSQ_WQE_SIGNALED);
	while (rc == 0 && (rc = ssq_poll(p, &comp, 1)) == 0)
		;
	if (rc != 1 || comp.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "A: WRITE: rc %d status %d\n", rc,
		        rc == 1 ? comp.status : -1);
		return 1;
	}
	printf("A: wrote %zu bytes at B's descriptor (0x%llx, rkey 0x%x)\n",
	       sizeof(greeting), (unsigned long long)d.remote_addr, d.rkey);
	(void)!write(chan, "d", 1);
	ssq_queue_close(q);
	ssq_client_close(c);
	return 0;
}

int main(void)
{
	int chan[2], status, rc;
	pid_t b;

	if (!getenv("SSQ_PEER_SOCKET")) {
		fprintf(stderr, "set SSQ_PEER_SOCKET to host B's ssqd socket\n");
		return 1;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, chan))
		return 1;
	b = fork();
	if (b == 0) {
		close(chan[0]);
		_exit(host_b(chan[1]));
	}
	close(chan[1]); /* B's end: if B goes, A's read ends */
	rc = host_a(chan[0]);
	waitpid(b, &status, 0);
	return rc || !WIFEXITED(status) || WEXITSTATUS(status);
}
