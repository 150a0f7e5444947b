/* SPDX-License-Identifier: MIT */
/*
 * ssq/doorbell_pvt.h - internals of <ssq/doorbell.h>'s inline doorbells.
 * Do not include directly: include <ssq/doorbell.h> (or <ssq/ssq.h>). It is
 * installed because the inline API needs it; nothing here is API.
 */
#ifndef SSQ_DOORBELL_PVT_H
#define SSQ_DOORBELL_PVT_H

#ifndef SSQ_DOORBELL_H
#error "include <ssq/doorbell.h>, not <ssq/doorbell_pvt.h>"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/*
 * One 64-bit MMIO store. volatile so the compiler emits exactly one 8-byte
 * store, neither split nor merged; the value is already in wire order.
 */
SSQ_INLINE void ssq__mmio_write64(void *reg, uint64_t val)
{
	__atomic_store_n((volatile uint64_t *)reg, val, __ATOMIC_RELAXED);
}

#ifdef __cplusplus
}
#endif

#endif /* SSQ_DOORBELL_PVT_H */
