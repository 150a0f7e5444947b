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
#include <stdlib.h>
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

/*
 * On a ConnectX a process's private memory can be pinned only by that
 * process (the kernel pins current->mm's pages), and a WQE on ssqd's QP can
 * use only an MR of ssqd's PD: so the client imports ssqd's verbs context
 * and PD (ibv_import_device, ibv_import_pd: rdma-core's import verbs) and
 * registers there; ssqd then imports the MR by its handle and owns its
 * end. The command fd is the one every attached client's UAR mapping
 * already comes from: importing it grants nothing new.
 */
#define CLIENT_VERBS_MRS 64u

struct client_verbs {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mrs[CLIENT_VERBS_MRS]; /* ours, until ssqd deregisters */
	uint32_t ids[CLIENT_VERBS_MRS];
};

static int verbs_open(struct ssq_client *c)
{
	struct client_verbs *v;
	struct proto_msg reply;
	int fd = -1, rc;

	if (c->verbs)
		return 0;
	rc = client_call_fd_reply(c, SSQ_MSG_VERBS, NULL, 0, &reply, &fd);
	if (rc)
		return rc;
	v = calloc(1, sizeof(*v));
	if (!v) {
		close(fd);
		return -ENOMEM;
	}
	v->ctx =
	    ibv_import_device(fd); /* owns fd from here: ibv_close_device closes it */
	if (!v->ctx) {
		rc = errno ? -errno : -EINVAL;
		snprintf(c->err, sizeof(c->err), "ibv_import_device: %s", strerror(-rc));
		close(fd);
		free(v);
		return rc;
	}
	v->pd = ibv_import_pd(v->ctx, reply.u.verbs_reply.pd_handle);
	if (!v->pd) {
		rc = errno ? -errno : -EINVAL;
		snprintf(c->err, sizeof(c->err), "ibv_import_pd(%u): %s",
		         reply.u.verbs_reply.pd_handle, strerror(-rc));
		ibv_close_device(v->ctx);
		free(v);
		return rc;
	}
	c->verbs = v;
	return 0;
}

static int reg(struct ssq_client *c, uint32_t kind, int fd, uint64_t addr, uint64_t len,
               int access, struct ssq_mr *out);

/* ssq_mem_reg on a ConnectX: register here, hand the MR's end to ssqd. */
static int reg_verbs(struct ssq_client *c, void *addr, uint64_t len, int access,
                     struct ssq_mr *out)
{
	struct ibv_mr *mr;
	unsigned slot;
	int rc = verbs_open(c);

	if (rc)
		return rc;
	for (slot = 0; slot < CLIENT_VERBS_MRS && c->verbs->mrs[slot]; slot++)
		;
	if (slot == CLIENT_VERBS_MRS) {
		snprintf(c->err, sizeof(c->err), "this client holds %u registrations",
		         CLIENT_VERBS_MRS);
		return -EDQUOT;
	}
	mr = ibv_reg_mr(c->verbs->pd, addr, len, access);
	if (!mr) {
		rc = errno ? -errno : -EINVAL;
		snprintf(c->err, sizeof(c->err), "ibv_reg_mr of %llu bytes: %s",
		         (unsigned long long)len, strerror(-rc));
		return rc;
	}
	rc = reg(c, SSQ_MEM_VERBS, -1, mr->handle, len, access, out);
	if (rc) {
		ibv_dereg_mr(mr); /* ssqd did not take it: ours to destroy */
		return rc;
	}
	c->verbs->mrs[slot] = mr;
	c->verbs->ids[slot] = out->id;
	return 0;
}

/* ssqd deregistered @id: drop our user-space half of it. */
static void verbs_forget(struct ssq_client *c, uint32_t id)
{
	unsigned i;

	for (i = 0; c->verbs && i < CLIENT_VERBS_MRS; i++)
		if (c->verbs->mrs[i] && c->verbs->ids[i] == id) {
			ibv_unimport_mr(c->verbs->mrs[i]);
			c->verbs->mrs[i] = NULL;
		}
}

void client_mem_close(struct ssq_client *c)
{
	struct client_verbs *v = c->verbs;
	unsigned i;

	if (!v)
		return;
	/* ssqd deregisters what is left when this connection ends. */
	for (i = 0; i < CLIENT_VERBS_MRS; i++)
		if (v->mrs[i])
			ibv_unimport_mr(v->mrs[i]);
	ibv_unimport_pd(v->pd);
	ibv_close_device(v->ctx);
	free(v);
	c->verbs = NULL;
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
	if (strcmp(c->device, "emu")) {
		rc = reg_verbs(c, addr, len, access, out);
		if (!rc)
			out->addr = addr;
		return rc;
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
	int rc;

	if (!c || !mr)
		return -EINVAL;
	req.id = mr->id;
	req.reserved = 0;
	rc = client_call_fd(c, SSQ_MSG_MEM_DEREG, &req, sizeof(req), -1, &reply);
	if (!rc)
		verbs_forget(c, mr->id);
	return rc;
}
