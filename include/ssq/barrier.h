/* SPDX-License-Identifier: MIT */
/*
 * ssq/barrier.h - the memory barriers the mlx5 fast path needs, each named
 * for the one ordering it provides, after rdma-core's util/udma_barrier.h
 * (which is not an installed header, so ssq carries its own).
 *
 * Two parties are ordered by every helper here: this CPU, and the NIC reading
 * host memory by DMA (the WQE ring, doorbell records) or receiving MMIO
 * writes (the UAR / BlueFlame register, mapped write-combining).
 *
 * The post sequence they serve (rdma-core providers/mlx5/qp.c, post_send_db):
 *
 *	build WQEs in the ring
 *	ssq_udma_to_device_barrier();  WQE stores before the DBR store
 *	dbrec[MLX5_SND_DBR] = htobe32(pi & 0xffff);
 *	ssq_mmio_wc_start();           DBR store before the UAR write
 *	8-byte doorbell or BlueFlame copy to the UAR
 *	ssq_mmio_flush_writes();       push the WC buffer out now, as one TLP
 *
 * and the poll sequence:
 *
 *	see a CQE whose owner bit matches this pass
 *	ssq_udma_from_device_barrier(); owner read before the CQE body reads
 *	read the CQE
 *
 * Shared-memory ordering between producer processes is not done here: that
 * is C11 atomics with explicit orders next to each use.
 */
#ifndef SSQ_BARRIER_H
#define SSQ_BARRIER_H

#include <ssq/common.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__x86_64__)

/*
 * WQE (and receive-WQE) stores before the doorbell-record store that lets the
 * NIC fetch them. x86-64 keeps stores to write-back memory in program order
 * (TSO), so only the compiler must be stopped from reordering.
 */
SSQ_INLINE void ssq_udma_to_device_barrier(void)
{
	__asm__ volatile("" ::: "memory");
}

/*
 * The read of a CQE's owner byte before the reads of the rest of that CQE.
 * The NIC writes the whole CQE before the owner byte becomes valid, but the
 * CPU may still issue the later loads early; lfence, as libmlx5 uses.
 */
SSQ_INLINE void ssq_udma_from_device_barrier(void)
{
	__asm__ volatile("lfence" ::: "memory");
}

/*
 * Drain write-combining buffers: after this, the UAR stores issued so far
 * leave the CPU as PCIe writes, and no later WC store merges into them.
 * Without it two 8-byte doorbells could coalesce into one, or linger.
 */
SSQ_INLINE void ssq_mmio_flush_writes(void)
{
	__asm__ volatile("sfence" ::: "memory");
}

#elif defined(__aarch64__)

/*
 * WQE stores before the doorbell-record store. Arm may reorder stores to
 * normal memory; a store-store barrier over the outer-shareable domain (the
 * domain the NIC observes) suffices. rdma-core v44 used "dsb st" here, later
 * releases the lighter "dmb oshst": both order the two stores for the device.
 */
SSQ_INLINE void ssq_udma_to_device_barrier(void)
{
	__asm__ volatile("dmb oshst" ::: "memory");
}

/* The owner-byte load before the CQE body loads, for the outer domain. */
SSQ_INLINE void ssq_udma_from_device_barrier(void)
{
	__asm__ volatile("dmb oshld" ::: "memory");
}

/*
 * Complete the Device-nGnRE / write-combining stores to the UAR before going
 * on: dsb (not dmb) waits for the stores themselves, so a doorbell is not
 * held in a CPU buffer and two doorbells are not merged.
 */
SSQ_INLINE void ssq_mmio_flush_writes(void)
{
	__asm__ volatile("dsb st" ::: "memory");
}

#else
#error                                                                                   \
    "ssq/barrier.h: no mlx5 DMA/MMIO barriers for this architecture (x86-64 and aarch64 only)"
#endif

/*
 * Order the doorbell-record store (normal memory) and any earlier MMIO before
 * the write-combining UAR stores that follow. It must imply
 * ssq_udma_to_device_barrier(); rdma-core defines mmio_wc_start as
 * mmio_flush_writes on every architecture, and so does ssq.
 */
SSQ_INLINE void ssq_mmio_wc_start(void)
{
	ssq_mmio_flush_writes();
}

/*
 * ssq_cpu_relax - the hint for one turn of a loop that waits on another
 * party's store (a lease, a counter in shared memory): x86-64 pause, arm64
 * yield. It orders nothing; it only yields the core's pipeline (and an SMT
 * sibling) while the loop spins. Any thread, any time.
 */
SSQ_INLINE void ssq_cpu_relax(void)
{
#if defined(__x86_64__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#endif
}

#ifdef __cplusplus
}
#endif

#endif /* SSQ_BARRIER_H */
