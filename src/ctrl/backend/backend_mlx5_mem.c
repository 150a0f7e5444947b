/* SPDX-License-Identifier: MIT */
/*
 * The ConnectX backend's memory registrations: the data arena's MR at its
 * fixed IOVA, one MR per buffer (buffer keys), and the clients' own
 * memory - an MR a client made in ssqd's PD and hands over, a dma-buf, or
 * a shareable file ssqd maps and pins.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include "ctrl/backend/mlx5_pvt.h"

/* A buffer of the arena as an MR of its own, at the arena's IOVAs. */
int mlx5_reg_buf(struct ssqd_backend *b, void *addr, size_t len, uint64_t iova,
                 int remote, void **mrp, uint32_t *key, char *why, size_t whylen)
{
	/*
	 * !@remote: windows bound over it (IBV_ACCESS_MW_BIND) reach it, no
	 * key else. MW_BIND with @remote too: grant refuses no buffer (a bind
	 * the NIC refuses puts the whole queue in error: backend_mlx5_mw.c).
	 */
	struct ibv_mr *mr =
	    ibv_reg_mr_iova2(b->pd, addr, len, iova,
	                     remote ? SSQD_ACCESS_ALL | IBV_ACCESS_MW_BIND
	                            : IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);

	if (!mr) {
		snprintf(why, whylen, "ibv_reg_mr_iova2 of a %zu-byte buffer: %s", len,
		         strerror(errno));
		return -errno;
	}
	if (mr->lkey != mr->rkey) {
		snprintf(why, whylen, "buffer MR lkey 0x%x != rkey 0x%x", mr->lkey,
		         mr->rkey);
		ibv_dereg_mr(mr);
		return -EOPNOTSUPP;
	}
	if (b->nbuf == b->capbuf) {
		size_t cap = b->capbuf ? 2 * b->capbuf : 64;
		uint32_t *h = realloc(b->buf_handles, cap * sizeof(*h));

		if (!h) {
			snprintf(why, whylen, "out of memory");
			ibv_dereg_mr(mr);
			return -ENOMEM;
		}
		b->buf_handles = h;
		b->capbuf = cap;
	}
	b->buf_handles[b->nbuf++] = mr->handle;
	*key = mr->lkey;
	*mrp = mr;
	return 0;
}

void mlx5_dereg_buf(struct ssqd_backend *b, void *mrp)
{
	struct ibv_mr *mr = mrp;
	size_t i;

	for (i = 0; i < b->nbuf; i++)
		if (b->buf_handles[i] == mr->handle) {
			b->buf_handles[i] = b->buf_handles[--b->nbuf];
			break;
		}
	ibv_dereg_mr(mr);
}

int mlx5_reg_data(struct ssqd_backend *b, void *addr, size_t len, uint64_t iova,
                  int remote, uint32_t *key, char *why, size_t whylen)
{
	int access = remote ? SSQD_ACCESS_ALL : IBV_ACCESS_LOCAL_WRITE;

	/* One fixed IOVA for every process: a WQE address means the same in all. */
	b->mr = ibv_reg_mr_iova2(b->pd, addr, len, iova, (unsigned)access);
	if (!b->mr) {
		snprintf(why, whylen, "ibv_reg_mr_iova2 of %zu bytes at IOVA 0x%llx: %s",
		         len, (unsigned long long)iova, strerror(errno));
		return -errno;
	}
	if (b->mr->lkey != b->mr->rkey) {
		snprintf(why, whylen, "data MR lkey 0x%x != rkey 0x%x", b->mr->lkey,
		         b->mr->rkey);
		ibv_dereg_mr(b->mr);
		b->mr = NULL;
		return -EOPNOTSUPP;
	}
	*key = b->mr->lkey;
	return 0;
}

/* A client's registration: the MR and, for a file ssqd mapped, the mapping. */
struct mlx5_client_mr {
	struct ibv_mr *mr;
	void *map;
	size_t map_len;
	int fd;       /* -1: none (an MR the client made) */
	int bindable; /* ssqd made it with MW_BIND, or the client says it did */
};

