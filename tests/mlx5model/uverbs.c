/* SPDX-License-Identifier: MIT */
/*
 * Import across processes (ibv_import_device / _pd / _mr, ibv_unimport_*)
 * and the one thing a second process's verbs need from the "kernel": the
 * owner's object table. On Linux both processes' calls land on the same
 * uverbs file; here the owner (the process that opened the device) runs a
 * service thread on an abstract unix socket named in the command fd's
 * header, and an importer's PD and MR verbs are calls to it. The caller's
 * pid comes from SO_PEERCRED (the kernel's `current`), its memory from its
 * /proc/self/mem passed with SCM_RIGHTS (what ib_umem_get pins from
 * current->mm), its memlock limit and CAP_IPC_LOCK from /proc/PID.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include "mlx5model.h"

struct mm_msg {
	uint32_t op;
	uint32_t reserved;
	uint64_t in[6];
};

struct mm_reply {
	int32_t rc; /* 0 or a positive errno */
	uint32_t reserved;
	uint64_t out[4];
};

void mm_memlock_of(pid_t pid, uint64_t *limit, int *cap);
struct mm_ctx *mm_ctx_new(struct mm_desc *d);
void mm_ctx_free(struct mm_ctx *c);
struct mm_desc *mm_desc_by_index(unsigned i);

static socklen_t sock_addr(const char *name, struct sockaddr_un *a)
{
	size_t n = strlen(name);

	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	memcpy(a->sun_path + 1, name, n); /* abstract: nothing on disk */
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

/* One request of an importer, answered in the owner. */
static void serve(struct mm_ctx *c, int s)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct mm_reply r = { 0 };
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	struct mm_msg m;
	struct iovec iov = { &m, sizeof(m) };
	struct msghdr mh = { 0 };
	struct cmsghdr *cm;
	ssize_t n;
	int fd = -1;

	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cbuf;
	mh.msg_controllen = sizeof(cbuf);
	n = recvmsg(s, &mh, MSG_CMSG_CLOEXEC);
	if (n != sizeof(m))
		return;
	cm = CMSG_FIRSTHDR(&mh);
	if (cm && cm->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &cl)) {
		r.rc = EPERM;
		goto out;
	}
	pthread_mutex_lock(&c->lock);
	switch (m.op) {
	case MM_OP_QUERY_PD:
		r.rc = mm_k_query_pd(c, (uint32_t)m.in[0]);
		break;
	case MM_OP_REG_MR: {
		uint64_t limit;
		uint32_t h = 0, key = 0;
		int cap;

		if (fd < 0) {
			r.rc = EBADF;
			break;
		}
		pthread_mutex_unlock(&c->lock);
		mm_memlock_of(cred.pid, &limit, &cap);
		pthread_mutex_lock(&c->lock);
		r.rc = mm_k_reg_mr(c, (uint32_t)m.in[0], m.in[1], m.in[2], m.in[1],
		                   (int)m.in[3], fd, cred.pid, limit, cap, &h, &key);
		if (!r.rc)
			fd = -1; /* the MR keeps it */
		r.out[0] = h;
		r.out[1] = key;
		break;
	}
	case MM_OP_DEREG_MR:
		r.rc = mm_k_dereg_mr(c, (uint32_t)m.in[0]);
		break;
	case MM_OP_QUERY_MR: {
		uint64_t len = 0;
		uint32_t key = 0;

		r.rc = mm_k_query_mr(c, (uint32_t)m.in[0], (uint32_t)m.in[1], &len, &key);
		r.out[0] = len;
		r.out[1] = key;
		break;
	}
	default:
		r.rc = EOPNOTSUPP;
	}
	pthread_mutex_unlock(&c->lock);
out:
	if (fd >= 0)
		close(fd);
	(void)!send(s, &r, sizeof(r), MSG_NOSIGNAL);
}

