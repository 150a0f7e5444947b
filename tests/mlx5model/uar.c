/* SPDX-License-Identifier: MIT */
/*
 * The command fd and what lives behind it: UAR pages (a memfd, so that a
 * client's mmap(cmd_fd, uar_mmap_offset) reaches the page the device
 * watches, as mlx5_ib_mmap maps the same UAR for every mapper), queue
 * buffers and doorbell records through the context's allocator hook, and
 * the thread that plays the NIC's part for CQ arms (a write to the CQ UAR)
 * and async events.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include "mlx5model.h"

/*
 * Layout of the memfd: UAR page i at offset i * 4096, as libmlx5 maps a
 * context's static UARs (get_uar_mmap_offset with
 * MLX5_IB_MMAP_REGULAR_PAGE: command 0, index i). Each CQ (its cq_uar)
 * and each QP gets a page of its own from 1 on (libmlx5 arms every CQ of a
 * context through one page, ctx->cq_uar_reg, and shares a page
 * between the bfregs of several QPs: the model keeps one object per page
 * so that its device thread, which polls memory where a NIC is written
 * to, can tell doorbells apart and loses none). The model's own header is at
 * MM_HDR_OFF, where no UAR is. A kernel refuses mmap at an offset that is
 * no UAR of the context (mlx5_ib_mmap -> uar_mmap: -EINVAL past the
 * context's UARs; -EPERM for a non-shared or executable mapping); a memfd
 * maps any offset, so the model cannot refuse such a mapping and a stray
 * one reaches a page no device watches.
 */
int mm_cmd_fd_init(struct mm_ctx *c)
{
	struct mm_hdr h;
	int fd = memfd_create("mlx5model-uverbs", MFD_CLOEXEC);

	if (fd < 0)
		return errno;
	if (ftruncate(fd, (off_t)MM_HDR_OFF + MM_PAGE) < 0)
		goto fail;
	c->uar = mmap(NULL, (size_t)MM_MAX_UAR * MM_PAGE, PROT_READ | PROT_WRITE,
	              MAP_SHARED, fd, 0);
	if (c->uar == MAP_FAILED) {
		c->uar = NULL;
		goto fail;
	}
	c->uar_used[0] = 1; /* unused: offset 0 stays no UAR of anything */
	memset(&h, 0, sizeof(h));
	h.magic = MM_MAGIC;
	h.desc_index = (uint32_t)c->desc->index;
	h.owner = getpid();
	snprintf(c->sock, sizeof(c->sock), "mlx5model-%d-%p", (int)getpid(), (void *)c);
	memcpy(h.sock, c->sock, sizeof(h.sock));
	if (pwrite(fd, &h, sizeof(h), MM_HDR_OFF) != sizeof(h))
		goto fail;
	c->vctx.context.cmd_fd = fd;
	return 0;
fail:
	if (c->uar)
		munmap(c->uar, (size_t)MM_MAX_UAR * MM_PAGE);
	c->uar = NULL;
	close(fd);
	return EIO;
}

void mm_cmd_fd_fini(struct mm_ctx *c)
{
	if (c->uar)
		munmap(c->uar, (size_t)MM_MAX_UAR * MM_PAGE);
	c->uar = NULL;
}

int mm_uar_alloc(struct mm_ctx *c)
{
	unsigned i;

	for (i = 1; i < MM_MAX_UAR; i++) {
		if (!c->uar_used[i]) {
			c->uar_used[i] = 1;
			memset(c->uar + (size_t)i * MM_PAGE, 0, MM_PAGE);
			return (int)i;
		}
	}
	return -ENOMEM;
}

void mm_uar_free(struct mm_ctx *c, unsigned index)
{
	c->uar_used[index] = 0;
}

/*
 * A queue buffer: through the context's allocator when one was set
 * (mlx5_get_alloc_type gives MLX5_ALLOC_TYPE_EXTERNAL, and
 * mlx5_alloc_buf_extern, providers/mlx5/buf.c, calls alloc(size, data)
 * with the page-aligned size and no alignment of its own), else
 * page-aligned anonymous memory (mlx5_alloc_buf).
 */
void *mm_buf_alloc(struct mm_ctx *c, size_t size)
{
	void *p = NULL;

	if (c->has_al)
		return c->al.alloc(size, c->al.data);
	if (posix_memalign(&p, MM_PAGE, size))
		return NULL;
	return p;
}

void mm_buf_free(struct mm_ctx *c, void *p)
{
	if (c->has_al)
		c->al.free(p, c->al.data);
	else
		free(p);
}

/*
 * A doorbell record: a page from the allocator (dbrec.c __add_page:
 * mlx5_alloc_buf_extern of one page when an allocator is set) cut into
 * cache-line slots, zeroed. Records are not given back (libmlx5 frees
 * them into the page; the model's pages live as long as the context).
 */
__be32 *mm_dbrec_alloc(struct mm_ctx *c)
{
	__be32 *db;

	if (!c->dbr_page || c->dbr_next + MM_DBREC_STRIDE > MM_PAGE) {
		c->dbr_page = mm_buf_alloc(c, MM_PAGE);
		c->dbr_next = 0;
		if (!c->dbr_page)
			return NULL;
	}
	db = (__be32 *)(c->dbr_page + c->dbr_next);
	c->dbr_next += MM_DBREC_STRIDE;
	memset(db, 0, 8);
	return db;
}

