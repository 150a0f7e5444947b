/* SPDX-License-Identifier: MIT */
/*
 * PDs, MRs and the "kernel" side of them: one object table per context
 * (the uverbs file's), with the checks ib_uverbs / mlx5_ib make. The
 * owner process holds the table; an importer reaches it through uverbs.c.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include "mlx5model.h"

/*
 * Object ids: every uobject of a uverbs file, whatever its type, takes the
 * lowest free id of the file's one xarray (alloc_uobj / idr_add_uobj,
 * drivers/infiniband/core/rdma_core.c: xa_alloc(&ufile->idr, ...,
 * xa_limit_32b)), so ids start at 0 and a freed id is reused.
 */
int mm_handle_alloc(struct mm_ctx *c, enum mm_obj_type t, void *p)
{
	int i;

	for (i = 0; i < MM_MAX_HANDLES; i++) {
		if (c->objs[i].type == MM_OBJ_FREE) {
			c->objs[i].type = t;
			c->objs[i].p = p;
			return i;
		}
	}
	return -ENOMEM;
}

void mm_handle_free(struct mm_ctx *c, uint32_t h)
{
	if (h < MM_MAX_HANDLES)
		c->objs[h].type = MM_OBJ_FREE, c->objs[h].p = NULL;
}

void *mm_handle_get(struct mm_ctx *c, uint32_t h, enum mm_obj_type t)
{
	return h < MM_MAX_HANDLES && c->objs[h].type == t ? c->objs[h].p : NULL;
}

static struct mm_pinned *pinned_of(struct mm_ctx *c, pid_t pid)
{
	unsigned i;

	for (i = 0; i < sizeof(c->pinned) / sizeof(c->pinned[0]); i++)
		if (c->pinned[i].pid == pid)
			return &c->pinned[i];
	for (i = 0; i < sizeof(c->pinned) / sizeof(c->pinned[0]); i++)
		if (!c->pinned[i].pages) {
			c->pinned[i].pid = pid;
			return &c->pinned[i];
		}
	return NULL;
}

/*
 * The kernel's MR registration (ib_uverbs_reg_mr -> mlx5_ib_reg_user_mr
 * -> ib_umem_get, drivers/infiniband/core/umem.c), in the owner:
 *  - access: ib_check_mr_access (include/rdma/ib_verbs.h) refuses remote
 *    write or atomic without local write (EINVAL); bits other than the
 *    five ssq uses (with MW_BIND) are not modelled and refused (stricter);
 *  - ib_umem_get charges the pages to the registering process's
 *    mm->pinned_vm and fails with ENOMEM past its RLIMIT_MEMLOCK unless
 *    it has CAP_IPC_LOCK (@memlock, @cap_ipc_lock: the registering
 *    process's, read by the caller);
 *  - mlx5_umem_find_best_pgsz / ib_umem_find_best_pgsz: the IOVA and the
 *    address must agree below the 4 KiB page, else no page size fits
 *    (EINVAL).
 * @fd >= 0: the memory of another process, reached through its
 * /proc/PID/mem (kept open until dereg, as the umem keeps the pages).
 */
