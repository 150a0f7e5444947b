/* SPDX-License-Identifier: MIT */
/*
 * ssq_mem_reg, ssq_mem_reg_fd, ssq_mem_dereg: this process's own memory
 * registered with ssqd's device. The client proves nothing and is trusted
 * with nothing: it passes a descriptor through which ssqd reaches the
 * memory (its own /proc/self/mem, a capability for this process's memory
 * only, or the shareable memory's fd), and ssqd checks the range itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include "ctrl/client/client_pvt.h"
#include "ctrl/proto/msg.h"

/* ibv_reg_mr's own checks (ib_check_mr_access, include/rdma/ib_verbs.h). */
static int check_args(struct ssq_client *c, uint64_t len, int access, struct ssq_mr *out)
{
	if (!out) {
		snprintf(c->err, sizeof(c->err), "no ssq_mr to fill");
		return -EINVAL;
	}
	if (!len || len > SSQ_ALLOC_MAX) {
		snprintf(c->err, sizeof(c->err),
		         "registration of %llu bytes: want 1..2^40",
		         (unsigned long long)len);
		return -EINVAL;
	}
	if (access & ~(int)SSQ_MEM_ACCESS_ALL) {
		snprintf(c->err, sizeof(c->err),
		         "access 0x%x: only IBV_ACCESS_LOCAL_WRITE, _REMOTE_WRITE, "
		         "_REMOTE_READ, _REMOTE_ATOMIC",
		         (unsigned)access);
		return -EINVAL;
	}
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE)) {
		snprintf(c->err, sizeof(c->err),
		         "access 0x%x: remote write or atomic access needs "
		         "IBV_ACCESS_LOCAL_WRITE too",
		         (unsigned)access);
		return -EINVAL;
	}
	return 0;
}

static int reg(struct ssq_client *c, uint32_t kind, int fd, uint64_t addr, uint64_t len,
               int access, struct ssq_mr *out)
{
	struct proto_msg_mem_reg req = { kind, (uint32_t)access, addr, len };
	struct proto_msg reply;
	int rc = client_call_fd(c, SSQ_MSG_MEM_REG, &req, sizeof(req), fd, &reply);

	if (rc)
		return rc;
	memset(out, 0, sizeof(*out));
	out->len = len;
	out->iova = reply.u.mem_reg_reply.iova;
	out->lkey = reply.u.mem_reg_reply.lkey;
	out->rkey = reply.u.mem_reg_reply.rkey;
	out->remote_addr = out->iova;
	out->id = reply.u.mem_reg_reply.id;
	out->access = access;
	return 0;
}

int ssq_mem_reg(struct ssq_client *c, void *addr, uint64_t len, int access,
                struct ssq_mr *out)
{
	int fd, rc;

	if (!c)
		return -EINVAL;
	rc = check_args(c, len, access, out);
	if (rc)
		return rc;
	if (!addr) {
		snprintf(c->err, sizeof(c->err), "registration at address NULL");
		return -EINVAL;
	}
	fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		snprintf(c->err, sizeof(c->err), "/proc/self/mem: %s", strerror(errno));
		return rc;
	}
	rc = reg(c, SSQ_MEM_PROCESS, fd, (uint64_t)(uintptr_t)addr, len, access, out);
	close(fd); /* ssqd holds its own reference */
	if (!rc)
		out->addr = addr;
	return rc;
}

int ssq_mem_reg_fd(struct ssq_client *c, int fd, uint64_t offset, uint64_t len,
                   int access, struct ssq_mr *out)
{
	int rc;

	if (!c)
		return -EINVAL;
	rc = check_args(c, len, access, out);
	if (rc)
		return rc;
	if (fd < 0 || fcntl(fd, F_GETFD) < 0) {
		snprintf(c->err, sizeof(c->err), "descriptor %d is not open", fd);
		return -EBADF;
	}
	if (offset + len < offset) {
		snprintf(c->err, sizeof(c->err), "offset %llu + %llu bytes wraps",
		         (unsigned long long)offset, (unsigned long long)len);
		return -EINVAL;
	}
	return reg(c, SSQ_MEM_FILE, fd, offset, len, access, out);
}

int ssq_mem_dereg(struct ssq_client *c, const struct ssq_mr *mr)
{
	struct proto_msg_mem_dereg req;
	struct proto_msg reply;

	if (!c || !mr)
		return -EINVAL;
	req.id = mr->id;
	req.reserved = 0;
	return client_call_fd(c, SSQ_MSG_MEM_DEREG, &req, sizeof(req), -1, &reply);
}