static void *service(void *arg)
{
	struct mm_ctx *c = arg;
	struct pollfd p[66];
	int conns[64], nc = 0, i;

	for (;;) {
		int np = 0;

		p[np++] = (struct pollfd){ c->srv_fd, POLLIN, 0 };
		p[np++] = (struct pollfd){ c->srv_wake[0], POLLIN, 0 };
		for (i = 0; i < nc; i++)
			p[np++] = (struct pollfd){ conns[i], POLLIN, 0 };
		if (poll(p, (nfds_t)np, -1) < 0)
			continue;
		if (p[1].revents)
			break;
		for (i = nc - 1; i >= 0; i--) {
			if (!p[2 + i].revents)
				continue;
			if (p[2 + i].revents & POLLIN) {
				char b;

				if (recv(conns[i], &b, 1, MSG_PEEK | MSG_DONTWAIT) > 0) {
					serve(c, conns[i]);
					continue;
				}
			}
			close(conns[i]); /* the importer closed its context */
			conns[i] = conns[--nc];
		}
		if (p[0].revents & POLLIN) {
			int s = accept4(c->srv_fd, NULL, NULL, SOCK_CLOEXEC);

			if (s >= 0 && nc < 64)
				conns[nc++] = s;
			else if (s >= 0)
				close(s);
		}
	}
	for (i = 0; i < nc; i++)
		close(conns[i]);
	return NULL;
}

int mm_srv_start(struct mm_ctx *c)
{
	struct sockaddr_un a;
	socklen_t len = sock_addr(c->sock, &a);

	c->srv_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (c->srv_fd < 0 || bind(c->srv_fd, (struct sockaddr *)&a, len) ||
	    listen(c->srv_fd, 64) || pipe2(c->srv_wake, O_CLOEXEC))
		return errno ? errno : EIO;
	if (pthread_create(&c->srv, NULL, service, c))
		return EAGAIN;
	c->srv_on = 1;
	return 0;
}

void mm_srv_stop(struct mm_ctx *c)
{
	if (c->srv_on) {
		(void)!write(c->srv_wake[1], "x", 1);
		pthread_join(c->srv, NULL);
		c->srv_on = 0;
	}
	if (c->srv_fd >= 0)
		close(c->srv_fd);
	if (c->srv_wake[0] >= 0) {
		close(c->srv_wake[0]);
		close(c->srv_wake[1]);
	}
	c->srv_fd = c->srv_wake[0] = c->srv_wake[1] = -1;
}

/* An importer's call to the owner; positive errno, ENODEV once it is gone. */
int mm_call(struct mm_ctx *c, enum mm_op op, const uint64_t in[6], int fd,
            uint64_t out[4])
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct mm_msg m = { .op = op };
	struct mm_reply r;
	struct iovec iov = { &m, sizeof(m) };
	struct msghdr mh = { 0 };
	int rc;

	memcpy(m.in, in, sizeof(m.in));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	if (fd >= 0) {
		struct cmsghdr *cm;

		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	pthread_mutex_lock(&c->conn_lock);
	if (sendmsg(c->conn_fd, &mh, MSG_NOSIGNAL) != sizeof(m) ||
	    recv(c->conn_fd, &r, sizeof(r), 0) != sizeof(r)) {
		pthread_mutex_unlock(&c->conn_lock);
		return ENODEV; /* the owner's context is gone: the device with it */
	}
	pthread_mutex_unlock(&c->conn_lock);
	rc = r.rc;
	if (out)
		memcpy(out, r.out, sizeof(r.out));
	return rc;
}

int mm_reg_remote(struct mm_ctx *c, uint32_t pd_handle, uint64_t addr, uint64_t len,
                  int access, uint32_t *handle, uint32_t *key)
{
	uint64_t in[6] = { pd_handle, addr, len, (uint64_t)access, 0, 0 }, out[4];
	int fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC), rc;

	if (fd < 0)
		return errno;
	rc = mm_call(c, MM_OP_REG_MR, in, fd, out);
	close(fd);
	*handle = (uint32_t)out[0];
	*key = (uint32_t)out[1];
	return rc;
}

int mm_dereg_remote(struct mm_ctx *c, uint32_t handle)
{
	uint64_t in[6] = { handle };

	return mm_call(c, MM_OP_DEREG_MR, in, -1, NULL);
}

/*
 * ibv_import_device (libibverbs/verbs.c, v44): the context of @fd, a
 * command fd another process opened (passed here over a socket); it takes
 * @fd over (ibv_close_device closes it). A file that is no uverbs file
 * fails its query ioctl: the model checks its header.
 */
