/* SPDX-License-Identifier: MIT */
/*
 * Integers packed into and read out of wire and file formats in a fixed
 * byte order, through memcpy (no alignment assumed) and endian.h's
 * htole/htobe conversions, so a message reads the same on any host:
 * little-endian for the remote descriptors (src/dv/desc.c), big-endian
 * (network order) for the peer messages (src/ctrl/proto/peer_msg.c).
 * Shared by libssq's folders, one level up as src/shm/layout.h is.
 */
#ifndef SSQ_WIRE_BYTES_H
#define SSQ_WIRE_BYTES_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

/*
 * WB_BYTES(le, 16) makes wb_put_le16(p, v), which stores @v at @p, and
 * wb_get_le16(p), which reads it back; likewise for each order (le, be)
 * and width (16, 32, 64) below.
 */
#define WB_BYTES(order, bits)                                                            \
	static inline void wb_put_##order##bits(uint8_t *p, uint##bits##_t v)            \
	{                                                                                \
		v = hto##order##bits(v);                                                 \
		memcpy(p, &v, sizeof(v));                                                \
	}                                                                                \
	static inline uint##bits##_t wb_get_##order##bits(const uint8_t *p)              \
	{                                                                                \
		uint##bits##_t v;                                                        \
                                                                                         \
		memcpy(&v, p, sizeof(v));                                                \
		return order##bits##toh(v);                                              \
	}
WB_BYTES(le, 16)
WB_BYTES(le, 32)
WB_BYTES(le, 64)
WB_BYTES(be, 16)
WB_BYTES(be, 32)
WB_BYTES(be, 64)
#undef WB_BYTES

#endif /* SSQ_WIRE_BYTES_H */