int mm_k_reg_mr(struct mm_ctx *c, uint32_t pd_handle, uint64_t addr, uint64_t len,
                uint64_t iova, int access, int fd, pid_t pid, uint64_t memlock,
                int cap_ipc_lock, uint32_t *handle, uint32_t *key)
{
	/* MW_BIND too: in ib_check_mr_access's IB_ACCESS_SUPPORTED (mw.c binds). */
	const int known = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
	                  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
	                  IBV_ACCESS_MW_BIND;
	struct mm_pd *pd = mm_handle_get(c, pd_handle, MM_OBJ_PD);
	uint64_t pages = ((addr + len + MM_PAGE - 1) / MM_PAGE) - addr / MM_PAGE;
	struct mm_pinned *pin;
	struct mm_kmr *k;
	int rc, h;

	if (!pd)
		return ENOENT;
	if (!len || addr + len < addr || access & ~known)
		return EINVAL;
	if (access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return EINVAL;
	if ((addr ^ iova) & (MM_PAGE - 1))
		return EINVAL;
	pin = pinned_of(c, pid);
	if (!pin)
		return ENOMEM;
	if (!cap_ipc_lock && pin->pages + pages > memlock / MM_PAGE)
		return ENOMEM;
	k = calloc(1, sizeof(*k));
	if (!k)
		return ENOMEM;
	if (fd >= 0)
		rc = emu_reg_mr_file(pd->epd, fd, addr, len, iova, access, &k->emr,
		                     &k->key);
	else
		rc = emu_reg_mr(pd->epd, (void *)(uintptr_t)addr, len, iova, access,
		                &k->emr, &k->key);
	if (rc) {
		free(k);
		return -rc;
	}
	h = mm_handle_alloc(c, MM_OBJ_MR, k);
	if (h < 0) {
		emu_dereg_mr(k->emr);
		free(k);
		return ENOMEM;
	}
	k->pd_handle = pd_handle;
	k->addr = addr;
	k->len = len;
	k->iova = iova;
	k->access = access;
	k->fd = fd;
	k->pid = pid;
	k->pages = pages;
	pin->pages += pages;
	*handle = (uint32_t)h;
	*key = k->key;
	return 0;
}

/* ib_uverbs_dereg_mr: the object goes, whoever holds a struct naming it. */
int mm_k_dereg_mr(struct mm_ctx *c, uint32_t handle)
{
	struct mm_kmr *k = mm_handle_get(c, handle, MM_OBJ_MR);
	struct mm_pinned *pin;

	if (!k)
		return EINVAL;
	emu_dereg_mr(k->emr);
	if (k->fd >= 0)
		close(k->fd);
	pin = pinned_of(c, k->pid);
	if (pin)
		pin->pages -= pin->pages < k->pages ? pin->pages : k->pages;
	mm_handle_free(c, handle);
	free(k);
	return 0;
}

/*
 * UVERBS_METHOD_QUERY_MR as libibverbs 44's ibv_cmd_query_mr asks it
 * (libibverbs/cmd_mr.c): lkey, rkey, length; the kernel can also give
 * the IOVA, but libibverbs does not ask for it.
 */
int mm_k_query_mr(struct mm_ctx *c, uint32_t handle, uint32_t pd_handle, uint64_t *len,
                  uint32_t *key)
{
	struct mm_kmr *k = mm_handle_get(c, handle, MM_OBJ_MR);

	(void)pd_handle;
	if (!k)
		return ENOENT; /* uverbs' lookup of a free id */
	*len = k->len;
	*key = k->key;
	return 0;
}

int mm_k_query_pd(struct mm_ctx *c, uint32_t handle)
{
	return mm_handle_get(c, handle, MM_OBJ_PD) ? 0 : ENOENT;
}

/* The last close of the file: every MR left goes (uverbs_destroy_ufile_hw). */
void mm_k_fini(struct mm_ctx *c)
{
	uint32_t i;

	mm_mw_fini(c);
	for (i = 0; i < MM_MAX_HANDLES; i++)
		if (c->objs[i].type == MM_OBJ_MR)
			mm_k_dereg_mr(c, i);
}

/* The registering process's RLIMIT_MEMLOCK and CAP_IPC_LOCK, from /proc. */
void mm_memlock_of(pid_t pid, uint64_t *limit, int *cap)
{
	char path[64], line[256];
	FILE *f;

	*limit = 0;
	*cap = 0;
	snprintf(path, sizeof(path), "/proc/%d/limits", (int)pid);
	f = fopen(path, "r");
	if (f) {
		while (fgets(line, sizeof(line), f)) {
			char soft[64];

			if (!strncmp(line, "Max locked memory", 17) &&
			    sscanf(line + 17, "%63s", soft) == 1)
				*limit = !strcmp(soft, "unlimited")
				             ? UINT64_MAX
				             : strtoull(soft, NULL, 10);
		}
		fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (f) {
		while (fgets(line, sizeof(line), f)) {
			unsigned long long caps;

			/* CAP_IPC_LOCK is capability 14. */
			if (sscanf(line, "CapEff: %llx", &caps) == 1)
				*cap = !!(caps & (1ull << 14));
		}
		fclose(f);
	}
}

/* ---- the verbs ---- */

MM_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *ctx)
{
	struct mm_ctx *c;
	struct mm_pd *pd;
	int h;

	MM_FORWARD(struct ibv_pd *, ibv_alloc_pd, (struct ibv_context *), (ctx));
	c = mm_ctx(ctx);
	if (c->imported)
		return mm_fail(EOPNOTSUPP); /* not modelled: ssq never does it */
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return mm_fail(ENOMEM);
	if (emu_alloc_pd(c->dev, &pd->epd)) {
		free(pd);
		return mm_fail(ENOMEM);
	}
	pthread_mutex_lock(&c->lock);
	h = mm_handle_alloc(c, MM_OBJ_PD, pd);
	pthread_mutex_unlock(&c->lock);
	if (h < 0) {
		emu_dealloc_pd(pd->epd);
		free(pd);
		return mm_fail(ENOMEM);
	}
	pd->pd.context = ctx;
	pd->pd.handle = (uint32_t)h;
	return &pd->pd;
}

/* ib_uverbs_dealloc_pd: EBUSY while MRs or QPs use it (pd->usecnt). */
MM_EXPORT int ibv_dealloc_pd(struct ibv_pd *p)
{
	struct mm_pd *pd = (struct mm_pd *)p;
	struct mm_ctx *c;
	int rc;

	MM_FORWARD(int, ibv_dealloc_pd, (struct ibv_pd *), (p));
	c = mm_ctx(p->context);
	if (c->imported || !pd->epd)
		return EINVAL;
	rc = emu_dealloc_pd(pd->epd);
	if (rc)
		return -rc;
	pthread_mutex_lock(&c->lock);
	mm_handle_free(c, p->handle);
	pthread_mutex_unlock(&c->lock);
	free(pd);
	return 0;
}

/*
 * pin_user_pages_fast in ib_umem_get fails with EFAULT for a range that is
 * not mapped: mincore says ENOMEM for such a range. (A read-only mapping
 * registered for writing also fails on a kernel: not modelled.)
 */
static int mapped(uint64_t addr, uint64_t len)
{
	uint64_t base = addr & ~(uint64_t)(MM_PAGE - 1);
	size_t pages = (size_t)((addr + len - base + MM_PAGE - 1) / MM_PAGE);
	unsigned char *vec = malloc(pages);
	int rc;

	if (!vec)
		return 0;
	rc = mincore((void *)(uintptr_t)base, pages * MM_PAGE, vec);
	free(vec);
	return rc == 0;
}

int mm_reg_remote(struct mm_ctx *c, uint32_t pd_handle, uint64_t addr, uint64_t len,
                  int access, uint32_t *handle, uint32_t *key);

static struct ibv_mr *reg(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
                          unsigned access)
{
	struct mm_ctx *c = mm_ctx(pd->context);
	uint32_t h, key;
	struct mm_mr *mr;
	int rc;

	if (!len)
		return mm_fail(EINVAL);
	if (!mapped((uintptr_t)addr, len))
		return mm_fail(EFAULT);
	if (c->imported) {
		if (iova != (uintptr_t)addr)
			return mm_fail(EOPNOTSUPP); /* ssq never does: not modelled */
		rc = mm_reg_remote(c, pd->handle, (uintptr_t)addr, len, (int)access, &h,
		                   &key);
	} else {
		uint64_t limit;
		int cap;

		mm_memlock_of(getpid(), &limit, &cap);
		pthread_mutex_lock(&c->lock);
		rc = mm_k_reg_mr(c, pd->handle, (uintptr_t)addr, len, iova, (int)access,
		                 -1, getpid(), limit, cap, &h, &key);
		pthread_mutex_unlock(&c->lock);
	}
	if (rc)
		return mm_fail(rc);
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		/* The kernel object stays until the context closes. */
		return mm_fail(ENOMEM);
	}
	/* ibv_reg_mr_iova2 (libibverbs/verbs.c) sets addr to the caller's. */
	mr->mr.context = pd->context;
	mr->mr.pd = pd;
	mr->mr.addr = addr;
	mr->mr.length = len;
	mr->mr.handle = h;
	mr->mr.lkey = key;
	mr->mr.rkey = key;
	return &mr->mr;
}