/*
 * An MR the client registered itself in ssqd's PD through the imported
 * context: the only way to pin a process's private memory, which the
 * kernel pins in the registering process (ib_umem_get, current->mm).
 * ssqd imports it (ibv_import_mr: the kernel's attributes, not the
 * client's word) and owns its end: deregistered when the client gives it
 * back or dies, once the WQEs that may use it have completed. Never an
 * MR ssqd holds itself, the data MR or a buffer's (reg_buf): a client
 * naming that handle would have ssqd destroy an MR it still serves
 * (ibv_import_mr(3): once destroyed no other process can touch it).
 * Other clients' MRs ssqd took over are refused by client_mr.c (-EEXIST).
 */
static int take_client_mr(struct ssqd_backend *b, uint64_t handle, uint64_t len,
                          struct mlx5_client_mr *m, char *why, size_t whylen)
{
	if (handle > UINT32_MAX || (b->mr && handle == b->mr->handle) ||
	    buf_held(b, (uint32_t)handle)) {
		snprintf(why, whylen, "MR handle %llu is not the client's to give",
		         (unsigned long long)handle);
		return -EPERM;
	}
	m->mr = ibv_import_mr(b->pd, (uint32_t)handle);
	if (!m->mr) {
		snprintf(why, whylen, "no MR with handle %llu in ssqd's PD: %s",
		         (unsigned long long)handle, strerror(errno));
		return -ENOENT;
	}
	/* The kernel's length (ibv_cmd_query_mr), not the client's word. */
	if (m->mr->length != len) {
		snprintf(why, whylen, "MR %llu holds %zu bytes, not the %llu said",
		         (unsigned long long)handle, m->mr->length,
		         (unsigned long long)len);
		ibv_unimport_mr(m->mr);
		return -EINVAL;
	}
	m->fd = -1;
	return 0;
}

/*
 * A client's shareable memory: a dma-buf (GPU or other peer memory) goes
 * to ibv_reg_dmabuf_mr, whose IOVA we choose (the offsets); any other file
 * is mapped here and pinned by ibv_reg_mr_iova2 with the same IOVAs, so a
 * client that truncates it later cannot take pages from under the NIC.
 * A process's private memory can only be pinned by that process (the
 * kernel pins current->mm): the client registers it in ssqd's PD through
 * ibv_import_device / ibv_import_pd and hands ssqd the MR (SSQ_MEM_VERBS,
 * take_client_mr); SSQ_MEM_PROCESS is refused with that reason.
 */