MM_EXPORT struct ibv_context *ibv_import_device(int fd)
{
	struct sockaddr_un a;
	struct mm_desc *d;
	struct mm_hdr h;
	struct mm_ctx *c;
	socklen_t len;

	MM_FORWARD(struct ibv_context *, ibv_import_device, (int), (fd));
	if (pread(fd, &h, sizeof(h), MM_HDR_OFF) != sizeof(h) || h.magic != MM_MAGIC)
		return mm_fail(EOPNOTSUPP);
	d = mm_desc_by_index(h.desc_index);
	if (!d)
		return mm_fail(EOPNOTSUPP);
	c = mm_ctx_new(d);
	if (!c)
		return mm_fail(ENOMEM);
	c->imported = 1;
	memcpy(c->sock, h.sock, sizeof(c->sock));
	c->sock[sizeof(c->sock) - 1] = 0;
	len = sock_addr(c->sock, &a);
	c->conn_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (c->conn_fd < 0 || connect(c->conn_fd, (struct sockaddr *)&a, len)) {
		if (c->conn_fd >= 0)
			close(c->conn_fd);
		mm_ctx_free(c);
		return mm_fail(ENODEV);
	}
	c->vctx.context.cmd_fd = fd;
	return &c->vctx.context;
}

void mm_import_close(struct mm_ctx *c)
{
	close(c->conn_fd);
	mm_ctx_free(c); /* closes the command fd it took over */
}

/* ibv_import_pd (libibverbs/verbs.c): the kernel checks the id names a PD. */
MM_EXPORT struct ibv_pd *ibv_import_pd(struct ibv_context *ctx, uint32_t handle)
{
	struct mm_ctx *c;
	struct mm_pd *pd;
	int rc;

	MM_FORWARD(struct ibv_pd *, ibv_import_pd, (struct ibv_context *, uint32_t),
	           (ctx, handle));
	c = mm_ctx(ctx);
	if (c->imported) {
		uint64_t in[6] = { handle };

		rc = mm_call(c, MM_OP_QUERY_PD, in, -1, NULL);
	} else {
		pthread_mutex_lock(&c->lock);
		rc = mm_k_query_pd(c, handle);
		pthread_mutex_unlock(&c->lock);
	}
	if (rc)
		return mm_fail(rc);
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return mm_fail(ENOMEM);
	pd->pd.context = ctx;
	pd->pd.handle = handle;
	if (!c->imported) {
		struct mm_pd *own;

		pthread_mutex_lock(&c->lock);
		own = mm_handle_get(c, handle, MM_OBJ_PD);
		pd->epd = own ? own->epd : NULL;
		pthread_mutex_unlock(&c->lock);
	}
	return &pd->pd;
}

/* ibv_unimport_pd: the struct only; the kernel object stays. */
MM_EXPORT void ibv_unimport_pd(struct ibv_pd *pd)
{
	if (!mm_on()) {
		void (*real)(struct ibv_pd *) =
		    (void (*)(struct ibv_pd *))dlsym(RTLD_NEXT, "ibv_unimport_pd");

		if (real)
			real(pd);
		return;
	}
	free(pd);
}

/*
 * ibv_import_mr (libibverbs/verbs.c -> ibv_cmd_query_mr, cmd_mr.c, v44):
 * the kernel's lkey, rkey and length of MR @handle; `addr` is NULL
 * (ibv_import_mr(3): "The addr field in the imported MR is not
 * applicable, NULL value is expected"), whatever address the registering
 * process gave.
 */
MM_EXPORT struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t handle)
{
	struct mm_ctx *c;
	struct mm_mr *mr;
	uint64_t len = 0;
	uint32_t key = 0;
	int rc;

	MM_FORWARD(struct ibv_mr *, ibv_import_mr, (struct ibv_pd *, uint32_t),
	           (pd, handle));
	c = mm_ctx(pd->context);
	if (c->imported) {
		uint64_t in[6] = { handle, pd->handle }, out[4];

		rc = mm_call(c, MM_OP_QUERY_MR, in, -1, out);
		len = out[0];
		key = (uint32_t)out[1];
	} else {
		pthread_mutex_lock(&c->lock);
		rc = mm_k_query_mr(c, handle, pd->handle, &len, &key);
		pthread_mutex_unlock(&c->lock);
	}
	if (rc)
		return mm_fail(rc);
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return mm_fail(ENOMEM);
	mr->mr.context = pd->context;
	mr->mr.pd = pd;
	mr->mr.addr = NULL;
	mr->mr.length = len;
	mr->mr.handle = handle;
	mr->mr.lkey = key;
	mr->mr.rkey = key;
	return &mr->mr;
}

/* ibv_unimport_mr: the struct only; the MR lives on for its other holder. */
MM_EXPORT void ibv_unimport_mr(struct ibv_mr *mr)
{
	if (!mm_on()) {
		void (*real)(struct ibv_mr *) =
		    (void (*)(struct ibv_mr *))dlsym(RTLD_NEXT, "ibv_unimport_mr");

		if (real)
			real(mr);
		return;
	}
	free(mr);
}