MM_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t len,
                                          uint64_t iova, unsigned int access)
{
	MM_FORWARD(struct ibv_mr *, ibv_reg_mr_iova2,
	           (struct ibv_pd *, void *, size_t, uint64_t, unsigned int),
	           (pd, addr, len, iova, access));
	return reg(pd, addr, len, iova, access);
}

#undef ibv_reg_mr
MM_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	MM_FORWARD(struct ibv_mr *, ibv_reg_mr, (struct ibv_pd *, void *, size_t, int),
	           (pd, addr, len, access));
	return reg(pd, addr, len, (uintptr_t)addr, (unsigned)access);
}

#undef ibv_reg_mr_iova
MM_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t len,
                                         uint64_t iova, int access)
{
	MM_FORWARD(struct ibv_mr *, ibv_reg_mr_iova,
	           (struct ibv_pd *, void *, size_t, uint64_t, int),
	           (pd, addr, len, iova, access));
	return reg(pd, addr, len, iova, (unsigned)access);
}

/*
 * The model has no dma-bufs: the kernel's ib_umem_dmabuf_get
 * (drivers/infiniband/core/umem_dmabuf.c) takes the fd with dma_buf_get,
 * which fails with EINVAL for a file that is not a dma-buf (a memfd, a
 * regular file). A real dma-buf would register on a ConnectX: refused
 * here (stricter).
 */
MM_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t len,
                                           uint64_t iova, int fd, int access)
{
	MM_FORWARD(struct ibv_mr *, ibv_reg_dmabuf_mr,
	           (struct ibv_pd *, uint64_t, size_t, uint64_t, int, int),
	           (pd, offset, len, iova, fd, access));
	return mm_fail(EINVAL);
}

/*
 * ibv_dereg_mr destroys the kernel object, whether this struct came from
 * ibv_reg_mr or ibv_import_mr (ibv_import_mr(3): "the MR is destroyed
 * by whoever calls ibv_dereg_mr"); ibv_unimport_mr only frees the struct.
 */
int mm_dereg_remote(struct mm_ctx *c, uint32_t handle);

MM_EXPORT int ibv_dereg_mr(struct ibv_mr *mr)
{
	struct mm_ctx *c;
	int rc;

	MM_FORWARD(int, ibv_dereg_mr, (struct ibv_mr *), (mr));
	c = mm_ctx(mr->context);
	if (c->imported) {
		rc = mm_dereg_remote(c, mr->handle);
	} else {
		pthread_mutex_lock(&c->lock);
		rc = mm_k_dereg_mr(c, mr->handle);
		pthread_mutex_unlock(&c->lock);
	}
	if (rc)
		return rc;
	free(mr);
	return 0;
}