/*
 * An arm the NIC took for @cq: the arm doorbell word (mlx5_arm_cq,
 * providers/mlx5/cq.c: sn << 28 | cmd | ci). The device raises the CQ's
 * event once a CQE at or past ci is written (emu_cq_arm), into the
 * channel's fd; a CQ without a channel raises nothing. Lock held.
 */
void mm_arm_taken(struct mm_ctx *c, struct mm_cq *cq, uint32_t word)
{
	(void)c;
	mm_trace("pid %d CQ 0x%x armed: sn %u ci %u%s\n", (int)getpid(), cq->dv.cqn,
	         word >> 28, word & 0xffffff, cq->cq.channel ? "" : " (no channel)");
	cq->last_arm = word;
	if ((word >> 24 & 3) != (MLX5_CQ_DB_REQ_NOT >> 24)) {
		/* Solicited-only arms are not modelled: no event (stricter). */
		fprintf(stderr, "mlx5model: CQ 0x%x: solicited-only arm not modelled\n",
		        cq->dv.cqn);
		return;
	}
	if (!cq->cq.channel)
		return;
	if (!emu_cq_arm(cq->ecq, word & 0xffffff, cq->cq.channel->fd))
		cq->armed = 1;
}

/*
 * One look at the CQ UARs: a 64-bit store at MLX5_CQ_DOORBELL (the arm
 * doorbell word, then the CQN, big-endian: mlx5_arm_cq) is what makes a
 * ConnectX read the named CQ's arm doorbell record. The model takes each
 * store (swapping it with MM_NO_STORE, a value no store has: the first
 * arm of CQ 0, sequence 0 at index 0, stores 0) and arms the CQ it names with its
 * record's word; a record written with no store after it arms nothing. Each CQ has a UAR
 * page of its own (see mm_create_cq_ex): two stores for two CQs from two threads land
 * apart, so neither is lost before this thread sees it (a NIC sees every store). Returns
 * how many stores it took.
 */
static int take_arms(struct mm_ctx *c)
{
	int n = 0;
	unsigned i;

	pthread_mutex_lock(&c->lock);
	for (i = 0; i < MM_MAX_CQ; i++) {
		struct mm_cq *cq = c->cqs[i], *named;
		uint64_t v;
		__be32 w[2];
		uint32_t cqn;

		if (!cq)
			continue;
		v = __atomic_exchange_n(
		    (uint64_t *)((uint8_t *)cq->dv.cq_uar + MLX5_CQ_DOORBELL),
		    MM_NO_STORE, __ATOMIC_ACQ_REL);
		if (v == MM_NO_STORE)
			continue;
		n++;
		memcpy(w, &v, sizeof(w));
		cqn = be32toh(w[1]) & 0xffffff;
		mm_trace("pid %d CQ UAR page %u: store 0x%08x 0x%08x\n", (int)getpid(),
		         cq->uar_index, be32toh(w[0]), be32toh(w[1]));
		named = cqn < MM_MAX_CQ ? c->cqs[cqn] : NULL;
		if (named)
			mm_arm_taken(c, named,
			             be32toh(__atomic_load_n(&named->dv.dbrec[1],
			                                     __ATOMIC_ACQUIRE)));
	}
	pthread_mutex_unlock(&c->lock);
	return n;
}

/* Move the device's async events to the context's queue and fd. */
static int take_async(struct mm_ctx *c)
{
	struct emu_async_event ev;
	uint64_t one = 1;
	int n = 0;

	while (!emu_get_async_event(c->dev, &ev)) {
		pthread_mutex_lock(&c->lock);
		if (c->async_tail - c->async_head < MM_ASYNC_RING) {
			c->async_ring[c->async_tail++ % MM_ASYNC_RING] = ev;
			if (write(c->vctx.context.async_fd, &one, 8) != 8)
				c->async_tail--;
		}
		pthread_mutex_unlock(&c->lock);
		n++;
	}
	return n;
}

/*
 * A ConnectX takes an arm the moment the store reaches it; this thread
 * looks every 50 us at most (20 us after a burst), so an arm waits that
 * long at worst: well inside the 1 ms slices ssq_wait's sleepers route
 * themselves after. The cost (a wake-up every 50 us, in every process that
 * opened a device) is the model's, not ssqd's: tests that time ssqd's idle
 * CPU do not run on the model.
 */
/*
 * A ConnectX takes an arm the moment the store reaches it; this thread
 * looks every 50 us at most (20 us after a burst), so an arm waits that
 * long at worst: well inside the 1 ms slices ssq_wait's sleepers route
 * themselves after. The cost (a wake-up every 50 us, in every process that
 * opened a device) is the model's, not ssqd's: tests that time ssqd's idle
 * CPU do not run on the model.
 */
static void *watcher(void *arg)
{
	struct mm_ctx *c = arg;
	long nap = 20000;

	while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) {
		struct timespec ts;

		if (take_arms(c) + take_async(c))
			nap = 20000;
		else if (nap < 50000)
			nap += 10000;
		ts.tv_sec = 0;
		ts.tv_nsec = nap;
		nanosleep(&ts, NULL);
	}
	return NULL;
}

int mm_watcher_start(struct mm_ctx *c)
{
	int rc = pthread_create(&c->watcher, NULL, watcher, c);

	if (!rc)
		c->watcher_on = 1;
	return rc;
}

void mm_watcher_stop(struct mm_ctx *c)
{
	if (!c->watcher_on)
		return;
	__atomic_store_n(&c->stop, 1, __ATOMIC_RELEASE);
	pthread_join(c->watcher, NULL);
	c->watcher_on = 0;
}
