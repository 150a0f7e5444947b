/* SPDX-License-Identifier: MIT */
/*
 * Zero-copy from this process's own memory: a malloc'd buffer registered
 * with ssq_mem_reg is the source of an RDMA WRITE, and a memfd registered
 * by its descriptor with ssq_mem_reg_fd is the destination - addressed by
 * its remote descriptor (remote_addr, rkey), as a peer would be told it.
 * No byte goes through ssqd's data arena. Exit 0 when the memfd holds what
 * the malloc'd buffer held.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <ssq/ssq.h>
#include <ssq/client.h>

int main(void)
{
	struct ssq_client *c;
	struct ssq_queue *q;
	struct ssq_producer *p;
	struct ssq_mr src_mr, dst_mr;
	struct ssq_completion comp;
	char *src = malloc(4096), *dst;
	int fd = memfd_create("zero-copy", MFD_CLOEXEC), rc;

	if (!src || fd < 0 || ftruncate(fd, 4096))
		return 1;
	dst = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (dst == MAP_FAILED)
		return 1;
	if (ssq_client_connect(NULL, &c)) {
		fprintf(stderr, "connect: %s\n", ssq_client_strerror_last());
		return 1;
	}
	if (ssq_queue_open(c, "q0", &q) ||
	    ssq_mem_reg(c, src, 4096, 0, &src_mr) || /* the device only reads it */
	    ssq_mem_reg_fd(c, fd, 0, 4096,
	                   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &dst_mr)) {
		fprintf(stderr, "setup: %s\n", ssq_client_error(c));
		return 1;
	}
	snprintf(src, 4096, "sent from malloc'd memory, landed in a memfd");
	p = ssq_queue_producer(q);
	/* This host's address is the buffer's own; the destination's is remote. */
	rc = ssq_post_write(p, (uint64_t)(uintptr_t)src, src_mr.lkey, 64,
	                    dst_mr.remote_addr, dst_mr.rkey, 1, SSQ_WQE_SIGNALED);
	while (rc == 0 && (rc = ssq_poll(p, &comp, 1)) == 0)
		;
	if (rc != 1 || comp.status != IBV_WC_SUCCESS || strcmp(dst, src)) {
		fprintf(stderr, "WRITE: rc %d status %d\n", rc,
		        rc == 1 ? comp.status : -1);
		return 1;
	}
	printf("%s\n", dst);
	if (ssq_mem_dereg(c, &src_mr) || ssq_mem_dereg(c, &dst_mr))
		return 1;
	ssq_queue_close(q);
	ssq_client_close(c);
	munmap(dst, 4096);
	close(fd);
	free(src);
	return 0;
}