int mlx5_reg_client(struct ssqd_backend *b, int kind, int fd, pid_t pid, uint64_t addr,
                    uint64_t len, uint64_t want_iova, int access, void **mrp,
                    uint32_t *lkey, uint32_t *rkey, uint64_t *iova, char *why,
                    size_t whylen)
{
	struct mlx5_client_mr *m;
	long page = sysconf(_SC_PAGESIZE);
	uint64_t base = addr & ~(uint64_t)(page - 1);
	struct stat st;

	(void)pid;
	if (kind == SSQ_MEM_PROCESS) {
		snprintf(why, whylen,
		         "on a ConnectX a process's private memory is registered by "
		         "that process in ssqd's PD (SSQ_MEM_VERBS), not through "
		         "its memory file");
		return -EOPNOTSUPP;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	if (kind == SSQ_MEM_VERBS) {
		int rc = take_client_mr(b, addr, len, m, why, whylen);

		if (rc) {
			free(m);
			return rc;
		}
		/*
		 * The IOVA is the client's word: an imported MR's addr is NULL
		 * (libibverbs cmd_mr.c ibv_cmd_query_mr; ibv_import_mr(3): "not
		 * applicable, NULL value is expected"), and libibverbs 44 does
		 * not ask the kernel for UVERBS_ATTR_QUERY_MR_RESP_IOVA. The
		 * client made the MR with ibv_reg_mr, whose IOVA is its VA
		 * (client_mem.c sends mr->addr). Trusting it grants nothing: a
		 * wrong IOVA only makes that client's own WQEs fail their key
		 * checks, and it holds the whole imported context anyway. What
		 * can be checked is: the range must not wrap.
		 */
		if (!want_iova || want_iova + len < want_iova) {
			snprintf(why, whylen, "IOVA 0x%llx of %llu bytes: not an address",
			         (unsigned long long)want_iova, (unsigned long long)len);
			ibv_unimport_mr(m->mr);
			free(m);
			return -EINVAL;
		}
		*lkey = m->mr->lkey;
		*rkey = m->mr->rkey;
		*iova = want_iova;
		m->bindable = !!(access & SSQ_MEM_VERBS_BINDABLE);
		*mrp = m;
		return 0;
	}
	m->mr = ibv_reg_dmabuf_mr(b->pd, addr, len, addr, fd, access);
	if (!m->mr) {
		int dmabuf_err = errno;
		int writable = !!(access & SSQ_MEM_ACCESS_WRITES);
		struct statfs fs = { 0 };

		if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
		    addr + len > (uint64_t)st.st_size) {
			snprintf(why, whylen,
			         "ibv_reg_dmabuf_mr: %s; and not a file holding bytes "
			         "%llu..%llu",
			         strerror(dmabuf_err), (unsigned long long)addr,
			         (unsigned long long)(addr + len - 1));
			free(m);
			return -EINVAL;
		}
		/*
		 * A writable long-term pin of a file the kernel tracks dirty
		 * pages of (ext4, xfs, ...) fails with EFAULT since Linux 6.5
		 * (mm/gup.c, writable_file_mapping_allowed: only shmem and
		 * hugetlbfs are exempt). memfd and tmpfs are shmem, a hugetlb
		 * memfd hugetlbfs: refused here with the reason, not at the pin.
		 */
		if (writable && (fstatfs(fd, &fs) || (fs.f_type != TMPFS_MAGIC &&
		                                      fs.f_type != HUGETLBFS_MAGIC))) {
			snprintf(
			    why, whylen,
			    "a writable registration of a file on a disk-backed "
			    "file system (f_type 0x%lx): the kernel refuses long-term "
			    "writable pins of such files (mm/gup.c); use a memfd, "
			    "tmpfs or hugetlbfs file",
			    (unsigned long)fs.f_type);
			free(m);
			return -EOPNOTSUPP;
		}
		m->map_len = (size_t)(addr + len - base);
		/* Only as writable as asked: a read-only fd serves a read-only MR. */
		m->map = mmap(NULL, m->map_len, PROT_READ | (writable ? PROT_WRITE : 0),
		              MAP_SHARED, fd, (off_t)base);
		if (m->map == MAP_FAILED) {
			snprintf(why, whylen, "mapping the file: %s", strerror(errno));
			free(m);
			return -EBADF;
		}
		m->mr = ibv_reg_mr_iova2(b->pd, (uint8_t *)m->map + (addr - base), len,
		                         addr, (unsigned)access);
		if (!m->mr) {
			int rc = -errno;

			snprintf(why, whylen, "ibv_reg_mr_iova2 of %llu bytes: %s",
			         (unsigned long long)len, strerror(errno));
			munmap(m->map, m->map_len);
			free(m);
			return rc;
		}
	}
	m->fd = fd;
	m->bindable = !!(access & IBV_ACCESS_MW_BIND);
	*lkey = m->mr->lkey;
	*rkey = m->mr->rkey;
	*iova = addr;
	*mrp = m;
	return 0;
}

void mlx5_dereg_client(struct ssqd_backend *b, void *mrp)
{
	struct mlx5_client_mr *m = mrp;

	(void)b;
	ibv_dereg_mr(m->mr);
	if (m->map)
		munmap(m->map, m->map_len);
	if (m->fd >= 0)
		close(m->fd);
	free(m);
}

struct ibv_mr *mlx5_client_mr_of(void *mrp, int *bindable)
{
	const struct mlx5_client_mr *m = mrp;

	*bindable = m->bindable;
	return m->mr;
}

int mlx5_verbs_handles(struct ssqd_backend *b, int *cmd_fd, uint32_t *pd_handle)
{
	*cmd_fd = b->ctx->cmd_fd;
	*pd_handle = b->pd->handle;
	return 0;
}
