/* SPDX-License-Identifier: MIT */
/*
 * Moving bytes to and from one resolved piece of memory: host memory of
 * the process running the device (memcpy), or memory reached through a
 * memory file - a client's /proc/PID/mem, which the client opened itself
 * and passed to ssqd (emu_reg_mr_file). The file is bound to the address
 * space it was opened on: once that process has exited every access
 * fails, and a later process given the same PID is out of its reach, so
 * a WQE that outlives its memory's owner can never write into someone
 * else's. A failed access is a protection error for whoever owns the
 * piece, never a partial success. Calls nothing else in the device.
 *
 * One exception, a write into the memory of a process that has exited
 * while its registration is still held (ssqd keeps a dead client's
 * registrations while a combined request of its may still run,
 * <ssq/combine.h>): a device's MR pins its pages for its life
 * (ib_umem_get: pin_user_pages_fast with FOLL_LONGTERM, released only by
 * ib_umem_release; drivers/infiniband/core/umem.c), so the DMA lands in
 * pages nobody maps any more and the WQE succeeds. Here the bytes are
 * dropped, and the WQE succeeds as well. A read there still fails: the
 * pinned pages' bytes are out of this device's reach (a ConnectX reads
 * them) - and a file such memory was a mapping of (ssq_mem_reg_fd) does
 * not see the dropped bytes, where a ConnectX writes its page cache.
 */
#include <unistd.h>
#include "emu/emu_pvt.h"

/*
 * All @n bytes at @off of @fd, or -EFAULT (unmapped, process gone). A
 * memory file answers 0 bytes only once its process's address space is
 * gone (mem_rw: mmget_not_zero fails; an address not mapped is -EIO,
 * fs/proc/base.c): a write then is dropped, as above.
 */
static int file_io(int fd, uint64_t off, uint8_t *buf, uint32_t n, int write)
{
	while (n) {
		ssize_t r = write ? pwrite(fd, buf, n, (off_t)off)
		                  : pread(fd, buf, n, (off_t)off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0 && write)
			return 0;
		if (r <= 0)
			return -EFAULT;
		buf += r;
		off += (uint64_t)r;
		n -= (uint32_t)r;
	}
	return 0;
}

int emu_piece_read(const struct emu_sg *piece, uint64_t off, void *dst, uint32_t n)
{
	if (ssq_likely(piece->fd < 0)) {
		memcpy(dst, piece->p + off, n);
		return 0;
	}
	return file_io(piece->fd, (uint64_t)(uintptr_t)piece->p + off, dst, n, 0);
}

int emu_piece_write(const struct emu_sg *piece, uint64_t off, const void *src, uint32_t n)
{
	if (ssq_likely(piece->fd < 0)) {
		memcpy(piece->p + off, src, n);
		return 0;
	}
	return file_io(piece->fd, (uint64_t)(uintptr_t)piece->p + off, (uint8_t *)src, n,
	               1);
}

int emu_piece_move(const struct emu_sg *dst, uint64_t doff, const struct emu_sg *src,
                   uint64_t soff, uint32_t n)
{
	uint8_t bounce[4096];

	if (ssq_likely(src->fd < 0))
		return emu_piece_write(dst, doff, src->p + soff, n) ? EMU_FAULT_DST : 0;
	if (dst->fd < 0)
		return emu_piece_read(src, soff, dst->p + doff, n) ? EMU_FAULT_SRC : 0;
	while (n) {
		uint32_t k = n < sizeof(bounce) ? n : (uint32_t)sizeof(bounce);

		if (emu_piece_read(src, soff, bounce, k))
			return EMU_FAULT_SRC;
		if (emu_piece_write(dst, doff, bounce, k))
			return EMU_FAULT_DST;
		soff += k;
		doff += k;
		n -= k;
	}
	return 0;
}

int emu_piece_atomic(const struct emu_sg *target, int fetch_add, uint64_t arg,
                     uint64_t cmp, uint64_t *old)
{
	uint64_t want;

	if (ssq_likely(target->fd < 0)) {
		*old = emu_atomic_apply(target->p, fetch_add, arg, cmp);
		return 0;
	}
	/*
	 * Through a memory file the read-modify-write is not one instruction,
	 * but it is atomic where an HCA's atomics are: against every other
	 * atomic of this device, which runs them one at a time under its lock
	 * (mlx5 reports IBV_ATOMIC_HCA: atomic with respect to the same HCA's
	 * atomics only, not to the CPU).
	 */
	if (emu_piece_read(target, 0, old, 8))
		return -EFAULT;
	want = fetch_add ? *old + arg : *old == cmp ? arg : *old;
	return emu_piece_write(target, 0, &want, 8);
}
